"""The PS master's side of the coordinator child process: starting it, handing it the spec and
the master's requests (files in the work dir, each written whole then renamed), reading why it
failed, stopping it.

The process dies with the master (``children.die_with_parent``): a coordinator orphaned by a lost
application master would train on beside the next attempt's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tfhadoop.trainer import children, protocol


def write_whole(path: str, value) -> None:
    """``value`` as JSON at ``path``, written to a temporary file then renamed: a reader that polls
    for the file never sees half of it."""
    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.replace(path + ".tmp", path)


class CoordinatorProcess:
    """One coordinator process at a time (``process``: None before the first, or after ``stop``)."""

    def __init__(self, work: str):
        self.work = work
        self.process: subprocess.Popen | None = None
        self.checkpoint_requests = 0

    def path(self, name: str) -> str:
        return os.path.join(self.work, name)

    def spawn(self) -> None:
        """Start a coordinator now; it imports TensorFlow and the model while it waits for
        ``CLUSTER_FILE`` (``begin``), so that time overlaps the servers' start."""
        for name in (protocol.ERROR_FILE, protocol.CLUSTER_FILE, protocol.RESCALE_FILE, protocol.CHECKPOINT_SOON_FILE):
            if os.path.exists(self.path(name)):
                os.remove(self.path(name))
        self.process = children.spawn([sys.executable, "-m", "tfhadoop.trainer.coordinator",
                                       self.path(protocol.JOB_FILE), self.path(protocol.CLUSTER_FILE), self.work])

    def begin(self, cluster: dict, worker_slots: list[int]) -> None:
        """Hand the waiting coordinator the spec: its worker slots, then the spec itself (last: the
        coordinator waits for it)."""
        write_whole(self.path(protocol.WORKER_SLOTS_FILE), worker_slots)
        write_whole(self.path(protocol.CLUSTER_FILE), cluster)

    def request_rescale(self) -> None:
        """The coordinator checkpoints after its current closures and exits RESCALE_EXIT."""
        open(self.path(protocol.RESCALE_FILE), "w").close()

    def request_checkpoint(self, reason: str, within_s: float) -> None:
        """A checkpoint now (``reason`` "ps") or if one is due within ``within_s`` s; the coordinator
        removes the file when it has decided (a newer request replaces an older)."""
        self.checkpoint_requests += 1
        write_whole(self.path(protocol.CHECKPOINT_SOON_FILE),
                    {"reason": reason, "within_s": within_s, "id": self.checkpoint_requests})

    def avoid(self, tasks: list[int]) -> None:
        """The task indexes of workers the coordinator hands no new closure."""
        write_whole(self.path(protocol.AVOID_WORKERS_FILE), tasks)

    def poll(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def stop(self) -> None:
        """Kill the coordinator and forget it: its exit (-9) is the master's doing, never a failure."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def error(self, rc: int) -> dict:
        """What the coordinator that exited with ``rc`` wrote to ERROR_FILE, else its exit in words."""
        try:
            with open(self.path(protocol.ERROR_FILE)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return children.exit_error("coordinator", rc, " (its output is in the master's container log)")
