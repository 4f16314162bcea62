"""Scoring on the executors: one Arrow batch of the feed columns in, one Arrow array per model
output out.

Why it is built this way:
- The SavedModel comes as one broadcast tar (no HDFS client or credentials needed on the
  executors) and is loaded once per Python worker process (``_LOADED``; Spark reuses its
  workers), not per batch; ``loads`` counts the loads.
- An array or ML vector column feeds a ``[None, k]`` input as one (rows, k) array, a ragged input
  as its flat values and row lengths, a sparse input as each row's indices and values: no
  per-row Python. TensorFlow in each worker uses the task's cores (``spark.task.cpus``).
- Nulls, and rows of another length than a fixed-width input, are errors naming the column.
"""
from __future__ import annotations

import gc
import io
import logging
import os
import tarfile
import tempfile
from collections.abc import Callable

from tfhadoop.spark import serving
from tfhadoop.spark.export_vectors import sparse_tensor
from tfhadoop.spark.scoring_plan import Feed, Output

log = logging.getLogger(__name__)

_LOADED: dict = {}  # (model key) -> the serving call ({input: tensor} -> {output: tensor}), per Python worker


def _pin_threads(tf) -> None:
    """TensorFlow in a Spark task uses the task's cores (``spark.task.cpus``), not the machine's:
    every task slot runs its own Python worker, and per-machine thread pools in each of them
    oversubscribe the cores and burn CPU spinning. Only possible before the worker's first op."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    cpus = max(1, ctx.cpus()) if ctx is not None else 1
    try:
        tf.config.threading.set_intra_op_parallelism_threads(cpus)
        tf.config.threading.set_inter_op_parallelism_threads(cpus)
    except RuntimeError:  # TensorFlow already ran in this worker (another UDF): its pools stay
        log.debug("TensorFlow already initialised in this worker; thread pools left as they are")


def _model(key: str, payload, loads) -> Callable[..., dict]:
    """The model's serving function, loaded once per Python worker (``key``: this Scorer's)."""
    fn = _LOADED.get(key)
    if fn is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf

        _pin_threads(tf)
        base = key.split("#", 1)[0]
        stale = [k for k in _LOADED if k.split("#", 1)[0] == base]  # an earlier Scorer of the same model
        if stale:
            gc.unfreeze()  # its objects become collectable again
            for old in stale:
                del _LOADED[old]
        folder = tempfile.mkdtemp(prefix="tfhadoop-model-")
        with tarfile.open(fileobj=io.BytesIO(payload.value), mode="r") as tar:
            tar.extractall(folder, filter="data")
        fn = serving.load(folder).call
        _LOADED[key] = fn
        loads.add(1)
        # PySpark's daemon runs a full gc.collect() after every task of a reused worker; with
        # TensorFlow and the model loaded that walk costs ~0.15 CPU-s per task (BENCHMARKS.md,
        # issue 15). They live as long as the worker: out of the collector's sight.
        gc.collect()
        gc.freeze()
    return fn


def _tensor(tf, values, feed: Feed):
    """The tensor a feed's input takes from :func:`_column_array`'s values."""
    if feed.kind == "ragged":
        flat, lengths = values
        return tf.RaggedTensor.from_row_lengths(tf.constant(flat), tf.constant(lengths, tf.int64))
    if feed.kind == "sparse" and not hasattr(values, "shape"):  # a vector column's pairs
        return sparse_tensor(tf, values, feed.column, feed.width, feed.dtype)
    if feed.kind == "sparse":
        return tf.sparse.from_dense(tf.constant(values))
    return tf.constant(values)


def _column_array(arr, feed: Feed):
    """An Arrow column as a numpy array of (rows, *feed.shape), or for a ragged feed its flat values
    and row lengths; nulls (and rows of another length than a dense input's) are errors."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        raise ValueError(f"column {feed.column!r} has {arr.null_count} null values in a batch; "
                         f"the model input {feed.name!r} needs a value in every row (filter or fill them first)")
    n = len(arr)
    if pa.types.is_struct(arr.type):  # an ML vector's indices and values, for a sparse input
        return arr
    if feed.width is None and feed.kind != "ragged":
        values = arr.to_numpy(zero_copy_only=False)
        return values.astype(feed.dtype, copy=False).reshape((n, *feed.shape))
    lengths = pc.call_function("list_value_length", [arr]).to_numpy(zero_copy_only=False)  # named: pc's functions are made at import
    flat = arr.flatten()
    if flat.null_count:
        raise ValueError(f"column {feed.column!r} holds null elements; the model input {feed.name!r} cannot take them")
    if feed.kind == "ragged":
        return flat.to_numpy(zero_copy_only=False).astype(feed.dtype, copy=False), lengths.astype(np.int64)
    want = feed.width if feed.width is not None else (int(lengths[0]) if n else 0)
    bad = np.nonzero(lengths != want)[0]
    if len(bad):
        raise ValueError(f"column {feed.column!r}: a row has {int(lengths[bad[0]])} values but the model input "
                         f"{feed.name!r} takes {want} ({list(feed.shape)})")
    values = flat.to_numpy(zero_copy_only=False).astype(feed.dtype, copy=False)
    shape = tuple(want if d is None else d for d in feed.shape)
    return values.reshape((n, *shape))


def _to_arrow(values, o: Output):
    import numpy as np
    import pyarrow as pa

    values = np.asarray(values)
    if values.dtype == np.float16:  # Spark has no half floats: float32, as the schema says
        values = values.astype(np.float32)
    n = values.shape[0]
    if o.scalar:
        return pa.array(values.reshape(n))
    flat = values.reshape(n, -1)
    offsets = np.arange(0, flat.size + 1, flat.shape[1] if n else 1, dtype=np.int32)[: n + 1]
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.reshape(-1)))


def score_arrays(columns, key: str, payload, loads, feeds: list[Feed], outputs: list[Output]) -> list:
    """The model run on one batch: the feeds' Arrow columns in, one Arrow array per output out."""
    import tensorflow as tf

    fn = _model(key, payload, loads)
    result = fn({f.name: _tensor(tf, _column_array(c, f), f) for f, c in zip(feeds, columns)})
    return [_to_arrow(result[o.key].numpy(), o) for o in outputs]


def scoring_udf(key, payload, loads, feeds: list[Feed], outputs: list[Output], return_type):
    """A scalar Arrow UDF over the feed columns: only the model's inputs travel to Python and only
    its outputs come back (the other columns stay in the JVM); several outputs as one struct."""
    from pyspark.sql.functions import arrow_udf

    def score(*columns):
        import pyarrow as pa

        arrays = score_arrays(columns, key, payload, loads, feeds, outputs)
        if len(outputs) == 1:
            return arrays[0]
        return pa.StructArray.from_arrays(arrays, names=[o.column for o in outputs])

    # pyright: ignore below: pyspark 4.3's stub requires functionType; arrow_udf documents SCALAR as its default
    return arrow_udf(score, return_type)  # pyright: ignore[reportCallIssue, reportArgumentType]


def append_scores(batches, key: str, payload, loads, feeds: list[Feed], outputs: list[Output]):
    """``mapInArrow`` function for a PySpark without Arrow UDFs (before 4.1): every column goes to
    Python and back, with one column per model output appended."""
    import pyarrow as pa

    for batch in batches:
        if batch.num_rows == 0:
            continue
        columns = [batch.column(batch.schema.get_field_index(f.column)) for f in feeds]
        arrays = score_arrays(columns, key, payload, loads, feeds, outputs)
        yield pa.RecordBatch.from_arrays(list(batch.columns) + arrays,
                                         names=batch.schema.names + [o.column for o in outputs])
