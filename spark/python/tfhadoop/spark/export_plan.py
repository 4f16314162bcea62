"""The export's plan: the input DataFrame, its checks (label, exact columns), the split
assignment and the shard count of each split."""
from __future__ import annotations

import math
from dataclasses import dataclass

from tfhadoop.errors import CommandError
from tfhadoop.spark.export_options import ExportOptions

HASH_BUCKETS = 1_000_000


@dataclass(frozen=True)
class Source:
    """Where the input DataFrame comes from (export's and predict's flags): one of a Hive table,
    a SQL query, or files in ``input_format``."""
    table: str | None
    query: str | None
    input: str | None
    input_format: str


def load_source(spark, opts: Source):
    if opts.table:
        return spark.table(opts.table)
    if opts.query:
        return spark.sql(opts.query)
    reader = spark.read.format(opts.input_format)
    if opts.input_format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader.load(opts.input)


def split_frames(df, opts: ExportOptions):
    """One DataFrame per split, by a deterministic hash of the split key (or of all columns)."""
    from pyspark.sql import functions as F

    if not opts.splits:
        return {"": df}
    if opts.split_key and opts.split_key not in df.columns:
        raise CommandError(f"--split-key {opts.split_key!r} is not a column of the input ({', '.join(df.columns)})")
    key = F.col(f"`{opts.split_key}`") if opts.split_key else F.struct(*[F.col(f"`{c}`") for c in df.columns])
    bucket = F.pmod(F.xxhash64(key), F.lit(HASH_BUCKETS))
    frames, low = {}, 0
    items = list(opts.splits.items())
    for i, (name, frac) in enumerate(items):
        high = HASH_BUCKETS if i == len(items) - 1 else low + int(round(frac * HASH_BUCKETS))
        frames[name] = df.filter((bucket >= low) & (bucket < high))
        low = high
    return frames


def is_vector(t) -> bool:
    """A Spark ML (or mllib) vector column, recognized by its UDT class name (no numpy import)."""
    from pyspark.sql.types import UserDefinedType

    return isinstance(t, UserDefinedType) and t.__class__.__name__ == "VectorUDT"



def exact_plan(source, opts: ExportOptions) -> dict:
    """Per --exact-columns column, how it is written: "int64" (decimals of scale 0 that fit, doubles
    whose values are all integers) or "decimal_text" (the exact decimal string), over all the input."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType, DoubleType

    types = {f.name: f.dataType for f in source.schema.fields}
    plan, check = {}, []
    for name in opts.exact_columns:
        t = types.get(name)
        if t is None:
            raise CommandError(f"--exact-columns names {name!r}, which is not a column of the input "
                               f"({', '.join(source.columns)})")
        if isinstance(t, DecimalType) and t.scale > 0:
            plan[name] = "decimal_text"
        elif isinstance(t, DecimalType) and t.precision <= 18:
            plan[name] = "int64"
        elif isinstance(t, (DoubleType, DecimalType)):
            check.append(name)  # int64 only if every value is an integer that fits
        else:
            raise CommandError(f"--exact-columns names {name!r} of type {t.simpleString()}: only double and "
                               "decimal columns lose digits as float32")
    if check:
        def fits(name):
            c = F.col(f"`{name}`")
            if isinstance(types[name], DecimalType):
                return c.isNull() | c.between(-(2 ** 63), 2 ** 63 - 1)
            return c.isNull() | ((c == F.floor(c)) & (F.abs(c) < F.lit(2.0 ** 63)))
        row = source.agg(*[F.sum(F.when(fits(n), 0).otherwise(1)).alias(n) for n in check]).collect()[0]
        for n in check:
            plan[n] = "int64" if not row[n] else "decimal_text"
    return plan


def apply_exact(df, plan: dict):
    """Casts the exact columns to what they are written as: bigint, or their exact decimal text."""
    from pyspark.sql import functions as F

    if not plan:
        return df
    cols = []
    for f in df.schema.fields:
        c = F.col(f"`{f.name}`")
        if f.name in plan:
            c = c.cast("bigint" if plan[f.name] == "int64" else "string").alias(f.name)
        cols.append(c)
    return df.select(*cols)


def shard_count(records: int, opts: ExportOptions, fraction: float) -> int:
    if opts.records_per_shard:
        n = math.ceil(records / opts.records_per_shard)
    elif opts.shards:
        n = max(1, round(opts.shards * fraction)) if opts.splits else opts.shards
    else:
        n = max(1, math.ceil(records / 100_000))
    return max(1, min(n, records)) if records else 1



def check_label(df, label: str | None) -> None:
    """A label is one value per record: a vector or array column is refused, by name. Several
    label columns (a model with several outputs) come as ``a,b``, as ``tfhadoop train --label``."""
    from pyspark.sql.types import ArrayType, StructType

    types = {f.name: f.dataType for f in df.schema.fields}
    for name in [n.strip() for n in (label or "").split(",") if n.strip()]:
        if name not in types:
            raise CommandError(f"--label {name!r} is not a column of the input ({', '.join(df.columns)})")
        t = types[name]
        if is_vector(t) or isinstance(t, (ArrayType, StructType)):
            kind = "a vector" if is_vector(t) else f"of type {t.simpleString()}"
            raise CommandError(f"--label {name!r} is {kind}; a label must be one number or string per record")


def check_pad(df, pad: dict) -> None:
    """``--pad`` names array columns, each with a value of the array's element kind (a number for
    numbers, text for strings): checked before any record is written."""
    from pyspark.sql.types import ArrayType, BinaryType, StringType

    types = {f.name: f.dataType for f in df.schema.fields}
    for name, value in pad.items():
        t = types.get(name)
        if not isinstance(t, ArrayType) or isinstance(t.elementType, ArrayType):
            kind = "not a column of the input" if t is None else f"of type {t.simpleString()}"
            raise CommandError(f"--pad {name!r} is {kind}; padding applies to a list column (array<...>)")
        text = isinstance(t.elementType, (StringType, BinaryType))
        integral = t.elementType.typeName() in ("long", "integer", "short", "byte", "boolean")
        if text != isinstance(value, str) or (integral and not isinstance(value, int)):
            raise CommandError(f"--pad {name}={value!r} does not fit the column's {t.simpleString()}")
