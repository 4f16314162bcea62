"""Scoring a DataFrame with a SavedModel on the Spark executors: ``Model.transform`` and
``tfhadoop predict`` (also a ``spark-submit`` job file).

    spark-submit --jars jars/tfhadoop-0.1.0.jar spark/python/tfhadoop/spark/predict.py --model hdfs:///models/ctr \\
        --table features.today --output-table scores.today

Why it is built this way:
- The driver loads the model once to read its serving signature: every input is matched to the
  column of the same name, its type and width checked, and the output schema fixed, so a
  missing or mistyped column is an error before any task runs.
- The SavedModel goes to the executors as one broadcast tar (no HDFS client or credentials needed
  there) and is loaded once per Python worker process (``_LOADED``; Spark reuses its workers),
  not per batch; ``model_loads`` counts the loads.
- Scoring is a scalar Arrow UDF over the model's input columns (``arrow_udf``, PySpark 4.1+):
  only those columns travel to Python and only the scores come back; the rest of the row stays
  in the JVM (an older PySpark falls back to ``mapInArrow``, which ships every column both
  ways). An array or ML vector column feeds a ``[None, k]`` input as one (rows, k) array, no
  per-row Python. TensorFlow in each worker uses the task's cores (``spark.task.cpus``).
- One column per model output: a single output is ``prediction_col``; several are named after
  the signature's output keys. A scalar output ((n,) or (n, 1)) is a number column, a wider one
  an array column.
"""
from __future__ import annotations

import argparse
import gc
import io
import logging
import os
import shutil
import sys
import tarfile
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from tfhadoop.errors import CommandError
from tfhadoop.spark import serving
from tfhadoop.spark.export_vectors import pair, sparse_tensor

log = logging.getLogger(__name__)

_LOADED: dict = {}  # (model key) -> the serving call ({input: tensor} -> {output: tensor}), per Python worker


@dataclass(frozen=True)
class Feed:
    """How one model input is fed: from ``column``, ``width`` values per row (None: a scalar),
    reshaped to ``shape`` (the input's shape after the batch dimension), as numpy ``dtype``;
    ``kind`` "ragged": each row's list as it is (a ``tf.RaggedTensor``, empty lists included),
    "sparse": the rows' values as a ``tf.SparseTensor`` of the input's width."""

    name: str
    column: str
    width: int | None
    shape: tuple
    dtype: str
    kind: str = "dense"


@dataclass(frozen=True)
class Output:
    """One model output: its signature key, the column it becomes, scalar or array, numpy dtype."""

    key: str
    column: str
    scalar: bool
    dtype: str


# -- the model, on the driver --------------------------------------------------------------------

def fetch_model(spark, url: str, local: str) -> str:
    """Copy the SavedModel directory at ``url`` (any Hadoop file system, scheme-less paths on
    fs.defaultFS) to ``local`` (which must not exist); returns the qualified URL."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(url)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    path = fs.makeQualified(path)
    if not fs.exists(path):
        raise CommandError(f"--model {url}: no such directory ({path})")
    if not fs.exists(jvm.org.apache.hadoop.fs.Path(path, "saved_model.pb")):
        raise CommandError(f"--model {url}: not a SavedModel directory (no saved_model.pb in {path})")
    fs.copyToLocalFile(False, path, jvm.org.apache.hadoop.fs.Path("file://" + local), True)
    return path.toString()


def _tar(folder: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(folder, arcname=".")
    return buf.getvalue()


def signature_specs(served) -> tuple[dict, dict]:
    """({input name: spec}, {output key: TensorSpec}) of a :class:`serving.Serving`."""
    return dict(served.inputs), dict(served.outputs)


def _describe_column(t) -> str:
    return t.simpleString()


def plan_feeds(schema, inputs: dict, where: str) -> tuple[list[Feed], dict]:
    """Each model input matched to the column of its name, type and width checked; returns the
    feeds and {column: "vector"} for ML vector columns the driver turns into arrays first.
    Raises CommandError naming every problem at once."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        ByteType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
    )

    from tfhadoop.spark.export_plan import is_vector

    numeric = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, BooleanType)
    types = {f.name: f.dataType for f in schema.fields}
    columns = ", ".join(f"{f.name} {_describe_column(f.dataType)}" for f in schema.fields)
    feeds, vectors, problems = [], {}, []
    for name, spec in sorted(inputs.items()):
        shape = tuple(spec.shape.as_list()[1:]) if spec.shape.rank is not None else None
        is_string = spec.dtype.name == "string"
        want = f"{'string' if is_string else spec.dtype.name} {list(shape) if shape is not None else '[?]'}"
        if name not in types:
            problems.append(f"the model needs column {name!r} ({want}), which {where} does not have")
            continue
        t = types[name]
        kind = {"RaggedTensorSpec": "ragged", "SparseTensorSpec": "sparse"}.get(type(spec).__name__, "dense")
        if kind == "ragged":
            elem = t.elementType if isinstance(t, ArrayType) else None
            if elem is None or spec.shape.rank != 2 or not (
                    isinstance(elem, (StringType, BinaryType)) if is_string else isinstance(elem, numeric)):
                problems.append(f"column {name!r} is {_describe_column(t)} but the model input {name!r} is a "
                                f"ragged list of {want.split()[0]} (an array column feeds it)")
                continue
            feeds.append(Feed(name, name, None, (), "object" if is_string else spec.dtype.as_numpy_dtype.__name__,
                              "ragged"))
            continue
        elem, width = t, None
        if is_vector(t):  # a sparse input gets each row's indices and values (export_vectors.pair)
            vectors[name] = "sparse" if kind == "sparse" else "vector"
            elem = DoubleType()
        elif isinstance(t, ArrayType):
            elem = t.elementType
        if is_vector(t) or isinstance(t, ArrayType):
            width = -1  # per row: checked against the input's shape on the executors
        ok_type = isinstance(elem, (StringType, BinaryType)) if is_string else isinstance(elem, numeric)
        if shape is None:
            problems.append(f"model input {name!r} has no known rank; cannot feed it from a column")
            continue
        size = 1
        for d in shape:
            size = size * d if d is not None and size is not None else None
        if width is None and size != 1:
            ok_type = False  # a scalar column cannot feed a wider input
        if width is not None:
            if len(shape) == 0:
                ok_type = False  # an array column cannot feed a scalar input
            width = size  # None: any length, equal within a batch
        if not ok_type:
            problems.append(f"column {name!r} is {_describe_column(t)} but the model input {name!r} is {want}")
            continue
        dtype = "object" if is_string else spec.dtype.as_numpy_dtype.__name__
        feeds.append(Feed(name, name, width, shape, dtype, kind))
    if problems:
        raise CommandError("; ".join(problems) + f" (columns: {columns})")
    return feeds, vectors


def plan_outputs(outputs: dict, prediction_col: str, existing: list[str]) -> list[Output]:
    """One column per output: ``prediction_col`` for a single output, else the output keys."""
    out = []
    for key, spec in sorted(outputs.items()):
        dims = spec.shape.as_list()[1:] if spec.shape.rank is not None else None
        scalar = dims is not None and (dims == [] or dims == [1])
        column = prediction_col if len(outputs) == 1 else key
        if column in existing:
            raise CommandError(f"the output column {column!r} exists in the input already; "
                               f"{'pick another --prediction-col' if len(outputs) == 1 else 'rename the input column'}")
        dtype = spec.dtype.as_numpy_dtype.__name__ if spec.dtype.name != "string" else "object"
        out.append(Output(key, column, scalar, dtype))
    return out


def _spark_type(o: Output):
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
    )

    leaf = {"float32": FloatType(), "float16": FloatType(), "float64": DoubleType(), "int32": IntegerType(),
            "int64": LongType(), "bool": BooleanType(), "object": BinaryType()}.get(o.dtype)
    if leaf is None:
        raise CommandError(f"model output {o.key!r} has dtype {o.dtype}, which has no Spark column type")
    return leaf if o.scalar else ArrayType(leaf, containsNull=False)


# -- on the executors -----------------------------------------------------------------------------

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


def _scoring_udf(key, payload, loads, feeds: list[Feed], outputs: list[Output], return_type):
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


def has_arrow_udf() -> bool:
    from pyspark.sql import functions as F

    return hasattr(F, "arrow_udf")


# -- transform ------------------------------------------------------------------------------------

class Scorer:
    """A SavedModel ready to score DataFrames of one Spark session: fetched and inspected once,
    broadcast once; ``model_loads`` counts the executor-side loads."""

    def __init__(self, spark, url: str):
        self.spark, self.url = spark, url
        self.local = tempfile.mkdtemp(prefix="tfhadoop-model-driver-")
        folder = os.path.join(self.local, "model")
        self.qualified = fetch_model(spark, url, folder)
        self.inputs, self.outputs = signature_specs(serving.load(folder))
        self.key = f"{self.qualified}#{uuid.uuid4().hex}"
        self.payload = spark.sparkContext.broadcast(_tar(folder))
        self.model_loads = spark.sparkContext.accumulator(0)

    def transform(self, df, prediction_col: str = "prediction", where: str = "the DataFrame"):
        """``df`` with one column per model output; checked on the driver before any task runs."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructField, StructType

        feeds, vectors = plan_feeds(df.schema, self.inputs, where)
        outputs = plan_outputs(self.outputs, prediction_col, df.columns)

        def col(name):
            return F.col("`" + name.replace("`", "``") + "`")

        if not has_arrow_udf():
            return self._map_in_arrow(df, feeds, vectors, outputs)
        args = [self._vector(f.column, vectors[f.column]) if f.column in vectors else col(f.column) for f in feeds]
        if len(outputs) == 1:
            udf = _scoring_udf(self.key, self.payload, self.model_loads, feeds, outputs, _spark_type(outputs[0]))
            return df.withColumn(outputs[0].column, udf(*args))
        struct = StructType([StructField(o.column, _spark_type(o)) for o in outputs])
        udf = _scoring_udf(self.key, self.payload, self.model_loads, feeds, outputs, struct)
        tmp = f"__tfhadoop_scores_{uuid.uuid4().hex[:8]}"
        scored = df.select(*[col(c) for c in df.columns], udf(*args).alias(tmp))
        return scored.select(*[col(c) for c in df.columns], *[F.col(f"{tmp}.`{o.column}`").alias(o.column)
                                                              for o in outputs])

    def _map_in_arrow(self, df, feeds, vectors, outputs):
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructField, StructType

        if vectors:  # ML vectors as float arrays or index/value pairs: plain Arrow for the executors
            df = df.select(*[self._vector(c, vectors[c]) if c in vectors else F.col(f"`{c}`") for c in df.columns])
        schema = StructType(list(df.schema.fields) + [StructField(o.column, _spark_type(o), nullable=False)
                                                      for o in outputs])
        key, payload, loads = self.key, self.payload, self.model_loads

        def fn(batches):
            return append_scores(batches, key, payload, loads, feeds, outputs)

        return df.mapInArrow(fn, schema)

    @staticmethod
    def _vector(column: str, how: str):
        """Vector column ``column`` as the executors read it: its values, or for a sparse input
        each row's indices and values (never densified)."""
        from pyspark.ml.functions import vector_to_array
        from pyspark.sql import functions as F

        if how == "sparse":
            return pair(column)
        return vector_to_array(F.col("`" + column.replace("`", "``") + "`")).alias(column)

    def close(self) -> None:
        shutil.rmtree(self.local, ignore_errors=True)


# -- command line (tfhadoop predict, and spark-submit predict.py) ---------------------------------

WRITE_MODES = ("errorifexists", "overwrite", "append")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="SavedModel directory (hdfs://..., /path, file:///...), "
                                                  "e.g. the --export-dir of `tfhadoop train`")
    src = p.add_argument_group("input (exactly one)")
    src.add_argument("--table", help="a Hive table, db.table")
    src.add_argument("--query", help="a Spark SQL query")
    src.add_argument("--input", help="files or a directory (local file:///... or hdfs://)")
    src.add_argument("--input-format", default="parquet", help="parquet | orc | csv | json | tfrecord (default parquet)")
    dst = p.add_argument_group("output (exactly one)")
    dst.add_argument("--output-table", help="a Hive table to write, db.table")
    dst.add_argument("--output", help="a directory to write")
    dst.add_argument("--output-format", default="parquet", help="parquet | orc | json | csv (default parquet)")
    p.add_argument("--mode", default="errorifexists", choices=WRITE_MODES,
                   help="when the output exists: errorifexists (default), overwrite or append")
    p.add_argument("--prediction-col", default="prediction",
                   help="column of a single-output model's scores (several outputs: one column per output key)")
    p.add_argument("--master", help="Spark master: local[N] (default local[2]) or yarn")


def check_output(spark, args) -> None:
    """An existing output table or directory is refused unless --mode overwrite/append: before
    any work, not after the scoring ran."""
    if bool(args.output_table) == bool(args.output):
        raise CommandError("give exactly one of --output-table or --output")
    if args.mode != "errorifexists":
        return
    if args.output_table:
        if spark.catalog.tableExists(args.output_table):
            raise CommandError(f"--output-table {args.output_table} exists already; pass --mode overwrite to "
                               "replace it (or --mode append)")
        return
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(args.output)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    if fs.exists(path):
        raise CommandError(f"--output {fs.makeQualified(path)} exists already; pass --mode overwrite to replace it "
                           "(or --mode append)")


def run_predict(spark, args) -> dict:
    """Score the input with the model and write the output; returns counts for the summary."""
    from tfhadoop.spark.export_plan import Source, load_source

    sources = [s for s in (args.table, args.query, args.input) if s]
    if len(sources) != 1:
        raise CommandError("give exactly one of --table, --query or --input")
    check_output(spark, args)
    source = load_source(spark, Source(args.table, args.query, args.input, args.input_format))
    where = (f"--table {args.table}" if args.table else f"--input {args.input}" if args.input else "the --query")
    scorer = Scorer(spark, args.model)
    try:
        scored = scorer.transform(source, args.prediction_col, where)
        writer = scored.write.mode(args.mode)
        if args.output_table:
            writer.saveAsTable(args.output_table)
        else:
            writer.format(args.output_format).save(args.output)
    finally:
        scorer.close()
    columns = [c for c in scored.columns if c not in source.columns]
    return {"columns": columns, "model_loads": scorer.model_loads.value}


DESCRIPTION = """Score a Hive table, query or files with a SavedModel on the Spark executors (the model
loaded once per executor process, Arrow batches) and write the input's columns plus one column
per model output to a Hive table or files. Model inputs are matched to columns by name; a
missing or mistyped column, or an output that exists without --mode overwrite/append, is an
error before any scoring runs."""
EPILOG = """example: tfhadoop predict --model hdfs:///models/ctr/2026-11-23 --table features.ctr_today
    --output-table scores.ctr_today --mode overwrite"""


def register(subparsers) -> None:
    p = subparsers.add_parser("predict", help="score a Hive table or files with a SavedModel on Spark executors",
                              description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.set_defaults(func=_cli)


def _session(args):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    hive = bool(args.table or args.query or args.output_table)
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # under spark-submit: its master, jars and conf rule
        b = SparkSession.builder.appName("tfhadoop-predict")
        return (b.enableHiveSupport() if hive else b).getOrCreate(), True
    from tfhadoop.spark.session import get_session

    extra = {"spark.executor.memory": "2g", "spark.executor.instances": "2"} if args.master == "yarn" else {}
    return get_session("tfhadoop-predict", master=args.master, hive=hive, extra_conf=extra), True


def _score(args) -> dict:
    """One scoring run in the session the arguments ask for (stopped after if this run made it)."""
    spark, owned = _session(args)
    try:
        return run_predict(spark, args)
    finally:
        if owned:
            spark.stop()


def _cli(args) -> int:
    from tfhadoop.trainer import console

    with console.stderr_to(None if getattr(args, "verbose", False) else console.log_path("predict")):
        info = _score(args)
    target = f"table {args.output_table}" if args.output_table else f"{args.output} ({args.output_format})"
    print(f"scored with {args.model}: wrote {target} with column(s) {', '.join(info['columns'])}; "
          f"model loaded {info['model_loads']} time(s) on the executors")
    return 0


def main(argv=None) -> int:
    """Entry point for ``spark-submit --jars jars/tfhadoop-*.jar spark/python/tfhadoop/spark/predict.py ...``."""
    p = argparse.ArgumentParser(prog="predict.py", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        info = _score(args)
    except CommandError as exc:
        print(f"predict: error: {exc}", file=sys.stderr)
        return 1
    print(f"scored with {args.model}: column(s) {', '.join(info['columns'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
