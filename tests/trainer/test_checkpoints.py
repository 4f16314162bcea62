"""When checkpoints are taken and how a step budget cuts the last wave: pure logic, fake clock."""
from __future__ import annotations

from tfhadoop.trainer.checkpoints import CheckpointPolicy
from tfhadoop.trainer.coordinator import training_done, within_step_budget
from tfhadoop.trainer.tasks import Task


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_without_steps_or_seconds_every_wave_is_checkpointed():
    policy = CheckpointPolicy()
    assert policy.due(1) and policy.due(1000)
    assert policy.wave_tasks(8, steps_per_task=10) == 8


def test_checkpoint_by_steps_rounds_to_waves_small_enough():
    policy = CheckpointPolicy(steps=25)
    assert policy.wave_tasks(8, steps_per_task=10) == 3  # 30 steps per wave: the interval is 30, not 80
    assert not policy.due(20)
    assert policy.due(25)
    policy.saved(30)
    assert not policy.due(50) and policy.due(55)


def test_checkpoint_by_seconds():
    clock = Clock()
    policy = CheckpointPolicy(secs=60, clock=clock)
    clock.now = 59.9
    assert not policy.due(10_000)
    clock.now = 60
    assert policy.due(1)
    policy.saved(1)
    clock.now = 100
    assert not policy.due(2)


def test_steps_or_seconds_whichever_comes_first():
    clock = Clock()
    policy = CheckpointPolicy(steps=100, secs=30, clock=clock)
    assert policy.due(100)
    clock.now = 31
    assert policy.due(1)


def test_step_budget_keeps_whole_tasks_then_shortens_the_last():
    tasks = [Task(i, f"f{i}", 0, 300) for i in range(4)]  # 300 records, batch 32 -> 10 steps each
    cut = within_step_budget(tasks, steps_left=27, batch_size=32)
    assert [t.count for t in cut] == [300, 300, 7 * 32]
    assert [t.id for t in cut] == [0, 1, 2]
    assert within_step_budget(tasks, steps_left=100, batch_size=32) == tasks
    assert within_step_budget(tasks, steps_left=0, batch_size=32) == []


def test_training_done_by_epochs_or_steps():
    assert not training_done({"epoch": 1, "steps": 500}, epochs=2, steps=None)
    assert training_done({"epoch": 2, "steps": 500}, epochs=2, steps=None)
    assert not training_done({"epoch": 9, "steps": 499}, epochs=None, steps=500)
    assert training_done({"epoch": 0, "steps": 500}, epochs=None, steps=500)
