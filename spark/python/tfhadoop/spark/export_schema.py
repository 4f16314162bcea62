"""The exported data's schema (Arrow terms, from the profile) and the manifest that records it."""
from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime, timezone

from tfhadoop.connectors import dataset
from tfhadoop.errors import CommandError
from tfhadoop.spark.export_plan import is_vector
from tfhadoop.spark.export_profile import float32_loss
from tfhadoop.spark.export_vectors import sparse_entries


def arrow_schema(profile, partition_by=None, record_type="Example", single_steps: Collection[str] = ()):
    """The written data's schema in Arrow terms, with nullability and list lengths as observed;
    ``single_steps``: feature lists whose every step holds one value (from arrays of structs)."""
    import pyarrow as pa
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        ByteType,
        DateType,
        DecimalType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
        StructType,
        TimestampType,
    )

    def leaf(t):  # the feature kind the data source writes a Spark type as
        if isinstance(t, (LongType, IntegerType, ShortType, ByteType, BooleanType, DateType, TimestampType)):
            return dataset.arrow_type(dataset.INT64)
        if isinstance(t, (FloatType, DoubleType, DecimalType)):
            return dataset.arrow_type(dataset.FLOAT)
        if isinstance(t, StringType):
            return pa.string()  # bytes, UTF-8 text
        if isinstance(t, BinaryType):
            return dataset.arrow_type(dataset.BYTES)
        raise CommandError(f"column type {t.simpleString()} cannot be exported as a TFRecord feature")

    fields = []

    def add(name, t, nulls, minlen, maxlen):
        if is_vector(t):  # a float feature of the vector's size: fixed-length when all sizes agree
            fixed = minlen is not None and minlen == maxlen and minlen > 0 and nulls == 0
            fields.append(pa.field(name, pa.list_(pa.float32(), minlen) if fixed else pa.list_(pa.float32()),
                                   nullable=bool(nulls)))
            return
        if isinstance(t, ArrayType) and is_vector(t.elementType):
            fields.append(pa.field(name, pa.list_(pa.list_(pa.float32())), nullable=bool(nulls)))
            return
        if isinstance(t, StructType):
            for sub in t.fields:  # the data source writes struct fields as parent.child features
                add(f"{name}.{sub.name}", sub.dataType, nulls, None, None)
            return
        if isinstance(t, ArrayType) and isinstance(t.elementType, ArrayType):
            at = pa.list_(pa.list_(leaf(t.elementType.elementType), 1 if name in single_steps else -1))
        elif isinstance(t, ArrayType):
            fixed = minlen is not None and minlen == maxlen and minlen > 0 and nulls == 0
            at = pa.list_(leaf(t.elementType), minlen) if fixed else pa.list_(leaf(t.elementType))
        else:
            at = leaf(t)
        fields.append(pa.field(name, at, nullable=bool(nulls)))

    for f in profile["schema"].fields:
        if f.name == partition_by:
            continue
        add(f.name, f.dataType, profile["nulls"].get(f.name, 0), profile["minlen"].get(f.name),
            profile["maxlen"].get(f.name))
    return pa.schema(fields)


def manifest_of(opts, source, profile, files, split_info, seconds, exact=None, original_schema=None,
                single_steps: Collection[str] = (), sparse_sizes: dict[str, int] | None = None) -> dict:
    exact = exact or {}
    schema = arrow_schema(profile, opts.partition_by, opts.record_type, single_steps)
    spec = sparse_entries(dataset.parse_spec(schema, opts.record_type), sparse_sizes or {})
    for name, entry in spec["features"].items():  # a dense input narrower than this fails at submit
        if entry["type"] == "VarLenFeature" and profile["maxlen"].get(name) is not None:
            entry["max_length"] = int(profile["maxlen"][name])
        if entry["type"] == "VarLenFeature" and name in opts.pad:  # a fixed-length list needs no padding
            entry["pad"] = opts.pad[name]
    for name, how in exact.items():  # the parse spec says how an exact column is to be read
        for group in spec.values():
            if name in group:
                group[name]["exact"] = how
    extra = {"float32_loss": float32_loss(profile), "exact_columns": exact}
    if opts.label:
        extra["label"] = opts.label
    return dataset.manifest_doc(
        opts.record_type, opts.compression, files,
        splits=split_info,
        split_key=opts.split_key,
        partition_by=opts.partition_by,
        schema={"spark": json.loads((original_schema or profile["schema"]).json()), "arrow": [
            {"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema]},
        parse_spec=spec,
        **extra,
        source={k: v for k, v in (("table", opts.table), ("query", opts.query), ("input", opts.input),
                                  ("input_format", opts.input_format if opts.input else None)) if v},
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        export_seconds=round(seconds, 2),
    )
