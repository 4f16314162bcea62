"""How the master answers a coordinator's exit (trainer/python/tfhadoop/trainer/ps_coordination.py),
with a fake Skein client and the injected clock: success, a model bug, a cluster error, a native
crash, a port another process took."""
from __future__ import annotations

from tests.trainer.fakes import bring_up, event_kinds, exit_with, manual_clock


def test_coordinator_exits_success_model_bug_and_cluster_error(master):
    from tfhadoop.trainer import ps_master as m

    now = manual_clock(master)
    bring_up(master)
    assert exit_with(master, 1, {"type": "UnavailableError", "message": "ps unreachable"}) is None
    assert master.state == m.State.WAITING and master.begin_after == 2  # backoff 2 s, by the injected clock
    master.step()
    assert master.state == m.State.WAITING  # servers up, but the backoff is not over
    now[0] = 2.5
    master.step()
    assert master.state == m.State.TRAINING and event_kinds(master)[-1] == "coordinator_started"
    assert exit_with(master, 1, {"type": "ValueError", "message": "model bug"}) == ("FAILED", "ValueError: model bug")
    assert master.state == m.State.FAILED


def test_a_coordinator_killed_by_sigsegv_is_restarted_once_then_the_same_crash_fails(master):
    """A crash inside TensorFlow's runtime (a CI run: SIGSEGV 6 s after a rescale) restarts the
    coordinator from the checkpoint like a cluster error; the same crash twice in a row fails."""
    from tfhadoop.trainer import ps_master as m

    now = manual_clock(master)
    bring_up(master)
    assert exit_with(master, -11) is None
    failed = [e for e in master.events.events if e["event"] == "coordinator_failed"]
    assert [(e["exit_code"], e["error_type"]) for e in failed] == [(-11, "NativeCrash")]
    assert master.state == m.State.WAITING and master.coordinator_failures == 1
    now[0] = 2.5
    master.step()
    assert master.state == m.State.TRAINING and event_kinds(master)[-1] == "coordinator_started"
    outcome = exit_with(master, -11)
    assert outcome is not None and outcome[0] == "FAILED" and "killed by SIGSEGV" in outcome[1]


def test_a_coordinator_whose_port_was_taken_restarts_on_a_new_port(master, monkeypatch):
    """The chief's port is chosen by the master and bound by the coordinator seconds later;
    another process may take it meanwhile (a CI run, 2026-11-28, failed the job so). The master
    gives the next coordinator a new port, as often as it happens; a model bug still fails."""
    from tfhadoop.trainer import ps_master as m

    ports = iter([41001, 41002, 41003])
    monkeypatch.setattr(m, "free_port", lambda: next(ports))
    now = manual_clock(master)
    bring_up(master)
    clash = {"type": "UnknownError", "message": "Could not start gRPC server"}
    for n, port in ((1, 41002), (2, 41003)):  # bring_up took 41001; the same clash twice: no "repeated" failure
        assert exit_with(master, 1, clash) is None
        assert master.state == m.State.WAITING and master.cluster["chief"][0].endswith(f":{port}")
        now[0] += 40
        master.step()
        started = [e for e in master.events.events if e["event"] == "coordinator_started"]
        assert master.state == m.State.TRAINING and len(started) == n + 1, event_kinds(master)
        assert started[-1]["cluster"]["chief"][0].endswith(f":{port}"), started[-1]
    assert exit_with(master, 1, {"type": "UnknownError", "message": "model bug"}) == ("FAILED", "UnknownError: model bug")


def test_coordinator_success_ends_the_job(master):
    from tfhadoop.trainer import ps_master as m

    bring_up(master)
    assert exit_with(master, 0) == ("SUCCEEDED", "training finished") and master.state == m.State.SUCCEEDED
    master.app.lose(master.live[("worker", 0)])
    assert master.step() == ("SUCCEEDED", "training finished")  # nothing is handled after the end
    assert "container_lost" not in event_kinds(master)
