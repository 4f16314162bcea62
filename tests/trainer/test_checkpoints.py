"""When checkpoints are taken and how a step budget cuts the last task: pure logic, fake clock."""
from __future__ import annotations

import os

import pytest

from tfhadoop.trainer.checkpoints import CheckpointPolicy
from tfhadoop.trainer.closures import within_step_budget
from tfhadoop.trainer.tasks import Task
from tfhadoop.trainer.training_common import training_done


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_without_steps_or_seconds_every_completed_task_is_checkpointed():
    policy = CheckpointPolicy()
    assert policy.due(1) and policy.due(1000)
    policy.saved(1000)
    assert not policy.due(1000)  # nothing trained since: no second save
    assert policy.steps_until_due(1000) is None


def test_checkpoint_by_steps_bounds_what_is_scheduled():
    policy = CheckpointPolicy(steps=25)
    assert policy.steps_until_due(0) == 25 and policy.steps_until_due(20) == 5
    assert not policy.due(20)
    assert policy.due(25)
    policy.saved(30)  # a task crossing the boundary ran whole
    assert policy.steps_until_due(30) == 25
    assert not policy.due(50) and policy.due(55)


def test_checkpoint_by_seconds():
    clock = Clock()
    policy = CheckpointPolicy(secs=60, clock=clock)
    clock.now = 59.9
    assert not policy.due(10_000)
    clock.now = 60
    assert policy.due(1)
    policy.saved(1)
    clock.now = 100
    assert not policy.due(2)


def test_steps_or_seconds_whichever_comes_first():
    clock = Clock()
    policy = CheckpointPolicy(steps=100, secs=30, clock=clock)
    assert policy.due(100)
    clock.now = 31
    assert policy.due(1)


def test_step_budget_keeps_whole_tasks_then_shortens_the_last():
    tasks = [Task(i, f"f{i}", 0, 300) for i in range(4)]  # 300 records, batch 32 -> 10 steps each
    cut = within_step_budget(tasks, steps_left=27, batch_size=32)
    assert [t.count for t in cut] == [300, 300, 7 * 32]
    assert [t.id for t in cut] == [0, 1, 2]
    assert within_step_budget(tasks, steps_left=100, batch_size=32) == tasks
    assert within_step_budget(tasks, steps_left=0, batch_size=32) == []


def test_training_done_by_epochs_or_steps():
    assert not training_done({"epoch": 1, "steps": 500}, epochs=2, steps=None)
    assert training_done({"epoch": 2, "steps": 500}, epochs=2, steps=None)
    assert not training_done({"epoch": 9, "steps": 499}, epochs=None, steps=500)
    assert training_done({"epoch": 0, "steps": 500}, epochs=None, steps=500)


class LocalHdfs:
    """hdfs's functions over a local directory (URLs are paths here)."""

    def __init__(self, monkeypatch):
        import shutil

        from tfhadoop.connectors import hdfs

        def upload_dir(local, url):
            shutil.copytree(local, url)

        def write_bytes(url, data):
            os.makedirs(os.path.dirname(url), exist_ok=True)
            with open(url, "wb") as f:
                f.write(data)

        def read_bytes(url):
            with open(url, "rb") as f:
                return f.read()

        for name, fn in {"exists": os.path.exists, "upload_dir": upload_dir, "write_bytes": write_bytes,
                         "read_bytes": read_bytes,
                         "download_dir": lambda url, local: shutil.copytree(url, local),
                         "delete": lambda url: shutil.rmtree(url, ignore_errors=True), "rename": os.rename,
                         "list_names": lambda url: os.listdir(url) if os.path.isdir(url) else []}.items():
            monkeypatch.setattr(hdfs, name, fn)


class FakeTfCheckpoint:
    def __init__(self):
        self.value, self.restored = 0, None

    def write(self, prefix):
        os.makedirs(os.path.dirname(prefix), exist_ok=True)
        with open(prefix + ".data", "w") as f:
            f.write(str(self.value))

    def restore(self, prefix):
        with open(prefix + ".data") as f:
            self.restored = int(f.read())
        return self

    def expect_partial(self):
        return self


def test_saves_keep_latest_and_a_bounded_history(tmp_path, monkeypatch):
    from tfhadoop.trainer.checkpoints import HdfsCheckpoints

    LocalHdfs(monkeypatch)
    url, ckpt = str(tmp_path / "hdfs" / "ckpt"), FakeTfCheckpoint()
    store = HdfsCheckpoints(ckpt, url, keep=3)
    assert store.restore() is None
    for step in range(1, 6):
        ckpt.value = step
        store.save({"steps": step})
    names = sorted(os.listdir(url))
    assert names[-1] == "latest" and len([n for n in names if n.startswith("ckpt-")]) == 2, names
    assert store.restore() == {"steps": 5} and ckpt.restored == 5


def test_a_save_stopped_between_its_renames_is_restored_and_finished(tmp_path, monkeypatch):
    from tfhadoop.trainer.checkpoints import HdfsCheckpoints

    LocalHdfs(monkeypatch)
    url, ckpt = str(tmp_path / "ckpt"), FakeTfCheckpoint()
    store = HdfsCheckpoints(ckpt, url)
    ckpt.value = 1
    store.save({"steps": 1})
    ckpt.value = 2
    store.save({"steps": 2})
    os.rename(f"{url}/latest", f"{url}/latest.new")  # as if the save of step 2 stopped there
    assert store.restore() == {"steps": 2} and ckpt.restored == 2
    ckpt.value = 3
    store.save({"steps": 3})
    assert store.restore() == {"steps": 3} and not os.path.exists(f"{url}/latest.new")
    assert sum(n.startswith("ckpt-") for n in os.listdir(url)) == 2  # steps 1 and 2 in the history


def test_a_half_uploaded_first_save_is_not_restored(tmp_path, monkeypatch):
    from tfhadoop.trainer.checkpoints import HdfsCheckpoints

    LocalHdfs(monkeypatch)
    url = str(tmp_path / "ckpt")
    os.makedirs(f"{url}/latest.new")
    open(f"{url}/latest.new/ckpt.data", "w").close()  # no state.json: the upload did not finish
    assert HdfsCheckpoints(FakeTfCheckpoint(), url).restore() is None


def test_a_steady_save_makes_only_the_namenode_calls_it_needs(tmp_path, monkeypatch):
    """The trainer waits for every checkpoint: one listing up front, the state's write and three
    renames, one delete of the oldest checkpoint; no existence checks. A save cut off before its
    state was in (``latest.new`` without state.json) is removed, not restored."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer.checkpoints import HdfsCheckpoints

    LocalHdfs(monkeypatch)
    calls = []
    for name in ("exists", "write_bytes", "delete", "rename", "list_names"):
        real = getattr(hdfs, name)
        monkeypatch.setattr(hdfs, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    url, ckpt = str(tmp_path / "ckpt"), FakeTfCheckpoint()
    store = HdfsCheckpoints(ckpt, url, keep=2)
    for step in (1, 2):
        store.save({"steps": step})
    os.makedirs(f"{url}/latest.new")  # a save of step 3 cut off before its state.json
    calls.clear()
    ckpt.value = 3
    store.save({"steps": 3})
    assert sorted(calls) == ["delete", "delete", "list_names", "rename", "rename", "rename", "write_bytes"], calls
    calls.clear()
    store.save({"steps": 4})
    assert sorted(calls) == ["delete", "list_names", "rename", "rename", "rename", "write_bytes"], calls
    assert sorted(os.listdir(url))[-1] == "latest" and len(os.listdir(url)) == 2  # keep=2: one in the history
    assert store.restore() == {"steps": 4}


def test_a_save_on_the_parameter_servers_task_writes_one_shard_and_restores(tmp_path):
    """With the variables on one PS, ``device`` puts the whole save there: one ``.data`` shard
    (without it the object graph is a second shard, on this process's task), same restore.
    In a child process: a ParameterServerStrategy connects its process's TensorFlow to the
    cluster for good, and in pytest's own process every later TensorFlow function of the suite
    (a SavedModel a test loads) went to these servers too, and was removed from them at exit with
    an error line each ("Failed to remove function remotely")."""
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys; from tests.trainer.test_checkpoints import save_on_the_ps_task; save_on_the_ps_task(sys.argv[1])"
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "saved on the PS task" in done.stdout, (done.stdout + done.stderr)[-3000:]


def save_on_the_ps_task(tmp_path: str) -> None:
    """The body of the test above, run in its child process."""
    import tensorflow as tf

    from tfhadoop.trainer.checkpoints import HdfsCheckpoints, variables_task
    from tfhadoop.trainer.server import in_process_ps_cluster

    LocalHdfs(pytest.MonkeyPatch())
    strategy, _, servers = in_process_ps_cluster()
    with strategy.scope():
        v = tf.Variable(tf.constant([1.0, 2.0]))
        w = tf.Variable(tf.constant(3.0))
    task = variables_task([v, w])
    assert task == "/job:ps/replica:0/task:0" and variables_task([]) is None
    assert variables_task([v, tf.Variable(tf.constant(1.0))]) is None  # a PS and this process (/job:chief)
    shards = {}
    for device in (None, task):
        url = os.path.join(tmp_path, f"ckpt-{device is not None}")
        store = HdfsCheckpoints(tf.train.Checkpoint(v=v, w=w), url, device=device)
        store.save({"steps": 1})
        shards[device] = sorted(n for n in os.listdir(f"{url}/latest") if ".data-" in n)
        v.assign([0.0, 0.0])
        assert store.restore() == {"steps": 1} and v.numpy().tolist() == [1.0, 2.0]
    assert shards == {None: ["ckpt.data-00000-of-00002", "ckpt.data-00001-of-00002"],
                      task: ["ckpt.data-00000-of-00001"]}, shards
    del servers
    print("saved on the PS task", flush=True)


@pytest.mark.cluster
def test_tensorflow_writes_checkpoints_events_and_the_export_straight_to_hdfs(hadoop_cluster):
    """The real thing: TF (tfhdfs plugin) writes hdfs:// itself; nothing goes through local files."""
    import uuid

    import tensorflow as tf

    import tfhadoop.tfhdfs  # noqa: F401
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer.checkpoints import HdfsCheckpoints
    from tfhadoop.trainer.summaries import Summaries

    url = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/ckpt-{uuid.uuid4().hex[:8]}")
    v = tf.Variable(tf.constant([1.0, 2.0]))
    store = HdfsCheckpoints(tf.train.Checkpoint(v=v), url, keep=2)
    for step in (1, 2, 3):
        v.assign([float(step), -float(step)])
        store.save({"steps": step})
    assert sorted(n for n in hdfs.list_names(url) if not n.startswith("ckpt-")) == ["latest"]
    assert sum(n.startswith("ckpt-") for n in hdfs.list_names(url)) == 1
    hdfs.rename(f"{url}/latest", f"{url}/latest.new")  # a save stopped between its two renames
    v.assign([0.0, 0.0])
    assert store.restore() == {"steps": 3} and v.numpy().tolist() == [3.0, -3.0]

    summaries = Summaries(f"{url}/tensorboard")

    def scalars():
        files = sorted(tf.io.gfile.glob(f"{url}/tensorboard/train/events.out.tfevents.*"))
        return len(files), [(e.step, float(tf.make_ndarray(x.tensor))) for f in files
                            for e in tf.compat.v1.train.summary_iterator(f) for x in e.summary.value]

    summaries.scalars("train", 7, {"loss": 0.5})
    summaries.sync()  # at a checkpoint: visible on HDFS while the job goes on, once closed in the background
    assert len(summaries.closing) == 1
    summaries.wait()
    assert scalars() == (1, [(7, 0.5)])
    summaries.scalars("train", 9, {"loss": 0.25})
    summaries.close()
    assert scalars() == (2, [(7, 0.5), (9, 0.25)])

    module = tf.Module()
    module.v = v  # pyright: ignore[reportAttributeAccessIssue] - tf.Module tracks any attribute set on it; its stub declares none
    hdfs.publish(lambda staged: tf.saved_model.save(module, staged), f"{url}/model")
    assert tf.saved_model.load(f"{url}/model").v.numpy().tolist() == [3.0, -3.0]
    with pytest.raises(FileExistsError):
        hdfs.publish(lambda staged: tf.saved_model.save(module, staged), f"{url}/model")

    def broken(staged):
        tf.io.gfile.makedirs(staged)
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        hdfs.publish(broken, f"{url}/model2")
    assert not [n for n in hdfs.list_names(url) if n.startswith("model2")]  # nothing half-written stays


@pytest.mark.cluster
def test_a_parameter_server_lost_during_a_save_is_not_waited_for_as_an_hdfs_outage(hadoop_cluster):
    """Row 5b of issue 12 (a PS preempted during a checkpoint): TensorFlow raises Unavailable naming
    ``/job:ps``; the save must raise it at once for the master to restart the coordinator, not
    retry it as an HDFS outage for two minutes. ``latest`` keeps the previous checkpoint."""
    import json
    import subprocess
    import sys
    import uuid
    from pathlib import Path

    url = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/ckpt-ps-lost-{uuid.uuid4().hex[:8]}")
    child = Path(__file__).with_name("ps_lost_checkpoint_child.py")
    proc = subprocess.run([sys.executable, str(child), url], capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    result = json.loads(lines[0][len("RESULT "):])
    assert result["error"] == "UnavailableError" and result["retries"] == [], result
    assert result["seconds"] < 120 and result["latest"] == {"steps": 1}, result  # raised, not hung (slow-host margin)


@pytest.mark.cluster
def test_a_failed_save_leaves_latest_alone_and_its_state_is_cleaned_up_by_the_next(hadoop_cluster):
    """state.json is written beside TensorFlow's write (each HDFS close costs ~0.5 s) and renamed
    into the checkpoint only after it: a save whose TensorFlow write fails publishes nothing, and
    the state it had written is removed by the next save."""
    import uuid

    import tensorflow as tf

    import tfhadoop.tfhdfs  # noqa: F401
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer.checkpoints import PENDING_STATE, HdfsCheckpoints

    url = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/ckpt-pending-{uuid.uuid4().hex[:8]}")
    ckpt = tf.train.Checkpoint(v=tf.Variable(tf.constant(1.0)))
    store = HdfsCheckpoints(ckpt, url)
    store.save({"steps": 1})
    real_write = ckpt.write
    ckpt.write = lambda prefix: (_ for _ in ()).throw(OSError("the parameter server went away"))
    with pytest.raises(OSError):
        store.save({"steps": 2})
    assert [n for n in hdfs.list_names(url) if n.startswith(PENDING_STATE)], hdfs.list_names(url)
    assert store.restore() == {"steps": 1}
    ckpt.write = real_write
    store.save({"steps": 3})
    assert not [n for n in hdfs.list_names(url) if n.startswith(PENDING_STATE)]
    assert store.restore() == {"steps": 3}
