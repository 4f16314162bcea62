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

from typing import Literal

import tensorflow as tf

from tfhadoop.connectors.dataset import tf_parse_spec
from tfhadoop.trainer.feeding import Feed, feed, model_feeds, with_padding
from tfhadoop.trainer.keras_step import (
    model_inputs,  # noqa: F401 - coordinator, validate and bench import it here
    split_batch,
    train_step_fn,
)
from tfhadoop.trainer.spec import label_columns

TFCompression = Literal["GZIP", "ZLIB", ""]  # tf.data's compression_type names
COMPRESSION: dict[str | None, TFCompression] = {"gzip": "GZIP", "zlib": "ZLIB", "none": "", None: ""}
READ_BUFFER = 256 << 10  # bytes per read from HDFS (TFRecordDataset's own default)
PREFETCH = 2  # batches read ahead of the step within a task


def records_from(path, offset, compression: TFCompression):
    """The serialized records of ``path`` from byte ``offset`` (a record boundary) on.

    TensorFlow's ``TFRecordDatasetV2`` op takes byte offsets, but ``tf.data.TFRecordDataset`` does
    not expose them and the op's graph serialization drops them (TF 2.21: "3 inputs specified of
    4"), so tf.data's graph rewrites are switched off for the pipeline built on it. A compressed
    shard is read from its start (``offset`` must be 0): TensorFlow's GZIP/ZLIB reader cannot start
    inside a stream nor continue across concatenated gzip members (measured: bench.bench_task_offsets).
    """
    if compression:
        return tf.data.TFRecordDataset(path, compression_type=compression, buffer_size=READ_BUFFER)
    variant = tf.raw_ops.TFRecordDatasetV2(filenames=tf.reshape(path, [1]), compression_type="",
                                           buffer_size=tf.constant(READ_BUFFER, tf.int64),
                                           byte_offsets=tf.reshape(tf.cast(offset, tf.int64), [1]))
    return tf.data.experimental.from_variant(variant, tf.TensorSpec([], tf.string))


def task_batches(path, offset, skip, count, batch_size: int, compression: TFCompression):
    """An iterator over a task's batches of serialized records (``count`` records after the first
    ``skip`` from byte ``offset`` of ``path``), read ahead of the step (``PREFETCH``); built inside
    the traced function that trains them (PS closures, allreduce rounds)."""
    records = records_from(path, offset, compression).skip(skip).take(count)
    return iter(without_rewrites(records.batch(batch_size).prefetch(PREFETCH)))


def without_rewrites(ds):
    """``ds`` with tf.data's graph rewrites off (they serialize the pipeline; see :func:`records_from`)."""
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    options.autotune.enabled = False
    return ds.with_options(options)


def parse_fn(parse_spec: dict, label, weight: str | None = None, feeds: dict[str, Feed] | None = None):
    """A batch parser: serialized records -> ``(features, y)`` or, with a ``weight`` column,
    ``(features, y, sample_weight)`` (``keras_step.split_batch``). Each feature comes as its
    model input declares it (``feeds``, from :func:`feeding.model_feeds`; dense when absent).
    A SequenceExample dataset gives its context features and its feature lists together, each
    feature list as a ``tf.RaggedTensor`` ``[batch, steps, ...]`` of the steps each example holds."""
    spec = tf_parse_spec(parse_spec)
    context, sequence = spec if isinstance(spec, tuple) else (spec, None)
    for column in [*label_columns(label), *([weight] if weight else [])]:
        if column not in context:
            where = "context features" if sequence is not None else "parse spec"
            raise ValueError(f"column {column!r} is not in the dataset's {where} ({sorted(context)})")
    feeds = with_padding(feeds or {}, parse_spec)  # a dense list padded with the value its entry declares

    def parse(serialized):
        if sequence is None:
            parsed = tf.io.parse_example(serialized, context)
        else:
            parsed, lists, lengths = tf.io.parse_sequence_example(serialized, context_features=context,
                                                                  sequence_features=sequence)
            parsed = {**parsed, **{k: steps_as_ragged(v, lengths.get(k)) for k, v in lists.items()}}
        parsed = {k: feed(k, v, feeds.get(k)) for k, v in parsed.items()}
        return split_batch(parsed, label, weight)

    return parse


def steps_as_ragged(value, lengths):
    """A parsed feature list as ``[batch, steps, ...]`` ragged in its steps: a
    ``FixedLenSequenceFeature`` comes padded to the batch's longest with its ``lengths``, a
    ``RaggedFeature`` comes ragged already."""
    if isinstance(value, tf.RaggedTensor) or lengths is None:
        return value
    return tf.RaggedTensor.from_tensor(value, lengths=lengths)  # pyright: ignore[reportAttributeAccessIssue]


def model_parse_fn(model, parse_spec: dict, label, weight: str | None = None):
    """:func:`parse_fn` feeding ``model``'s inputs as they are declared (ragged, sparse, dense)."""
    columns = {*label_columns(label), *([weight] if weight else [])}
    features = [k for k in [*parse_spec.get("features", {}), *parse_spec.get("sequence_features", {})]
                if k not in columns]
    return parse_fn(parse_spec, label, weight, model_feeds(model, features))


class TaskFunction:
    """The trainer's closure: two traced functions over the same per-task training
    (:func:`build_task_fn`), ``one`` for a closure of one task and ``many`` for a group. A
    closure of one task needs no loop over tasks: that loop, spanning the worker and the
    parameter servers, cost ~4 ms per closure (the closure-breakdown bench, since removed (docs/benchmark-history.md)), and one-task
    closures are the case whenever a task already has the steps a closure should run
    (``--steps-per-execution``, or what ``auto`` chose, at or below a task's steps)."""

    def __init__(self, one, many):
        self.one, self.many = one, many

    def for_group(self, group: list):
        return self.one if len(group) == 1 else self.many

    def schedule(self, coordinator, group: list):
        """The group's closure scheduled on ``coordinator``; its RemoteValue yields
        ``(examples[i], loss_sums[i])`` per task of ``group``, whichever function ran it."""
        return coordinator.schedule(self.for_group(group), args=task_args(group))

    def tracing_count(self) -> dict:
        """How many times each function was traced (1 once it ran: every closure reuses its graph)."""
        return {"one": self.one.experimental_get_tracing_count(), "many": self.many.experimental_get_tracing_count()}


def build_task_fn(strategy, model, parse_spec: dict, label, batch_size: int, compression: str | None,
                  weight: str | None = None) -> TaskFunction:
    """The closure for ``schedule``, a :class:`TaskFunction`: trains the tasks of a group
    (:func:`task_args`, one vector element per :class:`tasks.Task`: ``count`` records after the
    first ``skip`` ones from byte ``offset`` of ``path``), each batch one tf-keras train step
    (``keras_step``), and reports ``(examples[i], loss_sums[i])`` per task so the coordinator's
    ledger records each task.

    Built so that a closure's fixed cost stays a few milliseconds (bench.bench_task_overhead,
    the closure-breakdown bench, since removed (docs/benchmark-history.md)):
    - one signature of vectors (or scalars for one task): each function is traced once and every
      closure reuses it, whatever its group size, paths, offsets and counts;
    - the batches are drawn with ``get_next`` in a counted graph loop, not ``for batch in dataset``:
      AutoGraph turns the latter into ``dataset.reduce`` with the train step as the reduce
      function, a multi-device function (worker + parameter servers) instantiated per closure
      whose release TF does not implement for remote devices ("Failed to clear function handle
      cache: UNIMPLEMENTED ... multi-device component handle on a remote device"), leaking ~2 MB of
      worker memory per closure;
    - the pipeline has no function in it (parse runs in the loop, on the whole batch: one
      ``ParseExampleV2`` that splits the batch over the worker's threads), and the reading of
      the next batches overlaps the step (``prefetch``)."""
    parse = model_parse_fn(model, parse_spec, label, weight)
    train_step = train_step_fn(model)
    comp = COMPRESSION[compression]
    vector = tf.TensorSpec([None], tf.int64)
    scalar = tf.TensorSpec([], tf.int64)

    def train_task(path, offset, skip, count):
        """(examples, loss_sum) of one task; a shard shorter than ``skip + count``: OutOfRange."""
        batches = task_batches(path, offset, skip, count, batch_size, comp)
        n = tf.constant(0, tf.int64)
        total = tf.constant(0.0, tf.float32)
        for _ in tf.range((count + batch_size - 1) // batch_size):
            bn, bl = strategy.run(train_step, args=parse(batches.get_next()))
            n += bn
            total += bl
        return n, total

    @tf.function(input_signature=[tf.TensorSpec([], tf.string), scalar, scalar, scalar])
    def one(path, offset, skip, count):
        n, total = train_task(path, offset, skip, count)
        return tf.reshape(n, [1]), tf.reshape(total, [1])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string), vector, vector, vector])
    def many(paths, offsets, skips, counts):
        groups = tf.size(paths)
        examples = tf.TensorArray(tf.int64, size=groups)
        losses = tf.TensorArray(tf.float32, size=groups)
        for i in tf.range(groups):
            n, total = train_task(paths[i], offsets[i], skips[i], counts[i])
            examples = examples.write(i, n)
            losses = losses.write(i, total)
        return examples.stack(), losses.stack()

    return TaskFunction(one, many)


def task_args(group: list) -> tuple:
    """The arguments of the task function for a group of :class:`tasks.Task` (scalars for one task,
    vectors for several: :meth:`TaskFunction.for_group`)."""
    if len(group) == 1:
        t = group[0]
        return (tf.constant(t.path, tf.string), tf.constant(t.offset, tf.int64),
                tf.constant(t.records_to_skip, tf.int64), tf.constant(t.count, tf.int64))
    return (tf.constant([t.path for t in group], tf.string),
            tf.constant([t.offset for t in group], tf.int64),
            tf.constant([t.records_to_skip for t in group], tf.int64),
            tf.constant([t.count for t in group], tf.int64))
