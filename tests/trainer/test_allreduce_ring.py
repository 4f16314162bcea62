"""``--strategy allreduce`` without a cluster: the job spec's checks, the rounds every worker
computes alike, and the ring master's state machine against a fake Skein client."""
from __future__ import annotations

import json
import sys

import pytest

from tests.trainer.fakes import RING_JOB, FakeApp, ManualClock, event_kinds, settings
from tfhadoop.errors import CommandError
from tfhadoop.trainer import protocol
from tfhadoop.trainer.allreduce import cut_round, plan_rounds, round_steps
from tfhadoop.trainer.job import JobSpec
from tfhadoop.trainer.protocol import STOP_EXIT
from tfhadoop.trainer.tasks import Task

BASE = {"model": "m:f", "data": "hdfs:///d", "checkpoint_dir": "/c", "export_dir": "/e"}


def test_strategy_defaults_to_ps_and_allreduce_has_no_parameter_servers(tmp_path):
    assert JobSpec.from_dict(BASE).strategy == "ps"
    job = JobSpec.from_dict({**BASE, "strategy": "allreduce", "workers": 3})
    assert job.ps == 0 and job.gang_timeout == 300
    path = tmp_path / "job.yaml"
    path.write_text("model: m:f\ndata: /d\ncheckpoint-dir: /c\nexport-dir: /e\nstrategy: allreduce\n")
    assert JobSpec.from_yaml(str(path)).strategy == "allreduce"


@pytest.mark.parametrize("change, message", [
    ({"strategy": "allreduce", "ps": 2}, "--ps is not allowed with --strategy allreduce"),
    ({"strategy": "horovod"}, "--strategy must be one of ps, allreduce, got 'horovod'"),
    ({"strategy": "allreduce", "gang_timeout": 0}, "--gang-timeout must be positive"),
])
def test_strategy_checks(change, message):
    with pytest.raises(CommandError, match=message):
        JobSpec.from_dict({**BASE, **change})


def _tasks(*counts):
    return [Task(i, f"hdfs://nn/s{i}", 0, c) for i, c in enumerate(counts)]


def test_rounds_give_each_worker_one_task_and_the_last_round_may_be_short():
    tasks = _tasks(300, 300, 300, 120, 300)
    rounds = plan_rounds(tasks, 2)
    assert [[t.id if t else None for t in r] for r in rounds] == [[0, 1], [2, 3], [4, None]]
    assert sorted(t.id for r in rounds for t in r if t) == [0, 1, 2, 3, 4]  # every task in exactly one round
    assert [round_steps(r, 32) for r in rounds] == [10, 10, 10]  # the longest task sets the round's steps
    assert plan_rounds(tasks, 5) == [tasks]


def test_steps_budget_cuts_a_round():
    r = plan_rounds(_tasks(300, 100), 2)[0]
    cut = cut_round(r, 3, 32)
    assert [t.count for t in cut] == [96, 96] and round_steps(cut, 32) == 3
    assert cut_round(r, 10, 32) == r


# -- the ring master ------------------------------------------------------------------------------
@pytest.fixture
def make_ring(monkeypatch):
    """A ring master of two workers whose containers were asked for, with settings changes."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import ring_master as am

    monkeypatch.setattr(hdfs, "write_bytes", lambda *a, **k: None)
    monkeypatch.setattr(hdfs, "append_bytes", lambda *a, **k: None)

    def make(**changes):
        job = settings(RING_JOB, **{"startup_wait": 30, "gang_timeout": 100, "hang_timeout": 10**9, **changes})
        master = am.RingMaster(FakeApp(), job, "/tmp", clock=ManualClock())
        for slot in range(2):
            master.start(slot)
        return master

    return make


@pytest.fixture
def ring(make_ring):
    return make_ring()


def _ring(master):
    return json.loads(master.app.kv["ring"].decode())


def test_gang_waits_for_every_worker_then_forms_ring_one(ring):
    ring.app.serve("worker", 0, "h:1")
    ring.step()
    assert ring.state.value == "gang" and "ring" not in ring.app.kv  # no step before the gang is there
    ring.app.serve("worker", 1, "h:2")
    ring.step()
    assert ring.state.value == "training" and _ring(ring) == {"gen": 1, "slots": [0, 1], "worker": ["h:1", "h:2"]}
    assert event_kinds(ring)[:2] == ["cluster_up", "ring_formed"]


def test_gang_starts_with_min_workers_after_startup_wait(ring):
    ring.app.serve("worker", 1, "h:2")
    ring.clock.now = 31
    ring.step()
    assert _ring(ring)["slots"] == [1]


def test_gang_timeout_releases_the_containers_and_says_why(make_ring):
    ring = make_ring(min_workers=2)
    ring.app.serve("worker", 0, "h:1")
    ring.clock.now = 101
    outcome = ring.step()
    assert outcome[0] == "FAILED" and "gang timeout: 1 of 2 workers started within 100 s" in outcome[1]
    assert "queue q" in outcome[1] and sorted(ring.app.killed) == ["worker_0", "worker_1"]
    assert event_kinds(ring)[-1] == "gang_timeout"


def _formed(ring):
    ring.app.serve("worker", 0, "h:1")
    ring.app.serve("worker", 1, "h:2")
    ring.step()


def test_preempted_member_reforms_with_survivors_then_grows_back_at_a_round_boundary(ring):
    _formed(ring)
    c = ring.app.containers[1]
    c.exit_message = "Container preempted by scheduler"
    ring.app.lose(c.id)
    ring.step()  # lost -> REFORMING -> the survivor alone forms generation 2 at once
    assert _ring(ring) == {"gen": 2, "slots": [0], "worker": ["h:1"]}
    assert ring.restarts == {} and "replacement_requested" in event_kinds(ring)  # a preemption is not counted
    ring.app.serve("worker", 1, "h:3")  # the replacement arrives
    ring.step()
    assert ring.state.value == "stopping" and ring.app.kv["ring_stop"] == b"2"
    ring.app.kv["ring_exit/0"] = json.dumps({"gen": 2, "rc": STOP_EXIT, "error": None}).encode()
    ring.step()
    assert _ring(ring) == {"gen": 3, "slots": [0, 1], "worker": ["h:1", "h:3"]}
    ring.app.kv["ring_exit/0"] = json.dumps({"gen": 3, "rc": 0, "error": None}).encode()
    assert ring.step() == ("SUCCEEDED", "training finished")


def test_model_bug_fails_at_once_and_a_cluster_error_restarts_after_its_grace(ring):
    from tfhadoop.trainer.ring_master import EXIT_GRACE_S

    _formed(ring)
    ring.app.kv["ring_exit/1"] = json.dumps({"gen": 1, "rc": 1, "error": {"type": "UnavailableError",
                                                                        "message": "peer gone"}}).encode()
    ring.step()
    assert ring.state.value == "training"  # waits for the loss that may explain it
    ring.clock.now += EXIT_GRACE_S
    ring.step()  # -> REFORMING (counted), then the same members form generation 2
    ring.step()
    assert ring.failures == 1 and _ring(ring)["gen"] == 2 and "training_process_failed" in event_kinds(ring)
    ring.app.kv["ring_exit/0"] = json.dumps({"gen": 2, "rc": 1, "error": {"type": "ValueError",
                                                                        "message": "model bug"}}).encode()
    assert ring.step() == ("FAILED", "ValueError: model bug")


def test_a_training_process_killed_by_sigsegv_restarts_the_generation_once(ring):
    """A native crash (no error of its own, killed by SIGSEGV) restarts the generation at once, as
    a hang does; the same crash again fails the job."""
    _formed(ring)
    ring.app.kv["ring_exit/1"] = json.dumps({"gen": 1, "rc": -11, "error": None}).encode()
    ring.step()  # -> REFORMING, counted, no grace: no container loss explains a crash
    ring.step()
    assert ring.failures == 1 and _ring(ring)["gen"] == 2
    failed = next(e for e in ring.events.events if e["event"] == "training_process_failed")
    assert (failed["exit_code"], failed["error_type"]) == (-11, "NativeCrash")
    ring.app.kv["ring_exit/0"] = json.dumps({"gen": 2, "rc": -11, "error": None}).encode()
    assert ring.step() == ("FAILED", "NativeCrash: training process killed by SIGSEGV")


def test_a_silent_member_is_killed_as_hung_and_the_ring_reforms(make_ring):
    """The ring master's hang detection: the heartbeat of worker 0 stops changing, worker 1's goes
    on; after ``hang_timeout`` s worker 0's container is killed and its loss re-forms the ring."""
    ring = make_ring(hang_timeout=60)
    _formed(ring)
    ring.app.kv["hb/worker/0"], ring.app.kv["hb/worker/1"] = b"worker_0 1", b"worker_1 1"
    ring.step()
    for t, n in ((30, 2), (61.5, 3)):
        ring.clock.now = t
        ring.app.kv["hb/worker/1"] = f"worker_1 {n}".encode()
        ring.step()
    assert ring.app.killed == ["worker_0"]
    hang = next(e for e in ring.events.events if e["event"] == "hang_detected")
    assert hang["slot"] == 0 and hang["silent_s"] == 61.5
    ring.step()
    assert "container_lost" in event_kinds(ring)


def _progress(ring, gen, steps, restored):
    ring.app.kv["progress"] = json.dumps({"gen": gen, "steps": steps, "restored_steps": restored}).encode()


def test_a_hung_training_process_restarts_its_generation_at_once(make_ring):
    """A supervisor killed its training process for making no progress (``TrainingHang``): no
    grace for a container loss (none will come), the same members form the next generation, and
    the first round of that one says how many steps were redone since the checkpoint."""
    HANG_ERROR = protocol.RING_HANG_ERROR

    ring = make_ring(round_timeout=30)
    _formed(ring)
    _progress(ring, 1, 10, 0)
    ring.step()
    assert event_kinds(ring)[-1] == "first_round"
    _progress(ring, 1, 60, 0)
    ring.step()
    ring.app.kv["ring_exit/1"] = json.dumps({"gen": 1, "rc": -9, "error": {
        "type": HANG_ERROR, "process_state": "T", "silent_s": 31.0, "message": "generation 1: ... killed"}}).encode()
    ring.step()  # -> REFORMING at once (no EXIT_GRACE_S)
    ring.step()
    assert _ring(ring) == {"gen": 2, "slots": [0, 1], "worker": ["h:1", "h:2"]}
    hang = next(e for e in ring.events.events if e["event"] == "training_hang")
    assert hang["slot"] == 1 and hang["process_state"] == "T" and hang["round_timeout"] == 30
    assert ring.failures == 1 and "training_process_failed" not in event_kinds(ring)
    _progress(ring, 2, 40, 40)  # restored the checkpoint of step 40: 20 steps redone
    ring.step()
    first = [e for e in ring.events.events if e["event"] == "first_round"]
    assert [(e["gen"], e["restored_step"], e["redone_steps"]) for e in first] == [(1, 0, 0), (2, 40, 20)]


def test_growth_redoes_nothing(ring):
    """The ring stopped for a newcomer reports the step it checkpointed at; the grown ring restores it."""
    _formed(ring)
    c = ring.app.containers[1]
    c.exit_message = "Container preempted by scheduler"
    ring.app.lose(c.id)
    ring.step()
    ring.app.serve("worker", 1, "h:3")
    ring.step()
    assert ring.state.value == "stopping"
    _progress(ring, 2, 37, 0)  # the chief's report at its stop checkpoint
    ring.app.kv["ring_exit/0"] = json.dumps({"gen": 2, "rc": STOP_EXIT, "error": None}).encode()
    ring.step()
    assert _ring(ring)["gen"] == 3
    _progress(ring, 3, 37, 37)
    ring.step()
    grown = [e for e in ring.events.events if e["event"] == "first_round"][-1]
    assert (grown["gen"], grown["restored_step"], grown["redone_steps"]) == (3, 37, 0)


class _KV(dict):
    def get(self, key, default=None):
        return super().get(key, default)


class _App:
    def __init__(self):
        self.kv = _KV()


def _child(tmp_path, beat: bool):
    """A stand-in training process: touches its beat file every 0.2 s, or never."""
    import subprocess

    from tfhadoop.trainer.allreduce import beat_path

    path = beat_path(str(tmp_path), 1)
    code = f"import os, time\nwhile True:\n    open({path!r}, 'a').close(); os.utime({path!r}); time.sleep(0.2)" \
        if beat else "import time; time.sleep(60)"
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.mark.parametrize("stop", [False, True])
def test_supervisor_kills_a_training_process_that_makes_no_progress(tmp_path, monkeypatch, stop):
    """The supervisor's side: a child that touches its beat file lives on; one that does not (a
    silent one, or a SIGSTOPped one that did) is killed after ``round_timeout`` and its exit
    reported as ``TrainingHang`` with its process state; a sleeping one (waiting on a peer) only
    after ``WAITING_GRACE_S`` more, so the stuck peer's supervisor reports first."""
    import signal
    import time

    from tfhadoop.trainer import ring_member
    from tfhadoop.trainer.ring_member import Supervisor

    HANG_ERROR = protocol.RING_HANG_ERROR
    monkeypatch.setattr(ring_member, "WAITING_GRACE_S", 1.0)
    sup = Supervisor(_App(), 3, "h:1", round_timeout=1.0, work=str(tmp_path))
    sup.gen, sup.child, sup.child_started = 1, _child(tmp_path, beat=True), time.time()
    try:
        end = time.time() + 2.5
        while time.time() < end:  # beating: never silent for a second
            sup.check_hang()
            time.sleep(0.1)
        assert sup.child is not None and sup.child.poll() is None and "ring_exit/3" not in sup.app.kv
        if stop:
            sup.child.send_signal(signal.SIGSTOP)
        else:
            sup.kill_child()
            sup.child, sup.child_started = _child(tmp_path, beat=False), time.time()
            (tmp_path / "beat-1").unlink()
        pid = sup.child.pid
        end = time.time() + 5
        while sup.child is not None and time.time() < end:
            sup.check_hang()
            time.sleep(0.1)
        assert sup.child is None, "the silent child was not killed"
        exit_ = json.loads(sup.app.kv["ring_exit/3"].decode())
        assert exit_["gen"] == 1 and exit_["rc"] == -signal.SIGKILL and exit_["error"]["type"] == HANG_ERROR
        assert exit_["error"]["process_state"] == ("T" if stop else "S"), exit_
        assert (1.0 if stop else 2.0) <= exit_["error"]["silent_s"] < (2.0 if stop else 3.0) and f"training process {pid} on worker:3" in exit_["error"]["message"]
    finally:
        if sup.child is not None:
            sup.child.kill()


def test_a_worker_publishes_its_node_as_yarn_names_it(monkeypatch):
    """A ring member's address is NM_HOST:port, as the PS mode's roles publish (role.node_host): the
    FQDN may name another interface of a multi-homed host, or be ``localhost`` on every node (the
    embedded cluster's extra NodeManager on 127.0.0.2 published ``localhost:port``, and two members
    on two nodes could then publish the same address, whose rank each supervisor looks up)."""
    import skein

    from tfhadoop.trainer import ring_member, role

    app = FakeApp()
    monkeypatch.setattr(skein.ApplicationClient, "from_current", staticmethod(lambda: app))
    monkeypatch.setattr(role, "heartbeat", lambda *a: None)
    monkeypatch.setattr(role, "usable_port", lambda r, s, port: port)
    monkeypatch.setattr(ring_member.JobSettings, "load", staticmethod(lambda path: settings(RING_JOB)))
    monkeypatch.setattr(ring_member.Supervisor, "run", lambda self: self.address)
    monkeypatch.setattr(sys, "argv", ["ring_member"])
    monkeypatch.setenv("NM_HOST", "node-7.example")
    monkeypatch.setenv("TFH_SLOT", "1")
    monkeypatch.setenv("TFH_PORT", "4321")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert ring_member.main() == "node-7.example:4321"
    assert app.kv["addr/worker/1"] == b"node-7.example:4321"
    assert json.loads(app.kv["up/worker/1"].decode())["address"] == "node-7.example:4321"
