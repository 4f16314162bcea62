"""How the PS coordinator hands work to the workers: closures kept in flight (``Scheduler``),
workers YARN warned of a preemption handed none (``WorkerAvoidance``), the master's checkpoint
requests, the steps per closure (``ClosureSize``) and the last tasks cut to a step budget.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time

from tfhadoop.trainer import protocol

IN_FLIGHT_PER_WORKER = 2  # closures scheduled per worker: one running, one queued behind it
POLL_S = 0.05  # longest wait for a closure's result before the loop looks at the others again
AUTO_CLOSURE_S = 0.25  # --steps-per-execution auto: a closure's target duration
AUTO_WINDOW_S = 1.0  # ... measured over completions this long
AUTO_MAX_STEPS = 2048  # ... and never more steps than this in one closure


def within_step_budget(tasks: list, steps_left: int, batch_size: int) -> list:
    """The tasks to schedule cut to ``steps_left`` steps: whole tasks while they fit, then the last
    one shortened to the records of the steps left (a task of ``count`` records is
    ceil(count / batch_size) steps)."""
    out = []
    for t in tasks:
        if steps_left <= 0:
            break
        steps = -(-t.count // batch_size)
        if steps > steps_left:
            t = dataclasses.replace(t, count=steps_left * batch_size)
            steps = steps_left
        out.append(t)
        steps_left -= steps
    return out


def _finished(remote) -> bool:
    """Whether a scheduled closure's result (or error) is there, without blocking. TF's RemoteValue
    has no public non-blocking check; its status is read, and a RemoteValue without one is taken
    as finished (then ``fetch`` blocks as before)."""
    status = getattr(remote, "_status", None)
    return status is None or getattr(status, "name", "") != "NOT_READY"


def _wait_a_little(remote, timeout: float) -> None:
    event = getattr(remote, "_status_available_event", None)
    if event is not None:
        event.wait(timeout)


class Scheduler:
    """Keeps ``limit`` closures in flight (``IN_FLIGHT_PER_WORKER`` per worker) and hands back
    results as they complete, so no worker idles while others finish theirs. Every wait
    is bounded (``POLL_S``) so the loop keeps seeing the master's rescale request. A closure
    trains a group of tasks (``--steps-per-execution``) and reports each task's examples.

    ClusterCoordinator re-queues the closure of a lost worker on another one: its RemoteValue
    stays pending meanwhile and completes once, so each task is handed back once."""

    def __init__(self, coordinator, fn, limit: int, worker_of=lambda remote: None):  # fn: step.TaskFunction
        self.coordinator, self.fn, self.limit = coordinator, fn, max(1, limit)
        self.worker_of = worker_of  # a closure's RemoteValue -> the task index of the worker that ran it
        self.pending = []  # (tasks, RemoteValue), oldest first

    def full(self) -> bool:
        return len(self.pending) >= self.limit

    def tasks(self) -> list:
        """The tasks of the closures in flight."""
        return [t for group, _ in self.pending for t in group]

    def submit(self, group: list) -> None:
        self.pending.append((list(group), self.fn.schedule(self.coordinator, group)))

    def completed(self, timeout: float = POLL_S) -> list:
        """[(task, examples, loss_sum, worker)] of the closures that finished, waiting at most
        ``timeout`` for the oldest when none has (``worker``: the task index of the worker that ran
        it, None when not known); a closure's error is raised here."""
        if self.pending and not any(_finished(r) for _, r in self.pending):
            _wait_a_little(self.pending[0][1], timeout)
        done = [(g, r) for g, r in self.pending if _finished(r)]
        self.pending = [(g, r) for g, r in self.pending if not _finished(r)]
        out = []
        for group, r in done:
            try:
                ns, losses = r.fetch()
            except Exception:
                self.coordinator.done()  # a closure cancelled by another's error: raise that error
                raise
            worker = self.worker_of(r)
            out.extend((t, int(n), float(loss), worker) for t, n, loss in zip(group, ns, losses))
        return out


class WorkerAvoidance:
    """Keeps new closures off the workers the master names in ``protocol.AVOID_WORKERS_FILE``
    (task indexes of workers YARN announced it will preempt), so that nothing of theirs is in
    flight when YARN kills them: no closure to re-run elsewhere, no steps applied twice.

    ClusterCoordinator has no public way to steer a closure to a worker: each worker's thread takes
    the next closure from one shared queue (``_CoordinatedClosureQueue.get(tag=<task index>)``).
    That ``get`` is wrapped, on the class and before the ClusterCoordinator is made (its worker
    threads call it at once, and a call already waiting could not be steered): an avoided worker's
    thread waits before taking a closure (its closure in flight finishes as usual), and one it was
    already waiting for when it became avoided goes back to the queue (``put_back``, as TensorFlow
    does for a lost worker's closure) for another worker. When the master takes the task index out
    (the container was lost: TensorFlow then waits for its replacement as before; or YARN spared
    it), the thread takes closures again. Without that queue class (another TensorFlow) the
    warnings change nothing here, which is said once.

    ``periods``: each avoidance (task, from, to, closures dispatched to it meanwhile: 0 unless this
    fails), for the metrics; ``turned_back``: closures handed back to the queue."""

    def __init__(self, path: str, queue_class=None, clock=time.time):
        import threading

        self.path, self.clock = path, clock
        self.avoided: set[int] = set()
        self.since: dict[int, tuple[float, int]] = {}  # task -> (when avoided, dispatched to it by then)
        self.dispatched: dict[int, int] = {}  # task -> closures its worker thread took
        self.periods: list[dict] = []
        self.turned_back = 0
        self.taken: dict[int, int] = {}  # id(RemoteValue) -> task index of the worker that took its closure
        self.stamp = None  # the avoid file's (mtime, size, inode) last read
        self.changed = threading.Condition()
        if queue_class is None:
            try:
                from tensorflow.python.distribute.coordinator import cluster_coordinator

                queue_class = getattr(cluster_coordinator, "_CoordinatedClosureQueue", None)
            except ImportError:
                queue_class = None
        self.queue_class = queue_class
        self.installed = queue_class is not None and callable(getattr(queue_class, "get", None)) and \
            callable(getattr(queue_class, "put_back", None))
        if queue_class is None or not self.installed:
            print("note: this TensorFlow's ClusterCoordinator has no closure queue to steer: a worker YARN "
                  "announced for preemption keeps getting closures", flush=True)
            return
        self.real_get = real_get = queue_class.get

        def get(queue, timeout=None, tag=None):
            while True:
                if tag is not None:
                    self.wait_while_avoided(queue, tag)
                closure = real_get(queue, timeout=timeout, tag=tag)
                if closure is None or tag is None or getattr(closure, "tag", None) is not None:
                    return closure  # none, or a worker's own resource closure (not ours to move)
                with self.changed:
                    avoided = tag in self.avoided
                    if not avoided:
                        self.dispatched[tag] = self.dispatched.get(tag, 0) + 1
                        self.note_taker(closure, tag)
                if not avoided:
                    return closure
                queue.put_back(closure)  # avoided while it waited for this one: another worker takes it
                self.turned_back += 1

        queue_class.get = get

    def note_taker(self, closure, tag: int) -> None:
        """Which worker took ``closure`` (the last one: a lost worker's closure is taken again),
        by its RemoteValue, for the per-worker throughput (``worker_of``)."""
        ref = getattr(closure, "_output_remote_value_ref", None)
        remote = ref() if callable(ref) else None
        if remote is not None:
            self.taken[id(remote)] = tag

    def worker_of(self, remote) -> int | None:
        """The task index of the worker that ran the closure of ``remote`` (a finished one), or None."""
        with self.changed:
            return self.taken.pop(id(remote), None)

    def uninstall(self) -> None:
        if self.installed and self.queue_class is not None:  # installed: there is one
            self.queue_class.get = self.real_get
            self.installed = False

    def wait_while_avoided(self, queue, tag: int) -> None:
        with self.changed:
            while tag in self.avoided and getattr(queue, "_should_process_closures", True):
                self.changed.wait(0.5)

    def refresh(self) -> None:
        """Read the master's file when it changed (a stat per call: called every loop round)."""
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            stamp = None
        if stamp == self.stamp:
            return
        self.stamp = stamp
        tasks: set[int] = set()
        if stamp is not None:
            try:
                with open(self.path) as f:
                    tasks = {int(t) for t in json.load(f)}
            except (OSError, ValueError, TypeError):
                self.stamp = None  # replaced while read: again next round
                return
        self.set(tasks)

    def set(self, tasks: set) -> None:
        now = self.clock()
        with self.changed:
            for t in sorted(set(tasks) - self.avoided):
                self.since[t] = (now, self.dispatched.get(t, 0))
                print(f"worker task {t}: YARN will preempt it; no new closures for it", flush=True)
            for t in sorted(self.avoided - set(tasks)):
                self.periods.append(self.period(t, now))
                print(f"worker task {t}: closures for it again", flush=True)
            self.avoided = set(tasks)
            self.changed.notify_all()

    def period(self, task: int, until: float | None) -> dict:
        start, before = self.since.pop(task) if until is not None else self.since[task]
        return {"task": task, "from": start, "to": until, "dispatched": self.dispatched.get(task, 0) - before}

    def report(self) -> dict:
        return {"steered": self.installed, "avoided": self.periods + [self.period(t, None) for t in sorted(self.avoided)],
                "turned_back": self.turned_back, "dispatched": {str(k): v for k, v in sorted(self.dispatched.items())}}


def checkpoint_request(work: str) -> dict | None:
    """The master's ``protocol.CHECKPOINT_SOON_FILE`` (taken: removed), or None."""
    path = os.path.join(work, protocol.CHECKPOINT_SOON_FILE)
    try:
        with open(path) as f:
            request = json.load(f)
    except (FileNotFoundError, ValueError):
        return None
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    return request


class ClosureSize:
    """Steps per closure (``--steps-per-execution``, as in Keras ``compile``): a closure trains
    whole tasks until it has at least that many steps. ``auto`` sizes closures so one takes
    about ``AUTO_CLOSURE_S`` from the measured time per step, so a closure's fixed cost (a few ms:
    bench.bench_task_overhead) stays a small share. The first closures (tracing,
    connections: the first 2 tasks per worker) are left out of the measure."""

    def __init__(self, setting, workers: int):
        self.auto = setting == "auto"
        self.steps = 1 if self.auto else int(setting)
        self.workers = max(1, workers)
        self.seen, self.window_steps = 0, 0
        self.window_t = 0.0  # set by every warm-up closure, so before it is first read

    def completed(self, steps: int, now: float) -> None:
        if not self.auto:
            return
        self.seen += 1
        if self.seen <= 2 * self.workers:  # warm-up: the first closure per worker traces and connects
            self.window_t = now
            return
        self.window_steps += steps
        elapsed = now - self.window_t
        if elapsed >= AUTO_WINDOW_S:
            step_s = elapsed * self.workers / self.window_steps  # includes fixed costs: errs small
            self.steps = max(1, min(AUTO_MAX_STEPS, round(AUTO_CLOSURE_S / step_s)))
            self.window_steps, self.window_t = 0, now
