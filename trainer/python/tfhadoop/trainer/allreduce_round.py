"""One round of a ring member (allreduce mode): its task's batches through the train step, then
one gather of every member's (examples, loss sum, flags).

Every member runs the same number of steps in a round (its longest task's), so each step's
gradient all-reduce has every member in it. A member whose task holds fewer batches (or none)
feeds empty batches for the rest: the step then adds zero gradients and counts no example.

Why a counted loop over a pipeline built inside one ``tf.function`` (measured, issue 32,
``bench.bench_trainer_peers`` (e)/(d)): the earlier round built a distributed dataset per round
(``distribute_datasets_from_function``: Python work every round) and iterated it with
``for batch in dist``, which MultiWorkerMirroredStrategy turns into a ``has data`` all-reduce
before every step so that members whose data ran out agree to stop. Here the step count is known
on every member, so neither is needed: one trace serves every round, one collective per step.
Each member trains its own batch whole, so this path is for one replica per worker (a CPU or a
single GPU per container); with several replicas per worker the distributed dataset splits it.
"""
from __future__ import annotations

import tensorflow as tf

from tfhadoop.trainer.step import COMPRESSION, task_batches


def counted_round_fn(strategy, step, parse, batch_size: int, compression: str | None):
    """``round(path, offset, skip, count, steps, flags) -> rows``: this member's task (``count``
    records after ``skip`` from byte ``offset`` of ``path``; count 0 for no task) in ``steps``
    train steps, then the gather of ``[examples, loss_sum, *flags]`` of every member."""
    comp = COMPRESSION[compression]
    scalar = tf.TensorSpec([], tf.int64)

    @tf.function(input_signature=[tf.TensorSpec([], tf.string), scalar, scalar, scalar, scalar,
                                  tf.TensorSpec([None], tf.float64)])
    def run_round(path, offset, skip, count, steps, flags):
        batches = task_batches(path, offset, skip, count, batch_size, comp)
        n = tf.constant(0, tf.int64)
        loss = tf.constant(0.0, tf.float32)
        for _ in tf.range(steps):
            nxt = batches.get_next_as_optional()  # local: no collective
            raw = tf.cond(nxt.has_value(), nxt.get_value, lambda: tf.zeros([0], tf.string))
            bn, bl = strategy.run(step, args=parse(raw))
            n += tf.add_n(strategy.experimental_local_results(bn))
            loss += tf.add_n(strategy.experimental_local_results(bl))
        row = tf.concat([tf.stack([tf.cast(n, tf.float64), tf.cast(loss, tf.float64)]), flags], axis=0)
        return strategy.gather(tf.reshape(row, [1, -1]), axis=0)

    return run_round


def round_args(mine: list, rank: int, steps: int, flags: list[float]) -> tuple:
    """The arguments of the counted round for member ``rank``. A member without a task reads no
    record (count 0) of another member's shard: the pipeline opens no file then."""
    task = mine[rank]
    if task is None:
        path, offset, skip, count = next(t.path for t in mine if t is not None), 0, 0, 0
    else:
        path, offset, skip, count = task.path, task.offset, task.records_to_skip, task.count
    return (tf.constant(path, tf.string), tf.constant(offset, tf.int64), tf.constant(skip, tf.int64),
            tf.constant(count, tf.int64), tf.constant(steps, tf.int64), tf.constant(flags, tf.float64))
