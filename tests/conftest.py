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

from tests import schedule
from tfhadoop import hadoop
from tfhadoop.trainer import protocol
from tfhadoop.yarn.embedded import EmbeddedCluster

# Before anything loads gRPC. pytest's processes hold gRPC threads (Skein clients, TensorFlow) and
# start children with a fork (pyspark's gateway launch uses a preexec_fn): two CI runs lost a
# `cluster up` and a worker's Spark session to gRPC's at-fork handlers (protocol.NO_GRPC_FORK_HANDLERS).
for _name, _value in protocol.NO_GRPC_FORK_HANDLERS.items():
    os.environ.setdefault(_name, _value)


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


@pytest.fixture(autouse=True)
def no_training_job_left_running(request):
    """After each test on the session cluster: a training job it left running (a failed wait whose
    job trains endless epochs until `tfhadoop stop`) is killed, so it cannot hold the containers
    that later tests size themselves to; the test that left it is named."""
    yield
    if "hadoop_cluster" not in request.fixturenames:
        return
    import json
    import urllib.request

    conf = request.getfixturevalue("hadoop_cluster").conf
    url = conf.rm_webapp_url + "/ws/v1/cluster/apps?states=NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            apps = (json.load(r).get("apps") or {}).get("app", [])
    except OSError:
        return  # the ResourceManager is not reachable: nothing to clean up through it
    left = [a["id"] for a in apps if a.get("name") == "tfhadoop-train"]
    if left:
        from tfhadoop.yarn.client import skein_client

        with skein_client(log=False) as client:
            for app in left:
                try:
                    client.kill_application(app)
                except Exception:  # noqa: BLE001 - it may have ended meanwhile
                    pass
        print(f"{request.node.nodeid} left training job(s) running: killed {', '.join(left)}")


@pytest.fixture(scope="session")
def spark(hadoop_cluster):
    """One SparkSession (local[2], Hive support, tfhadoop jar if built) on the test cluster."""
    from tfhadoop.spark.session import hive_session

    session = hive_session("tfhadoop-tests")
    yield session
    session.stop()


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test`, two workers by default), the longest groups of tests go first (tests/schedule.py)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        schedule.longest_groups_first(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """A module (or the secure package) is one unit of work: its fixtures start once, in one worker."""
    return schedule.make_scheduler(config, log)
