"""`tfhadoop tensorboard APP | --logdir URL`: which folder it serves (unit tests), and TensorBoard
serving event files written on the embedded cluster's HDFS, read back through its HTTP API."""
from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from argparse import Namespace

import pytest

from tests import tensorboard_http as tb
from tests.waiting import wait_for
from tfhadoop.errors import CommandError
from tfhadoop.trainer import jobdir, protocol
from tfhadoop.trainer import tensorboard_cli as cli

FS = "hdfs://nn.example.com:8020"


def args(app=None, logdir=None):
    return Namespace(app=app, logdir=logdir)


@pytest.mark.parametrize("given, served", [
    ("hdfs:///jobs/a/tensorboard", f"{FS}/jobs/a/tensorboard"),
    ("/jobs/a/tensorboard", f"{FS}/jobs/a/tensorboard"),
    ("jobs/a", f"{FS}/user/{protocol.user()}/jobs/a"),
    ("hdfs://other:9000/x", "hdfs://other:9000/x"),
])
def test_logdir_is_qualified_against_default_fs(given, served):
    assert cli.logdir_of(args(logdir=given), FS) == served


@pytest.mark.parametrize("bad, message", [
    (args(), "name a job (APP: an application id or a job name) or --logdir URL"),
    (args("application_1_0001", "/x"), "not both"),
    (args(logdir="file:///tmp/x"), "--logdir file:///tmp/x: must be on the cluster's file system"),
    (args(logdir="s3://bucket/x"), "unsupported scheme 's3'"),
])
def test_bad_arguments_say_what_is_wrong(bad, message):
    with pytest.raises(CommandError) as err:
        cli.logdir_of(bad, FS)
    assert message in str(err.value)


def test_app_is_an_application_id_or_the_newest_job_of_that_name(monkeypatch):
    registry = {
        "application_1_0003": {"app": "application_1_0003", "job_dir": f"{FS}/runs/c", "job": {"name": "ctr"}},
        "application_1_0002": {"app": "application_1_0002", "job_dir": f"{FS}/runs/b/", "job": {"name": "ctr"}},
        "application_1_0001": {"app": "application_1_0001", "job_dir": f"{FS}/runs/a", "job": {"name": "other"}},
    }  # newest first, as jobdir.entries returns them
    monkeypatch.setattr(jobdir, "lookup", lambda fs, app: registry.get(app))
    monkeypatch.setattr(jobdir, "entries", lambda fs: list(registry.values()))
    assert cli.logdir_of(args("application_1_0002"), FS) == f"{FS}/runs/b/tensorboard"
    assert cli.logdir_of(args("ctr"), FS) == f"{FS}/runs/c/tensorboard"
    assert cli.logdir_of(args("other"), FS) == f"{FS}/runs/a/tensorboard"
    with pytest.raises(CommandError) as err:
        cli.logdir_of(args("application_1_0009"), FS)
    assert str(err.value).startswith(f"application_1_0009 is not a training job submitted by {protocol.user()} ")
    assert protocol.registry_dir(FS) in str(err.value)


def test_no_event_files_names_the_folder_it_looked_in(monkeypatch):
    from tfhadoop.connectors import hdfs

    class Listing:
        def expand(self, url):
            return [f"{url}/train/notes.txt", f"{url}/train/events.out.tfevents.1.host.2.v2.tmp/x"]

    monkeypatch.setattr(hdfs, "filesystem", lambda url: Listing())
    with pytest.raises(CommandError) as err:
        cli.event_files(f"{FS}/runs/a/tensorboard")
    assert str(err.value).startswith(f"no TensorBoard event files under {FS}/runs/a/tensorboard yet")

    class Files:
        def expand(self, url):
            return [f"{url}/train/events.out.tfevents.1.host.2.v2", f"{url}/eval/events.out.tfevents.3.host.4.v2"]

    monkeypatch.setattr(hdfs, "filesystem", lambda url: Files())
    assert len(cli.event_files(f"{FS}/runs/a/tensorboard")) == 2


def test_a_port_in_use_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("localhost", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError) as err:
            cli.start(str(tmp_path), "localhost", port)
    assert str(err.value) == (f"cannot serve TensorBoard on localhost:{port}: "
                              f"TensorBoard could not bind to port {port}, it was already in use")


# -- on the embedded cluster ---------------------------------------------------------------------

TRAIN_LOSS = [(1, 0.5), (2, 0.25), (5, 0.125)]  # exact in float32: served as written
EVAL = {"loss": 0.0625, "mae": 0.1875}


@pytest.fixture(scope="module")
def written(hadoop_cluster):
    """hdfs:///path of a job-like folder whose tensorboard/ holds what the coordinator writes
    (trainer/summaries.py, over the tfhdfs plugin): train loss at three steps, eval at the last one,
    in two event files per run (a checkpoint's sync between)."""
    import tfhadoop.tfhdfs  # noqa: F401 - hdfs:// for tf.summary, as in the coordinator
    from tfhadoop.trainer.summaries import Summaries

    path = f"/tmp/tensorboard-tests/{uuid.uuid4().hex[:8]}"
    summaries = Summaries(hadoop_cluster.hdfs_url(f"{path}/{protocol.TENSORBOARD_DIR}"))
    for step, loss in TRAIN_LOSS[:2]:
        summaries.scalars("train", step, {"loss": loss})
    summaries.sync()
    summaries.scalars("train", TRAIN_LOSS[2][0], {"loss": TRAIN_LOSS[2][1]})
    summaries.scalars("eval", TRAIN_LOSS[2][0], EVAL)
    summaries.close()  # Summaries logs write errors and goes on: check that every file is there
    assert len(cli.event_files(hadoop_cluster.hdfs_url(f"{path}/{protocol.TENSORBOARD_DIR}"))) == 3
    return path


def test_serves_the_scalars_written_on_hdfs(hadoop_cluster, written):
    with tb.serve("--logdir", f"hdfs://{written}/{protocol.TENSORBOARD_DIR}", "--port", "0") as url:
        assert url.startswith("http://localhost:") and not url.startswith("http://localhost:0/"), url
        tb.wait_loaded(url, {"train": {"loss"}, "eval": set(EVAL)})
        assert tb.scalars(url, "train", "loss") == TRAIN_LOSS
        for tag, value in EVAL.items():
            assert tb.scalars(url, "eval", tag) == [(TRAIN_LOSS[-1][0], value)]


def tfhadoop(*argv) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tfhadoop", *argv], capture_output=True, text=True, timeout=120)


def test_errors_are_one_line(hadoop_cluster, written):
    empty = f"/tmp/tensorboard-tests/empty-{uuid.uuid4().hex[:8]}"
    for argv, message in [
        (["application_1_0009"], "tfhadoop tensorboard: error: application_1_0009 is not a training job submitted by"),
        (["--logdir", empty], f"tfhadoop tensorboard: error: no TensorBoard event files under "
                              f"{hadoop_cluster.hdfs_url(empty)} yet"),
    ]:
        proc = tfhadoop("tensorboard", *argv)
        assert proc.returncode == 1 and not proc.stdout, proc.stdout + proc.stderr[-3000:]
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith(message), proc.stderr[-3000:]


def test_a_wildcard_address_is_named_by_the_public_host(tmp_path):
    """The --tensorboard container binds every interface and names itself by its node (NM_HOST)."""
    url = cli.start(str(tmp_path), "0.0.0.0", 0, public_host="node7.example.com")
    assert url.startswith("http://node7.example.com:") and not url.startswith("http://node7.example.com:0/"), url


LEFT_OPEN = """
import os, sys
from tfhadoop import hadoop
from tfhadoop.connectors import hdfs

hadoop.use_cluster()
fs = hdfs.filesystem(sys.argv[1], patient=True)
writer = fs._client.create(sys.argv[2])
writer.write(b"scalars the dead coordinator flushed")
writer.hsync()
os._exit(0)  # dies holding the file open: no close, the lease still its own
"""


def test_a_new_coordinator_closes_the_event_files_a_dead_one_left_open(hadoop_cluster, monkeypatch):
    """A coordinator killed while it held an event file open (its PS lost during a close) left a file
    whose flushed bytes the NameNode lists and no reader may read (seen in a test run: 354 bytes
    listed, 0 readable); the next coordinator's Summaries recovers its lease, and those bytes read."""
    from tfhadoop.connectors import hdfs, hdfs_native
    from tfhadoop.trainer.summaries import Summaries

    path = f"/tmp/tensorboard-tests/{uuid.uuid4().hex[:8]}/{protocol.TENSORBOARD_DIR}/train/events.out.tfevents.1.dead"
    left = hadoop_cluster.hdfs_url(path)
    child = subprocess.run([sys.executable, "-c", LEFT_OPEN, left, path], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr[-3000:]
    monkeypatch.setattr(hdfs_native, "LAST_BLOCK_WAIT_S", 1.0)  # the reader's wait for a block report, cut short
    with pytest.raises(hdfs.HdfsError, match="lists 36 bytes but only 0 are readable"):
        hdfs.read_bytes(left)
    Summaries(left.rsplit("/", 2)[0])

    def recovered():
        try:
            return hdfs.read_bytes(left) == b"scalars the dead coordinator flushed"
        except hdfs.HdfsError:  # its recovery still under way
            return False

    wait_for(recovered, 60, "the recovered event file to read whole", interval=1,
             diagnose=lambda: f"listed {hdfs.filesystem(left).size(left)} bytes")
