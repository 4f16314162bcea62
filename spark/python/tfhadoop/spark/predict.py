"""``tfhadoop predict`` (also a ``spark-submit`` job file): score a Hive table, query or files with
a SavedModel on the Spark executors and write the input's columns plus the scores.

    spark-submit --jars jars/tfhadoop-0.1.0.jar spark/python/tfhadoop/spark/predict.py --model hdfs:///models/ctr \\
        --table features.today --output-table scores.today

The scoring itself is ``Model.transform``'s (:class:`tfhadoop.spark.scorer.Scorer`); this module
reads the input, refuses an existing output before any work, and writes the result.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from tfhadoop.errors import CommandError
from tfhadoop.spark.scorer import Scorer

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
        from tfhadoop.spark.session import get_or_create

        b = SparkSession.builder.appName("tfhadoop-predict")
        return get_or_create(b.enableHiveSupport() if hive else b), True
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
