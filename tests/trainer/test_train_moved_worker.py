"""A replacement that cannot come back at the lost container's address (its port is taken on the
node) joins by a coordinated restart: the master moves the slot to the new address in the cluster
spec and restarts the coordinator from a fresh checkpoint (docs/design/trainer.md, "Decision 2").
On the embedded cluster, and the master's handling of overlapping spec changes (move + scale-up,
move during a PS-loss restart) against a fake Skein client."""
from __future__ import annotations

import json
import os
import socket
import time

import pytest

from tests.trainer import jobs
from tests.trainer.fakes import FakeApp, FakeCoordinator, bring_up, event_kinds, fake_master, manual_clock


def _hold(port: int, timeout: float) -> socket.socket:
    """A socket listening on ``port``, once the killed worker has let it go. SO_REUSEADDR: its
    closed connections may linger in TIME_WAIT; a listening socket still keeps others off."""
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
            s.listen()
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.cluster
@pytest.mark.slow
def test_replacement_at_a_new_address_joins_by_coordinated_restart(hadoop_cluster, dataset):
    from tfhadoop.yarn.client import skein_client

    # endless epochs, stopped two epochs after the coordinated restart
    run, proc = jobs.train(hadoop_cluster, dataset, background=True,
                           extra=[*jobs.FAULT_JOB, "--workers", "2", "--epochs", str(jobs.ENDLESS)])
    held = None
    try:
        app_id = jobs.app_id(proc)
        jobs.wait(lambda: (jobs.state_epoch(run) or 0) >= 2 or proc.poll() is not None, 300, "two epochs")
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        up = next(e for e in jobs.events(run) if e["event"] == "cluster_up")
        old = up["cluster"]["worker"][up["slots"].index(1)]
        with skein_client() as client:
            app = client.connect(app_id)
            container = json.loads(app.kv["up/worker/1"].decode())["container"]
            app.kill_container(container)
            held = _hold(int(old.rsplit(":", 1)[1]), 30)  # the replacement cannot have the port
        jobs.stop_when(hadoop_cluster, run, proc, app_id,
                       jobs.epochs_after(run, jobs.event_seen(run, "coordinator_started", 2)),
                       "two epochs after the coordinated restart")
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
        if held is not None:
            held.close()
    assert proc.returncode == 0, (out + err)[-4000:]
    events = jobs.events(run)
    kinds = [e["event"] for e in events]
    lost = [e for e in events if e["event"] == "container_lost"]
    assert [(e["role"], e["slot"]) for e in lost] == [("worker", 1)], lost
    moved = [e for e in events if e["event"] == "worker_moved"]
    assert len(moved) == 1 and moved[0]["slot"] == 1 and moved[0]["old"] == old, moved
    new = moved[0]["new"]
    assert new != old and new.rsplit(":", 1)[0] == old.rsplit(":", 1)[0]  # same host, another port
    i_moved = kinds.index("worker_moved")
    assert "rescaled" in kinds[i_moved:], json.dumps(events[i_moved:], indent=1)[-6000:]
    restarted = [e for e in events[i_moved:] if e["event"] == "coordinator_started"]
    assert restarted and restarted[0]["cluster"]["worker"][up["slots"].index(1)] == new, restarted
    assert kinds.count("coordinator_failed") == 0, kinds
    jobs.assert_stopped(jobs.metrics(run), 4)  # exactly once per epoch
    t = lost[0]["time"]
    print(f"worker lost -> moved {moved[0]['time'] - t:.1f} s -> coordinator restarted "
          f"{restarted[0]['time'] - t:.1f} s -> training resumed with the replacement "
          f"{jobs.seconds_to_first_progress(events, restarted[0], t)}")


# -- the master's state machine, against a fake Skein client (tests.trainer.fakes) ----------------
def _rescale_file(master):
    from tfhadoop.trainer.protocol import RESCALE_FILE as RESCALE

    return os.path.exists(os.path.join(master.work, RESCALE))


def test_moved_worker_restarts_the_coordinator_once_its_server_is_up(master):
    from tfhadoop.trainer.protocol import RESCALE_EXIT

    bring_up(master)
    assert event_kinds(master) == ["cluster_up", "coordinator_started"]
    master.app.lose("worker_1")
    master.step()
    master.app.serve("worker", 1, "h:99", up=False)
    master.step()
    assert master.cluster["worker"] == ["h:10", "h:99"] and "worker_moved" in event_kinds(master)
    assert not _rescale_file(master)  # its server is not up yet
    master.app.serve("worker", 1, "h:99")
    master.step()
    assert _rescale_file(master) and event_kinds(master)[-1] == "rescale_requested"
    master.coordinator.returncode = RESCALE_EXIT
    master.step()
    master.step()
    assert event_kinds(master)[-2:] == ["rescaled", "coordinator_started"]
    with open(os.path.join(master.work, "cluster.json")) as f:
        assert json.load(f)["worker"] == ["h:10", "h:99"]
    assert master.coordinator_attempts == 1 and master.ports[("worker", 1)] == 99


def test_a_drain_without_progress_restarts_the_coordinator_undrained(master):
    """Asked to drain after a move, a coordinator whose closure in flight waits for the moved
    worker's old address completes none: after DRAIN_STALL_S s of that (its heartbeat silent too,
    as seen in CI) it is restarted from the checkpoint as planned, not judged hung 120 s later.
    One that completes closures while draining is left to drain."""
    from tfhadoop.trainer import ps_coordination

    now = manual_clock(master)
    bring_up(master)
    first = master.coordinator

    def report(mark):
        master.app.kv["coordinator"] = json.dumps({"pid": first.pid, "phase": "training", "mark": mark,
                                                   "beat": mark}).encode()

    report(1)
    master.step()
    master.app.lose("worker_1")
    master.step()
    master.app.serve("worker", 1, "h:99")
    master.step()
    master.step()
    assert event_kinds(master)[-1] == "rescale_requested"
    for mark in range(2, 8):  # draining: a closure completes every 10 s
        report(mark)
        now[0] += 10
        master.step()
    assert event_kinds(master)[-1] == "rescale_requested" and first.returncode is None
    now[0] += ps_coordination.DRAIN_STALL_S + 1  # then none (nor a beat)
    master.step()
    rescaled = [e for e in master.events.events if e["event"] == "rescaled"]
    assert len(rescaled) == 1 and rescaled[0]["drained"] is False, rescaled
    assert "no closure completed in 31 s of draining" in rescaled[0]["why"]
    assert first.returncode == -9 and master.coordinator is not first
    assert master.coordinator_attempts == 1 and "coordinator_hung" not in event_kinds(master)
    master.step()
    assert event_kinds(master)[-1] == "coordinator_started" and master.given["worker"][1] == "h:99"


def test_every_worker_lost_and_one_moved_restarts_the_coordinator_at_once(master):
    """It cannot drain for a checkpoint (TensorFlow waits for the moved worker at its old address
    before any closure runs again): restarted now from the latest checkpoint, not asked to exit 75."""
    from tfhadoop.trainer import ps_master as m

    bring_up(master)
    first = master.coordinator
    master.app.lose("worker_0")
    master.app.lose("worker_1")
    master.step()
    master.app.serve("worker", 0, "h:10")  # back at its address
    master.app.serve("worker", 1, "h:97")  # elsewhere
    master.step()
    assert event_kinds(master).count("rescaled") == 1 and "rescale_requested" not in event_kinds(master)
    assert [e for e in master.events.events if e["event"] == "rescaled"][0]["drained"] is False
    assert first.returncode is not None and master.coordinator is not first  # killed, a new one spawned
    assert not _rescale_file(master) and master.coordinator_attempts == 1  # planned: not a failure
    master.step()
    assert master.state == m.State.TRAINING and master.given["worker"] == ["h:10", "h:97"]
    assert event_kinds(master).count("coordinator_started") == 2


def test_every_worker_lost_and_back_in_place_with_a_late_one_still_drains(master):
    """Back at its address, the lost worker rejoins TensorFlow's coordinator: it can drain."""
    bring_up(master, workers=(0,))
    master.app.lose("worker_0")
    master.step()
    master.app.serve("worker", 0, "h:10")
    master.app.serve("worker", 1, "h:51")  # a late worker: the spec changes without a move
    master.step()
    assert _rescale_file(master) and "rescaled" not in event_kinds(master)


def _replace_worker_1(master, address: str) -> None:
    """Worker 1 lost, its replacement serving at ``address``, each seen by one step."""
    master.app.lose("worker_1")
    master.step()
    master.app.serve("worker", 1, address)
    master.step()


def test_one_worker_lost_and_moved_with_a_survivor_still_drains(master):
    bring_up(master)
    _replace_worker_1(master, "h:96")
    assert _rescale_file(master) and event_kinds(master)[-1] == "rescale_requested"


def test_same_address_rejoins_without_restart(master):
    bring_up(master)
    _replace_worker_1(master, "h:11")
    master.step()
    assert "worker_moved" not in event_kinds(master) and event_kinds(master).count("coordinator_started") == 1
    assert "replacement_up" in event_kinds(master) and not _rescale_file(master)


def test_move_during_a_ps_loss_restart_is_folded_into_it(master):
    bring_up(master)
    master.app.lose("ps_0")
    master.step()
    master.app.lose("worker_1")
    master.step()
    master.app.serve("worker", 1, "h:98")
    master.step()
    assert master.given is None  # the new coordinator waits for the PS
    master.app.serve("ps", 0, "h:1")
    master.step()
    master.step()
    assert event_kinds(master)[-1] == "coordinator_started" and master.given["worker"] == ["h:10", "h:98"]  # pyright: ignore[reportOptionalSubscript] - step() set given; the checker keeps the narrowing of the assert above across method calls
    assert not _rescale_file(master)  # it got the new spec: no second restart


def test_scale_up_and_moves_while_a_rescale_is_pending_end_in_one_restart(master):
    from tfhadoop.trainer.protocol import RESCALE_EXIT

    bring_up(master, workers=(0,))
    master.app.serve("worker", 1, "h:51")  # a late worker: scale-up, worker 0 trains on meanwhile
    master.step()
    assert master.cluster["worker"] == ["h:10", "h:51"] and event_kinds(master).count("rescale_requested") == 1
    # slot 0, preempted (so replaced at once, no backoff) before the coordinator exits
    next(c for c in master.app.containers if c.id == "worker_0").exit_message = "Container preempted by scheduler"
    master.app.lose("worker_0")
    master.step()
    master.app.serve("worker", 0, "h:60")
    master.step()
    master.coordinator.returncode = RESCALE_EXIT
    master.step()
    master.step()
    master.step()
    assert master.given["worker"] == ["h:60", "h:51"] and event_kinds(master).count("rescale_requested") == 1


def test_failing_slot_backs_off_and_preemptions_do_not_count(master):
    now = [0.0]
    master.clock = lambda: now[0]
    bring_up(master)
    started = len(master.app.containers)
    master.app.lose("worker_1")  # first failure: replaced at once
    master.step()
    assert len(master.app.containers) == started + 1
    master.app.lose("worker_2")  # the replacement fails too: 2 s of backoff
    master.step()
    assert len(master.app.containers) == started + 1 and master.events.events[-1]["delay_s"] == 2
    now[0] = 2.5
    master.step()
    assert len(master.app.containers) == started + 2
    preempted = master.app.containers[-1]
    preempted.exit_message = "Container preempted by scheduler"
    master.app.lose(preempted.id)  # not a failure: replaced at once, retries unchanged
    master.step()
    assert len(master.app.containers) == started + 3 and master.restarts[("worker", 1)] == 2
    lost = [e for e in master.events.events if e["event"] == "container_lost"]
    assert [e["preempted"] for e in lost] == [False, False, True]


def _lose_ps(master, outcome=None):
    """Lose the live PS container (not a preemption) and run one round of the loop."""
    master.app.lose(master.live[("ps", 0)])
    assert master.step() == outcome


def test_second_ps_loss_during_its_backoff_restarts_the_coordinator_not_the_job(master):
    """Issue 12: the coordinator killed for the second PS loss is not a coordinator failure."""
    now = manual_clock(master)
    bring_up(master)
    _lose_ps(master)  # first loss: replaced at once, a new coordinator waits for it
    _lose_ps(master)  # its replacement is lost too: 2 s of backoff, the coordinator is stopped
    assert master.events.events[-1]["delay_s"] == 2 and "coordinator_failed" not in event_kinds(master)
    assert master.step() is None and master.given is None  # still waiting out the backoff
    now[0] = 2.5
    assert master.step() is None  # the replacement PS starts, and with it the next coordinator
    master.app.serve("ps", 0, "h:1")
    assert master.step() is None
    assert event_kinds(master)[-1] == "coordinator_started" and master.coordinator.poll() is None
    assert "coordinator_failed" not in event_kinds(master) and master.given == master.cluster


def test_ps_restart_limit_is_the_job_specs_default(master):
    """max_ps_restarts comes from JobSpec (one source of defaults): the loss after it fails the job."""
    from tfhadoop.trainer.job import JobSpec

    now = manual_clock(master)
    limit = JobSpec.__dataclass_fields__["max_ps_restarts"].default
    bring_up(master)
    for _ in range(limit):
        _lose_ps(master)
        now[0] += 60  # past any backoff: the replacement starts
        assert master.step() is None and master.live.get(("ps", 0))
    _lose_ps(master, ("FAILED", f"ps:0 lost {limit + 1} times (killed)"))


def test_ps_losses_do_not_consume_the_coordinator_restart_budget(tmp_path, monkeypatch):
    """Issue 12: coordinators the master stopped for lost PSs are not coordinator failures; with more
    PS losses (within max_ps_restarts) than max_coordinator_restarts, a coordinator failure after
    them is still restarted and the job keeps running."""
    app = FakeApp()
    master = fake_master(tmp_path, monkeypatch, app, max_ps_restarts=5, max_coordinator_restarts=1)
    now = manual_clock(master)
    bring_up(master)
    for _ in range(3):  # three PS losses, more than max_coordinator_restarts
        _lose_ps(master)
        now[0] += 60  # past any backoff: the replacement starts, and with it the next coordinator
        assert master.step() is None
        app.serve("ps", 0, "h:1")
        assert master.step() is None and master.given == master.cluster
    with open(os.path.join(master.work, "error.json"), "w") as f:
        json.dump({"type": "UnavailableError", "message": "worker unreachable"}, f)
    failing = master.coordinator
    assert isinstance(failing, FakeCoordinator)
    failing.returncode = 1  # the coordinator's own first failure: a cluster error
    assert master.step() is None, "the job must keep running"
    restarted = master.coordinator
    assert event_kinds(master)[-1] == "coordinator_failed" and restarted is not None and restarted.poll() is None
