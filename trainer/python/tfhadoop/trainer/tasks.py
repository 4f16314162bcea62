"""Epochs cut into tasks, and the ledger that proves each example is trained once per epoch.

A task is a record range of one shard file. The coordinator schedules one closure per task;
ClusterCoordinator re-queues the closures of a lost worker on the others, so a task can start
twice but COMPLETES once. The ledger counts an epoch's examples from completed closures' return
values and remembers which tasks completed; that state is saved with each checkpoint, so after a
parameter-server restart the tasks completed since the checkpoint (whose updates were lost with
the parameter server) are trained again and counted again from the restored ledger: still
exactly once per epoch in the restored model.
"""
from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field

from tfhadoop.connectors.dataset import Manifest, shard_url


@dataclass(frozen=True)
class Task:
    id: int
    path: str  # the shard's URL (hdfs://...), opened by the worker's TensorFlow (tfhdfs plugin)
    start: int  # first record (0-based) of the range
    count: int  # records in the range
    offset: int = 0  # byte offset where the worker starts reading: an indexed record at or before ``start``
    skip: int = -1  # records between ``offset`` and ``start`` (-1: ``start``, read from the shard start)

    @property
    def records_to_skip(self) -> int:
        return self.start if self.skip < 0 else self.skip


def start_point(index, start: int) -> tuple[int, int]:
    """(byte offset, records to skip after it) for record ``start`` of a shard: the index entry
    at or before it (one every ~1 MiB), so a task anywhere in a shard reads at most ~1 MiB it
    does not train on. ``index``: (ordinals, offsets) of the shard's record-boundary index
    (connectors/python/tfhadoop/connectors/splits.py), or None: from the shard start, skipping ``start`` records."""
    if index is None:
        return 0, start
    ordinals, offsets = index
    i = bisect.bisect_right(ordinals, start) - 1
    return offsets[i], start - ordinals[i]


def plan_epoch(manifest: Manifest, split: str | None = "train", task_records: int = 1000,
               epoch: int = 0, shuffle: bool = True, seed: int = 0, indexes: dict | None = None) -> list[Task]:
    """The tasks of one epoch: every record of ``split`` in exactly one task, in an order
    shuffled per epoch (deterministic for a seed, so a restarted coordinator plans the same).
    ``indexes``: shard path -> (ordinals, offsets) or None (see :func:`start_point`)."""
    if task_records <= 0:
        raise ValueError("task_records must be positive")
    ranges = []
    for shard in manifest.split(split):
        index = (indexes or {}).get(shard.path)
        for start in range(0, shard.records, task_records):
            offset, skip = start_point(index, start)
            ranges.append((shard_url(manifest, shard), start, min(task_records, shard.records - start), offset,
                           skip if index is not None else -1))
    if not ranges:
        raise ValueError(f"the dataset has no records in split {split!r}")
    if shuffle:
        random.Random(seed * 1_000_003 + epoch).shuffle(ranges)
    return [Task(i, *r) for i, r in enumerate(ranges)]


@dataclass
class EpochLedger:
    """Which tasks of ``epoch`` completed and how many examples their closures reported."""

    epoch: int
    expected: int  # records in the split
    done: dict = field(default_factory=dict)  # task id -> examples the closure returned

    def record(self, task: Task, examples: int) -> None:
        if task.id in self.done:
            raise RuntimeError(f"task {task.id} of epoch {self.epoch} completed twice")
        if examples != task.count:
            raise RuntimeError(f"task {task.id} ({task.path}[{task.start}:+{task.count}]) trained "
                               f"{examples} examples, expected {task.count}")
        self.done[task.id] = examples

    def remaining(self, tasks: list[Task]) -> list[Task]:
        return [t for t in tasks if t.id not in self.done]

    @property
    def examples(self) -> int:
        return sum(self.done.values())

    def complete(self) -> bool:
        return self.examples == self.expected

    def to_json(self) -> dict:
        return {"epoch": self.epoch, "expected": self.expected, "done": {str(k): v for k, v in self.done.items()}}

    @classmethod
    def from_json(cls, data: dict) -> EpochLedger:
        return cls(int(data["epoch"]), int(data["expected"]), {int(k): int(v) for k, v in data["done"].items()})
