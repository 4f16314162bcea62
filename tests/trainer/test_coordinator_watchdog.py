"""The coordinator's watchdog on the PS master (phases.py reports, watchdogs.CoordinatorWatchdog
judges): a silent coordinator, one stuck in a phase, long phases that are not hangs, and the
limit on coordinator restarts, with a fake Skein client and the injected clock."""
from __future__ import annotations

import json

import pytest

from tests.trainer.fakes import FakeApp, beat, bring_up, event_kinds, manual_clock, with_settings


def _report(master, phase, mark, beat):
    """The coordinator's PhaseReporter writing its report (as its heartbeat thread does)."""
    master.app.kv["coordinator"] = json.dumps({"pid": master.coordinator.pid, "phase": phase, "mark": mark,
                                               "beat": beat}).encode()


def _beat_servers(master, n):
    for role, slot in master.live:
        beat(master, role, slot, n)


def test_silent_coordinator_is_killed_and_restarted_from_the_checkpoint(master):
    from tfhadoop.trainer import ps_master as m

    master = with_settings(master, hang_timeout=30)
    now = manual_clock(master)
    bring_up(master)
    first = master.coordinator
    for n in range(1, 5):  # beats every 10 s and makes progress: nothing happens
        _report(master, "training", n, n)
        _beat_servers(master, n)
        now[0] += 10
        assert master.step() is None
    for n in range(5, 9):  # SIGSTOPped: the report stays as it was; the servers beat on
        _beat_servers(master, n)
        now[0] += 10
        master.step()
    hung = [e for e in master.events.events if e["event"] == "coordinator_hung"]
    assert len(hung) == 1 and (hung[0]["phase"], hung[0]["reason"]) == ("training", "silent"), hung
    assert 30 < hung[0]["silent_s"] <= 40 and hung[0]["limit_s"] == 30
    assert first.returncode == -9 and master.coordinator is not first  # killed; a new one waits
    assert master.state == m.State.WAITING and master.coordinator_failures == 1
    assert "coordinator_failed" not in event_kinds(master)  # its -9 is the master's doing, never polled
    now[0] += 2  # the backoff
    _beat_servers(master, 9)
    master.step()
    assert master.state == m.State.TRAINING and event_kinds(master)[-2:] == ["coordinator_hung", "coordinator_started"]
    # The new coordinator is judged by its own report only: the old one's (another pid) is ignored.
    for n in range(10, 16):
        _beat_servers(master, n)
        master.app.kv["coordinator"] = json.dumps({"pid": first.pid, "phase": "training", "mark": n,
                                                   "beat": n}).encode()
        now[0] += 10
        master.step()
    assert event_kinds(master).count("coordinator_hung") == 1  # never beat yet: startup covers it, not the watchdog


def test_coordinator_stuck_in_one_phase_past_its_limit_is_restarted(master):
    from tfhadoop.trainer import ps_master as m

    master = with_settings(master, phase_timeouts={**master.job.phase_timeouts, "checkpointing": 100})
    now = manual_clock(master)
    bring_up(master)
    _report(master, "training", 1, 1)
    master.step()
    for n in range(2, 12):  # the heartbeat thread beats on; the main thread is stuck in a save
        _report(master, "checkpointing", 2, n)
        _beat_servers(master, n)
        now[0] += 10
        master.step()
    assert "coordinator_hung" not in event_kinds(master)  # 90 s in the phase: within its limit
    now[0] += 15
    _report(master, "checkpointing", 2, 12)
    master.step()
    hung = master.events.events[-1]
    assert (hung["event"], hung["phase"], hung["reason"], hung["limit_s"]) == \
        ("coordinator_hung", "checkpointing", "stuck", 100)
    assert 100 < hung["in_phase_s"] <= 120 and hung["silent_s"] == 0
    assert master.state == m.State.WAITING


def test_a_long_evaluation_an_hdfs_wait_and_no_live_worker_are_not_hangs(master):
    master = with_settings(master, hang_timeout=30)
    now = manual_clock(master)
    bring_up(master)
    n = 0

    def run_for(seconds, phase, mark=lambda n: 1):
        nonlocal n
        for _ in range(int(seconds // 10)):
            n += 1
            _report(master, phase, mark(n), n)
            _beat_servers(master, n)
            now[0] += 10
            assert master.step() is None

    run_for(3000, "evaluating")  # 50 min of one evaluation: its limit is 2 h
    run_for(900, "hdfs_retry", mark=lambda n: n // 6)  # retries every minute for 15 min: each one is progress
    master.app.lose(master.live[("worker", 0)])
    master.app.lose(master.live[("worker", 1)])
    master.step()
    assert master.coordinator_watch.workers_serving() == 0  # both replaced; the replacements do not serve yet
    run_for(1200, "training")  # no progress while no worker serves: waiting for the replacements
    assert "coordinator_hung" not in event_kinds(master)


def test_a_coordinator_that_keeps_hanging_fails_the_job_after_max_coordinator_restarts(master):
    from tfhadoop.trainer import ps_master as m

    master = with_settings(master, hang_timeout=5, max_coordinator_restarts=1)
    now = manual_clock(master)
    bring_up(master)
    for _ in range(2):
        now[0] += 2  # the backoff
        _beat_servers(master, int(now[0]))
        master.step()  # the new coordinator begins (the first one has)
        assert master.state == m.State.TRAINING
        _report(master, "training", 1, 1)
        master.step()
        now[0] += 40  # silent past the hang timeout
        _beat_servers(master, int(now[0]))
        master.step()  # detected
    assert event_kinds(master).count("coordinator_hung") == 2
    assert master.outcome[0] == "FAILED" and "coordinator hung (silent for 40 s)" in master.outcome[1]


def test_phase_timeouts_are_checked_and_merged_over_the_defaults():
    from tfhadoop.errors import CommandError
    from tfhadoop.trainer.job import DEFAULT_PHASE_TIMEOUTS, JobSpec

    base = {"model": "m:f", "data": "hdfs:///d", "checkpoint_dir": "hdfs:///c", "export_dir": "hdfs:///e"}
    spec = JobSpec.from_dict({**base, "phase_timeouts": "evaluating=60, training=30"})
    assert spec.phase_timeouts == {**DEFAULT_PHASE_TIMEOUTS, "evaluating": 60.0, "training": 30.0}
    assert JobSpec.from_dict(base).validate().phase_timeouts == DEFAULT_PHASE_TIMEOUTS
    for bad, message in (("eval=5", "unknown phase 'eval'"), ("training", "PHASE=SECONDS"),
                         ("training=-1", "training must be positive"), ("training=x", "not a number")):
        with pytest.raises(CommandError, match=message):
            JobSpec.from_dict({**base, "phase_timeouts": bad})


def test_phase_reporter_beats_and_marks():
    from tfhadoop.trainer.phases import PhaseReporter

    app = FakeApp()
    phases = PhaseReporter(app, period=0.01)
    phases.enter("connecting")
    first = json.loads(app.kv["coordinator"])
    assert (first["phase"], first["mark"], first["beat"]) == ("connecting", 1, 0)
    phases.enter("training")
    with phases.during("checkpointing"):
        assert json.loads(app.kv["coordinator"])["phase"] == "checkpointing"
    phases.progress()
    phases.start()
    import time

    time.sleep(0.1)
    last = json.loads(app.kv["coordinator"])
    assert last["phase"] == "training" and last["mark"] == 5 and last["beat"] >= 2
    with pytest.raises(AssertionError):
        phases.enter("napping")


def test_a_coordinator_silent_while_a_worker_hangs_is_not_killed(master):
    """On the embedded cluster a stopped worker also stopped the coordinator's heartbeat thread (a
    TensorFlow call waiting on it holds the GIL): only the worker is killed and replaced."""
    master = with_settings(master, hang_timeout=8)
    now = manual_clock(master)
    bring_up(master)
    _report(master, "training", 1, 1)
    _beat_servers(master, 1)
    master.step()
    for n in range(2, 12):  # worker 1 stops; the coordinator's report stops with it
        beat(master, "ps", 0, n)
        beat(master, "worker", 0, n)
        now[0] += 2
        master.step()
    kinds = event_kinds(master)
    assert "hang_detected" in kinds and "coordinator_hung" not in kinds, kinds
    master.app.serve("worker", 1, "h:11")  # the replacement serves at the same address
    _beat_servers(master, 20)
    master.step()
    for n in range(21, 27):  # ... and the coordinator beats again
        _report(master, "training", n, n)
        _beat_servers(master, n)
        now[0] += 2
        master.step()
    assert "coordinator_hung" not in event_kinds(master)
    for n in range(27, 33):  # the coordinator stops again while every server is heard: killed
        _beat_servers(master, n)
        now[0] += 2
        master.step()
    assert event_kinds(master).count("coordinator_hung") == 1
