"""Issue 12, row 6, the coordinator's side of YARN's preemption warnings: ``WorkerAvoidance`` keeps
closures off the workers the master names in its avoid file, against a fake closure queue and
against TensorFlow's own ClusterCoordinator (in-process servers); the checkpoint-soon request."""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from tfhadoop.trainer import protocol


class FakeClosure:
    def __init__(self, n):
        self.n, self.tag = n, None


class FakeQueue:
    """TensorFlow's _CoordinatedClosureQueue as far as the worker threads use it."""

    def __init__(self):
        self.items, self.cond, self._should_process_closures = [], threading.Condition(), True
        self.put_backs = 0

    def put(self, closure):
        with self.cond:
            self.items.append(closure)
            self.cond.notify_all()

    def get(self, timeout=None, tag=None):
        with self.cond:
            while not self.items:
                if not self.cond.wait(timeout) or not self._should_process_closures:
                    return None
            return self.items.pop(0)

    def put_back(self, closure):
        self.put_backs += 1
        self.put(closure)


@pytest.fixture
def avoidance(tmp_path):
    from tfhadoop.trainer.closures import WorkerAvoidance

    made = []

    def make():
        made.append(WorkerAvoidance(str(tmp_path / protocol.AVOID_WORKERS_FILE), queue_class=FakeQueue))
        return made[-1]

    yield make
    for a in made:
        a.uninstall()


def _worker(queue, tag, taken, stop, timeout=0.2):
    while not stop.is_set():
        closure = queue.get(timeout=timeout, tag=tag)
        if closure is not None:
            taken.append((tag, closure.n))


def test_worker_avoidance_keeps_closures_off_an_avoided_worker(tmp_path, avoidance):
    path = str(tmp_path / protocol.AVOID_WORKERS_FILE)
    avoidance = avoidance()
    queue = FakeQueue()
    assert avoidance.installed and FakeQueue.get is not avoidance.real_get
    taken, stop = [], threading.Event()
    with open(path, "w") as f:
        json.dump([1], f)
    avoidance.refresh()
    threads = [threading.Thread(target=_worker, args=(queue, t, taken, stop), daemon=True) for t in (0, 1)]
    for t in threads:
        t.start()
    for n in range(20):
        queue.put(FakeClosure(n))
    deadline = time.monotonic() + 10
    while len(taken) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(n for _, n in taken) == list(range(20)) and {tag for tag, _ in taken} == {0}
    os.remove(path)  # the master took it out (its container was lost): work again
    avoidance.refresh()
    for n in range(20, 60):
        queue.put(FakeClosure(n))
    deadline = time.monotonic() + 10
    while len(taken) < 60 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    assert len(taken) == 60
    report = avoidance.report()
    (period,) = report["avoided"]
    assert period["task"] == 1 and period["dispatched"] == 0 and period["to"] >= period["from"]
    assert report["dispatched"]["0"] + report["dispatched"].get("1", 0) == 60


def test_a_closure_a_worker_was_waiting_for_when_avoided_goes_to_another(avoidance):
    """The race the wrapper closes: worker 1's thread is already inside the queue's ``get`` when
    the warning comes; the closure it then receives is put back, not run there."""
    avoidance = avoidance()
    queue = FakeQueue()
    taken, stop = [], threading.Event()
    t1 = threading.Thread(target=_worker, args=(queue, 1, taken, stop, None), daemon=True)  # waits in get
    t1.start()
    time.sleep(0.3)  # worker 1 waits inside get
    avoidance.set({1})
    queue.put(FakeClosure(0))
    time.sleep(0.3)
    assert taken == [] and queue.put_backs >= 1  # handed back, not run on worker 1
    t0 = threading.Thread(target=_worker, args=(queue, 0, taken, stop), daemon=True)
    t0.start()
    deadline = time.monotonic() + 5
    while not taken and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    avoidance.set(set())
    assert taken == [(0, 0)] and avoidance.report()["avoided"][0]["dispatched"] == 0


def test_without_a_closure_queue_nothing_is_steered(tmp_path, capsys):
    from tfhadoop.trainer.closures import WorkerAvoidance

    avoidance = WorkerAvoidance(str(tmp_path / "avoid.json"), queue_class=object)
    assert not avoidance.installed and "keeps getting closures" in capsys.readouterr().out
    avoidance.set({0})
    assert avoidance.report()["steered"] is False


def test_checkpoint_request_is_taken_once(tmp_path):
    from tfhadoop.trainer.closures import checkpoint_request

    assert checkpoint_request(str(tmp_path)) is None
    (tmp_path / protocol.CHECKPOINT_SOON_FILE).write_text(json.dumps({"reason": "ps", "within_s": 15, "id": 3}))
    assert checkpoint_request(str(tmp_path)) == {"reason": "ps", "within_s": 15, "id": 3}
    assert checkpoint_request(str(tmp_path)) is None


def test_checkpoint_due_within_by_time_and_by_steps():
    from tfhadoop.trainer.checkpoints import CheckpointPolicy

    now = [100.0]
    by_time = CheckpointPolicy(secs=60, clock=lambda: now[0])
    now[0] += 40
    assert not by_time.due_within(0, 15, None)
    now[0] += 6
    assert by_time.due_within(0, 15, None)
    by_steps = CheckpointPolicy(steps=100, clock=lambda: now[0])
    assert not by_steps.due_within(50, 15, None)  # no rate yet: not by steps
    assert not by_steps.due_within(50, 15, 3.0)  # 50 steps left, 45 in 15 s
    assert by_steps.due_within(50, 15, 4.0)
    assert CheckpointPolicy().due_within(0, 0, None)  # one after every task


def test_tensorflow_cluster_coordinator_is_steered():
    """The wrapper on TensorFlow's own ClusterCoordinator (in-process servers, in a child process):
    with task 1 avoided every closure runs on worker 0; afterwards both take closures; each closure
    ran exactly once (the PS variable counts the runs)."""
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("avoidance_child.py"))], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    r = json.loads(lines[-1][len("RESULT "):])
    print(r)
    assert r["installed"] and r["during"] == {"0": 40}  # none for task 1 while it was avoided
    assert r["value"] == 80 and r["fetched"] == 80  # each of the 80 closures ran once
    (period,) = r["report"]["avoided"]
    assert period["task"] == 1 and period["dispatched"] == 0
    assert sum(r["report"]["dispatched"].values()) == 80
    # which worker ran each closure (the per-worker throughput): worker 0 alone while 1 was avoided
    assert r["ran_on_first"] == [0] and set(r["ran_on_second"]) <= {0, 1} and r["left"] == 0, r


