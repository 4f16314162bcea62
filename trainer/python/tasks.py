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

import random
from dataclasses import dataclass, field

from tfhadoop.trainer.manifest import Manifest, local_name


@dataclass(frozen=True)
class Task:
    id: int
    path: str  # a path the worker's TensorFlow can open (localized shard)
    start: int  # first record (0-based) of the range
    count: int  # records in the range


def plan_epoch(manifest: Manifest, split: str | None = "train", task_records: int = 1000,
               epoch: int = 0, shuffle: bool = True, seed: int = 0) -> list[Task]:
    """The tasks of one epoch: every record of ``split`` in exactly one task, in an order
    shuffled per epoch (deterministic for a seed, so a restarted coordinator plans the same)."""
    if task_records <= 0:
        raise ValueError("task_records must be positive")
    ranges = []
    for shard in manifest.split(split):
        for start in range(0, shard.records, task_records):
            ranges.append((local_name(shard), start, min(task_records, shard.records - start)))
    if not ranges:
        raise ValueError(f"the dataset has no records in split {split!r}")
    if shuffle:
        random.Random(seed * 1_000_003 + epoch).shuffle(ranges)
    return [Task(i, p, s, c) for i, (p, s, c) in enumerate(ranges)]


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
