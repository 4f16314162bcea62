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

COMPRESSION = {"gzip": "GZIP", "zlib": "ZLIB", "none": "", None: ""}


def parse_fn(parse_spec: dict, label: str):
    """A batch parser: serialized Examples -> (features without the label, label), dense tensors."""
    spec = tf_feature_spec(parse_spec)
    if isinstance(spec, tuple):
        raise ValueError("SequenceExample datasets are not supported by the trainer yet")
    if label not in spec:
        raise ValueError(f"label column {label!r} is not in the dataset's parse spec ({sorted(spec)})")

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        parsed = {k: tf.sparse.to_dense(v) if isinstance(v, tf.SparseTensor) else v for k, v in parsed.items()}
        y = parsed.pop(label)
        return parsed, y

    return parse


def model_inputs(model, features: dict):
    """Feature dict for a model with named inputs; the one tensor for a single-input model fed by
    one feature column."""
    names = getattr(model, "input_names", None) or []
    if len(features) == 1 and len(names) <= 1:
        return next(iter(features.values()))
    return features


def loss_fn(model):
    """The compiled loss as a callable giving per-example losses."""
    import tf_keras

    loss = model.loss
    if isinstance(loss, dict) or isinstance(loss, (list, tuple)):
        raise ValueError("models with several outputs/losses are not supported by the trainer yet")
    fn = tf_keras.losses.get(loss)
    if isinstance(fn, tf_keras.losses.Loss):
        fn = fn.__class__.from_config({**fn.get_config(), "reduction": "none"})
    return fn


def build_task_fn(strategy, model, parse_spec: dict, label: str, batch_size: int, compression: str | None):
    """``task(path, start, count) -> (examples, loss_sum)`` as a tf.function for ``schedule``."""
    parse = parse_fn(parse_spec, label)
    per_example_loss = loss_fn(model)
    optimizer = model.optimizer
    comp = COMPRESSION[compression]

    def train_step(features, y):
        with tf.GradientTape() as tape:
            pred = model(model_inputs(model, features), training=True)
            y = tf.reshape(tf.cast(y, pred.dtype), tf.shape(pred)) if pred.shape.rank == 2 and pred.shape[-1] == 1 else y
            losses = per_example_loss(y, pred)
            loss = tf.reduce_mean(losses)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return tf.cast(tf.shape(losses)[0], tf.int64), tf.reduce_sum(tf.cast(losses, tf.float32))

    @tf.function
    def task(path, start, count):
        ds = (tf.data.TFRecordDataset(path, compression_type=comp)
              .skip(start).take(count).batch(batch_size).map(parse))
        n = tf.constant(0, tf.int64)
        total = tf.constant(0.0, tf.float32)
        for features, y in ds:
            bn, bl = strategy.run(train_step, args=(features, y))
            n += bn
            total += bl
        return n, total

    return task
