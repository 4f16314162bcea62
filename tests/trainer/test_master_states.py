"""The master's state machine (trainer/python/master.py, TRANSITIONS) driven through the fault
rows of issue 12 with a fake Skein client and the injected clock: hangs (heartbeats), a
preemption before the cluster is first up, an application master restart."""
from __future__ import annotations

import json

import pytest
from test_train_moved_worker import FakeApp, _kinds, _start, master  # noqa: F401


def _clock(master):
    now = [0.0]
    master.clock = lambda: now[0]
    return now


def _beat(master, role, slot, n):
    """The role's heartbeat thread bumping its key (as trainer/python/role.py does)."""
    master.app.kv[f"hb/{role}/{slot}"] = f"{master.live[(role, slot)]} {n}".encode()


def test_every_event_has_one_handler_and_a_rule():
    from tfhadoop.trainer import master as m

    assert set(m.TRANSITIONS) == set(m.Event)
    for event, rule in m.TRANSITIONS.items():
        assert callable(getattr(m.Master, f"on_{event.value}")), event
        assert rule.states and (rule.next or rule.stay) and rule.does
    assert not {m.State.SUCCEEDED, m.State.FAILED} & set().union(*(r.states for r in m.TRANSITIONS.values()))


def test_a_transition_outside_the_table_is_an_error(master):
    from tfhadoop.trainer import master as m

    _start(master)
    assert master.state == m.State.TRAINING
    master.on_progress = lambda: m.State.WAITING  # a handler that breaks its rule
    master.first_wave_seen = False
    master.app.kv["progress"] = b"{}"
    with pytest.raises(AssertionError, match="progress in training led to waiting"):
        master.step()


def test_events_outside_their_states_are_ignored(master):
    from tfhadoop.trainer import master as m

    assert master.state == m.State.STARTING
    master.dispatch(m.Event.SERVERS_UP)  # only in WAITING
    assert master.state == m.State.STARTING and master.coordinator is None


def test_hung_worker_is_killed_after_the_hang_timeout_and_replaced(master):
    from tfhadoop.trainer import master as m

    now = _clock(master)
    master.job["hang_timeout"] = 30
    _start(master)
    for n in range(1, 5):  # both beat every 10 s: nothing happens
        _beat(master, "worker", 0, n)
        _beat(master, "worker", 1, n)
        now[0] += 10
        assert master.step() is None
    assert "hang_detected" not in _kinds(master)
    hung = master.live[("worker", 1)]
    for n in range(5, 9):  # worker 1 stops (SIGSTOP); worker 0 beats on
        _beat(master, "worker", 0, n)
        now[0] += 10
        master.step()
    master.step()  # YARN reports the killed container's end
    kinds = _kinds(master)
    assert kinds.count("hang_detected") == 1 and master.app.killed == [hung]
    detected = next(e for e in master.events.events if e["event"] == "hang_detected")
    assert (detected["role"], detected["slot"], detected["container"]) == ("worker", 1, hung)
    assert 30 < detected["silent_s"] <= 40
    lost = next(e for e in master.events.events if e["event"] == "container_lost")
    assert lost["hung"] and not lost["preempted"] and lost["container"] == hung
    assert kinds[kinds.index("hang_detected"):][:3] == ["hang_detected", "container_lost", "replacement_requested"]
    assert master.restarts[("worker", 1)] == 1  # a hang is a failure of the slot
    assert master.live[("worker", 1)] != hung and master.state == m.State.TRAINING
    # The replacement is not judged by its predecessor's silence: only by its own beats.
    for n in range(9, 19):
        _beat(master, "worker", 0, n)
        now[0] += 10
        master.step()
    assert _kinds(master).count("hang_detected") == 1


def test_hung_parameter_server_restarts_training_from_the_checkpoint(master):
    from tfhadoop.trainer import master as m

    now = _clock(master)
    master.job["hang_timeout"] = 5
    _start(master)
    _beat(master, "ps", 0, 1)
    master.step()
    old = master.coordinator
    now[0] += 6
    master.step()  # detected and killed; YARN reports the container's end by the next round
    assert _kinds(master)[-1] == "hang_detected" and old.returncode is None
    master.step()
    assert _kinds(master)[-3:] == ["hang_detected", "container_lost", "replacement_requested"]
    assert old.returncode == -9 and master.state == m.State.WAITING  # stopped; the next one waits for the PS
    master.app.serve("ps", 0, "h:1")
    master.step()
    assert master.state == m.State.TRAINING and _kinds(master)[-1] == "coordinator_started"
    assert "coordinator_failed" not in _kinds(master)


def test_preemption_before_the_cluster_is_up_is_replaced_not_fatal(master):
    """Row 5a: YARN takes a container back while the cluster starts: replaced, the start goes on."""
    from tfhadoop.trainer import master as m

    master.spawn_coordinator()
    for role, slot in master.ports:
        master.start(role, slot)
    first = master.live[("worker", 1)]
    c = next(c for c in master.app.containers if c.id == first)
    c.exit_message = "Container preempted by scheduler"
    master.app.lose(first)
    master.app.serve("ps", 0, "h:1")
    master.app.serve("worker", 0, "h:10")
    master.app.serve("worker", 1, "h:11")  # its replacement
    master.publish_cluster(master.wait_addresses(10))
    assert master.live[("worker", 1)] != first and master.state == m.State.STARTING
    master.dispatch(m.Event.CLUSTER_UP)
    assert master.step() is None and master.state == m.State.TRAINING
    assert _kinds(master)[:3] == ["container_lost", "replacement_requested", "cluster_up"]


def test_a_container_that_fails_while_starting_fails_the_job(master):
    master.spawn_coordinator()
    for role, slot in master.ports:
        master.start(role, slot)
    master.app.lose(master.live[("ps", 0)])
    with pytest.raises(RuntimeError, match="ps_0 failed while starting"):
        master.wait_addresses(10)


def _attempt2(tmp_path, monkeypatch, files: dict):
    """A master of attempt 2 whose job directory holds ``files`` (name -> JSON)."""
    from test_train_moved_worker import FakeCoordinator

    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import master as m

    def read_bytes(url):
        name = url.split("/c/", 1)[1]
        if name not in files:
            raise FileNotFoundError(url)
        return json.dumps(files[name]).encode()

    monkeypatch.setattr(m.subprocess, "Popen", FakeCoordinator)
    monkeypatch.setattr(m.time, "sleep", lambda s: None)
    monkeypatch.setattr(hdfs, "write_bytes", lambda *a, **k: None)
    monkeypatch.setattr(hdfs, "append_bytes", lambda *a, **k: None)
    monkeypatch.setattr(hdfs, "read_bytes", read_bytes)
    app = FakeApp()
    app.id = "application_1_0001"
    job = {"checkpoint_dir": "hdfs://nn/c", "ps": 1, "workers": 1, "min_workers": 1, "startup_wait": 0, "queue": "q"}
    return m.Master(app, job, str(tmp_path), attempt=2)


def test_am_attempt_2_resumes_from_the_checkpoint(tmp_path, monkeypatch):
    """Row 1: the new master records where it resumes; the coordinator restores that checkpoint."""
    from tfhadoop.trainer import master as m

    master = _attempt2(tmp_path, monkeypatch, {"latest/state.json": {"epoch": 3, "steps": 225}})
    master.dispatch(m.Event.AM_RESTARTED)
    assert master.state == m.State.STARTING and master.outcome is None
    event = master.events.events[-1]
    assert event["event"] == "am_restarted" and event["attempt"] == 2
    assert event["checkpoint"] == {"epoch": 3, "steps": 225}


def test_am_attempt_2_after_a_decided_failure_fails_again_at_once(tmp_path, monkeypatch):
    """Skein retries an application whose master shut down FAILED: attempt 2 repeats the outcome."""
    result = {"app": "application_1_0001", "status": "FAILED", "diagnostics": "ValueError: model bug"}
    master = _attempt2(tmp_path, monkeypatch, {"result.json": result})
    assert master.run() == ("FAILED", "ValueError: model bug")
    assert master.decided_before and master.coordinator is None and not master.app.containers


def test_event_numbers_continue_across_attempts(tmp_path, monkeypatch):
    events = "\n".join(json.dumps({"event": e, "app": "application_1_0001", "seq": i})
                       for i, e in enumerate(["cluster_up", "coordinator_started"]))
    master = _attempt2(tmp_path, monkeypatch, {})
    from tfhadoop.connectors import hdfs

    monkeypatch.setattr(hdfs, "read_bytes", lambda url: events.encode())
    master.events.resume()
    assert master.events.add("am_restarted")["seq"] == 2


def test_application_attempt_from_the_container_id(monkeypatch):
    from tfhadoop.trainer.master import application_attempt

    monkeypatch.setenv("CONTAINER_ID", "container_e17_1700000000000_0042_02_000001")
    assert application_attempt() == 2
    monkeypatch.setenv("CONTAINER_ID", "container_1700000000000_0042_01_000001")
    assert application_attempt() == 1
    monkeypatch.delenv("CONTAINER_ID")
    assert application_attempt() == 1


def test_the_design_doc_shows_the_current_table():
    from pathlib import Path

    from tfhadoop.trainer.master import transition_table

    doc = (Path(__file__).resolve().parents[2] / "docs/design/trainer.md").read_text()
    shown = doc.split("<!-- transitions:begin -->\n", 1)[1].split("<!-- transitions:end -->", 1)[0]
    assert shown == transition_table(), "run: python -c 'from tfhadoop.trainer.master import transition_table; " \
                                        "print(transition_table())' and paste into docs/design/trainer.md"


def _exit_with(master, rc, error=None):
    import os

    if error:
        with open(os.path.join(master.work, "error.json"), "w") as f:
            json.dump(error, f)
    master.coordinator.returncode = rc
    return master.step()


def test_coordinator_exits_success_model_bug_and_cluster_error(master):
    from tfhadoop.trainer import master as m

    now = _clock(master)
    _start(master)
    assert _exit_with(master, 1, {"type": "UnavailableError", "message": "ps unreachable"}) is None
    assert master.state == m.State.WAITING and master.begin_after == 2  # backoff 2 s, by the injected clock
    master.step()
    assert master.state == m.State.WAITING  # servers up, but the backoff is not over
    now[0] = 2.5
    master.step()
    assert master.state == m.State.TRAINING and _kinds(master)[-1] == "coordinator_started"
    assert _exit_with(master, 1, {"type": "ValueError", "message": "model bug"}) == ("FAILED", "ValueError: model bug")
    assert master.state == m.State.FAILED


def test_coordinator_success_ends_the_job(master):
    from tfhadoop.trainer import master as m

    _start(master)
    assert _exit_with(master, 0) == ("SUCCEEDED", "training finished") and master.state == m.State.SUCCEEDED
    master.app.lose(master.live[("worker", 0)])
    assert master.step() == ("SUCCEEDED", "training finished")  # nothing is handled after the end
    assert "container_lost" not in _kinds(master)


def test_all_workers_preempted_at_once_are_replaced_and_training_waits_for_them(master):
    """Row 5c/5d: every worker preempted in the same round: each replaced at once (not counted),
    the coordinator keeps running (its closures wait for workers), nothing fails."""
    from tfhadoop.trainer import master as m

    _start(master)
    for slot in (0, 1):
        c = next(c for c in master.app.containers if c.id == master.live[("worker", slot)])
        c.exit_message = "Container preempted by scheduler"
        master.app.lose(c.id)
    assert master.step() is None and master.state == m.State.TRAINING
    assert master.restarts == {} and master.coordinator.poll() is None
    assert _kinds(master)[2:] == ["container_lost", "replacement_requested"] * 2
    master.app.serve("worker", 0, "h:10")
    master.app.serve("worker", 1, "h:11")  # back at the same addresses: they rejoin, no restart
    master.step()
    assert _kinds(master).count("replacement_up") == 2 and _kinds(master).count("coordinator_started") == 1
