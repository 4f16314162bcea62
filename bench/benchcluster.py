"""The cluster a benchmark runs against: HADOOP_CONF_DIR's when set, else the embedded one (the
running one in --state-dir, or a fresh one in a temporary state dir, stopped again at the end)."""
from __future__ import annotations

import contextlib
import os
import tempfile


@contextlib.contextmanager
def bench_cluster(state_dir: str | None = None):
    """Yields the HadoopConf in use (after ``hadoop.use_cluster``)."""
    from tfhadoop import hadoop
    from tfhadoop.yarn.embedded import EmbeddedCluster

    cluster = started = None
    if not os.environ.get("HADOOP_CONF_DIR"):
        cluster = EmbeddedCluster(state_dir or tempfile.mkdtemp(prefix="tfhadoop-bench-"))
        started = not cluster.is_running()
        cluster.up()
        os.environ["TFHADOOP_STATE_DIR"] = str(cluster.state_dir)
    try:
        yield hadoop.use_cluster(cluster.state_dir if cluster else None)
    finally:
        if cluster is not None and started:
            cluster.down()
