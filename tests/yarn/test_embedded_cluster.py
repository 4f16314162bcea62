"""The embedded cluster is a real Hadoop cluster: HDFS over WebHDFS and RPC, YARN applications
through Skein, yarn.io/gpu scheduling, CapacityScheduler preemption, Hive on HDFS."""
from __future__ import annotations

import getpass
import glob
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
import skein

from tests.waiting import wait_for
from tfhadoop.yarn.client import skein_client as new_skein_client
from tfhadoop.yarn.embedded import ClusterOptions
from tfhadoop.yarn.history import PREEMPTED, container_exits
from tfhadoop.yarn.logs import application_logs

pytestmark = pytest.mark.cluster


def _spec(name, queue="default", instances=1, memory=256, gpus=0, script="sleep 600", allow_failures=False):
    return skein.ApplicationSpec(
        name=name, queue=queue, max_attempts=1,
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
        services={"task": skein.Service(instances=instances, max_restarts=0, allow_failures=allow_failures,
                                        resources=skein.Resources(memory=memory, vcores=1, gpus=gpus),
                                        script=script)})


def _wait(predicate, timeout, what):
    return wait_for(predicate, timeout, what, interval=0.5)


def _wait_finished(client, app_id, timeout=120):
    return _wait(lambda: (r := client.application_report(app_id)).state in ("FINISHED", "FAILED", "KILLED") and r,
                 timeout, f"{app_id} to finish")


@pytest.fixture(scope="module")
def skein_client(hadoop_cluster):
    with new_skein_client() as client:
        yield client


def _rm(hadoop_cluster, path):
    with urllib.request.urlopen(hadoop_cluster.conf.rm_webapp_url + path, timeout=10) as resp:
        return json.load(resp)


# -- HDFS ---------------------------------------------------------------------------------------

def test_webhdfs_round_trip(hadoop_cluster):
    from hdfs import InsecureClient

    client = InsecureClient(hadoop_cluster.conf.webhdfs_url, user=getpass.getuser())
    path = f"/tmp/tests/webhdfs-{uuid.uuid4().hex}.bin"
    payload = os.urandom(3 * 1024 * 1024 + 17)
    client.write(path, payload, overwrite=False)
    with client.read(path) as reader:
        assert reader.read() == payload  # pyright: ignore[reportAttributeAccessIssue] - hdfs's read() yields a generator only when given chunk_size or delimiter: a file object here
    assert client.status(path)["length"] == len(payload)  # pyright: ignore[reportOptionalSubscript] - status() returns None only with strict=False


def test_hdfs_native_lists_what_webhdfs_wrote(hadoop_cluster):
    from hdfs import InsecureClient
    from hdfs_native import Client

    folder = f"/tmp/tests/native-{uuid.uuid4().hex}"
    InsecureClient(hadoop_cluster.conf.webhdfs_url, user=getpass.getuser()).write(f"{folder}/a.txt", b"abc")
    listing = list(Client(hadoop_cluster.default_fs).list_status(folder))
    assert [(Path(s.path).name, s.length) for s in listing] == [("a.txt", 3)]


# -- cluster state and commands ---------------------------------------------------------------

def test_status_reports_nodes_gpus_and_queues(hadoop_cluster):
    status = hadoop_cluster.embedded.status() if hadoop_cluster.embedded else pytest.skip("external cluster")
    assert status["namenode"]["state"] == "Operational"
    assert status["namenode"]["live_datanodes"] == ClusterOptions().datanodes
    assert status["resourcemanager"]["state"] == "STARTED"
    # The session cluster is shared: the lost-node fault test leaves the NodeManager it killed in
    # the RM's list as LOST, as a real cluster shows a dead node; the built-in ones keep running.
    running = [n for n in status["nodes"] if n["state"] == "RUNNING"]
    assert len(running) >= 2 and all(n["state"] == "LOST" for n in status["nodes"] if n not in running), status["nodes"]
    assert all(n["used_gpus"] + n["available_gpus"] == 2 for n in running)
    assert {q["name"] for q in status["queues"]} == {"default", "train", "urgent"}


def test_cli_status_and_env(hadoop_cluster):
    env = dict(os.environ, TFHADOOP_STATE_DIR=str(hadoop_cluster.state_dir))
    out = subprocess.run([sys.executable, "-m", "tfhadoop", "cluster", "status"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert "NameNode        Operational" in out and "queue urgent" in out
    out = subprocess.run([sys.executable, "-m", "tfhadoop", "cluster", "env"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert f"export HADOOP_CONF_DIR={hadoop_cluster.state_dir}/conf" in out


def test_up_is_idempotent(hadoop_cluster):
    before = hadoop_cluster.embedded.info()
    again = hadoop_cluster.embedded.up()
    assert again["pid"] == before["pid"] and "ready_seconds" not in again


def test_yarn_command_matches_pyspark_hadoop_version(hadoop_cluster):
    import pyspark

    env = dict(os.environ)
    classpath = subprocess.run(["yarn", "classpath", "--glob"], env=env, capture_output=True, text=True,
                               check=True).stdout.strip().split(":")
    assert classpath[0] == str(hadoop_cluster.conf.conf_dir)
    ours = {Path(p).name for p in classpath if "hadoop-client-api" in p}
    spark_jars = {Path(p).name for p in glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars",
                                                                  "hadoop-client-api-*.jar"))}
    assert ours and ours == spark_jars


# -- YARN through Skein -------------------------------------------------------------------------

@pytest.mark.slow
def test_skein_application_succeeds_and_logs_are_retrievable(skein_client):
    marker = uuid.uuid4().hex
    app_id = skein_client.submit(_spec("hello", script=f"echo hello-{marker}", instances=1))
    report = _wait_finished(skein_client, app_id)
    assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED")
    assert f"hello-{marker}" in application_logs(app_id)


@pytest.mark.slow
def test_gpu_container_is_granted_and_counted(hadoop_cluster, skein_client):
    app = skein_client.submit_and_connect(_spec("one-gpu", gpus=1))
    try:
        running = _wait(lambda: app.get_containers(states=["RUNNING"]), 60, "the GPU container")
        assert len(running) == 1
        nodes = _rm(hadoop_cluster, "/ws/v1/cluster/nodes?states=RUNNING")["nodes"]["node"]  # not a LOST one
        used = sum(ri["value"] for n in nodes
                   for ri in n["usedResource"]["resourceInformations"]["resourceInformation"]
                   if ri["name"] == "yarn.io/gpu")
        assert used == 1
    finally:
        app.shutdown()


@pytest.mark.slow
def test_more_gpus_than_any_node_is_refused(hadoop_cluster, skein_client):
    app_id = skein_client.submit(_spec("three-gpus", gpus=3))
    report = _wait_finished(skein_client, app_id)
    # The ResourceManager rejects the request (InvalidResourceRequestException, max yarn.io/gpu = 2
    # per node); Skein's application master then fails the application.
    assert report.final_status == "FAILED"
    assert "Failure in container allocator" in report.diagnostics
    logs = application_logs(app_id)
    assert "InvalidResourceRequestException" in logs and "yarn.io/gpu" in logs


@pytest.mark.slow
def test_urgent_queue_preempts_a_training_container(hadoop_cluster, skein_client):
    # 6 x 2 GB of 2 x 8 GB fills the cluster from `train` (guaranteed 50%); `urgent` (40%) then
    # asks for 3 x 2 GB and the preemption monitor takes containers back from `train`.
    filler = skein_client.submit_and_connect(_spec("filler", "train", instances=6, memory=2048, allow_failures=True))
    urgent = None
    try:
        _wait(lambda: len(filler.get_containers(states=["RUNNING"])) == 6, 90, "the filler's 6 containers")
        urgent = skein_client.submit_and_connect(_spec("urgent", "urgent", instances=3, memory=2048))
        t0 = time.monotonic()
        lost = _wait(lambda: filler.get_containers(states=["FAILED", "KILLED"]), 60, "a preemption")
        preempted_after = time.monotonic() - t0
        # What Skein reports: the container FAILED, with YARN's diagnostics as its exit message.
        assert all(c.state == "FAILED" for c in lost)
        assert all(c.exit_message == "Container preempted by scheduler" for c in lost)
        # The freed resources go to `urgent` (how many of its 3 run depends on how much each
        # preemption round takes back; one is enough to show the hand-over).
        _wait(lambda: urgent.get_containers(states=["RUNNING"]), 90, "a running container in urgent")
        lost_ids = {c.yarn_container_id for c in lost}
        # What YARN recorded: exit status -102 (PREEMPTED) for exactly those containers.
        exits = _wait(lambda: [e for e in container_exits(hadoop_cluster.conf, filler.id)
                               if e.container_id in lost_ids and e.exit_status == PREEMPTED], 30,
                      "the timeline service's container-finished events")
        assert {e.container_id for e in exits} == lost_ids
        assert all(e.diagnostics == "Container preempted by scheduler" for e in exits)
        app = _rm(hadoop_cluster, f"/ws/v1/cluster/apps/{filler.id}")["app"]
        assert app["numNonAMContainerPreempted"] >= 1 and app["numAMContainerPreempted"] == 0
        assert preempted_after < 90, f"preemption took {preempted_after:.1f} s"  # policy on (slow-host margin)
    finally:
        filler.shutdown()
        if urgent is not None:
            urgent.shutdown()


# -- Hive ---------------------------------------------------------------------------------------

HIVE_CREATE = """
from tfhadoop.spark.session import hive_session
s = hive_session("create")
s.sql("CREATE TABLE {table} (id INT, name STRING) STORED AS PARQUET")
s.sql("INSERT INTO {table} VALUES (1, 'ada'), (2, 'grace'), (3, 'edsger')")
s.stop()
"""

HIVE_READBACK = """
import json
from tfhadoop.spark.session import hive_session
s = hive_session("readback")
rows = s.sql("SELECT id, name FROM {table} ORDER BY id").collect()
loc = s.sql("DESCRIBE FORMATTED {table}").filter("col_name = 'Location'").collect()[0].data_type
print(json.dumps({{"rows": [[r.id, r.name] for r in rows], "location": loc}}))
s.stop()
"""


def _run_python(code: str, env: dict) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow
def test_hive_table_round_trip_in_a_new_session(hadoop_cluster, tmp_path):
    # Two Spark applications one after the other (embedded Derby admits one JVM at a time, so
    # this test's metastore is its own, apart from the session-wide `spark` fixture's).
    table = f"people_{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, TFHADOOP_METASTORE_DIR=str(tmp_path / "metastore"))
    _run_python(HIVE_CREATE.format(table=table), env)
    result = json.loads(_run_python(HIVE_READBACK.format(table=table), env).strip().splitlines()[-1])
    assert result["rows"] == [[1, "ada"], [2, "grace"], [3, "edsger"]]
    assert result["location"].startswith(hadoop_cluster.default_fs)
    assert (tmp_path / "metastore" / "metastore_db").is_dir()
    from urllib.parse import urlparse

    from hdfs_native import Client

    files = [s.path for s in Client(hadoop_cluster.default_fs).list_status(urlparse(result["location"]).path)
             if s.path.rsplit("/", 1)[-1].startswith("part-")]
    assert files, f"no data files under {result['location']}"
