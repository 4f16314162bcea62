"""Spark TFRecord benchmark: the same DataFrame (>= 1M rows: ints, floats, strings, float arrays of
32, string arrays) written and read with tfhadoop's ``tfrecord`` source and as uncompressed Parquet,
in the same Spark session; prints times and ratios as JSON. spark-tfrecord 0.7.0 is included when
its jar is given (``--peer-jar``; it needs Spark 3.5 / Scala 2.12 or 2.13 to match).

    python bench/bench_spark_tfrecord.py --rows 1000000 --jar jars/tfhadoop-0.1.0.jar
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time


def timed(fn, repeat):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


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
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "4g")
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
    results = {"rows": args.rows, "spark": spark.version, "master": args.master}
    for name, (fmt, opts) in formats.items():
        path = os.path.join(base, name)

        def write():
            shutil.rmtree(path, ignore_errors=True)
            df.write.format(fmt).options(**opts).mode("overwrite").save("file://" + path)

        def read():
            spark.read.format(fmt).options(**opts).schema(schema).load("file://" + path).write.format("noop").mode(
                "overwrite").save()

        results[f"{name}_write_s"] = round(timed(write, args.repeat), 2)
        results[f"{name}_read_s"] = round(timed(read, args.repeat), 2)
        results[f"{name}_bytes"] = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(path) for f in fs)
    results["write_vs_parquet"] = round(results["parquet_write_s"] / results["tfhadoop_write_s"], 2)
    results["read_vs_parquet"] = round(results["parquet_read_s"] / results["tfhadoop_read_s"], 2)
    if args.peer_jar:
        results["write_vs_spark_tfrecord"] = round(results["spark-tfrecord_write_s"] / results["tfhadoop_write_s"], 2)
        results["read_vs_spark_tfrecord"] = round(results["spark-tfrecord_read_s"] / results["tfhadoop_read_s"], 2)
    print(json.dumps(results, indent=2))
    if not args.dir:
        shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
