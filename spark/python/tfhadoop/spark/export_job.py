"""The export job: split, cache, profile, write into a staging dir, then rename it into place whole
(a tfhadoop dataset as the input is rewritten instead: export_rewrite)."""
from __future__ import annotations

import logging
import time
import uuid

from tfhadoop.connectors import dataset
from tfhadoop.connectors.dataset import MANIFEST
from tfhadoop.errors import CommandError
from tfhadoop.spark.export_options import ExportOptions
from tfhadoop.spark.export_plan import (
    Source,
    apply_exact,
    check_label,
    check_pad,
    exact_plan,
    load_source,
    shard_count,
    split_frames,
)
from tfhadoop.spark.export_profile import merge_profile, profile_exprs
from tfhadoop.spark.export_rewrite import dataset_to_rewrite, rewrite_into
from tfhadoop.spark.export_schema import manifest_of
from tfhadoop.spark.export_sequences import struct_lists_as_feature_lists
from tfhadoop.spark.export_vectors import sparse_vectors_as_pairs
from tfhadoop.spark.export_write import DatasetFS, finalize_files, write_text

log = logging.getLogger(__name__)


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
    t0 = time.monotonic()
    out = DatasetFS(spark, opts.output)
    if out.fs.exists(out.root):
        if not opts.overwrite:
            raise CommandError(f"{out.root} already exists; pass --overwrite to replace it")
    staging = out.sibling(f".{out.root.getName()}.tfhadoop-staging-{uuid.uuid4().hex[:12]}")
    try:
        old = dataset_to_rewrite(spark, opts)
        if old is not None:
            manifest = rewrite_into(spark, opts, old, staging.toString(), t0)
        else:
            manifest = _export_into(spark, opts, staging.toString(), t0)
        total, files = manifest["records"], manifest["files"]
        manifest.update(manifest_extra or {})
        write_text(out, spark._jvm.org.apache.hadoop.fs.Path(staging, MANIFEST), dataset.dumps(manifest))
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


def _export_into(spark, opts: ExportOptions, staging: str, t0: float) -> dict:
    """Writes the input's splits under ``staging``; returns the manifest (not yet written)."""
    from pyspark.sql import functions as F

    source = load_source(spark, Source(opts.table, opts.query, opts.input, opts.input_format))
    if opts.partition_by and opts.partition_by not in source.columns:
        raise CommandError(f"--partition-by {opts.partition_by!r} is not a column of the input")
    check_label(source, opts.label)
    check_pad(source, opts.pad)
    original_schema = source.schema
    single_steps: set[str] = set()
    if opts.record_type == "SequenceExample":  # arrays of structs: a feature list per field
        source, single_steps = struct_lists_as_feature_lists(source)
    source, sparse_sizes = sparse_vectors_as_pairs(source)  # sparse ML vectors: indices + values
    exact = exact_plan(source, opts)
    files, split_info, profile = [], {}, None
    for split, frame in split_frames(source, opts).items():
        frac = opts.splits.get(split, 1.0)
        records = frame.count() if not (opts.shards and not opts.splits) else None
        n = opts.shards if records is None else shard_count(records, opts, frac)
        shaped = apply_exact(frame.repartition(n), exact).cache()
        try:
            pid = F.spark_partition_id().alias("__pid")
            keys = [pid] + ([F.col(opts.partition_by)] if opts.partition_by else [])
            stats = shaped.groupBy(*keys).agg(*profile_exprs(shaped, opts.partition_by, exact)).collect()
            profile = merge_profile(profile, stats, shaped, opts.partition_by)
            target = f"{staging}/{split}" if split else staging
            writer = shaped.write.format("tfrecord").mode("errorifexists").option("recordType", opts.record_type) \
                .option("compression", opts.compression)
            if opts.partition_by:
                writer = writer.partitionBy(opts.partition_by)
            writer.save(target)
        finally:
            shaped.unpersist()
        split_files = finalize_files(spark, target, split, stats, opts)
        files.extend(split_files)
        split_info[split or "all"] = {"records": sum(f["records"] for f in split_files),
                                      "files": [f["path"] for f in split_files],
                                      **({"fraction": frac} if opts.splits else {})}
    if sum(f["records"] for f in files) == 0:
        raise CommandError("the export produced no records: the input is empty (nothing written)")
    return manifest_of(opts, source, profile, files, split_info, time.monotonic() - t0, exact, original_schema,
                       single_steps, sparse_sizes)
