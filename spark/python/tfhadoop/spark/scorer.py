"""``Model.transform``'s engine: a SavedModel fetched and broadcast once, scoring DataFrames of one
Spark session.

Why it is built this way:
- The driver loads the model once to read its serving signature (:mod:`scoring_plan`): a
  missing or mistyped column is an error before any task runs.
- Scoring is a scalar Arrow UDF over the model's input columns (``arrow_udf``, PySpark 4.1+):
  only those columns travel to Python and only the scores come back; the rest of the row stays
  in the JVM (an older PySpark falls back to ``mapInArrow``, which ships every column both ways).
- One column per model output: a single output is ``prediction_col``; several are named after
  the signature's output keys (one struct from the UDF, so the model runs once per row).
- A DataFrame carrying a user-defined type (an ML vector) is scored row-based: see
  :func:`row_based`.
"""
from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import uuid

from tfhadoop.errors import CommandError
from tfhadoop.spark import serving
from tfhadoop.spark.export_vectors import pair
from tfhadoop.spark.scoring_batches import append_scores, scoring_udf
from tfhadoop.spark.scoring_plan import plan_feeds, plan_outputs, signature_specs, spark_type


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

def has_arrow_udf() -> bool:
    from pyspark.sql import functions as F

    return hasattr(F, "arrow_udf")


def _has_udt(t) -> bool:
    from pyspark.sql.types import ArrayType, MapType, StructType, UserDefinedType

    if isinstance(t, UserDefinedType):
        return True
    if isinstance(t, ArrayType):
        return _has_udt(t.elementType)
    if isinstance(t, MapType):
        return _has_udt(t.keyType) or _has_udt(t.valueType)
    return isinstance(t, StructType) and any(_has_udt(f.dataType) for f in t.fields)


def row_based(df):
    """``df`` with a filter true for every row when it carries a user-defined type column (an
    ML vector), so that the scoring UDF reads rows.

    Spark 4.1+ runs an Arrow UDF over a columnar child (a Parquet or ORC scan) in
    ``ColumnarArrowEvalPythonEvaluatorFactory``, which turns every column of the child, not only
    the UDF's arguments, back into column vectors, and ``RowToColumnConverter`` has no case for
    a user-defined type: any such DataFrame failed with UNSUPPORTED_DATATYPE, whether or not the
    model read the vector. A row-based child (here a filter; any filter, join or projection of
    the user's has the same effect) takes Spark's row path, which passes the column through. For
    a file scan this costs nothing: that columnar path converts the batches to rows for the UDF
    too. The filter is deterministic, so the user's own filters still combine with it and push
    down to the scan (partition pruning kept). Not chosen: ``spark.sql.execution.arrow.
    pythonUDF.columnarInput.enabled=false`` is read when the query is planned, so it cannot be
    scoped to the returned DataFrame and would change every Arrow UDF of the user's session;
    Spark refuses to cast a vector to its struct form and back; re-attaching the column with a
    row key is a join (a shuffle) of the whole input."""
    from pyspark.sql import functions as F

    fields = df.schema.fields
    if not any(_has_udt(f.dataType) for f in fields):
        return df
    # the optimizer folds IS NULL / IS NOT NULL of a non-nullable column to a constant and drops
    # the filter; a file scan's columns are always nullable
    anchor = next((f for f in fields if f.nullable and _has_udt(f.dataType)), None) or next(
        (f for f in fields if f.nullable), None)
    if anchor is None:
        return df
    c = F.col("`" + anchor.name.replace("`", "``") + "`")
    return df.where(c.isNull() | c.isNotNull())


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
        df = row_based(df)
        args = [self._vector(f.column, vectors[f.column]) if f.column in vectors else col(f.column) for f in feeds]
        if len(outputs) == 1:
            udf = scoring_udf(self.key, self.payload, self.model_loads, feeds, outputs, spark_type(outputs[0]))
            return df.withColumn(outputs[0].column, udf(*args))
        struct = StructType([StructField(o.column, spark_type(o)) for o in outputs])
        udf = scoring_udf(self.key, self.payload, self.model_loads, feeds, outputs, struct)
        tmp = f"__tfhadoop_scores_{uuid.uuid4().hex[:8]}"
        scored = df.select(*[col(c) for c in df.columns], udf(*args).alias(tmp))
        return scored.select(*[col(c) for c in df.columns], *[F.col(f"{tmp}.`{o.column}`").alias(o.column)
                                                              for o in outputs])

    def _map_in_arrow(self, df, feeds, vectors, outputs):
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructField, StructType

        if vectors:  # ML vectors as float arrays or index/value pairs: plain Arrow for the executors
            df = df.select(*[self._vector(c, vectors[c]) if c in vectors else F.col(f"`{c}`") for c in df.columns])
        schema = StructType(list(df.schema.fields) + [StructField(o.column, spark_type(o), nullable=False)
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
