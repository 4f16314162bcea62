"""`tfhadoop train` jobs on the test cluster, as a user runs them: start one, read its job files
(events, metrics, checkpoint state) and wait on its progress with a diagnosis when it stalls."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Literal, overload

import numpy as np

from tests.trainer import trainer_test_models as models
from tests.waiting import wait_for

MODELS = Path(__file__).resolve().parent  # shipped as --python-path: "trainer_test_models:linear"


@overload
def train(hadoop_cluster, dataset, model: str = ..., extra=..., timeout: float = ...,
          background: Literal[False] = ..., tmpdir: Path | None = ...) -> tuple[str, subprocess.CompletedProcess[str]]: ...
@overload
def train(hadoop_cluster, dataset, model: str = ..., extra=..., timeout: float = ..., *,
          background: Literal[True], tmpdir: Path | None = ...) -> tuple[str, subprocess.Popen[str]]: ...
def train(hadoop_cluster, dataset, model: str = "trainer_test_models:linear", extra=(), timeout: float = 600,
          background: bool = False, tmpdir: Path | None = None):
    """(the job's run directory, its `tfhadoop train` process): PS mode, 1 PS, small tasks.
    ``tmpdir``: the client's TMPDIR (what it leaves behind there can be checked)."""
    run = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/run-{uuid.uuid4().hex[:8]}")
    cmd = [sys.executable, "-m", "tfhadoop", "train", "--model", model, "--python-path", str(MODELS),
           "--data", dataset, "--label", "y", "--ps", "1", "--task-records", "300", "--batch-size", "32",
           "--worker-memory", "1g", "--ps-memory", "1g", "--checkpoint-dir", f"{run}/ckpt",
           "--export-dir", f"{run}/model", *extra]
    env = {**os.environ, "TMPDIR": str(tmpdir)} if tmpdir else None
    if background:
        return run, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    return run, proc


def app_id(proc: subprocess.Popen[str]) -> str:
    """The application id a background `tfhadoop train` prints first."""
    assert proc.stdout is not None and proc.stderr is not None
    for line in proc.stdout:
        if line.startswith("application "):
            return line.split()[1]
    raise AssertionError("tfhadoop train printed no application id: " + proc.stderr.read()[-3000:])


def events(run):
    from tfhadoop.connectors import hdfs

    return [json.loads(line) for line in hdfs.read_bytes(f"{run}/ckpt/events.jsonl").decode().splitlines()]


def samples(run):
    from tfhadoop.connectors import hdfs

    try:
        return hdfs.read_bytes(f"{run}/ckpt/progress.jsonl").decode().splitlines()
    except FileNotFoundError:
        return []


def metrics(run):
    from tfhadoop.connectors import hdfs

    return json.loads(hdfs.read_bytes(f"{run}/ckpt/metrics.json"))


def checkpoint_state(run) -> dict | None:
    """The training state of the job's checkpoint that a restart would restore (``latest``, or
    ``latest.new`` between a save's two renames: read ``latest`` alone, a test polling while the
    job saves once saw no checkpoint at all); None before the first save."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer.checkpoints import restorable

    url = f"{run}/ckpt"
    for _ in range(5):  # a save may move the directory between the look and the read
        name = restorable(url)
        if name is None:
            return None
        try:
            return json.loads(hdfs.read_bytes(f"{url}/{name}/state.json"))
        except FileNotFoundError:
            continue
    return None


def state_epoch(run):
    """The epoch of :func:`checkpoint_state`; None also while HDFS does not answer (an outage)."""
    try:
        state = checkpoint_state(run)
    except Exception:  # noqa: BLE001 - polled through HDFS outages
        return None
    return None if state is None else state["epoch"]


def lost_events(run):
    try:
        return [e for e in events(run) if e["event"] == "container_lost"]
    except Exception:  # noqa: BLE001 - not written yet
        return []


def exported_model_mse(run, tmp_path) -> tuple[float, float]:
    """(the SavedModel's mean squared error on the eval shard's examples, that of a constant
    predictor): the job's export under ``{run}/model``, downloaded and loaded as a user would."""
    from tfhadoop.connectors import hdfs

    hdfs.download_dir(f"{run}/model", str(tmp_path / "model"))
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tf_keras

    model = tf_keras.models.load_model(str(tmp_path / "model"))
    assert model is not None, f"no SavedModel under {run}/model"
    x, y = models.make_examples(400, seed=4)  # the eval shard
    mse = float(np.mean((model.predict(x, verbose=0)[:, 0] - y) ** 2))
    return mse, float(np.mean((y - y.mean()) ** 2))


def wait(predicate, timeout, what, diagnose=None):
    return wait_for(predicate, timeout, what, interval=1, diagnose=diagnose)


def cluster_idle(conf) -> bool:
    """No container of an earlier test still holds memory on a RUNNING NodeManager (a test that
    sizes its containers to the cluster must not start while another's are still going away)."""
    from tfhadoop.yarn.embedded import cluster_health

    nodes = [n for n in cluster_health(conf).get("nodes", []) if n["state"] == "RUNNING"]
    return bool(nodes) and all(n["used_memory_mb"] == 0 for n in nodes)


def diagnosis(hadoop_cluster, run) -> str:
    """What a timed-out wait reports: the job's events, the cluster's live applications and their
    containers, and the tail of every container log of the embedded cluster's NodeManagers."""
    from tfhadoop.yarn.client import skein_client

    parts = []
    try:
        parts.append("events:\n" + "\n".join(json.dumps(e) for e in events(run)))
    except Exception as e:  # noqa: BLE001 - not written yet is itself the answer
        parts.append(f"events: {e!r}")
    with skein_client() as client:
        for app in client.get_applications(states=["SUBMITTED", "ACCEPTED", "RUNNING"]):
            parts.append(f"application {app.id} {app.name} {app.state} queue={app.queue} "
                         f"usage={app.usage}")
    if hadoop_cluster.state_dir is not None:
        logs = sorted((p for p in hadoop_cluster.state_dir.glob("target/**/container_*/*") if p.is_file()),
                      key=lambda p: p.stat().st_mtime)[-12:]
        for f in logs:
            parts.append(f"--- {f.parent.parent.name}/{f.parent.name}/{f.name}\n"
                         + f.read_text(errors="replace")[-2500:])
    return "\n".join(parts)


def wait_epochs(hadoop_cluster, run, proc, epochs: int, timeout: float = 300):
    """Wait until the job has checkpointed ``epochs`` epochs (or ended), saying why if it does not."""
    wait_for(lambda: (state_epoch(run) or 0) >= epochs or proc.poll() is not None, timeout,
             f"{epochs} epochs", interval=1, diagnose=lambda: diagnosis(hadoop_cluster, run))
    assert proc.poll() is None, proc.communicate()[1][-3000:]


def stop(app: str, *options: str) -> None:
    """`tfhadoop stop APP`: the job ends after the epoch in progress. Fault tests start jobs of
    ENDLESS epochs and stop them once they have seen what they wait for, so a faster host cannot
    end a job before its fault and a slower one does not train epochs nobody checks."""
    done = subprocess.run([sys.executable, "-m", "tfhadoop", "stop", app, *options], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "training ends after the epoch in progress" in done.stdout, \
        (done.stdout + done.stderr)[-3000:]


def stop_when(hadoop_cluster, run, proc, app: str, predicate, what: str, timeout: float = 300) -> None:
    """Wait for ``predicate`` (saying why if it never holds), then `tfhadoop stop` the job."""
    wait_for(lambda: predicate() or proc.poll() is not None, timeout, what, interval=1,
             diagnose=lambda: diagnosis(hadoop_cluster, run))
    assert proc.poll() is None, "the job ended before " + what + ": " + proc.communicate()[1][-3000:]
    stop(app)


def epochs_after(run, condition, n: int = 2):
    """A predicate: ``condition()`` has held, and ``n`` more epochs were checkpointed since it first did."""
    seen: dict = {}

    def check() -> bool:
        if "epoch" not in seen:
            if not condition():
                return False
            seen["epoch"] = state_epoch(run) or 0
        return (state_epoch(run) or 0) >= seen["epoch"] + n
    return check


def event_seen(run, kind: str, count: int = 1):
    """A predicate: the job's event log holds ``count`` events of ``kind`` (or more)."""
    def check() -> bool:
        try:
            return sum(e["event"] == kind for e in events(run)) >= count
        except Exception:  # noqa: BLE001 - not written yet
            return False
    return check


_SKEIN: list = []  # one Skein client for the session's polls (of the shared driver on the embedded cluster)


def _close_skein() -> None:
    """Close the polls' client and drop it while gRPC's module is alive: a skein.Client closes
    itself again when collected, and one collected during the interpreter's teardown printed
    "Exception ignored in: Client.__del__ ... 'NoneType' object has no attribute 'StatusCode'"."""
    while _SKEIN:
        _SKEIN.pop().close()


def kv(app: str, key: str):
    """The JSON value of ``key`` in a running job's key-value store (None when absent)."""
    import atexit

    from tfhadoop.yarn.client import skein_client

    if not _SKEIN:
        _SKEIN.append(skein_client(log=False))
        atexit.register(_close_skein)
    raw = _SKEIN[0].connect(app, wait=False).kv.get(key)
    return json.loads(raw.decode()) if raw else None


def assert_stopped(metrics: dict, epochs_at_least: int) -> None:
    """The job ended by `tfhadoop stop`, after ``epochs_at_least`` epochs or more, each exactly once."""
    assert metrics["stopped"] and metrics["stopped"]["after_epoch"] == len(metrics["epochs"]) - 1, metrics["stopped"]
    assert len(metrics["epochs"]) >= epochs_at_least, metrics["epochs"]
    assert [e["examples"] for e in metrics["epochs"]] == [e["expected"] for e in metrics["epochs"]], metrics["epochs"]


ENDLESS = 100_000  # --epochs of a job the test ends with `stop`
# The options of a fault test's job: no client-side model check (`--no-validate`). Its seconds of
# TensorFlow import in the client buy nothing a fault test looks at; the check has its own tests
# (test_submit_validation), and the feature tests' jobs keep it, as a user's do.
FAULT_JOB = ("--no-validate",)


def seconds_to_first_progress(events: list, since_event: dict, t0: float) -> str:
    """When the master first saw training progress after ``since_event``, as "N.N s" after ``t0``;
    for the printed timings only: a job that finishes within one of the master's 1 s looks after
    a restart leaves no ``first_progress`` event, and its exactly-once counts say it trained."""
    first = next((e for e in events[events.index(since_event):] if e["event"] == "first_progress"), None)
    return f"{first['time'] - t0:.1f} s" if first else "(not seen: it trained within one look of the master)"
