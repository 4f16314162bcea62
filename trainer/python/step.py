"""The unit of scheduled work: one closure trains on one task (a record range of one shard file)
and returns how many examples it trained on and their summed loss.

Closures run on the worker as a graph (no Python there), so the input pipeline is built inside
the function from plain TF ops over a file path the worker's TensorFlow can open (a local path:
the shard was localized into the worker's container, see docs/design/trainer.md). The coordinator
counts an epoch's examples from the return values of completed closures, so a closure that ran on
a lost worker and was re-queued is counted once, by the run that completed.
"""
from __future__ import annotations

import tensorflow as tf

from tfhadoop.connectors.arrow import tf_feature_spec
from tfhadoop.trainer.keras_step import (
    label_columns,
    model_inputs,  # noqa: F401 - coordinator, validate and bench import it here
    split_batch,
    train_step_fn,
)

COMPRESSION = {"gzip": "GZIP", "zlib": "ZLIB", "none": "", None: ""}


def parse_fn(parse_spec: dict, label, weight: str | None = None):
    """A batch parser: serialized Examples -> ``(features, y)`` or, with a ``weight`` column,
    ``(features, y, sample_weight)`` (dense tensors; ``keras_step.split_batch``)."""
    spec = tf_feature_spec(parse_spec)
    if isinstance(spec, tuple):
        raise ValueError("SequenceExample datasets are not supported by the trainer yet")
    for column in [*label_columns(label), *([weight] if weight else [])]:
        if column not in spec:
            raise ValueError(f"column {column!r} is not in the dataset's parse spec ({sorted(spec)})")

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        parsed = {k: tf.sparse.to_dense(v) if isinstance(v, tf.SparseTensor) else v for k, v in parsed.items()}
        return split_batch(parsed, label, weight)

    return parse


def build_task_fn(strategy, model, parse_spec: dict, label, batch_size: int, compression: str | None,
                  weight: str | None = None):
    """``task(path, start, count) -> (examples, loss_sum)`` as a tf.function for ``schedule``;
    each batch is one tf-keras train step (``keras_step``)."""
    parse = parse_fn(parse_spec, label, weight)
    train_step = train_step_fn(model)
    comp = COMPRESSION[compression]

    @tf.function
    def task(path, start, count):
        ds = (tf.data.TFRecordDataset(path, compression_type=comp)
              .skip(start).take(count).batch(batch_size).map(parse))
        n = tf.constant(0, tf.int64)
        total = tf.constant(0.0, tf.float32)
        for batch in ds:
            bn, bl = strategy.run(train_step, args=batch)
            n += bn
            total += bl
        return n, total

    return task
