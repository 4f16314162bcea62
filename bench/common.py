"""What the benchmarks share, so each bench file holds only its measurement: logging, the cluster
a bench runs against, running `tfhadoop train` and reading its job files, and taking a container
back from a job through YARN preemption (an application in the `urgent` queue).

Benches run as modules from the repository root (``python -m bench.bench_x``), so the project is
imported by package and the test models by ``tests.trainer.trainer_test_models``.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH_DIR)
# The trainer test models' folder, shipped to a job's containers (``--python-path``), where the
# model is imported as the top-level ``trainer_test_models``.
TEST_MODELS_DIR = os.path.join(ROOT, "tests", "trainer")
# bench/ itself, shipped the same way for jobs that train the benches' own models: they import
# bench/job_models.py as the top-level ``job_models`` (so that file imports nothing from bench).
JOB_MODELS_DIR = BENCH_DIR

TF_ENV = {"TF_USE_LEGACY_KERAS": "1", "GRPC_FAIL_FAST": "use_caller", "TF_CPP_MIN_LOG_LEVEL": "2"}


def tf_env(**overrides: str) -> None:
    """The environment the trainer's processes run TensorFlow with (tf-keras 2, fail-fast gRPC,
    quiet logs), unless the caller already set it: must run before TensorFlow is imported."""
    for key, value in {**TF_ENV, **overrides}.items():
        os.environ.setdefault(key, value)


def log(*args: object) -> None:
    print(time.strftime("%H:%M:%S"), *args, flush=True)


# -- the cluster ---------------------------------------------------------------------------------
@dataclass
class BenchCluster:
    conf: Any  # tfhadoop.hadoop.HadoopConf
    embedded: Any  # the EmbeddedCluster this bench uses, or None under HADOOP_CONF_DIR

    @property
    def fs(self) -> str:
        """The default filesystem's URL without a trailing slash."""
        return self.conf.default_fs.rstrip("/")


@contextlib.contextmanager
def bench_cluster(state_dir: str | None = None, fresh: bool = False) -> Iterator[BenchCluster]:
    """The cluster a benchmark runs against: HADOOP_CONF_DIR's when set; else the embedded cluster
    in ``state_dir`` or $TFHADOOP_STATE_DIR when one runs there (``bench.suite`` starts one for all
    benches); else a fresh embedded cluster in a temporary state dir, stopped and removed at the
    end. ``fresh``: always the last (a bench that adds NodeManagers or kills daemons)."""
    from tfhadoop import hadoop
    from tfhadoop.yarn.embedded import EmbeddedCluster

    if os.environ.get("HADOOP_CONF_DIR") and not fresh:
        yield BenchCluster(hadoop.use_cluster(None), None)
        return
    # An embedded cluster from here on: a HADOOP_CONF_DIR left by an outer use_cluster (bench.suite's
    # shared cluster, inherited) would point this process's clients and its children elsewhere.
    os.environ.pop("HADOOP_CONF_DIR", None)
    state = None if fresh else state_dir or os.environ.get(hadoop.STATE_DIR_ENV)
    temporary = state is None
    cluster = EmbeddedCluster(state or tempfile.mkdtemp(prefix="tfhadoop-bench-"))
    started = not cluster.is_running()
    if started:
        t0 = time.time()
        cluster.up()
        log(f"embedded cluster up in {time.time() - t0:.0f} s ({cluster.state_dir})")
    os.environ[hadoop.STATE_DIR_ENV] = str(cluster.state_dir)
    try:
        yield BenchCluster(hadoop.use_cluster(cluster.state_dir), cluster)
    finally:
        if started:
            cluster.down()
            if temporary:
                shutil.rmtree(cluster.state_dir, ignore_errors=True)


# -- `tfhadoop train` and its job files ------------------------------------------------------------
def train_command(run: str, *args: str) -> list[str]:
    """``tfhadoop train ARGS`` whose job directory (checkpoints, metrics, events) is ``run``/ckpt
    and export ``run``/model."""
    return [sys.executable, "-m", "tfhadoop", "train", *args,
            "--checkpoint-dir", job_dir(run), "--export-dir", f"{run}/model"]


def start_train(run: str, *args: str) -> subprocess.Popen[str]:
    """``tfhadoop train`` in the background, its output in pipes."""
    return subprocess.Popen(train_command(run, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_train(run: str, *args: str) -> float:
    """``tfhadoop train`` to its end; its wall time (submit -> exit). Raises with the output's tail
    when the job fails."""
    t0 = time.perf_counter()
    proc = subprocess.run(train_command(run, *args), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"tfhadoop train failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return wall


def job_dir(run: str) -> str:
    """The job directory (``--checkpoint-dir``) of a run started by :func:`train_command`."""
    return f"{run}/ckpt"


def metrics(run: str) -> dict:
    """The job's ``metrics.json`` (written by the coordinator before it exits)."""
    from tfhadoop.trainer import jobdir

    m = jobdir.metrics(job_dir(run))
    if m is None:
        raise RuntimeError(f"no metrics.json in {job_dir(run)}")
    return m


def events(run: str) -> list[dict]:
    """The job's event log (``events.jsonl``); [] while it has written none."""
    from tfhadoop.trainer import jobdir

    return jobdir.events(job_dir(run))


def progress(run: str) -> list[dict]:
    """The coordinator's progress samples (``progress.jsonl``)."""
    from tfhadoop.trainer import jobdir

    return jobdir.samples(job_dir(run))


# -- YARN preemption ------------------------------------------------------------------------------
@contextlib.contextmanager
def urgent_app(client: Any, name: str = "bench-urgent", containers: int = 3, memory_mb: int = 2048) -> Iterator[str]:
    """An application in the `urgent` queue asking for more than `train` leaves free (256 MiB AM +
    ``containers`` x ``memory_mb``), so the CapacityScheduler's preemption monitor takes back
    `train` containers; killed on leaving, so the job's replacements can be allocated."""
    import skein

    spec = skein.ApplicationSpec(
        name=name, queue="urgent", max_attempts=1,
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
        services={"task": skein.Service(instances=containers, resources=skein.Resources(memory=memory_mb, vcores=1),
                                        script="sleep 900")})
    app_id = client.submit(spec)
    try:
        yield app_id
    finally:
        try:
            client.kill_application(app_id)
        except Exception as exc:  # noqa: BLE001 - already gone
            log("urgent app:", exc)


def preempt(client: Any, lost: Callable[[], list[dict]], timeout: float, running: Callable[[], bool] = lambda: True,
            tick: Callable[[], None] = lambda: None, **urgent: Any) -> tuple[float, list[dict]]:
    """Take a container back from a job by YARN preemption: an :func:`urgent_app` until the job
    reports a new loss (``lost()``: its ``container_lost`` events), ``timeout`` seconds pass or
    ``running()`` turns false; ``tick`` runs each half second meanwhile. Returns (time the urgent
    app was submitted, the new ``container_lost`` events; [] when none came)."""
    before = len(lost())
    t0 = time.time()
    with urgent_app(client, **urgent):
        while time.time() - t0 < timeout and running():
            new = lost()[before:]
            if new:
                return t0, new
            tick()
            time.sleep(0.5)
    return t0, []


def goodput(fault_free_wall_s: float, faulted_wall_s: float) -> float:
    """The one definition of goodput (BENCHMARKS.md): the fault-free job's wall time (submit -> exit)
    over the same job's under faults; both train the same examples, each exactly once."""
    return fault_free_wall_s / faulted_wall_s


def lost_events(events_list: list[dict]) -> list[dict]:
    """The ``container_lost`` events of an event list."""
    return [e for e in events_list if e.get("event") == "container_lost"]
