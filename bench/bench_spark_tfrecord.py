"""Spark TFRecord benchmark: the same DataFrame (>= 1M rows: ints, floats, strings, float arrays of
32, string arrays) written and read with tfhadoop's ``tfrecord`` source and as uncompressed Parquet,
in the same Spark session; prints times and ratios as JSON. spark-tfrecord 0.7.0 is included when
its jar is given (``--peer-jar``; it needs Spark 3.5 / Scala 2.12 to match, so run it under
``.venv35``). Both jars on one classpath register the short name ``tfrecord``, so each source is
addressed by its class name.

The formats are measured in interleaved rounds (write A, read A, write B, read B, ..., then again)
and the best time of each is kept, so that load from other jobs on the machine hits them alike.
Reads decode every column (``write.format("noop")``) with the writer's schema, and each read's row
count is checked.

    python bench/bench_spark_tfrecord.py --rows 1000000 --jar jars/tfhadoop-0.1.0.jar
    .venv35/bin/python bench/bench_spark_tfrecord.py --rows 1000000 --peer-jar /path/to/spark-tfrecord_2.12-0.7.0.jar
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--jar", default="jars/tfhadoop-0.1.0.jar")
    ap.add_argument("--peer-jar", default=None, help="spark-tfrecord jar (format 'tfrecord' of linkedin)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    jars = [os.path.abspath(args.jar)] + ([os.path.abspath(args.peer_jar)] if args.peer_jar else [])
    spark = (SparkSession.builder.master(args.master).config("spark.jars", ",".join(jars))
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    base = args.dir or tempfile.mkdtemp(prefix="tfr-bench-")
    df = spark.range(args.rows, numPartitions=4).selectExpr(
        "id", "cast(id % 1000 as int) as i", "cast(id as float) / 3 as f", "concat('name-', id) as s",
        "transform(sequence(1, 32), k -> cast(k * id as float)) as fa",
        "array(concat('a', id % 7), concat('b', id % 11), 'c') as sa").cache()
    df.count()

    formats = {"tfhadoop": ("tfhadoop.spark.TFRecordDataSource", {}),
               "parquet": ("parquet", {"compression": "none"})}
    if args.peer_jar:
        formats["spark-tfrecord"] = ("com.linkedin.spark.datasources.tfrecord.DefaultSource", {"recordType": "Example"})
    schema = df.schema
    results = {"rows": args.rows, "spark": spark.version, "master": args.master, "repeat": args.repeat}
    best = {}

    def keep(key, dt):
        best[key] = dt if key not in best else min(best[key], dt)

    for _ in range(args.repeat):
        for name, (fmt, opts) in formats.items():
            path = os.path.join(base, name)
            shutil.rmtree(path, ignore_errors=True)
            t0 = time.perf_counter()
            df.write.format(fmt).options(**opts).mode("overwrite").save("file://" + path)
            keep(f"{name}_write_s", time.perf_counter() - t0)
            reader = spark.read.format(fmt).options(**opts).schema(schema)
            t0 = time.perf_counter()
            reader.load("file://" + path).write.format("noop").mode("overwrite").save()
            keep(f"{name}_read_s", time.perf_counter() - t0)
    for name in formats:
        path = os.path.join(base, name)
        n = spark.read.format(formats[name][0]).options(**formats[name][1]).schema(schema).load("file://" + path).count()
        assert n == args.rows, (name, n)
        results[f"{name}_write_s"] = round(best[f"{name}_write_s"], 2)
        results[f"{name}_read_s"] = round(best[f"{name}_read_s"], 2)
        results[f"{name}_bytes"] = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(path) for f in fs
                                       if not f.startswith((".", "_")))
    ratio = lambda a, b: round(best[a] / best[b], 2)  # noqa: E731  (> 1: ours is faster)
    results["write_vs_parquet"] = ratio("parquet_write_s", "tfhadoop_write_s")
    results["read_vs_parquet"] = ratio("parquet_read_s", "tfhadoop_read_s")
    if args.peer_jar:
        results["write_vs_spark_tfrecord"] = ratio("spark-tfrecord_write_s", "tfhadoop_write_s")
        results["read_vs_spark_tfrecord"] = ratio("spark-tfrecord_read_s", "tfhadoop_read_s")
    print(json.dumps(results, indent=2))
    if not args.dir:
        shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
