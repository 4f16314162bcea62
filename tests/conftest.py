"""Test fixtures against the real thing: one embedded Hadoop cluster (HDFS + YARN) per test
session, started from a fresh state dir, or the cluster named by HADOOP_CONF_DIR if one is set.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tfhadoop import hadoop
from tfhadoop.yarn.embedded import EmbeddedCluster


@dataclass
class ClusterHandle:
    """What a test needs to reach the cluster in use."""

    conf: hadoop.HadoopConf
    state_dir: Path | None  # None for an external cluster (HADOOP_CONF_DIR)
    embedded: EmbeddedCluster | None

    @property
    def default_fs(self) -> str:
        return self.conf.default_fs

    def hdfs_url(self, path: str) -> str:
        return self.conf.default_fs.rstrip("/") + "/" + path.lstrip("/")


@pytest.fixture(scope="session")
def hadoop_cluster(tmp_path_factory):
    """The embedded cluster, started once for the session (≈16 s) and stopped at the end."""
    if os.environ.get("HADOOP_CONF_DIR"):
        yield ClusterHandle(hadoop.use_cluster(), None, None)
        return
    # Outside pytest's numbered tmp dirs: concurrent pytest runs prune each other's old ones.
    state = Path(os.environ.get("TFHADOOP_TEST_STATE_DIR") or tempfile.mkdtemp(prefix="tfhadoop-test-cluster-"))
    cluster = EmbeddedCluster(state)
    cluster.up()
    os.environ[hadoop.STATE_DIR_ENV] = str(cluster.state_dir)
    try:
        yield ClusterHandle(hadoop.use_cluster(cluster.state_dir), cluster.state_dir, cluster)
    finally:
        cluster.down()
        if not os.environ.get("TFHADOOP_TEST_STATE_DIR"):
            shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def spark(hadoop_cluster):
    """One SparkSession (local[2], Hive support, tfhadoop jar if built) on the test cluster."""
    from tfhadoop.spark.session import hive_session

    session = hive_session("tfhadoop-tests")
    yield session
    session.stop()


# The modules that take longest (each runs YARN jobs or a cluster of its own), longest first.
# `make test TEST_WORKERS=2` runs xdist workers that take whole modules (--dist loadfile) in
# collection order: starting with these lets short modules fill in at the end, so the workers end
# together. An ordering, not a budget: a module missing here only runs later. One process keeps
# pytest's own file order.
LONGEST_FIRST = [
    "tests/trainer/test_train_faults.py",
    "tests/yarn/test_secure_cluster.py",
    "tests/trainer/test_train_allreduce.py",
    "tests/trainer/test_pipeline.py",
    "tests/trainer/test_train_yarn.py",
    "tests/trainer/test_submit_validation.py",
    "tests/trainer/test_train_preemption_warnings.py",
    "tests/test_demo.py",
    "tests/spark/test_spark_tfrecord.py",
    "tests/yarn/test_embedded_cluster.py",
    "tests/trainer/test_train_moved_worker.py",
    "tests/connectors/test_tfhdfs.py",
    "tests/spark/test_export.py",
]


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: file order kept
