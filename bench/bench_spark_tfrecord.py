"""Spark TFRecord benchmark: the same DataFrame (>= 1M rows: ints, floats, strings, float arrays of
32, string arrays) written and read with tfhadoop's ``tfrecord`` source and as uncompressed Parquet,
in the same Spark session; prints medians, spreads and ratios as JSON. spark-tfrecord 0.7.0 is
included when its jar is given (``--peer-jar``; it needs Spark 3.5 / Scala 2.12 to match, so run it
under ``.venv35``). Both jars on one classpath register the short name ``tfrecord``, so each source is
addressed by its class name.

Built to be trusted on a small shared machine:

- every format reads the files written from one cached DataFrame, with the writer's schema;
- a warm-up read of each format runs first (JIT, file cache) and is not counted;
- the timed reads alternate in ABBA order over ``--repeat`` rounds, so that load from other jobs
  hits both sides alike, and the median, min and max of each side are printed, with the median of
  the per-round ratios (each round's two reads ran back to back);
- the timed action forces every value of every column to be decoded: ``bit_xor(xxhash64(*columns))``.
  ``count()`` or a ``noop`` write would let Parquet answer from metadata or skip decoding values;
  the checksum is also compared across formats, so a fast wrong read fails the benchmark;
- Parquet is read as its best user would: the vectorized reader (also for nested columns) on,
  uncompressed files.

    python -m bench.bench_spark_tfrecord --rows 1000000 --repeat 5
    .venv35/bin/python -m bench.bench_spark_tfrecord --rows 1000000 --peer-jar /path/to/spark-tfrecord_2.12-0.7.0.jar
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time


def _stats(xs):
    return {"median_s": round(statistics.median(xs), 3), "min_s": round(min(xs), 3), "max_s": round(max(xs), 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--jar", default="jars/tfhadoop-0.1.0.jar")
    ap.add_argument("--peer-jar", default=None, help="spark-tfrecord jar (format 'tfrecord' of linkedin)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=5, help="timed rounds of reads per format")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    jars = [os.path.abspath(args.jar)] + ([os.path.abspath(args.peer_jar)] if args.peer_jar else [])
    spark = (SparkSession.builder.master(args.master).config("spark.jars", ",".join(jars))
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g")
             .config("spark.sql.parquet.enableVectorizedReader", "true")
             .config("spark.sql.parquet.enableNestedColumnVectorizedReader", "true")
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
    results = {"rows": args.rows, "spark": spark.version, "master": args.master, "repeat": args.repeat,
               "load_before": os.getloadavg()}
    checksum = F.expr(f"bit_xor(xxhash64({', '.join(schema.names)}))").alias("h")

    for name, (fmt, opts) in formats.items():
        path = os.path.join(base, name)
        shutil.rmtree(path, ignore_errors=True)
        t0 = time.perf_counter()
        df.write.format(fmt).options(**opts).mode("overwrite").save("file://" + path)
        results[f"{name}_write_s"] = round(time.perf_counter() - t0, 2)
        results[f"{name}_bytes"] = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(path) for f in fs
                                       if not f.startswith((".", "_")))

    def read(name):
        fmt, opts = formats[name]
        t0 = time.perf_counter()
        h = spark.read.format(fmt).options(**opts).schema(schema).load("file://" + os.path.join(base, name)) \
            .agg(checksum).collect()[0]["h"]
        return time.perf_counter() - t0, h

    # f is a double column: TFRecord stores it as float32 (the documented default), so the values
    # tfrecord reads back are the doubles of those floats; Parquet keeps doubles.
    float32 = df.withColumn("f", F.col("f").cast("float").cast("double"))
    expected = {"parquet": df.agg(checksum).collect()[0]["h"]}
    expected["tfhadoop"] = expected["spark-tfrecord"] = float32.agg(checksum).collect()[0]["h"]
    times = {name: [] for name in formats}
    for name in formats:  # warm-up, not counted; also checks every format reads the same values
        _, h = read(name)
        assert h == expected[name], (name, h, expected)
    names = list(formats)
    ratios = {name: [] for name in names if name != "tfhadoop"}
    for r in range(args.repeat):
        order = names if r % 2 == 0 else names[::-1]
        round_t = {}
        for name in order:
            dt, h = read(name)
            assert h == expected[name], (name, h, expected)
            round_t[name] = dt
            times[name].append(dt)
        for name in ratios:
            ratios[name].append(round_t[name] / round_t["tfhadoop"])
    for name in names:
        results[f"{name}_read"] = _stats(times[name])
    # > 1: ours is faster. The median of per-round ratios: each round's reads ran back to back.
    for name, rs in ratios.items():
        key = "parquet" if name == "parquet" else "spark_tfrecord"
        results[f"read_vs_{key}"] = {"median": round(statistics.median(rs), 2), "min": round(min(rs), 2),
                                     "max": round(max(rs), 2)}
        results[f"write_vs_{key}"] = round(results[f"{name}_write_s"] / results["tfhadoop_write_s"], 2)
    results["load_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))
    if not args.dir:
        shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
