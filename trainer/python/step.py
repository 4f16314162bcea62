"""The unit of scheduled work: one closure trains on one task (a record range of one shard file)
and returns how many examples it trained on and their summed loss.

Closures run on the worker as a graph (no Python there), so the input pipeline is built inside
the function from plain TF ops over the shard's hdfs:// URL, which the worker's TensorFlow opens
through the tfhdfs plugin (the roles import :mod:`tfhadoop.tfhdfs` first): nothing is copied into
containers. A task reads from a byte offset (:func:`records_from`), so its cost does not grow with
its position in the shard (docs/design/trainer.md, "Data path"). The coordinator
counts an epoch's examples from the return values of completed closures, so a closure that ran on
a lost worker and was re-queued is counted once, by the run that completed.
"""
from __future__ import annotations

import tensorflow as tf

from tfhadoop.connectors.arrow import tf_feature_spec

COMPRESSION = {"gzip": "GZIP", "zlib": "ZLIB", "none": "", None: ""}
READ_BUFFER = 256 << 10  # bytes per read from HDFS (TFRecordDataset's own default)


def records_from(path, offset, compression: str):
    """The serialized records of ``path`` from byte ``offset`` (a record boundary) on.

    TensorFlow's ``TFRecordDatasetV2`` op takes byte offsets, but ``tf.data.TFRecordDataset`` does
    not expose them and the op's graph serialization drops them (TF 2.21: "3 inputs specified of
    4"), so tf.data's graph rewrites are switched off for the pipeline built on it. A compressed
    shard is read from its start (``offset`` must be 0): TensorFlow's GZIP/ZLIB reader cannot start
    inside a stream nor continue across concatenated gzip members (measured: bench/bench_task_offsets.py).
    """
    if compression:
        return tf.data.TFRecordDataset(path, compression_type=compression, buffer_size=READ_BUFFER)
    variant = tf.raw_ops.TFRecordDatasetV2(filenames=tf.reshape(path, [1]), compression_type="",
                                           buffer_size=tf.constant(READ_BUFFER, tf.int64),
                                           byte_offsets=tf.reshape(tf.cast(offset, tf.int64), [1]))
    return tf.data.experimental.from_variant(variant, tf.TensorSpec([], tf.string))


def without_rewrites(ds):
    """``ds`` with tf.data's graph rewrites off (they serialize the pipeline; see :func:`records_from`)."""
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    options.autotune.enabled = False
    return ds.with_options(options)


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
    """``task(path, offset, skip, count) -> (examples, loss_sum)`` as a tf.function for
    ``schedule``: ``count`` records after the first ``skip`` ones from byte ``offset`` of ``path``
    (a :class:`tasks.Task`: ``offset``, ``records_to_skip``, ``count``)."""
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
    def task(path, offset, skip, count):
        ds = without_rewrites(records_from(path, offset, comp).skip(skip).take(count).batch(batch_size).map(parse))
        n = tf.constant(0, tf.int64)
        total = tf.constant(0.0, tf.float32)
        for features, y in ds:
            bn, bl = strategy.run(train_step, args=(features, y))
            n += bn
            total += bl
        return n, total

    return task
