"""What the two masters share (master_core, slots): each behaviour asserted on the ring master,
where it differed before both were built on one core (issue 28 §3), and the tables' handlers."""
from __future__ import annotations

import json

import pytest

from tests.trainer.fakes import RING_JOB as SMALL_RING
from tests.trainer.fakes import FakeApp, ManualClock, event_kinds, settings

LOST_NODE = "Container released on a *lost* node"  # YARN's diagnostics for exit status -100
RING_JOB = {**SMALL_RING, "startup_wait": 30, "gang_timeout": 100, "hang_timeout": 10**9, "max_worker_restarts": 0}


@pytest.fixture
def appended(monkeypatch):
    """The event lines appended to HDFS (a list the test may make refuse: ``refuse[0] = True``)."""
    from tfhadoop.connectors import hdfs

    lines, refuse = [], [False]

    def append(url, data):
        if refuse[0]:
            raise OSError("safe mode")
        lines.extend(data.decode().splitlines())

    monkeypatch.setattr(hdfs, "write_bytes", lambda *a, **k: None)
    monkeypatch.setattr(hdfs, "append_bytes", append)
    return lines, refuse


def _ring(app=None, attempt=1, **job):
    from tfhadoop.trainer import ring_master

    master = ring_master.RingMaster(app or FakeApp(), settings(RING_JOB, **job), "/tmp", clock=ManualClock(),
                                    attempt=attempt)
    return master


def test_both_tables_have_one_bound_handler_per_event():
    from tfhadoop.trainer import ps_master, ring_master

    tables = ((ps_master.TRANSITIONS, ps_master.Event, ps_master.PsMaster.__new__(ps_master.PsMaster).handlers()),
              (ring_master.TRANSITIONS, ring_master.Event,
               ring_master.RingMaster.__new__(ring_master.RingMaster).handlers()))
    for transitions, events, handlers in tables:
        assert set(transitions) == set(events) == set(handlers), events
        assert all(callable(h) for h in handlers.values())


def test_a_ring_member_on_a_lost_node_is_replaced_at_once_not_counted(appended):
    """Before: only "preempted" was recognised, so with max_worker_restarts 0 the slot was abandoned."""
    master = _ring()
    master.launch()
    c = next(c for c in master.app.containers if c.id == "worker_1")
    c.exit_message = LOST_NODE
    master.app.lose("worker_1")
    master.step()
    lost = next(e for e in master.events.events if e["event"] == "container_lost")
    assert lost["node_lost"] and not lost["preempted"]
    assert "slot_abandoned" not in event_kinds(master) and master.restarts == {}
    assert master.live[("worker", 1)] != "worker_1"  # replaced at once


def test_ring_master_attempt_2_after_a_decided_failure_fails_again_at_once(appended, monkeypatch):
    """Before: attempt 2 never read result.json, so a job that had ended could run again."""
    from tfhadoop.connectors import hdfs

    result = {"app": "application_1_0001", "status": "FAILED", "diagnostics": "ValueError: model bug"}
    monkeypatch.setattr(hdfs, "read_bytes", lambda url: json.dumps(result).encode() if url.endswith("result.json")
                        else (_ for _ in ()).throw(FileNotFoundError(url)))
    app = FakeApp()
    app.id = "application_1_0001"
    master = _ring(app, attempt=2)
    assert master.run() == ("FAILED", "ValueError: model bug")
    assert master.decided_before and not app.containers


def test_ring_master_retries_an_unwritten_event_line_the_next_round(appended):
    """Before: the ring master never flushed the event log in its loop; a refused line waited for
    the next event."""
    lines, refuse = appended
    master = _ring()
    refuse[0] = True
    master.launch()
    master.app.lose("worker_1")
    master.step()  # container_lost, slot_abandoned (max_worker_restarts 0): refused
    assert master.events.unwritten and not lines
    refuse[0] = False
    master.step()  # no new event: the round retries the lines
    assert not master.events.unwritten and [json.loads(x)["event"] for x in lines][:2] == \
        ["container_lost", "slot_abandoned"]


class ServingApp(FakeApp):
    """A FakeApp whose containers publish their address and serve as soon as they are requested."""

    def add_container(self, service, env=None):
        from tfhadoop.trainer import protocol

        c = super().add_container(service, env)
        slot = int((env or {})[protocol.ENV_SLOT])
        self.serve(service, slot, f"{service}-host:{slot}")
        return c


def test_ps_master_run_starts_in_its_table_then_trains_to_the_end(tmp_path, monkeypatch):
    """``run``: no loop outside the table waits for the containers; the first rounds assemble the
    spec (STARTING), bring the cluster up and hand the coordinator the spec; its exit 0 ends it."""
    from tests.trainer.fakes import fake_master

    master = fake_master(tmp_path, monkeypatch, app=ServingApp())
    states = []
    step = master.step

    def observed_step():
        states.append(master.state.value)
        if master.state.value == "training" and master.coordinator is not None:
            master.coordinator.returncode = 0
        return step()

    monkeypatch.setattr(master, "step", observed_step)
    assert master.run() == ("SUCCEEDED", "training finished")
    assert states[0] == "starting" and "training" in states
    assert event_kinds(master) == ["cluster_up", "coordinator_started", "succeeded"]
