"""In-memory commits of ``--strategy allreduce`` (docs/design/trainer.md, "In-memory commit"):
like Horovod elastic's commit/restore, but our survivors are new processes, so a commit lives in
the container's directory (owned by the long-lived supervisor), not in the training process.

Every ``--commit-every-steps`` steps each training process writes its model and optimizer
variables and the training state (steps, epoch, task ledger) that those weights correspond to.
In sync allreduce every member holds the same weights, so any survivor's commit is the ring's.
A new generation agrees (one gather) on the newest commit any member holds; when it is newer than
the HDFS checkpoint, one member (the lowest rank holding it) contributes its values and the
others zeros to one all-reduce SUM: everybody, replacements included, gets the committed state
exactly (x + 0 + ... = x).
"""
from __future__ import annotations

import json
import os
import shutil

import numpy as np

COMMIT_DIR = "commit"  # in the container's work dir
FROM_COMMIT, FROM_CHECKPOINT, FROM_START = "commit", "checkpoint", "start"


class LocalCommits:
    """The newest commit of this container: ``commit/values.npz`` + ``commit/state.json``,
    replaced atomically (written aside, then renamed), so a process killed mid-write leaves the
    previous commit whole."""

    def __init__(self, work: str):
        self.dir = os.path.join(work, COMMIT_DIR)

    def write(self, values: list, state: dict) -> None:
        tmp = f"{self.dir}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        np.savez(os.path.join(tmp, "values.npz"), *values)
        with open(os.path.join(tmp, "state.json"), "w") as f:
            json.dump(state, f)
        old = f"{self.dir}.old-{os.getpid()}"
        if os.path.exists(self.dir):
            os.rename(self.dir, old)
        os.rename(tmp, self.dir)
        shutil.rmtree(old, ignore_errors=True)

    def steps(self) -> int:
        """The step of the newest commit, -1 without one."""
        state = self.state()
        return -1 if state is None else int(state["steps"])

    def state(self) -> dict | None:
        try:
            with open(os.path.join(self.dir, "state.json")) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def values(self) -> list:
        with np.load(os.path.join(self.dir, "values.npz")) as z:
            return [z[f"arr_{i}"] for i in range(len(z.files))]


def choose(commit_steps: list[int], checkpoint_steps: int) -> tuple[str, int | None]:
    """Where a generation restores from, given each rank's newest commit step (-1: none) and the
    HDFS checkpoint's step: (FROM_COMMIT, holder rank) when a commit is strictly newer, else
    (FROM_CHECKPOINT, None) (the checkpoint needs no transfer). Every member computes the same."""
    best = max(commit_steps, default=-1)
    if best > checkpoint_steps:
        return FROM_COMMIT, commit_steps.index(best)
    return FROM_CHECKPOINT, None


def due(steps: int, last: int, every: int) -> bool:
    """A commit is due after a round once ``every`` steps passed since the last (0: never)."""
    return bool(every) and steps - last >= every


def encode(state: dict) -> np.ndarray:
    """The training state as float64 bytes, for the all-reduce (exact: bytes < 2**53)."""
    return np.frombuffer(json.dumps(state).encode(), np.uint8).astype(np.float64)


def decode(values: np.ndarray) -> dict:
    return json.loads(np.asarray(values).round().astype(np.uint8).tobytes().decode())
