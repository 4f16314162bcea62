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

The job is split by role: export_options (flags, ExportOptions), export_plan (source, checks,
splits, shard counts), export_profile (the one aggregate), export_schema (Arrow schema, manifest),
export_write (file names, index sidecars), export_job (staging and commit), export_rewrite (a
tfhadoop dataset as the input: records copied into another compression), export_summary (what is
printed). This module is the command and the spark-submit entry point; the names it re-exports
are the public import path.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from tfhadoop.errors import CommandError
from tfhadoop.spark.export_job import run_export
from tfhadoop.spark.export_options import ExportOptions, add_arguments, options_from_args, parse_splits
from tfhadoop.spark.export_plan import Source, check_label, is_vector, load_source
from tfhadoop.spark.export_profile import float32_loss
from tfhadoop.spark.export_schema import arrow_schema
from tfhadoop.spark.export_summary import print_summary

__all__ = ["ExportOptions", "Source", "add_arguments", "arrow_schema", "check_label", "float32_loss", "is_vector",
           "load_source", "main", "options_from_args", "parse_splits", "register", "run_export"]


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
        from tfhadoop.spark.session import get_or_create

        b = SparkSession.builder.appName("tfhadoop-export")
        return get_or_create(b.enableHiveSupport() if opts.table or opts.query else b), True
    from tfhadoop.spark.session import get_session

    extra = {}
    if quiet:  # and Spark's progress bar only on a terminal, where its \r-drawn line is readable
        extra = {"spark.log.level": "OFF", "spark.ui.showConsoleProgress": str(sys.stderr.isatty()).lower()}
    if opts.master == "yarn":
        extra.update({"spark.executor.memory": "1g", "spark.executor.instances": "2"})
    return get_session("tfhadoop-export", master=opts.master, hive=bool(opts.table or opts.query),
                       extra_conf=extra), True



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
    print_summary(manifest, opts.output)
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
