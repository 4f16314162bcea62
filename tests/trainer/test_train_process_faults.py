"""Faults of a job's own processes (fault rows of issue 12) on the embedded YARN cluster, driven
through `tfhadoop train`: a worker, a parameter server or a coordinator that hangs (SIGSTOP) is
detected by its stopped heartbeat, killed and replaced (the PS and the coordinator: restarted from
the checkpoint); a coordinator that crashes (SIGSEGV) is restarted from the checkpoint; the
application master's container killed (SIGKILL) is followed by YARN's attempt 2, whose master
resumes the job from its checkpoint on HDFS; a coordinator whose port another process took is
started again on a new port. Each asserts SUCCEEDED, exact per-epoch counts and the
event log. Faults that one job can take in turn share that job: each job costs ~25 s before its
first step. The cluster's own faults (a lost node, HDFS outages, preemption of every worker):
test_train_cluster_faults."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.trainer import jobs
from tests.trainer.browser import finished_job_page
from tests.waiting import wait_for
from tfhadoop.trainer.protocol import HEARTBEAT_S
from tfhadoop.yarn.embedded import application_master_pid

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _am_pid(app_id: str) -> int:
    pid = application_master_pid(app_id)
    assert pid is not None, f"no application master process of {app_id}"
    return pid


def _wait_training_in_epoch_1(hadoop_cluster, run, proc, kv) -> None:
    """Until the coordinator trains the job's second epoch, watched through the key-value store (an
    epoch takes a few seconds; polling the checkpoint on HDFS was seen to miss the whole job)."""
    import skein

    def training_in_epoch_1():
        try:
            report, progress = kv.get("coordinator"), kv.get("progress")
        except skein.exceptions.ConnectionError:  # the application ended (its AM is gone): said below
            return proc.poll() is not None
        return proc.poll() is not None or (report and progress and json.loads(progress)["epoch"] >= 1
                                           and json.loads(report)["phase"] == "training")

    # On a fast host an epoch of the test dataset trains in ~0.1 s between checkpoints of ~2 s:
    # poll often enough not to miss its training phase.
    wait_for(training_in_epoch_1, 300, "training in the second epoch", interval=0.05,
             diagnose=lambda: jobs.diagnosis(hadoop_cluster, run))
    assert proc.poll() is None, proc.communicate()[1][-3000:]


def _train_and_stop(hadoop_cluster, dataset, role_key: str, workers: int, epochs: int, hang_timeout: int,
                    observe: Callable[[Any, str], Any] | None = None,
                    until: Callable[[str], Callable[[], bool]] | None = None, extra: tuple = ()
                    ) -> tuple[str, subprocess.Popen[str], dict, float, str, str, Any]:
    """``tfhadoop train`` with ``--hang-timeout``; in the second epoch the process that
    ``role_key`` (``up/<role>/<slot>``, or ``coordinator``, in the key-value store) names is
    SIGSTOPped, and ``observe(kv, run)``, if given, runs right after; with ``until``, the job is
    `tfhadoop stop`ped once ``until(run)()`` holds (``epochs``: jobs.ENDLESS). Returns
    ``run, proc, up, t_stop, out, err, observed`` once the job has ended (the process is SIGCONTed
    then, in case YARN did not kill it)."""
    from tfhadoop.yarn.client import skein_client

    run, proc = jobs.train(hadoop_cluster, dataset, background=True,
                           extra=[*jobs.FAULT_JOB, "--workers", str(workers), "--epochs", str(epochs), "--hang-timeout",
                                  str(hang_timeout), *extra])
    stopped = None
    try:
        app_id = jobs.app_id(proc)
        with skein_client() as client:  # started first: a loaded machine takes many seconds to start its JVM
            kv = client.connect(app_id).kv
            _wait_training_in_epoch_1(hadoop_cluster, run, proc, kv)
            up = json.loads(kv[role_key].decode())
            stopped = up["pid"]
            os.kill(stopped, signal.SIGSTOP)
            t_stop = time.time()
            observed = observe(kv, run) if observe else None
        if until:
            jobs.stop_when(hadoop_cluster, run, proc, app_id, until(run), "what the test waits for after the stop")
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
        if stopped is not None:
            try:
                os.kill(stopped, signal.SIGCONT)
            except ProcessLookupError:
                pass
    return run, proc, up, t_stop, out, err, observed


def test_hung_worker_then_hung_parameter_server_are_replaced(hadoop_cluster, dataset, tmp_path):
    """Row 2, one job: a worker SIGSTOPped in the second epoch is detected by its stopped
    heartbeat, killed and replaced; once its replacement serves, the parameter server is stopped
    too: it is replaced and the coordinator restarts from the checkpoint. No coordinator failure,
    every epoch counted once. The finished job's page in Chromium (issue 31 §4) draws the eval loss
    of every epoch (``--eval-every-epochs 1``) against the train loss, the losses and replacements
    as marks, and each worker's throughput."""
    hang_timeout = 8
    ps: dict = {}

    def stop_the_ps_once_the_worker_is_back(kv, run):
        wait_for(jobs.event_seen(run, "replacement_up"), 300, "the hung worker's replacement serving", interval=0.2,
                 diagnose=lambda: jobs.diagnosis(hadoop_cluster, run))
        ps.update(json.loads(kv["up/ps/0"].decode()))
        os.kill(ps["pid"], signal.SIGSTOP)
        ps["t_stop"] = time.time()

    # endless epochs, stopped two epochs after the coordinator's restart (5 epochs once ended before
    # a worker's replacement served)
    try:
        run, proc, up, t_stop, out, err, _ = _train_and_stop(
            hadoop_cluster, dataset, "up/worker/1", 2, jobs.ENDLESS, hang_timeout,
            observe=stop_the_ps_once_the_worker_is_back,
            until=lambda run: jobs.epochs_after(run, jobs.event_seen(run, "coordinator_started", 2)),
            extra=("--eval-every-epochs", "1"))
    finally:
        if "pid" in ps:
            try:
                os.kill(ps["pid"], signal.SIGCONT)
            except ProcessLookupError:
                pass
    assert proc.returncode == 0, (out + err)[-4000:]
    events = jobs.events(run)
    kinds = [e["event"] for e in events]
    hang = [e for e in events if e["event"] == "hang_detected"]
    assert [(e["role"], e["slot"], e["container"]) for e in hang] == \
        [("worker", 1, up["container"]), ("ps", 0, ps["container"])], hang
    # the last beat before a stop came up to HEARTBEAT_S earlier, and the master looks once a second
    for event, stopped_at in zip(hang, (t_stop, ps["t_stop"])):
        detected_after = event["time"] - stopped_at
        assert hang_timeout - HEARTBEAT_S - 1 <= detected_after <= hang_timeout + 60, (event, detected_after)  # never early; late only by load
    lost = [e for e in events if e["event"] == "container_lost"]
    assert [(e["role"], e["slot"], e["hung"]) for e in lost] == [("worker", 1, True), ("ps", 0, True)], lost
    worker_hang, ps_hang = (i for i, kind in enumerate(kinds) if kind == "hang_detected")
    assert kinds[worker_hang:worker_hang + 3] == ["hang_detected", "container_lost", "replacement_requested"], kinds
    assert "replacement_up" in kinds[worker_hang:ps_hang], kinds
    assert kinds[ps_hang:ps_hang + 3] == ["hang_detected", "container_lost", "replacement_requested"], kinds
    assert "coordinator_started" in kinds[ps_hang:] and "coordinator_failed" not in kinds  # restarted from the checkpoint
    jobs.assert_stopped(jobs.metrics(run), 4)  # exactly once per epoch
    history = jobs.metrics(run)["epochs"]
    assert all("loss" in h.get("eval", {}) for h in history[:-1]) and "eval" not in history[-1], history  # the last: final eval
    dom = finished_job_page(jobs.metrics(run)["app"], tmp_path, "hung-worker-finished")
    (curve,) = [g.split("</g>")[0] for g in dom.split("<g ")[1:] if 'data-label="eval loss (per epoch)"' in g]
    assert curve.count("<circle") == len(history) - 1, curve
    loss_plot = dom.split('class="loss"')[1].split("</svg>")[0]
    assert 'class="mark container_lost"' in loss_plot and 'class="mark replacement_up"' in loss_plot, loss_plot
    assert 'data-label="worker/0"' in dom and 'data-label="worker/1"' in dom, dom[-3000:]
    up_again = next(e for e in events if e["event"] == "replacement_up")
    restarted = next(e for e in events[ps_hang:] if e["event"] == "coordinator_started")
    print(f"worker stopped -> hang detected {hang[0]['time'] - t_stop:.1f} s -> replacement serving "
          f"{up_again['time'] - t_stop:.1f} s; PS stopped -> hang detected {hang[1]['time'] - ps['t_stop']:.1f} s "
          f"-> coordinator restarted {restarted['time'] - ps['t_stop']:.1f} s")


def test_killed_application_master_resumes_in_attempt_2(hadoop_cluster, dataset):
    from tfhadoop.yarn.client import skein_client

    # Endless epochs: still training when the AM is killed, stopped two epochs into attempt 2.
    steps_per_epoch = 2400 // 300 * -(-300 // 32)  # 8 tasks of 10 steps; a checkpoint at each epoch's end
    run, proc = jobs.train(hadoop_cluster, dataset, background=True,
                           extra=[*jobs.FAULT_JOB, "--workers", "2", "--epochs", str(jobs.ENDLESS)])
    try:
        app_id = jobs.app_id(proc)
        jobs.wait(lambda: (jobs.state_epoch(run) or 0) >= 2 or proc.poll() is not None, 300, "two epochs")
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        with skein_client() as client:
            progress = json.loads(client.connect(app_id).kv["progress"].decode())
        os.kill(_am_pid(app_id), signal.SIGKILL)
        t_kill = time.time()
        jobs.stop_when(hadoop_cluster, run, proc, app_id, jobs.epochs_after(run, jobs.event_seen(run, "am_restarted")),
                       "two epochs in attempt 2")
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (out + err)[-4000:]
    events = jobs.events(run)
    kinds = [e["event"] for e in events]
    restarted = [e for e in events if e["event"] == "am_restarted"]
    assert len(restarted) == 1 and restarted[0]["attempt"] == 2, kinds
    resumed_at = restarted[0]["checkpoint"]["steps"]
    # Steps run again: those between the checkpoint and the kill, at most one checkpoint interval (an
    # epoch here). Read before the kill, progress may lag a checkpoint taken meanwhile (then <= 0).
    redone = progress["steps"] - resumed_at
    assert resumed_at > 0 and redone <= steps_per_epoch, (progress, restarted)
    i = kinds.index("am_restarted")
    assert kinds[i:].count("cluster_up") == 1 and "coordinator_started" in kinds[i:] and kinds[-1] == "finished"
    seqs = [e["seq"] for e in events if e.get("app") == app_id]
    assert seqs == list(range(len(seqs))), seqs  # attempt 2 numbers its events after attempt 1's
    jobs.assert_stopped(jobs.metrics(run), 4)  # exactly once per epoch
    print(f"AM killed -> attempt 2's master {restarted[0]['time'] - t_kill:.1f} s -> training again "
          f"{jobs.seconds_to_first_progress(events, events[i], t_kill)}; resumed at step {resumed_at}, "
          f"{progress['steps']} read before the kill")


def test_hung_then_crashed_coordinator_is_restarted_from_the_checkpoint(hadoop_cluster, dataset):
    """Row 2, the coordinator: SIGSTOPped in the application master's container in its second
    epoch, its heartbeat (``coordinator`` in the key-value store) stops; the master kills it after
    --hang-timeout s and starts a new one, which resumes from the checkpoint. Once that one trains,
    it is killed by SIGSEGV (a crash inside TensorFlow's runtime, with no Python error of its own):
    the master names it NativeCrash, restarts it from the checkpoint too, and the job succeeds with
    every epoch counted once."""
    from tfhadoop.trainer.protocol import NATIVE_CRASH_ERROR

    hang_timeout = 8
    steps_per_epoch = 2400 // 300 * -(-300 // 32)  # a checkpoint at each epoch's end (and every 60 s)
    crash: dict = {}

    def at_stop(kv, run):
        """What the stopped coordinator left (nothing newer comes from it, nor a checkpoint); then,
        once its replacement trains, that one is crashed."""
        state = jobs.checkpoint_state(run)
        assert state is not None, "no checkpoint in the second epoch"
        left = (json.loads(kv["progress"].decode()), state["steps"])
        stopped = json.loads(kv["coordinator"].decode())["pid"]

        def replacement_training():
            report = json.loads(kv["coordinator"].decode())
            return report["pid"] != stopped and report["phase"] == "training" and jobs.event_seen(run, "first_progress", 2)() \
                and report
        report = wait_for(replacement_training, 300, "the restarted coordinator training", interval=0.2,
                          diagnose=lambda: jobs.diagnosis(hadoop_cluster, run))
        os.kill(report["pid"], signal.SIGSEGV)
        crash.update(pid=report["pid"], time=time.time())
        return left

    run, proc, _, t_stop, out, err, (progress, resumed_at) = _train_and_stop(
        hadoop_cluster, dataset, "coordinator", 2, jobs.ENDLESS, hang_timeout, observe=at_stop,
        until=lambda run: jobs.epochs_after(run, jobs.event_seen(run, "coordinator_started", 3)))
    assert proc.returncode == 0, (out + err)[-4000:]
    events = jobs.events(run)
    kinds = [e["event"] for e in events]
    hung = [e for e in events if e["event"] == "coordinator_hung"]
    assert [(e["reason"], e["attempt"]) for e in hung] == [("silent", 1)], hung
    assert hung[0]["phase"] in ("training", "checkpointing"), hung  # (an epoch-end save may begin meanwhile)
    detected_after = hung[0]["time"] - t_stop
    assert hang_timeout - HEARTBEAT_S - 1 <= detected_after <= hang_timeout + 60, detected_after  # never early; late only by load
    after = kinds[kinds.index("coordinator_hung"):]
    assert "coordinator_started" in after and "first_progress" in after, after  # a new one, training again
    # Steps run again: those between the checkpoint the new coordinator restored and the stop.
    assert 0 <= progress["steps"] - resumed_at <= steps_per_epoch, (progress, resumed_at)
    failed = [e for e in events if e["event"] == "coordinator_failed"]
    assert [(e["error_type"], e["exit_code"]) for e in failed] == [(NATIVE_CRASH_ERROR, -signal.SIGSEGV)], failed
    assert "SIGSEGV" in failed[0]["diagnostics"], failed
    after = kinds[kinds.index("coordinator_failed"):]
    assert after[1:].count("coordinator_started") == 1 and "first_progress" in after and kinds[-1] == "finished", after
    jobs.assert_stopped(jobs.metrics(run), 3)  # exactly once per epoch, across both restarts
    restarted = events[kinds.index("coordinator_failed")]
    print(f"coordinator stopped -> hung detected {detected_after:.1f} s -> training again "
          f"{jobs.seconds_to_first_progress(events, events[kinds.index('coordinator_hung')], t_stop)}; resumed at "
          f"step {resumed_at}, {progress['steps']} reported at the stop; SIGSEGV -> failure seen "
          f"{restarted['time'] - crash['time']:.1f} s -> training again "
          f"{jobs.seconds_to_first_progress(events, restarted, crash['time'])}")


def test_a_coordinator_whose_port_was_taken_restarts_on_a_new_port(hadoop_cluster, dataset):
    """The master chooses the chief's port when it publishes the spec; the coordinator binds it
    once every server is up, a second or more later. Another process that binds it meanwhile (a
    CI run, 2026-11-28: the job FAILED with "UnknownError: Could not start gRPC server") costs one
    coordinator start: the next one is given a new port and the job succeeds, every epoch once."""
    from tfhadoop.trainer import protocol
    from tfhadoop.yarn.client import skein_client

    run, proc = jobs.train(hadoop_cluster, dataset, background=True, extra=[*jobs.FAULT_JOB, "--workers", "2", "--epochs", "2"])
    held = socket.socket()
    try:
        app_id = jobs.app_id(proc)
        with skein_client() as client:
            kv = client.connect(app_id).kv
            spec = wait_for(lambda: kv.get(protocol.KV_CLUSTER), 300, "the cluster spec", interval=0.02,
                            diagnose=lambda: jobs.diagnosis(hadoop_cluster, run))
        port = int(json.loads(spec)["chief"][0].rsplit(":", 1)[1])
        try:
            held.bind(("", port))
        except OSError as exc:
            raise AssertionError(f"the coordinator bound port {port} before the test could: {exc}") from exc
        held.listen(1)
        out, err = proc.communicate(timeout=600)
    finally:
        held.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (out + err)[-4000:]
    events = jobs.events(run)
    started = [e["cluster"]["chief"][0] for e in events if e["event"] == "coordinator_started"]
    failed = [(e["error_type"], e["diagnostics"]) for e in events if e["event"] == "coordinator_failed"]
    assert len(failed) == 1 and failed[0][0] == "UnknownError" and "Could not start gRPC server" in failed[0][1], failed
    assert len(started) == 2 and started[0].endswith(f":{port}") and not started[1].endswith(f":{port}"), started
    assert events[-1]["event"] == "finished" and events[-1]["status"] == "SUCCEEDED", events[-1]
    metrics = jobs.metrics(run)
    assert [e["examples"] for e in metrics["epochs"]] == [e["expected"] for e in metrics["epochs"]], metrics["epochs"]
    print(f"chief port {port} taken: coordinator restarted at {started[1]}")
