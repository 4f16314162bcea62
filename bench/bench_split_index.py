"""Split reads of one large TFRecord file (issue 20): the Spark source reading it with 64 MB splits
started from the record-boundary index, by today's resync (verified, no index), by walking the
true chain from the file start in every split (``verify=always``: the cost the adversarial case
pays), and unsplit; plus the write-side cost of the index (the same write with ``indexInterval=0``).
Rounds are interleaved and the best time kept, so load from other jobs hits every variant alike.
Reads decode every column of the Example rows into ``noop``; each read's row count is checked.

    .venv/bin/python bench/bench_split_index.py --rows 4000000   # ~1 GB file
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--jar", default="jars/tfhadoop-0.1.0.jar")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--split", default="64m")
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master).config("spark.jars", os.path.abspath(args.jar))
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "3g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    base = tempfile.mkdtemp(prefix="tfr-split-bench-")
    fmt = "tfhadoop.spark.TFRecordDataSource"
    df = spark.range(args.rows, numPartitions=1).selectExpr(
        "id", "cast(id % 1000 as int) as i", "cast(id as float) / 3 as f", "concat('name-', id) as s",
        "transform(sequence(1, 32), k -> cast(k * id as float)) as fa")
    schema = df.schema
    best = {}

    def keep(key, dt):
        best[key] = min(best.get(key, dt), dt)

    paths = {}
    for _ in range(args.repeat):
        for name, interval in (("with_index", "1048576"), ("no_index", "0")):
            path = os.path.join(base, name)
            shutil.rmtree(path, ignore_errors=True)
            t0 = time.perf_counter()
            df.write.format(fmt).option("indexInterval", interval).mode("overwrite").save("file://" + path)
            keep(f"write_{name}_s", time.perf_counter() - t0)
            paths[name] = path
    (data,) = glob.glob(os.path.join(paths["with_index"], "part-*"))
    size = os.path.getsize(data)
    side = os.path.join(os.path.dirname(data), "." + os.path.basename(data) + ".tfrindex")
    assert os.path.isfile(side) and not glob.glob(os.path.join(paths["no_index"], ".part-*.tfrindex"))

    reads = {
        "index": (paths["with_index"], {}),
        "resync_verified": (paths["no_index"], {}),
        "walk_from_start": (paths["no_index"], {"verify": "always"}),
        "unsplit": (paths["no_index"], {"splittable": "false"}),
    }
    parts = {}
    for rnd in range(args.repeat):
        for name, (path, opts) in reads.items():
            r = spark.read.format(fmt).options(**opts).option("maxPartitionBytes", args.split).schema(schema)
            loaded = r.load("file://" + path)
            parts[name] = loaded.rdd.getNumPartitions()
            t0 = time.perf_counter()
            loaded.write.format("noop").mode("overwrite").save()
            keep(f"read_{name}_s", time.perf_counter() - t0)
            if rnd == 0:
                assert loaded.count() == args.rows, name
    res = {"rows": args.rows, "file_bytes": size, "index_bytes": os.path.getsize(side), "split": args.split,
           "master": args.master, "partitions": parts, "load": os.getloadavg()[0]}
    res.update({k: round(v, 2) for k, v in sorted(best.items())})
    res["write_index_cost_pct"] = round(100 * (best["write_with_index_s"] / best["write_no_index_s"] - 1), 1)
    for name in ("resync_verified", "walk_from_start", "unsplit"):
        res[f"read_{name}_vs_index"] = round(best[f"read_{name}_s"] / best["read_index_s"], 2)
    print(json.dumps(res, indent=1))
    shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
