"""A rejoin that TensorFlow reports by task index is recorded under the master's slot."""
from __future__ import annotations

import logging

from tfhadoop.trainer.coordinator import RejoinWatch
from tfhadoop.trainer.training_common import Progress


def test_rejoin_is_recorded_under_the_masters_slot():
    # Slots 0 and 2 started the job, slot 1 joined later: task indices 0, 1, 2 are slots 0, 2, 1.
    watch = RejoinWatch(Progress(None), slots=[0, 2, 1])
    logging.getLogger("tensorflow").info("Worker /job:worker/replica:0/task:1 has been recovered.")
    assert [(r["slot"], r["task"]) for r in watch.rejoins] == [(2, 1)]
