"""Checkpoints on HDFS: when to take one, and how one is written so that ``latest`` is always a
complete checkpoint.

TensorFlow writes the checkpoint straight to ``<checkpoint_dir>/latest.new`` over ``hdfs://``
(the tfhdfs plugin; no local copy, no upload), then ``HdfsCheckpoints`` renames ``latest`` into
the history (``ckpt-<ns>``) and ``latest.new`` to ``latest``. The training state (epoch, ledger of
completed tasks, steps, history) travels in ``state.json`` next to the TF checkpoint, so a
restarted coordinator resumes the epoch exactly where the checkpoint left it.
"""
from __future__ import annotations

import contextlib
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from tfhadoop.connectors import hdfs

PENDING_STATE = "state.json.pending-"  # a save's state.json before it is renamed into latest.new


class CheckpointPolicy:
    """A checkpoint once ``steps`` steps or ``secs`` seconds passed since the last one (whichever
    is given; both may be), or after every completed task when neither is. Checked as tasks
    complete; the coordinator schedules no task past the step a checkpoint is due at
    (:meth:`steps_until_due`), so a checkpoint by steps falls on a task boundary."""

    def __init__(self, steps: int | None = None, secs: float | None = None, clock=time.monotonic):
        self.steps, self.secs, self.clock = steps, secs, clock
        self.last_steps, self.last_time = 0, clock()

    def steps_until_due(self, steps: int) -> int | None:
        """Steps left before a checkpoint by steps is due (None: not checkpointing by steps)."""
        return self.last_steps + self.steps - steps if self.steps else None

    def due(self, steps: int) -> bool:
        if not self.steps and not self.secs:
            return steps > self.last_steps
        return bool((self.steps and steps - self.last_steps >= self.steps)
                    or (self.secs and self.clock() - self.last_time >= self.secs))

    def due_within(self, steps: int, within_s: float, steps_per_s: float | None) -> bool:
        """Whether a checkpoint falls due within ``within_s`` seconds: by time, or by steps at
        ``steps_per_s`` (None: unknown, then not by steps). Every task checkpoints when neither
        interval is given: always."""
        if not self.steps and not self.secs:
            return True
        by_time = self.secs and self.clock() - self.last_time + within_s >= self.secs
        by_steps = self.steps and steps_per_s and self.last_steps + self.steps - steps <= steps_per_s * within_s
        return bool(by_time or by_steps)

    def saved(self, steps: int) -> None:
        self.last_steps, self.last_time = steps, self.clock()


def waiting_may_cure(exc: BaseException) -> bool:
    """Whether a failed save or restore is worth ``hdfs.retry``'s wait: not when TensorFlow says a
    remote task of the training cluster is gone (``/job:ps/...`` in an error that names no
    ``scheme://`` path: a parameter server lost while a checkpoint reads its variables). No HDFS
    wait brings it back, and the master restarts the coordinator at once for such an error;
    retrying would spend the whole budget (two minutes) and call it an HDFS outage. A filesystem
    error names its path, also when a parameter server's own save op raised it."""
    text = str(exc)
    return "://" in text or "/job:" not in text


def variables_task(variables) -> str | None:
    """``/job:J/replica:R/task:T`` when every variable (or shard of a sharded variable) lives on
    that one task; None when they are spread over several, local (no job) or none is given."""
    import tensorflow as tf

    tasks = set()
    for v in variables:
        for part in getattr(v, "variables", None) or [v]:  # ShardedVariable: its shards
            spec = tf.DeviceSpec.from_string(part.device)
            if not spec.job:
                return None
            tasks.add(f"/job:{spec.job}/replica:{spec.replica or 0}/task:{spec.task or 0}")
    return tasks.pop() if len(tasks) == 1 else None


def restorable(url: str) -> str | None:
    """In checkpoint directory ``url``: ``latest``; or ``latest.new`` when a save is, or stopped,
    between its renames (then it is complete: it was written before ``latest`` moved away); None
    before the first save."""
    if hdfs.exists(f"{url}/latest/state.json"):
        return "latest"
    if not hdfs.exists(f"{url}/latest") and hdfs.exists(f"{url}/latest.new/state.json"):
        return "latest.new"
    return None


class HdfsCheckpoints:
    """``tf.train.Checkpoint`` + training state, saved to and restored from ``url`` on HDFS.

    A save has TensorFlow write ``latest.new`` (then ``state.json`` into it, last, by a rename: a
    directory holding it is complete); then ``latest`` is renamed into the history (``ckpt-<ns>``)
    and ``latest.new`` to ``latest`` — NameNode renames, no copy. Only between those two renames is
    there no ``latest``; ``latest.new`` is complete then, and ``restore`` takes it. The history
    keeps the ``keep`` newest checkpoints."""

    def __init__(self, ckpt, url: str, keep: int = 5, device: str | None = None):
        """``device``: where TensorFlow builds the checkpoint's object graph (the tensor that maps
        names to variables), normally this process's CPU. Given the one task that holds every
        variable (:func:`variables_task`: a parameter server), the save runs on that task alone:
        one ``.data`` shard instead of two, and TensorFlow reuses its save function instead of
        tracing a new one per save, as it does for a save over several tasks (measured, issue 32:
        0.13 s of a 0.29 s write)."""
        self.ckpt, self.url, self.keep, self.device = ckpt, url.rstrip("/"), keep, device

    def restore(self) -> dict | None:
        """The saved training state after restoring the variables, or None without a checkpoint."""
        name = self.restorable()
        if name is None:
            return None
        state = json.loads(hdfs.read_bytes(f"{self.url}/{name}/state.json"))
        self.ckpt.restore(f"{self.url}/{name}/ckpt").expect_partial()
        return state

    def restore_waiting(self, on_retry=None) -> dict | None:
        """:meth:`restore`, waiting out an HDFS outage (``hdfs.retry``) but not a lost TF task."""
        return hdfs.retry(self.restore, "restore", on_retry, retryable=waiting_may_cure)

    def save_waiting(self, state: dict, on_retry=None) -> None:
        """:meth:`save`, waiting out an HDFS outage (``hdfs.retry``) but not a lost TF task."""
        hdfs.retry(lambda: self.save(state), "checkpoint", on_retry, retryable=waiting_may_cure)

    def restorable(self) -> str | None:
        """:func:`restorable` of this checkpoint directory."""
        return restorable(self.url)

    def _on_device(self):
        if self.device is None:
            return contextlib.nullcontext()
        import tensorflow as tf

        return tf.device(self.device)

    def save(self, state: dict) -> None:
        """One listing of ``url`` up front tells what a cut-off save left and what the history
        holds; the save adds only the NameNode calls it needs (each costs a few ms, and the
        trainer waits for its checkpoints)."""
        staged, latest = f"{self.url}/latest.new", f"{self.url}/latest"
        names = set(hdfs.list_names(self.url))
        if "latest" not in names and "latest.new" in names and hdfs.exists(f"{staged}/state.json"):
            hdfs.rename(staged, latest)  # finish a save that stopped between its renames
            names = (names - {"latest.new"}) | {"latest"}
        if "latest.new" in names:
            hdfs.delete(staged)  # a save cut off before its state was in
        # state.json goes last (a rename): a directory that has it is complete. Its bytes are
        # written beside, while TensorFlow writes the variables: the two writes need not wait for
        # each other (an HDFS close is one NameNode call where the cluster allows it, ~0.5 s where
        # the NameNode waits for the DataNode's block report: docs/tfhdfs.md).
        pending = f"{self.url}/{PENDING_STATE}{uuid.uuid4().hex[:8]}"
        with ThreadPoolExecutor(1) as pool:  # leaving it waits for the write, also on an error
            written = pool.submit(hdfs.write_bytes, pending, json.dumps(state).encode())
            with self._on_device():
                self.ckpt.write(f"{staged}/ckpt")  # TensorFlow writes hdfs:// itself (tfhdfs plugin)
            written.result()
        hdfs.rename(pending, f"{staged}/state.json")
        history = [n for n in names if n.startswith("ckpt-")]
        if "latest" in names:
            history.append(f"ckpt-{time.time_ns()}")
            hdfs.rename(latest, f"{self.url}/{history[-1]}")
        hdfs.rename(staged, latest)
        history.sort()
        orphans = [n for n in names if n.startswith(PENDING_STATE)]  # of saves that failed or were cut off
        for name in history[:max(len(history) - (self.keep - 1), 0)] + orphans:
            hdfs.delete(f"{self.url}/{name}")
