"""The master's state machine (trainer/python/tfhadoop/trainer/master.py, TRANSITIONS) driven through the fault
rows of issue 12 with a fake Skein client and the injected clock: hangs (heartbeats), a
preemption before the cluster is first up, an application master restart."""
from __future__ import annotations

import json

import pytest

from tests.trainer.fakes import (
    FakeApp,
    beat,
    bring_up,
    event_kinds,
    exit_with,
    fake_master,
    manual_clock,
    with_settings,
)


def test_every_event_has_one_handler_and_a_rule():
    from tfhadoop.trainer import ps_master as m

    assert set(m.TRANSITIONS) == set(m.Event) == set(m.PsMaster.handlers(m.PsMaster.__new__(m.PsMaster)))
    for rule in m.TRANSITIONS.values():
        assert rule.states and (rule.next or rule.stay) and rule.does
    assert not {m.State.SUCCEEDED, m.State.FAILED} & set().union(*(r.states for r in m.TRANSITIONS.values()))


def test_a_transition_outside_the_table_is_an_error(master):
    from tfhadoop.trainer import ps_master as m

    bring_up(master)
    assert master.state == m.State.TRAINING
    master.on_progress = lambda: m.State.WAITING  # a handler that breaks its rule
    master.first_progress_seen = False
    master.app.kv["progress"] = b"{}"
    with pytest.raises(AssertionError, match="progress in training led to waiting"):
        master.step()


def test_events_outside_their_states_are_ignored(master):
    from tfhadoop.trainer import ps_master as m

    assert master.state == m.State.STARTING
    master.dispatch(m.Event.SERVERS_UP)  # only in WAITING
    assert master.state == m.State.STARTING and master.coordinator is None


def test_hung_worker_is_killed_after_the_hang_timeout_and_replaced(master):
    from tfhadoop.trainer import ps_master as m

    master = with_settings(master, hang_timeout=30)
    now = manual_clock(master)
    bring_up(master)
    for n in range(1, 5):  # both beat every 10 s: nothing happens
        beat(master, "worker", 0, n)
        beat(master, "worker", 1, n)
        now[0] += 10
        assert master.step() is None
    assert "hang_detected" not in event_kinds(master)
    hung = master.live[("worker", 1)]
    for n in range(5, 9):  # worker 1 stops (SIGSTOP); worker 0 beats on
        beat(master, "worker", 0, n)
        now[0] += 10
        master.step()
    master.step()  # YARN reports the killed container's end
    kinds = event_kinds(master)
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
        beat(master, "worker", 0, n)
        now[0] += 10
        master.step()
    assert event_kinds(master).count("hang_detected") == 1


def test_hung_parameter_server_restarts_training_from_the_checkpoint(master):
    from tfhadoop.trainer import ps_master as m

    master = with_settings(master, hang_timeout=5)
    now = manual_clock(master)
    bring_up(master)
    beat(master, "ps", 0, 1)
    master.step()
    old = master.coordinator
    now[0] += 6
    master.step()  # detected and killed; YARN reports the container's end by the next round
    assert event_kinds(master)[-1] == "hang_detected" and old.returncode is None
    master.step()
    assert event_kinds(master)[-3:] == ["hang_detected", "container_lost", "replacement_requested"]
    assert old.returncode == -9 and master.state == m.State.WAITING  # stopped; the next one waits for the PS
    master.app.serve("ps", 0, "h:1")
    master.step()
    assert master.state == m.State.TRAINING and event_kinds(master)[-1] == "coordinator_started"
    assert "coordinator_failed" not in event_kinds(master)


def test_preemption_before_the_cluster_is_up_is_replaced_not_fatal(master):
    """Row 5a: YARN takes a container back while the cluster starts: replaced, the start goes on."""
    from tfhadoop.trainer import ps_master as m

    master.launch()
    first = master.live[("worker", 1)]
    c = next(c for c in master.app.containers if c.id == first)
    c.exit_message = "Container preempted by scheduler"
    master.app.lose(first)
    master.app.serve("ps", 0, "h:1")
    master.app.serve("worker", 0, "h:10")
    master.app.serve("worker", 1, "h:11")  # its replacement
    assert master.step() is None  # the loss, its replacement, the spec, then cluster_up
    assert master.live[("worker", 1)] != first and master.state == m.State.WAITING
    assert master.step() is None and master.state == m.State.TRAINING
    assert event_kinds(master)[:3] == ["container_lost", "replacement_requested", "cluster_up"]


def test_a_container_that_fails_while_starting_fails_the_job(master):
    master.launch()
    master.app.lose(master.live[("ps", 0)])
    status, diagnostics = master.step() or ("", "")
    assert status == "FAILED" and "ps_0 failed while starting" in diagnostics


def test_a_failed_start_names_the_error_its_process_left(master):
    """The role process leaves its exception (role.leave_error) before it exits: the job's failure
    and its container_lost event say it, not only YARN's "Container failed during execution"."""
    from tfhadoop.trainer import role

    master.launch()
    ps = master.live[("ps", 0)]
    role.leave_error(master.app, "ps", 0, ps, OSError(98, "Address already in use"))
    master.app.lose(ps)
    status, diagnostics = master.step() or ("", "")
    assert status == "FAILED", diagnostics
    assert "ps_0 failed while starting: OSError: [Errno 98] Address already in use (killed)" in diagnostics
    lost = [e for e in master.events.events if e["event"] == "container_lost"][-1]
    assert lost["error"] == "OSError: [Errno 98] Address already in use", lost


def test_an_error_left_by_an_earlier_container_is_not_the_new_ones():
    from tfhadoop.trainer import role
    from tfhadoop.trainer.slots import role_error

    app = FakeApp()
    role.leave_error(app, "worker", 1, "worker_1", RuntimeError("first line\nsecond line"))
    assert role_error(app.kv, "worker", 1, "worker_1") == "RuntimeError: first line"
    assert role_error(app.kv, "worker", 1, "worker_2") == ""  # the slot's replacement
    assert role_error(app.kv, "worker", 0, "worker_1") == ""
    app.kv["error/worker/0"] = b"not json"
    assert role_error(app.kv, "worker", 0, "worker_0") == ""


def test_a_start_slower_than_the_startup_timeout_fails_saying_why(master):
    now = manual_clock(master)
    master.launch()
    master.app.serve("ps", 0, "h:1")
    assert master.step() is None
    now[0] = master.job.startup_timeout + 1
    status, diagnostics = master.step() or ("", "")
    assert status == "FAILED" and "0 of 2 workers started within" in diagnostics and "queue q" in diagnostics


def test_a_coordinator_that_exits_while_the_cluster_starts_fails_the_job(master):
    master.launch()
    master.coordinator.returncode = 1
    status, diagnostics = master.step() or ("", "")
    assert status == "FAILED" and "the coordinator exited while the cluster started" in diagnostics


def _attempt2(tmp_path, monkeypatch, files: dict):
    """A master of attempt 2 whose job directory holds ``files`` (name -> JSON)."""
    from tfhadoop.connectors import hdfs

    def read_bytes(url):
        name = url.split("/c/", 1)[1]
        if name not in files:
            raise FileNotFoundError(url)
        return json.dumps(files[name]).encode()

    monkeypatch.setattr(hdfs, "read_bytes", read_bytes)
    app = FakeApp()
    app.id = "application_1_0001"
    return fake_master(tmp_path, monkeypatch, app=app, attempt=2, workers=1)


def test_am_attempt_2_resumes_from_the_checkpoint(tmp_path, monkeypatch):
    """Row 1: the new master records where it resumes; the coordinator restores that checkpoint."""
    from tfhadoop.trainer import ps_master as m

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
    app = master.app
    assert isinstance(app, FakeApp)
    assert master.decided_before and master.coordinator is None and not app.containers


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


def test_the_design_doc_shows_the_current_tables():
    from tfhadoop.trainer import design_doc

    assert design_doc.stale() == [], "run: python -m tfhadoop.trainer.design_doc --write"


def test_all_workers_preempted_at_once_are_replaced_and_training_waits_for_them(master):
    """Row 5c/5d: every worker preempted in the same round: each replaced at once (not counted),
    the coordinator keeps running while none is back (its closures wait for workers), nothing
    fails; once both serve again it is restarted from the checkpoint (rescaled, not drained)
    rather than left to reconnect to all of them (which left it silent: the cluster test)."""
    from tfhadoop.trainer import ps_master as m

    bring_up(master)
    for slot in (0, 1):
        c = next(c for c in master.app.containers if c.id == master.live[("worker", slot)])
        c.exit_message = "Container preempted by scheduler"
        master.app.lose(c.id)
    assert master.step() is None and master.state == m.State.TRAINING
    assert master.restarts == {} and master.coordinator.poll() is None
    assert event_kinds(master)[2:] == ["container_lost", "replacement_requested"] * 2
    old = master.coordinator
    master.app.serve("worker", 0, "h:10")
    master.step()  # one back: the coordinator goes on
    assert master.state == m.State.TRAINING and master.coordinator is old and old.poll() is None
    master.app.serve("worker", 1, "h:11")  # both back, at the same addresses
    master.step()
    assert event_kinds(master).count("replacement_up") == 2 and master.state == m.State.WAITING
    assert old.returncode == -9 and master.events.events[-1]["event"] == "rescaled"
    assert master.events.events[-1]["drained"] is False and master.coordinator is not old
    master.step()
    assert master.state == m.State.TRAINING and event_kinds(master).count("coordinator_started") == 2
    assert master.restarts == {} and "coordinator_failed" not in event_kinds(master)


LOST_NODE = "Container released on a *lost* node"  # YARN's diagnostics for exit status -100


def test_a_replacement_is_alive_only_once_its_container_runs(master):
    """``workers_alive`` (the progress line, `status`, the job page's samples, events) counts the
    workers whose container runs: a replacement YARN has not started yet (waiting for resources)
    is not alive, though the job counts on it (--min-workers decisions)."""
    from tfhadoop.trainer.protocol import KV_WORKERS_ALIVE

    bring_up(master)
    assert master.app.kv[KV_WORKERS_ALIVE] == b"2"
    c = next(c for c in master.app.containers if c.id == master.live[("worker", 1)])
    c.exit_message = "Container preempted by scheduler"
    master.app.lose(c.id)
    master.step()  # lost; its replacement requested
    replacement = master.app.containers[-1]
    assert master.live[("worker", 1)] == replacement.id
    replacement.state = "REQUESTED"  # no resources for it yet
    master.step()
    assert master.app.kv[KV_WORKERS_ALIVE] == b"1" and master.workers_alive() == 1 and master.workers_held() == 2
    replacement.state = "RUNNING"
    master.step()
    assert master.app.kv[KV_WORKERS_ALIVE] == b"2"


def test_the_master_asks_yarn_which_workers_run_once_a_round(master, monkeypatch):
    """The samples, the alive count and the avoided workers all need it; one query serves them."""
    bring_up(master)
    calls = []
    real = master.app.get_containers
    monkeypatch.setattr(master.app, "get_containers",
                        lambda services=None, states=None: calls.append(states) or real(services, states))
    for _ in range(3):
        master.step()
    assert calls.count(["RUNNING"]) == 3, calls


def test_containers_of_a_lost_node_are_replaced_elsewhere_and_not_counted(master):
    """Rows 3 and 7: the node holding the PS and worker 1 is lost (YARN: -100). Neither loss is the
    slot's failure; the coordinator is stopped (the PS's variables are gone), both are replaced,
    come back on another host, and the next coordinator gets the moved addresses."""
    from tfhadoop.trainer import ps_master as m

    bring_up(master)
    old = master.coordinator
    for role, slot in (("ps", 0), ("worker", 1)):
        c = next(c for c in master.app.containers if c.id == master.live[(role, slot)])
        c.exit_message = LOST_NODE
        master.app.lose(c.id)
    master.step()
    lost = [e for e in master.events.events if e["event"] == "container_lost"]
    assert [(e["role"], e["slot"], e["node_lost"], e["preempted"]) for e in lost] == \
        [("ps", 0, True, False), ("worker", 1, True, False)]
    assert master.restarts == {}  # not counted against the slots' retries
    assert old.returncode == -9 and master.state == m.State.WAITING
    master.app.serve("ps", 0, "other:1")
    master.app.serve("worker", 1, "other:11")
    master.step()
    assert {"ps_moved", "worker_moved"} <= set(event_kinds(master))
    assert master.state == m.State.TRAINING and event_kinds(master)[-1] == "coordinator_started"
    with open(f"{master.work}/cluster.json") as f:
        given = json.load(f)
    assert given["ps"] == ["other:1"] and given["worker"] == ["h:10", "other:11"]
    assert "coordinator_failed" not in event_kinds(master)


def test_a_coordinator_is_not_given_servers_whose_heartbeat_stopped(master):
    """A node vanishes: its PS's "up" key stays until YARN declares the node lost. The coordinator
    fails (Unavailable); its successor waits for the PS instead of failing against it again."""
    from tfhadoop.trainer import ps_master as m

    now = manual_clock(master)
    bring_up(master)
    for role, slot in master.live:
        beat(master, role, slot, 1)
    master.step()
    exit_with(master, 1, {"type": "UnavailableError", "message": "Socket closed"})
    assert master.state == m.State.WAITING
    for n in range(2, 8):  # the workers beat on; the PS's node is gone
        now[0] += 3
        beat(master, "worker", 0, n)
        beat(master, "worker", 1, n)
        master.step()
    assert master.state == m.State.WAITING and event_kinds(master).count("coordinator_started") == 1
    ps = next(c for c in master.app.containers if c.id == master.live[("ps", 0)])
    ps.exit_message = LOST_NODE
    master.app.lose(ps.id)  # the NodeManager's expiry: YARN reports the container lost
    master.step()
    master.app.serve("ps", 0, "other:1")
    beat(master, "ps", 0, 1)
    master.step()
    assert master.state == m.State.TRAINING and event_kinds(master)[-1] == "coordinator_started"
    assert master.cluster["ps"] == ["other:1"] and master.restarts == {}


def test_preemption_during_a_rescale_checkpoint_is_folded_into_the_restart(master):
    """Row 5b: a worker is preempted while the coordinator checkpoints to exit for a new spec
    (RESCALING): replaced, not counted; the restart waits for it and gets one spec with both."""
    from tfhadoop.trainer import ps_master as m
    from tfhadoop.trainer.protocol import RESCALE_EXIT

    bring_up(master, workers=(0,))  # worker 1 arrives late: the coordinator is asked to rescale
    master.app.serve("worker", 1, "h:11")
    master.step()
    master.step()
    assert master.state == m.State.RESCALING
    c = next(c for c in master.app.containers if c.id == master.live[("worker", 0)])
    c.exit_message = "Container preempted by scheduler"
    master.app.lose(c.id)
    master.step()
    assert master.state == m.State.RESCALING and master.restarts == {}
    master.coordinator.returncode = RESCALE_EXIT  # its checkpoint is written; it exits for the restart
    master.step()
    assert master.state == m.State.WAITING  # worker 0's replacement is not up yet
    master.app.serve("worker", 0, "h:10")
    master.step()
    assert master.state == m.State.TRAINING and event_kinds(master)[-1] == "coordinator_started"
    with open(f"{master.work}/cluster.json") as f:
        assert json.load(f)["worker"] == ["h:10", "h:11"]
    assert "coordinator_failed" not in event_kinds(master)


def test_an_abandoned_slot_is_reopened_when_a_new_coordinator_needs_it(master):
    """The abandoned-slot gap: worker 1 fails past max_worker_restarts and its slot stays empty
    while worker 0 trains; then the PS is lost. The next coordinator's spec still names worker 1
    (task indices cannot move), so the slot gets a replacement again and the coordinator waits for
    it, instead of being handed a worker that is gone."""
    from tfhadoop.trainer import ps_master as m

    master = with_settings(master, max_worker_restarts=0)
    bring_up(master)
    master.app.lose(master.live[("worker", 1)])
    master.step()
    assert event_kinds(master)[-1] == "slot_abandoned" and master.state == m.State.TRAINING
    master.app.lose(master.live[("ps", 0)])
    master.step()
    assert "slot_reopened" in event_kinds(master) and ("worker", 1) in master.live
    master.app.serve("ps", 0, "h:1")
    master.step()
    assert master.state == m.State.WAITING  # worker 1's replacement is not serving yet
    master.app.serve("worker", 1, "h:11")
    master.step()
    assert master.state == m.State.TRAINING and event_kinds(master)[-1] == "coordinator_started"
