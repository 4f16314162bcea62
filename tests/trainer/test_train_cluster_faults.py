"""Faults of the cluster under a job (fault rows of issue 12) on the embedded YARN cluster, driven
through `tfhadoop train`: a lost node's roles move to another host; HDFS outages (safe mode, a
NameNode restart) are waited out; YARN preempting every worker at once is waited out until the
resources come back. Each asserts SUCCEEDED, exact per-epoch counts and the event log. A job's own
processes that hang or crash: test_train_process_faults."""
from __future__ import annotations

import json
import time

import pytest

from tests.trainer import jobs
from tests.trainer.lost_node import EXTRA_HOST, job_on_an_extra_node
from tests.trainer.preemption import hold_containers
from tests.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_lost_node_roles_are_replaced_on_another_host_and_training_resumes(hadoop_cluster, dataset):
    """Rows 3 and 7: a NodeManager on 127.0.0.2 holds the PS and both workers; it is killed with its
    containers (a machine losing power). YARN declares it LOST after the embedded cluster's short
    expiry (-100); every role is replaced on another host (ps_moved, worker_moved), the coordinator
    restarts from the checkpoint, the job succeeds with exact counts."""
    def start():  # endless epochs: stopped two epochs after the coordinator's restart
        return jobs.train(hadoop_cluster, dataset, background=True,
                          extra=[*jobs.FAULT_JOB, "--workers", "2", "--epochs", str(jobs.ENDLESS), "--ps-memory", "2g",
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
                           extra=[*jobs.FAULT_JOB, "--workers", "2", "--epochs", str(jobs.ENDLESS)])
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
                           extra=[*jobs.FAULT_JOB, "--workers", "2", "--min-workers", "1", "--epochs",
                                  str(jobs.ENDLESS), "--queue", "train",
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
