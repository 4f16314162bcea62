"""Checkpoints on HDFS: when to take one, and how one is written so that ``latest`` is always a
complete checkpoint.

TensorFlow 2.21 cannot write ``hdfs://``, so the coordinator writes a checkpoint into its local
work dir and ``HdfsCheckpoints`` copies it to ``<checkpoint_dir>/ckpt-<ns>`` (history) and to
``latest.new``, then renames ``latest.new`` to ``latest``. The training state (epoch, ledger of
completed tasks, steps, history) travels in ``state.json`` next to the TF checkpoint, so a
restarted coordinator resumes the epoch exactly where the checkpoint left it.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import time

from tfhadoop.trainer import hdfs_io


class CheckpointPolicy:
    """A checkpoint after every wave of tasks, or once ``steps`` steps or ``secs`` seconds passed
    since the last one (whichever is given; both may be). Checked between waves, so the interval
    is rounded up to whole waves; ``wave_tasks`` keeps waves small enough for ``steps``."""

    def __init__(self, steps: int | None = None, secs: float | None = None, clock=time.monotonic):
        self.steps, self.secs, self.clock = steps, secs, clock
        self.last_steps, self.last_time = 0, clock()

    def wave_tasks(self, default: int, steps_per_task: int) -> int:
        if self.steps:
            return max(1, min(default, math.ceil(self.steps / max(steps_per_task, 1))))
        return default

    def due(self, steps: int) -> bool:
        if not self.steps and not self.secs:
            return True
        return bool((self.steps and steps - self.last_steps >= self.steps)
                    or (self.secs and self.clock() - self.last_time >= self.secs))

    def saved(self, steps: int) -> None:
        self.last_steps, self.last_time = steps, self.clock()


class HdfsCheckpoints:
    """``tf.train.Checkpoint`` + training state, saved to and restored from ``url`` on HDFS."""

    def __init__(self, ckpt, url: str, work: str):
        self.ckpt, self.url, self.work = ckpt, url.rstrip("/"), work

    def restore(self) -> dict | None:
        """The saved training state after restoring the variables, or None without a checkpoint."""
        if not hdfs_io.exists(f"{self.url}/latest/state.json"):
            return None
        local = os.path.join(self.work, "ckpt-restore")
        shutil.rmtree(local, ignore_errors=True)
        hdfs_io.download_dir(f"{self.url}/latest", local)
        with open(os.path.join(local, "state.json")) as f:
            state = json.load(f)
        self.ckpt.restore(os.path.join(local, "ckpt")).expect_partial()
        return state

    def save(self, state: dict) -> str:
        """Write the checkpoint; returns its HDFS URL. ``latest`` moves by one rename."""
        local = os.path.join(self.work, f"ckpt-save-{time.time_ns()}")
        self.ckpt.write(os.path.join(local, "ckpt"))
        with open(os.path.join(local, "state.json"), "w") as f:
            json.dump(state, f)
        url = f"{self.url}/ckpt-{time.time_ns()}"
        hdfs_io.upload_dir(local, url)
        staged = f"{self.url}/latest.new"
        hdfs_io.delete(staged)
        hdfs_io.upload_dir(local, staged)
        hdfs_io.delete(f"{self.url}/latest")
        hdfs_io.rename(staged, f"{self.url}/latest")
        shutil.rmtree(local, ignore_errors=True)
        return url
