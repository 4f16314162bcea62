"""`tfhadoop export --input DATASET --input-format tfrecord` where DATASET is a tfhadoop dataset (a
directory with its manifest): the records are copied byte for byte into ``--compression``, one
directory at a time with as many shards as it had, so the splits, partition directories, parse
spec, label and float32 record of the original export carry over unchanged.

Why: a gzip or zlib dataset trains on the slow path (every trainer task decompresses its shard
from the start); rewritten uncompressed, each shard gets its record index and tasks start at a
byte offset. Decoding and re-encoding the rows instead would infer a new schema from the records
(a VarLen feature that happens to have one value everywhere, a decimal written as text) and lose
what the original export knew.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from datetime import datetime, timezone

from tfhadoop.connectors import dataset
from tfhadoop.connectors.dataset import MANIFEST
from tfhadoop.errors import CommandError
from tfhadoop.spark.export_options import ExportOptions
from tfhadoop.spark.export_write import DatasetFS, finalize_files, read_text

# the manifest fields a rewrite sets; every other field of the original carries over as it was
_REWRITTEN = ("format", "version", "record_type", "compression", "records", "bytes", "files", "splits", "source",
              "created", "export_seconds")


def dataset_to_rewrite(spark, opts: ExportOptions) -> dict | None:
    """The input dataset's manifest when ``opts`` reads a tfhadoop dataset (TFRecord input with a
    manifest), else None; the options that would change its layout are refused, by flag."""
    if opts.input_format != "tfrecord" or not opts.input:
        return None
    src = DatasetFS(spark, opts.input)
    if not src.fs.exists(src.path(MANIFEST)):
        return None
    old = json.loads(read_text(src, src.path(MANIFEST)))
    given = [flag for flag, value in (("--split", opts.splits), ("--split-key", opts.split_key),
                                      ("--partition-by", opts.partition_by), ("--shards", opts.shards),
                                      ("--records-per-shard", opts.records_per_shard),
                                      ("--exact-columns", opts.exact_columns), ("--pad", opts.pad),
                                      ("--label", opts.label if opts.label != old.get("label") else None)) if value]
    if given:
        raise CommandError(f"--input {opts.input} is a tfhadoop dataset ({MANIFEST}): it is rewritten with its "
                           f"splits, partitions, shard counts and label as they are; {', '.join(given)} cannot "
                           "change them (export from the original table for another layout)")
    return old


def rewrite_into(spark, opts: ExportOptions, old: dict, staging: str, t0: float) -> dict:
    """Copies the records of every shard directory of ``old`` under ``staging``; returns the manifest."""
    from pyspark.sql import functions as F

    src = DatasetFS(spark, opts.input or "")
    groups: dict = {}  # (directory, split) -> the shard paths in it
    for f in old["files"]:
        groups.setdefault((os.path.dirname(f["path"]), f.get("split")), []).append(f)
    flat = replace(opts, partition_by=None)  # directories are copied as they are, not re-derived
    files = []
    for (rel_dir, split), shards in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] or "")):
        records = sum(s["records"] for s in shards)
        if not records:
            continue
        frame = spark.read.format("tfrecord").option("recordType", "ByteArray") \
            .load([src.path(s["path"]).toString() for s in shards]).select("byteArray")
        shaped = frame.repartition(min(len(shards), records)).cache()
        try:
            stats = shaped.groupBy(F.spark_partition_id().alias("__pid")) \
                .agg(F.count(F.lit(1)).alias("__records")).collect()
            target = f"{staging}/{rel_dir}" if rel_dir else staging
            shaped.write.format("tfrecord").mode("errorifexists").option("recordType", "ByteArray") \
                .option("compression", opts.compression).save(target)
        finally:
            shaped.unpersist()
        written = finalize_files(spark, target, split or "", stats, flat, prefix=rel_dir)
        if sum(f["records"] for f in written) != records:
            raise CommandError(f"rewrite of {opts.input}/{rel_dir}: {sum(f['records'] for f in written)} records "
                               f"written, the manifest says {records}")
        files.extend(written)
    if not files:
        raise CommandError(f"--input {opts.input}: the dataset's manifest lists no records (nothing written)")
    splits = {}
    for name, info in old.get("splits", {}).items():
        mine = [f for f in files if (f["split"] or "all") == name]
        splits[name] = {**info, "records": sum(f["records"] for f in mine), "files": [f["path"] for f in mine]}
    kept = {k: v for k, v in old.items() if k not in _REWRITTEN}
    return dataset.manifest_doc(
        old.get("record_type", "Example"), opts.compression, files, splits=splits, **kept,
        source={"input": opts.input, "input_format": "tfrecord"},
        rewritten_from={"compression": old.get("compression"), "source": old.get("source"),
                        "created": old.get("created")},
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        export_seconds=round(time.monotonic() - t0, 2),
    )
