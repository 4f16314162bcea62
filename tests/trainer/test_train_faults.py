"""Fault rows of issue 12 on the embedded YARN cluster, driven through `tfhadoop train`: a worker
that hangs (SIGSTOP) is detected by its stopped heartbeat, killed and replaced (a PS, a coordinator:
restarted from the checkpoint); a coordinator that crashes is restarted from the checkpoint; the
application master's container killed (SIGKILL) is followed by YARN's attempt 2, whose master
resumes the job from its checkpoint on HDFS; a lost node's roles move; HDFS outages are waited
out. Each asserts SUCCEEDED, exact per-epoch counts and the event log. Faults that one job can
take in turn share that job: each job costs ~25 s before its first step."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.trainer import jobs
from tests.trainer.browser import finished_job_page
from tests.trainer.lost_node import EXTRA_HOST, job_on_an_extra_node
from tests.trainer.preemption import hold_containers
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
                           extra=["--workers", str(workers), "--epochs", str(epochs), "--hang-timeout", str(hang_timeout),
                                  *extra])
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
                           extra=["--workers", "2", "--epochs", str(jobs.ENDLESS)])
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


def test_lost_node_roles_are_replaced_on_another_host_and_training_resumes(hadoop_cluster, dataset):
    """Rows 3 and 7: a NodeManager on 127.0.0.2 holds the PS and both workers; it is killed with its
    containers (a machine losing power). YARN declares it LOST after the embedded cluster's short
    expiry (-100); every role is replaced on another host (ps_moved, worker_moved), the coordinator
    restarts from the checkpoint, the job succeeds with exact counts."""
    def start():  # endless epochs: stopped two epochs after the coordinator's restart
        return jobs.train(hadoop_cluster, dataset, background=True,
                          extra=["--workers", "2", "--epochs", str(jobs.ENDLESS), "--ps-memory", "2g",
                                 "--worker-memory", "2g"])

    with job_on_an_extra_node(hadoop_cluster, start, memory_mb=6144, vcores=8) as job:
        run, proc = job.run, job.proc
        jobs.wait(lambda: (jobs.state_epoch(run) or 0) >= 1 or proc.poll() is not None, 300, "one epoch")
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        kv = job.client.connect(job.app_id).kv
        placed = {k: kv[k].decode() for k in ("addr/ps/0", "addr/worker/0", "addr/worker/1")}
        assert all(a.startswith(EXTRA_HOST + ":") for a in placed.values()), placed
        job.release_filler()
        killed = job.nm.kill()
        t_kill = time.time()
        assert killed >= 3, killed  # the three roles' processes (and their launch shells)
        jobs.stop_when(hadoop_cluster, run, proc, job.app_id,
                       jobs.epochs_after(run, jobs.event_seen(run, "coordinator_started", 2)),
                       "two epochs after the coordinator's restart")
        out, err = proc.communicate(timeout=600)
    assert proc is not None and proc.returncode == 0, (out + err)[-4000:]
    events = jobs.events(run)
    kinds = [e["event"] for e in events]
    lost = [e for e in events if e["event"] == "container_lost"]
    assert sorted((e["role"], e["slot"]) for e in lost) == [("ps", 0), ("worker", 0), ("worker", 1)], lost
    assert all(e["node_lost"] and not e["hung"] for e in lost), lost
    assert all(e.get("exit_status") == -100 for e in lost), lost  # YARN's ABORTED: the node was lost
    moved = {(e["role"], e["slot"]): e for e in events if e["event"] in ("ps_moved", "worker_moved")}
    assert set(moved) == {("ps", 0), ("worker", 0), ("worker", 1)}, moved
    assert all(e["old"] == placed[f"addr/{r}/{s}"] and not e["new"].startswith(EXTRA_HOST + ":")
               for (r, s), e in moved.items()), moved
    i = kinds.index("container_lost")
    assert "coordinator_started" in kinds[i:] and "slot_abandoned" not in kinds and kinds[-1] == "finished"
    jobs.assert_stopped(jobs.metrics(run), 3)  # exactly once per epoch
    restarted = next(e for e in events[i:] if e["event"] == "coordinator_started")
    print(f"node killed -> lost (NM expiry) {lost[0]['time'] - t_kill:.1f} s -> coordinator restarted "
          f"{restarted['time'] - t_kill:.1f} s -> training again {jobs.seconds_to_first_progress(events, restarted, t_kill)}; "
          f"{kinds.count('coordinator_failed')} coordinator failure(s) meanwhile")


def _safemode(hadoop_cluster, action: str) -> None:
    import subprocess

    subprocess.run([str(hadoop_cluster.state_dir / "bin" / "hdfs"), "dfsadmin", "-safemode", action],
                   check=True, capture_output=True, timeout=120)


def test_hdfs_outages_during_checkpoints_and_reads_are_waited_out(hadoop_cluster, dataset):
    """Row 4, two outages in one job, each of 20 s while the job trains:
    - safe mode: the NameNode refuses every write while checkpoints are due; the save is retried
      with backoff and the event log names the retries (written once HDFS takes writes again);
    - then the NameNode stopped and started again on its ports and storage, while the workers read
      their tasks' shards over hdfs:// (safe mode would not block reads): the shard opens wait it
      out in the tfhdfs plugin (hdfs-native's NameNode backoff, tfhdfs.ride_out_outages), the job's
      own writes with ``hdfs_retry`` events (before, a worker's open failed, TensorFlow made it an
      InternalError and the coordinator failed).
    The job succeeds with exact counts, no coordinator failure and no second AM attempt. HDFS is
    back and out of safe mode before the test ends, whatever happens: the session cluster is
    shared with later tests."""
    from tfhadoop.yarn.client import skein_client

    if hadoop_cluster.embedded is None:
        pytest.skip("needs the embedded cluster (its NameNode is put into safe mode, stopped and started)")
    outage_s = 20  # endless epochs: still training through both outages, stopped two epochs after them
    run, proc = jobs.train(hadoop_cluster, dataset, background=True,
                           extra=["--workers", "2", "--epochs", str(jobs.ENDLESS)])
    entered = stopped = restarted = None
    try:
        app_id = jobs.app_id(proc)
        jobs.wait(lambda: (jobs.state_epoch(run) or 0) >= 1 or proc.poll() is not None, 300, "one epoch")
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        _safemode(hadoop_cluster, "enter")
        entered = time.time()
        with skein_client() as client:
            kv = client.connect(app_id).kv
            jobs.wait(lambda: b'"hdfs_retry"' in (kv.get("events") or b"") or proc.poll() is not None, 120,
                      "a retried checkpoint")
        time.sleep(max(0.0, outage_s - (time.time() - entered)))  # hold the outage for its full length
        _safemode(hadoop_cluster, "leave")
        left = time.time()
        epoch_after_safe_mode = jobs.state_epoch(run) or 0
        jobs.wait(lambda: (jobs.state_epoch(run) or 0) > epoch_after_safe_mode or proc.poll() is not None, 300,
                  "an epoch checkpointed after safe mode")
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        hadoop_cluster.embedded.stop_namenode()
        stopped = time.time()
        time.sleep(outage_s)
        hadoop_cluster.embedded.start_namenode()
        restarted = time.time()
        jobs.stop_when(hadoop_cluster, run, proc, app_id, jobs.epochs_after(run, lambda: True),
                       "two epochs after the NameNode's restart")
        out, err = proc.communicate(timeout=600)
    finally:
        if stopped is not None and restarted is None:
            hadoop_cluster.embedded.start_namenode()
        if entered is not None:
            _safemode(hadoop_cluster, "leave")
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (out + err)[-4000:]
    assert entered is not None and stopped is not None and restarted is not None  # both outages happened
    events = jobs.events(run)
    kinds = [e["event"] for e in events]
    retries = [e for e in events if e["event"] == "hdfs_retry"]
    in_safe_mode = [e for e in retries if e["time"] < stopped]
    assert in_safe_mode and all(e["what"] == "checkpoint" for e in in_safe_mode), in_safe_mode
    assert any("safe mode" in e["error"].lower() for e in in_safe_mode), in_safe_mode
    assert "am_restarted" not in kinds, kinds
    assert "coordinator_failed" not in kinds and kinds[-1] == "finished", kinds
    jobs.assert_stopped(jobs.metrics(run), 4)  # exactly once per epoch
    print(f"safe mode {left - entered:.1f} s: {len(in_safe_mode)} checkpoint retries, the last "
          f"{in_safe_mode[-1]['time'] - entered:.1f} s after it began; NameNode down {restarted - stopped:.1f} s: "
          f"{len(retries) - len(in_safe_mode)} retries {sorted({e['what'] for e in retries if e['time'] >= stopped})}")


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


def test_every_worker_preempted_at_once_the_job_waits_then_trains_on(hadoop_cluster, dataset):
    """Rows 5c and 5d in one job: YARN takes back both workers at once, which are all of them. The
    job waits without a step (no failure) until YARN gives the resources back; once both
    replacements serve, the master restarts the coordinator from the checkpoint (``rescaled``,
    drained false: ``on_all_workers_back``, or ``on_spec_changed`` where YARN put one on the other
    node, a new address), and it succeeds, every step taken once. Before, the coordinator was left
    to reconnect to both: in 3 runs (CI and here, 2026-11-26/27) it sat silent until the hang
    watchdog killed it 120 s later, with both replacements back at their old addresses.

    Sizes: master 2 GB + PS 4.5 GB + 2 x 3.5 GB workers in `train` (13.5 of 16 GB; any placement
    fits). `urgent` asks 3 x 2 GB (+ its master): to bring it to its share the preemption monitor
    must take back more than 3.5 GB from `train`, and takes its newest containers, both workers;
    while `urgent` holds its containers, no 3.5 GB replacement fits on either node."""
    from tfhadoop.yarn.client import skein_client

    # endless epochs (16 once ended before the losses), stopped two epochs after both replacements serve
    steps_per_epoch = 2400 // 300 * -(-300 // 32)
    run, proc = jobs.train(hadoop_cluster, dataset, background=True,
                           extra=["--workers", "2", "--min-workers", "1", "--epochs", str(jobs.ENDLESS),
                                  "--queue", "train",
                                  "--worker-memory", "3584m", "--ps-memory", "4608m"])
    urgent = None
    try:
        app_id = jobs.app_id(proc)
        jobs.wait_epochs(hadoop_cluster, run, proc, 1)
        with skein_client() as client:
            kv = client.connect(app_id).kv
            urgent = hold_containers(client, "urgent", queue="urgent", instances=3, memory=2048)
            lost = wait_for(lambda: len(jobs.lost_events(run)) >= 2 and jobs.lost_events(run), 120, "two preempted workers",
                            interval=1, diagnose=lambda: jobs.diagnosis(hadoop_cluster, run))
            time.sleep(3)  # a closure that was finishing as its worker went is accounted
            before = json.loads(kv["progress"].decode())
            time.sleep(12)  # no worker: the job waits
            during = json.loads(kv["progress"].decode())
            assert kv["workers_alive"] == b"0"  # both replacements requested, neither running: none alive
            urgent.shutdown()
            urgent = None
            t_back = time.time()
        def both_back() -> bool:
            """Both serve, and the coordinator restarted (on their return; after a hang, which the
            assertions below then name)."""
            return jobs.event_seen(run, "replacement_up", 2)() and jobs.event_seen(run, "coordinator_started", 2)()

        jobs.stop_when(hadoop_cluster, run, proc, app_id, jobs.epochs_after(run, both_back),
                       "two epochs after both replacements are back")
        out, err = proc.communicate(timeout=600)
    finally:
        if urgent is not None:
            urgent.shutdown()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (out + err)[-4000:]
    assert sorted((e["role"], e["slot"], e["preempted"]) for e in lost) == [("worker", 0, True), ("worker", 1, True)]
    assert abs(lost[0]["time"] - lost[1]["time"]) < 10, lost  # at once: before either came back
    assert during["steps"] == before["steps"], (before, during)  # waited without a worker
    events = jobs.events(run)
    kinds = [e["event"] for e in events]
    assert all(e.get("exit_status") == -102 for e in events if e["event"] == "container_lost"), events
    ups = [e for e in events if e["event"] == "replacement_up"]
    assert sorted(e["slot"] for e in ups) == [0, 1] and all(e["time"] > t_back for e in ups), ups
    # on a restart, the coordinator's events and what may explain it (a replacement at a new address)
    coordinator = [e for e in events if e["event"].startswith("coordinator") or e["event"].endswith("_moved")
                   or e["event"] in ("replacement_up", "rescaled")]
    assert "coordinator_failed" not in kinds and "coordinator_hung" not in kinds, json.dumps(coordinator, indent=1)
    # With every worker lost, the master restarts the coordinator once both are back, at their
    # addresses or (YARN placed one on the other node) at a new one: one undrained rescale.
    moved = "worker_moved" in kinds
    undrained = [e for e in events if e["event"] == "rescaled" and e.get("drained") is False]
    assert kinds.count("coordinator_started") == 2 and len(undrained) == 1, json.dumps(coordinator, indent=1)
    assert undrained[0]["time"] >= max(e["time"] for e in ups), json.dumps(coordinator, indent=1)
    assert "slot_abandoned" not in kinds and kinds[-1] == "finished", kinds
    metrics = jobs.metrics(run)
    jobs.assert_stopped(metrics, 3)  # exactly once per epoch
    assert metrics["steps"] == len(metrics["epochs"]) * steps_per_epoch  # no step taken twice: nothing redone
    print(f"both workers preempted -> waited {t_back - lost[0]['time']:.1f} s with none -> replacements "
          f"serving {max(e['time'] for e in ups) - t_back:.1f} s after YARN gave the resources back"
          f"; coordinator restarted ({'one moved' if moved else 'both at their addresses'})")
