"""The profile of the exported rows, one aggregate over the cached split: nulls and list lengths
(which make the parse spec exact) and what float32 changes in double/decimal columns."""
from __future__ import annotations

from tfhadoop.spark.export_plan import is_vector


def vector_size(c):
    """The size of a vector column's values: sparse vectors count their full size."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F

    return F.size(vector_to_array(c))


def f32_round_trip(c, t):
    """c converted to float32 and back to its own type, as the data source writes it."""
    return c.cast("float").cast(t)


def profile_exprs(df, partition_by, exact=()):
    """Aggregates: per column the null count; for arrays and vectors min/max length; for double
    and decimal columns written as float32, the values float32 changes and the largest change."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DecimalType, DoubleType

    exprs = [F.count(F.lit(1)).alias("__records")]
    for f in df.schema.fields:
        if f.name == partition_by:
            continue
        c = F.col(f"`{f.name}`")
        exprs.append(F.sum(F.when(c.isNull(), 1).otherwise(0)).alias(f"__nulls_{f.name}"))
        if isinstance(f.dataType, ArrayType) or is_vector(f.dataType):
            size = vector_size(c) if is_vector(f.dataType) else F.size(c)
            exprs.append(F.min(F.when(c.isNotNull(), size)).alias(f"__minlen_{f.name}"))
            exprs.append(F.max(F.when(c.isNotNull(), size)).alias(f"__maxlen_{f.name}"))
        if isinstance(f.dataType, (DoubleType, DecimalType)) and f.name not in exact:
            back = f32_round_trip(c, f.dataType)
            changed = c.isNotNull() & ~c.eqNullSafe(back)
            exprs.append(F.sum(F.when(changed, 1).otherwise(0)).alias(f"__f32changed_{f.name}"))
            exprs.append(F.max(F.when(changed, F.abs(c.cast("double") - back.cast("double")))).alias(
                f"__f32maxchange_{f.name}"))
    return exprs



def merge_profile(profile, stats, df, partition_by):
    """Sum the per-shard aggregates into one profile per column."""
    profile = profile or {"records": 0, "nulls": {}, "minlen": {}, "maxlen": {}, "f32changed": {},
                           "f32maxchange": {}, "schema": df.schema}
    for row in stats:
        d = row.asDict()
        profile["records"] += d["__records"]
        for k, v in d.items():
            if v is None:
                continue
            for kind in ("nulls", "minlen", "maxlen", "f32changed", "f32maxchange"):
                prefix = f"__{kind}_"
                if k.startswith(prefix):
                    name = k[len(prefix):]
                    old = profile[kind].get(name)
                    profile[kind][name] = v if old is None else (old + v if kind in ("nulls", "f32changed") else
                                                                 min(old, v) if kind == "minlen" else max(old, v))
    return profile


def float32_loss(profile) -> dict:
    """Per double/decimal column written as float32: values changed by float32 and the largest change."""
    return {name: {"changed": n, "max_change": profile["f32maxchange"].get(name) or 0.0}
            for name, n in sorted(profile["f32changed"].items())}
