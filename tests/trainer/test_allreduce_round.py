"""The allreduce member's counted round (allreduce_round) under a one-worker
MultiWorkerMirroredStrategy on local files: every record of the task is trained once, a member
without a task runs its steps on empty batches, and the flags come back in the gathered row."""
from __future__ import annotations

import pytest

from tfhadoop.trainer.tasks import Task

tf = pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def member(tmp_path_factory):
    import tf_keras

    from tfhadoop.connectors.example import encode_example
    from tfhadoop.connectors.tfrecord_writer import write_records
    from tfhadoop.trainer.allreduce_round import counted_round_fn
    from tfhadoop.trainer.keras_step import train_step_fn
    from tfhadoop.trainer.step import model_parse_fn

    path = str(tmp_path_factory.mktemp("round") / "part-0.tfrecord")
    write_records(path, (encode_example({"x": [float(i), 1.0], "y": [float(i % 3)]}) for i in range(300)))
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = tf_keras.Sequential([tf_keras.Input((2,), name="x"), tf_keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    spec = {"features": {"x": {"type": "FixedLenFeature", "shape": [2], "dtype": "float32"},
                         "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}
    parse = model_parse_fn(model, spec, "y")
    run = counted_round_fn(strategy, train_step_fn(model, dense_gradients=True), parse, 64, "none")
    return path, model, run


def _row(run, path, task, steps, flags=(0.0, 0.0, 0.0)):
    from tfhadoop.trainer.allreduce_round import round_args

    other = Task(id=1, path=path, start=0, count=1)
    mine = [task, other] if task is not None else [None, other]
    return run(*round_args(mine, 0, steps, list(flags))).numpy()


def test_a_task_is_trained_whole_in_its_steps_and_the_flags_come_back(member):
    path, model, run = member
    before = [w.copy() for w in model.get_weights()]
    rows = _row(run, path, Task(id=0, path=path, start=100, count=150),
                steps=3, flags=(1.0, 0.0, 1.0))
    assert rows.shape == (1, 5)
    assert rows[0][0] == 150 and rows[0][1] > 0 and list(rows[0][2:]) == [1.0, 0.0, 1.0]
    assert any((a != b).any() for a, b in zip(before, model.get_weights()))


def test_a_member_without_a_task_counts_no_example(member):
    path, _, run = member
    rows = _row(run, path, None, steps=0)
    assert rows[0][0] == 0 and rows[0][1] == 0


def test_steps_beyond_the_task_feed_empty_batches(member):
    path, _, run = member
    _row(run, path, None, steps=1)  # a first round traces (twice: the optimizer makes its slots)
    traced = run.experimental_get_tracing_count()
    rows = _row(run, path, Task(id=0, path=path, start=0, count=70), steps=4)
    assert rows[0][0] == 70  # 64 + 6, then two empty batches
    assert run.experimental_get_tracing_count() == traced  # every later round reuses the graph
