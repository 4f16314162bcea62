"""Hive/HDFS -> sharded TFRecord dataset: `tfhadoop export`, also a `spark-submit` job file.

    spark-submit --jars jars/tfhadoop-0.1.0.jar spark/python/tfhadoop/spark/export.py --table db.t --output hdfs:///ds

Why it is built this way:
- The write goes through the tfhadoop JVM data source (fast, Hadoop commit protocol per split).
- Everything is written under a hidden staging dir beside the output, renamed into place as a
  whole at the end: a failed export leaves no manifest and no partial shards visible, and
  ``--overwrite`` replaces the old dataset only once the new one is complete.
- Each split is cached after a round-robin repartition, so one aggregate over the cache gives the
  record count of every shard and the profile (nulls, list lengths) that makes the parse spec
  exact (FixedLenFeature where the data allows it), and the write reads the same cached rows.
- Split assignment hashes the split key (xxhash64), so re-running gives the same split.
- TF Examples have no float64: double and decimal columns are float32 unless named in
  ``--exact-columns``; the profile counts, per such column, the values float32 changes (and the
  largest change), so the loss is reported, never silent. An exact column is int64 when all its
  values are integers (decided over the whole input, so the parse spec has one dtype), otherwise
  the exact decimal text.
- Spark ML vectors are float features of the vector's size (fixed-length when the data says so).
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from tfhadoop.connectors import dataset
from tfhadoop.connectors.dataset import COMPRESSION_SUFFIX, MANIFEST
from tfhadoop.errors import CommandError

log = logging.getLogger(__name__)

HASH_BUCKETS = 1_000_000


@dataclass(frozen=True)
class ExportOptions:
    """The export's options, validated once."""

    output: str
    table: str | None = None
    query: str | None = None
    input: str | None = None
    input_format: str = "parquet"
    shards: int | None = None
    records_per_shard: int | None = None
    # none: a trainer task starts at a byte offset (the shard's index sidecar); a gzip or zlib stream
    # cannot be entered mid-way, so each task there decompresses its shard from the start
    compression: str = "none"
    partition_by: str | None = None
    splits: dict = field(default_factory=dict)  # name -> fraction, in the order given
    split_key: str | None = None
    record_type: str = "Example"
    overwrite: bool = False
    master: str | None = None
    label: str | None = None
    exact_columns: tuple = ()  # double/decimal columns written exactly instead of as float32

    def __post_init__(self):
        sources = [s for s in (self.table, self.query, self.input) if s]
        if len(sources) != 1:
            raise CommandError("give exactly one of --table, --query or --input")
        if self.shards is not None and self.records_per_shard is not None:
            raise CommandError("--shards and --records-per-shard exclude each other")
        if self.shards is not None and self.shards < 1 or self.records_per_shard is not None and self.records_per_shard < 1:
            raise CommandError("--shards / --records-per-shard must be at least 1")
        if self.compression not in COMPRESSION_SUFFIX:
            raise CommandError(f"--compression must be gzip, zlib or none, not {self.compression!r}")
        if self.record_type not in ("Example", "SequenceExample"):
            raise CommandError(f"--record-type must be Example or SequenceExample, not {self.record_type!r}")
        if self.input_format not in ("parquet", "orc", "csv", "json", "tfrecord"):
            raise CommandError(f"--input-format must be parquet, orc, csv, json or tfrecord, not {self.input_format!r}")
        if self.splits and abs(sum(self.splits.values()) - 1.0) > 1e-6:
            raise CommandError(f"--split fractions must add up to 1, not {sum(self.splits.values()):g}")


def parse_splits(text: str | None) -> dict:
    """``train=0.9,eval=0.1`` -> {"train": 0.9, "eval": 0.1}."""
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        name, sep, frac = part.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_-]+", name.strip()):
            raise CommandError(f"--split entries look like name=fraction, not {part!r}")
        try:
            out[name.strip()] = float(frac)
        except ValueError:
            raise CommandError(f"--split fraction {frac!r} of {name!r} is not a number") from None
        if not 0 < out[name.strip()] <= 1:
            raise CommandError(f"--split fraction of {name!r} must be in (0, 1]")
    return out


# -- Hadoop FileSystem through the session's JVM (the same configuration Spark writes with) --------

class _FS:
    def __init__(self, spark, path: str):
        jvm = spark._jvm
        self._jvm = jvm
        self._conf = spark._jsc.hadoopConfiguration()
        self.root = jvm.org.apache.hadoop.fs.Path(path)
        self.fs = self.root.getFileSystem(self._conf)
        self.root = self.fs.makeQualified(self.root)

    def path(self, *parts):
        p = self.root
        for part in parts:
            p = self._jvm.org.apache.hadoop.fs.Path(p, part)
        return p

    def sibling(self, name):
        return self._jvm.org.apache.hadoop.fs.Path(self.root.getParent(), name)


# -- the job --------------------------------------------------------------------------------------

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


def _split_frames(df, opts: ExportOptions):
    """One DataFrame per split, by a deterministic hash of the split key (or of all columns)."""
    from pyspark.sql import functions as F

    if not opts.splits:
        return {"": df}
    if opts.split_key and opts.split_key not in df.columns:
        raise CommandError(f"--split-key {opts.split_key!r} is not a column of the input ({', '.join(df.columns)})")
    key = F.col(opts.split_key) if opts.split_key else F.struct(*[F.col(c) for c in df.columns])
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


def _vector_size(c):
    """The size of a vector column's values: sparse vectors count their full size."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F

    return F.size(vector_to_array(c))


def _f32_round_trip(c, t):
    """c converted to float32 and back to its own type, as the data source writes it."""
    return c.cast("float").cast(t)


def _profile_exprs(df, partition_by, exact=()):
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
            size = _vector_size(c) if is_vector(f.dataType) else F.size(c)
            exprs.append(F.min(F.when(c.isNotNull(), size)).alias(f"__minlen_{f.name}"))
            exprs.append(F.max(F.when(c.isNotNull(), size)).alias(f"__maxlen_{f.name}"))
        if isinstance(f.dataType, (DoubleType, DecimalType)) and f.name not in exact:
            back = _f32_round_trip(c, f.dataType)
            changed = c.isNotNull() & ~c.eqNullSafe(back)
            exprs.append(F.sum(F.when(changed, 1).otherwise(0)).alias(f"__f32changed_{f.name}"))
            exprs.append(F.max(F.when(changed, F.abs(c.cast("double") - back.cast("double")))).alias(
                f"__f32maxchange_{f.name}"))
    return exprs


def _exact_plan(source, opts: ExportOptions) -> dict:
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


def _apply_exact(df, plan: dict):
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


def _shard_count(records: int, opts: ExportOptions, fraction: float) -> int:
    if opts.records_per_shard:
        n = math.ceil(records / opts.records_per_shard)
    elif opts.shards:
        n = max(1, round(opts.shards * fraction)) if opts.splits else opts.shards
    else:
        n = max(1, math.ceil(records / 100_000))
    return max(1, min(n, records)) if records else 1


def run_export(spark, opts: ExportOptions, manifest_extra: dict | None = None) -> dict:
    """Runs the export; returns the manifest it wrote. ``manifest_extra``: keys added to the
    manifest (``Trainer.fit`` records its source fingerprint there, written with the rest). An
    error of HDFS (permission, quota, safe mode, parent, NameNode down) is raised as its one-line
    ``tfhadoop.errors.HdfsAccessError``, the Java exception as its cause."""
    from tfhadoop.spark.java_errors import hdfs_error_of

    try:
        return _run_export(spark, opts, manifest_extra)
    except Exception as exc:
        mapped = hdfs_error_of(exc, f"export to {opts.output}")
        if mapped is None:
            raise
        raise mapped from exc


def _run_export(spark, opts: ExportOptions, manifest_extra: dict | None) -> dict:
    from pyspark.sql import functions as F

    t0 = time.monotonic()
    out = _FS(spark, opts.output)
    if out.fs.exists(out.root):
        if not opts.overwrite:
            raise CommandError(f"{out.root} already exists; pass --overwrite to replace it")
    staging = out.sibling(f".{out.root.getName()}.tfhadoop-staging-{uuid.uuid4().hex[:12]}")
    source = load_source(spark, Source(opts.table, opts.query, opts.input, opts.input_format))
    if opts.partition_by and opts.partition_by not in source.columns:
        raise CommandError(f"--partition-by {opts.partition_by!r} is not a column of the input")
    check_label(source, opts.label)
    exact = _exact_plan(source, opts)
    original_schema = source.schema
    files, split_info, profile = [], {}, None
    try:
        for split, frame in _split_frames(source, opts).items():
            frac = opts.splits.get(split, 1.0)
            records = frame.count() if not (opts.shards and not opts.splits) else None
            n = opts.shards if records is None else _shard_count(records, opts, frac)
            shaped = _apply_exact(frame.repartition(n), exact).cache()
            try:
                pid = F.spark_partition_id().alias("__pid")
                keys = [pid] + ([F.col(opts.partition_by)] if opts.partition_by else [])
                stats = shaped.groupBy(*keys).agg(*_profile_exprs(shaped, opts.partition_by, exact)).collect()
                profile = _merge_profile(profile, stats, shaped, opts.partition_by)
                target = f"{staging.toString()}/{split}" if split else staging.toString()
                writer = shaped.write.format("tfrecord").mode("errorifexists").option("recordType", opts.record_type) \
                    .option("compression", opts.compression)
                if opts.partition_by:
                    writer = writer.partitionBy(opts.partition_by)
                writer.save(target)
            finally:
                shaped.unpersist()
            split_files = _finalize_files(spark, target, split, stats, opts)
            files.extend(split_files)
            split_info[split or "all"] = {"records": sum(f["records"] for f in split_files),
                                          "files": [f["path"] for f in split_files],
                                          **({"fraction": frac} if opts.splits else {})}
        total = sum(f["records"] for f in files)
        if total == 0:
            raise CommandError("the export produced no records: the input is empty (nothing written)")
        manifest = _manifest(opts, source, profile, files, split_info, time.monotonic() - t0, exact, original_schema)
        manifest.update(manifest_extra or {})
        _write_text(out, spark._jvm.org.apache.hadoop.fs.Path(staging, MANIFEST), dataset.dumps(manifest))
        out.fs.create(spark._jvm.org.apache.hadoop.fs.Path(staging, "_SUCCESS"), True).close()
        if out.fs.exists(out.root):
            out.fs.delete(out.root, True)
        if not out.fs.rename(staging, out.root):
            raise CommandError(f"could not move {staging} to {out.root}")
    except BaseException:
        try:
            if out.fs.exists(staging):
                out.fs.delete(staging, True)
        except Exception as cleanup:  # noqa: BLE001 - HDFS refusing the export may refuse this too
            log.debug("could not remove the export's staging dir %s: %s", staging, str(cleanup).splitlines()[0])
        raise
    log.info("exported %d records in %d files to %s in %.1f s", total, len(files), out.root, time.monotonic() - t0)
    return manifest


def _merge_profile(profile, stats, df, partition_by):
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


def float32_loss(profile) -> dict:
    """Per double/decimal column written as float32: values changed by float32 and the largest change."""
    return {name: {"changed": n, "max_change": profile["f32maxchange"].get(name) or 0.0}
            for name, n in sorted(profile["f32changed"].items())}


def _finalize_files(spark, target: str, split: str, stats, opts: ExportOptions) -> list:
    """Rename the data source's part files to part-NNNNN-of-MMMMM per directory; record counts."""
    jvm = spark._jvm
    root = jvm.org.apache.hadoop.fs.Path(target)
    fs = root.getFileSystem(spark._jsc.hadoopConfiguration())
    fs.delete(jvm.org.apache.hadoop.fs.Path(root, "_SUCCESS"), False)
    counts = {}
    for row in stats:
        d = row.asDict()
        part_dir = f"{opts.partition_by}={_partition_dir_value(d[opts.partition_by])}" if opts.partition_by else ""
        counts[(part_dir, d["__pid"])] = d["__records"]
    by_dir = {}
    it = fs.listFiles(root, True)
    while it.hasNext():
        st = it.next()
        rel = st.getPath().toString()[len(fs.makeQualified(root).toString()) + 1:]
        name = rel.rsplit("/", 1)[-1]
        m = re.match(r"part-(\d+)-", name)
        if not m:
            continue
        by_dir.setdefault(rel.rsplit("/", 1)[0] if "/" in rel else "", []).append((int(m.group(1)), st))
    ext = ".tfrecord" + COMPRESSION_SUFFIX[opts.compression]
    out = []
    for part_dir, entries in sorted(by_dir.items()):
        entries.sort(key=lambda e: e[0])
        for i, (pid, st) in enumerate(entries):
            name = f"part-{i:05d}-of-{len(entries):05d}{ext}"
            dst = jvm.org.apache.hadoop.fs.Path(st.getPath().getParent(), name)
            if not fs.rename(st.getPath(), dst):
                raise CommandError(f"could not rename {st.getPath()} to {dst}")
            _rename_index(jvm, fs, st.getPath(), dst)
            rel = "/".join(p for p in (split, part_dir, name) if p)
            records = counts.get((part_dir, pid))
            if records is None:
                raise CommandError(f"no record count for {rel} (partition {pid}, dir {part_dir!r})")
            out.append({"path": rel, "records": records, "bytes": st.getLen(), "split": split or None})
    return out


def _rename_index(jvm, fs, src, dst) -> None:
    """The record-boundary index sidecar (.<file>.tfrindex) follows its data file's new name."""
    side = jvm.org.apache.hadoop.fs.Path(src.getParent(), "." + src.getName() + ".tfrindex")
    if fs.exists(side):
        to = jvm.org.apache.hadoop.fs.Path(dst.getParent(), "." + dst.getName() + ".tfrindex")
        if not fs.rename(side, to):
            raise CommandError(f"could not rename {side} to {to}")


def _partition_dir_value(v) -> str:
    """The directory value the data source writes for a partition value (Hive-style escaping)."""
    if v is None:
        return "__HIVE_DEFAULT_PARTITION__"
    from urllib.parse import quote

    return quote(str(v), safe=" !$&'()+,;@[]^`{}~")


def _write_text(out: _FS, path, text: str) -> None:
    stream = out.fs.create(path, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def arrow_schema(profile, partition_by=None, record_type="Example"):
    """The written data's schema in Arrow terms, with nullability and list lengths as observed."""
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
            at = pa.list_(pa.list_(leaf(t.elementType.elementType)))
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


def _manifest(opts, source, profile, files, split_info, seconds, exact=None, original_schema=None) -> dict:
    exact = exact or {}
    schema = arrow_schema(profile, opts.partition_by, opts.record_type)
    spec = dataset.parse_spec(schema, opts.record_type)
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


# -- command line (tfhadoop export, and spark-submit export.py) ------------------------------------

def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("source (exactly one)")
    src.add_argument("--table", help="a Hive table, db.table")
    src.add_argument("--query", help="a Spark SQL query")
    src.add_argument("--input", help="files or a directory (local or hdfs://)")
    src.add_argument("--input-format", default=ExportOptions.input_format,
                     help=f"parquet | orc | csv | json | tfrecord (default {ExportOptions.input_format})")
    p.add_argument("--output", required=True, help="the dataset directory, e.g. hdfs:///datasets/clicks")
    p.add_argument("--shards", type=int, help="number of shard files (per split: in proportion to its fraction)")
    p.add_argument("--records-per-shard", type=int, help="records per shard file instead of --shards")
    p.add_argument("--compression", default=ExportOptions.compression,
                   help=f"none | gzip | zlib (default {ExportOptions.compression}: trainer tasks start at a byte "
                        "offset; a compressed shard is read from its start by every task, and holds ~2-3x less)")
    p.add_argument("--partition-by", help="write one directory per value of this column")
    p.add_argument("--split", help="named splits with fractions, e.g. train=0.9,eval=0.1")
    p.add_argument("--split-key", help="column whose hash assigns a row to a split (default: the whole row)")
    p.add_argument("--record-type", default=ExportOptions.record_type,
                   help=f"Example | SequenceExample (default {ExportOptions.record_type})")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output dataset")
    p.add_argument("--label", help="the label column: checked to be one value per record (not a vector or array)")
    p.add_argument("--exact-columns", help="double/decimal columns to write exactly (int64 or decimal text) "
                                           "instead of float32, comma-separated")
    p.add_argument("--master", help="Spark master: local[N] (default local[2]) or yarn")


def options_from_args(args) -> ExportOptions:
    return ExportOptions(output=args.output, table=args.table, query=args.query, input=args.input,
                         input_format=args.input_format, shards=args.shards,
                         records_per_shard=args.records_per_shard, compression=args.compression,
                         partition_by=args.partition_by, splits=parse_splits(args.split), split_key=args.split_key,
                         record_type=args.record_type, overwrite=args.overwrite, master=args.master,
                         label=args.label, exact_columns=tuple(c.strip() for c in (args.exact_columns or "").split(",")
                                                               if c.strip()))


def register(subparsers) -> None:
    p = subparsers.add_parser("export", help="export a Hive table, query or files as a sharded TFRecord dataset",
                              description=(__doc__ or "").split("\n\n", 1)[0])
    add_arguments(p)
    p.set_defaults(func=_cli)


def _session(opts: ExportOptions, quiet: bool = False):
    """The active session, or a new one (owned: stopped after the export). ``quiet``: Spark's
    own log lines off (a failed task logs its Java stack several times before the error reaches
    us, which then says it in one line); ``-v`` keeps them."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # under spark-submit: its master, jars and conf rule
        b = SparkSession.builder.appName("tfhadoop-export")
        return (b.enableHiveSupport() if opts.table or opts.query else b).getOrCreate(), True
    from tfhadoop.spark.session import get_session

    extra = {}
    if quiet:  # and Spark's progress bar only on a terminal, where its \r-drawn line is readable
        extra = {"spark.log.level": "OFF", "spark.ui.showConsoleProgress": str(sys.stderr.isatty()).lower()}
    if opts.master == "yarn":
        extra.update({"spark.executor.memory": "1g", "spark.executor.instances": "2"})
    return get_session("tfhadoop-export", master=opts.master, hive=bool(opts.table or opts.query),
                       extra_conf=extra), True


def _print_summary(manifest: dict, output: str) -> None:
    sizes = [f["records"] for f in manifest["files"]]
    print(f"exported {manifest['records']} records ({manifest['bytes'] / 1e6:.1f} MB) to {output} "
          f"in {manifest['export_seconds']:.1f} s: {len(sizes)} shards, {min(sizes)}..{max(sizes)} records each")
    for name, s in manifest["splits"].items():
        print(f"  {name}: {s['records']} records in {len(s['files'])} files")
    if manifest["compression"] == "none":
        print("  uncompressed, each shard with a record index: a trainer task starts at a byte offset. "
              "--compression gzip stores 3-5x less for tf.Examples of numeric features, but every task "
              "then decompresses its shard from the start")
    for name, loss in manifest.get("float32_loss", {}).items():
        if loss["changed"]:
            print(f"  float32: {loss['changed']} values of {name} changed (largest change {loss['max_change']:.6g}); "
                  f"--exact-columns {name} writes them exactly")
    for name, how in manifest.get("exact_columns", {}).items():
        print(f"  exact: {name} written as {'int64' if how == 'int64' else 'exact decimal text (bytes)'}")


def _cli(args) -> int:
    opts = options_from_args(args)
    quiet = not getattr(args, "verbose", True)  # `tfhadoop export` without -v (spark-submit: Spark's own logs)
    if quiet:
        logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines about the gateway's sockets
    spark, owned = _session(opts, quiet)
    try:
        manifest = run_export(spark, opts)
    except Exception:
        if quiet and sys.stderr.isatty():
            sys.stderr.write("\r\033[K")  # the error's line replaces the progress bar's, not follows it
        raise
    finally:
        if owned:
            spark.stop()
    _print_summary(manifest, opts.output)
    return 0


def main(argv=None) -> int:
    """Entry point for ``spark-submit --jars jars/tfhadoop-*.jar spark/python/tfhadoop/spark/export.py ...``."""
    p = argparse.ArgumentParser(prog="export.py", description=(__doc__ or "").split("\n\n", 1)[0])
    add_arguments(p)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return _cli(args)
    except CommandError as exc:
        print(f"export: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
