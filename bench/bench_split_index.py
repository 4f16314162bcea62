"""Split reads of one large TFRecord file (issue 20): the Spark source reading it with 64 MB splits
started from the record-boundary index; without an index, each split walking the header chain from
the nearest boundary the executor JVM already proved (the default) and from the file start
(``walkCache=false``: what a fresh JVM per task pays); and unsplit. The same for an adversarial file
(every record a TFRecord stream, a few far longer than a split): read without an index by the
default walk, checked against the indexed read. Plus the write-side cost of the index (the same
write with ``indexInterval=0``). Rounds are interleaved and the best time kept, so load from other
jobs hits every variant alike. Reads decode every column into ``noop``; each read's count is checked.

    .venv/bin/python -m bench.bench_split_index --rows 4000000   # ~1 GB file
    .venv/bin/python -m bench.bench_split_index --write-only --rows 1000000 --repeat 8 --dir /dev/shm
        # the index's write cost alone: pairs of writes in alternating order (A-B, B-A, ...),
        # the per-pair ratio's median and spread
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import tempfile
import time


def nested_file(base, mb):
    """One file of ~``mb`` MB whose records are TFRecord streams: 1..4 inner records of 1 KB each,
    and two records (at 1/3 and 2/3) streams of 80 000 such records, 81 MB each, longer than a 64 MB
    split; written by our Python writer with and without an index (the same bytes).
    Returns ({"with_index"|"no_index": dir}, records)."""
    import random

    from tfhadoop.connectors.tfrecord_writer import encode_record, write_records

    n = max(1000, (mb - 163) * 1024 * 1024 // 2560)
    huge = {n // 3, 2 * n // 3}

    def bundles():
        rng = random.Random(20)
        for i in range(n):
            k = 80_000 if i in huge else rng.randint(1, 4)
            yield b"".join(encode_record(rng.randbytes(1000)) for _ in range(k))

    out = {}
    for name, interval in (("with_index", 1 << 20), ("no_index", 0)):
        out[name] = os.path.join(base, "nested_" + name)
        os.makedirs(out[name])
        write_records(os.path.join(out[name], "part-0.tfrecord"), bundles(), index_interval=interval)
    return out, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--jar", default="jars/tfhadoop-0.1.0.jar")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--split", default="64m")
    ap.add_argument("--nested-mb", type=int, default=256, help="size of the adversarial file")
    ap.add_argument("--write-only", action="store_true", help="measure only the index's write cost")
    ap.add_argument("--dir", default=None, help="where the files go (default: the system's temp dir)")
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master).config("spark.jars", os.path.abspath(args.jar))
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "3g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    base = tempfile.mkdtemp(prefix="tfr-split-bench-", dir=args.dir)
    fmt = "tfhadoop.spark.TFRecordDataSource"
    df = spark.range(args.rows, numPartitions=1).selectExpr(
        "id", "cast(id % 1000 as int) as i", "cast(id as float) / 3 as f", "concat('name-', id) as s",
        "transform(sequence(1, 32), k -> cast(k * id as float)) as fa")
    schema = df.schema
    best = {}

    def keep(key, dt):
        best[key] = min(best.get(key, dt), dt)

    paths, ratios = {}, []
    df = df.cache()
    df.write.format("noop").mode("overwrite").save()  # the rows are computed once, outside the timings
    for rnd in range(args.repeat):
        order = (("with_index", "1048576"), ("no_index", "0"))
        took = {}
        for name, interval in (order if rnd % 2 == 0 else order[::-1]):
            path = os.path.join(base, name)
            shutil.rmtree(path, ignore_errors=True)
            t0 = time.perf_counter()
            df.write.format(fmt).option("indexInterval", interval).mode("overwrite").save("file://" + path)
            took[name] = time.perf_counter() - t0
            keep(f"write_{name}_s", took[name])
            paths[name] = path
        ratios.append(took["with_index"] / took["no_index"])
    if args.write_only:
        ratios.sort()
        print(json.dumps({"rows": args.rows, "rounds": args.repeat, "load": os.getloadavg()[0],
                          "write_index_cost_pct_median": round(100 * (ratios[len(ratios) // 2] - 1), 1),
                          "per_round_pct": [round(100 * (r - 1), 1) for r in ratios],
                          "best_with_index_s": round(best["write_with_index_s"], 3),
                          "best_no_index_s": round(best["write_no_index_s"], 3)}, indent=1))
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()
        return
    (data,) = glob.glob(os.path.join(paths["with_index"], "part-*"))
    size = os.path.getsize(data)
    side = os.path.join(os.path.dirname(data), "." + os.path.basename(data) + ".tfrindex")
    assert os.path.isfile(side) and not glob.glob(os.path.join(paths["no_index"], ".part-*.tfrindex"))

    nested, nested_rows = nested_file(base, args.nested_mb)
    reads = {
        "index": (paths["with_index"], {}, schema, args.rows),
        "walk_cached": (paths["no_index"], {}, schema, args.rows),
        "walk_from_start": (paths["no_index"], {"walkCache": "false"}, schema, args.rows),
        "unsplit": (paths["no_index"], {"splittable": "false"}, schema, args.rows),
        "nested_index": (nested["with_index"], {"recordType": "ByteArray"}, None, nested_rows),
        "nested_walk_cached": (nested["no_index"], {"recordType": "ByteArray"}, None, nested_rows),
        "nested_walk_from_start": (nested["no_index"], {"recordType": "ByteArray", "walkCache": "false"}, None,
                                   nested_rows),
    }
    parts = {}
    for rnd in range(args.repeat):
        for name, (path, opts, sch, rows) in reads.items():
            r = spark.read.format(fmt).options(**opts).option("maxPartitionBytes", args.split)
            loaded = (r.schema(sch) if sch is not None else r).load("file://" + path)
            parts[name] = loaded.rdd.getNumPartitions()
            t0 = time.perf_counter()
            loaded.write.format("noop").mode("overwrite").save()
            keep(f"read_{name}_s", time.perf_counter() - t0)
            if rnd == 0:
                assert loaded.count() == rows, name
    want = spark.read.format(fmt).option("recordType", "ByteArray").option("maxPartitionBytes", args.split) \
        .load("file://" + nested["with_index"]).selectExpr("sha2(byteArray, 256) h").collect()
    got = spark.read.format(fmt).option("recordType", "ByteArray").option("maxPartitionBytes", args.split) \
        .load("file://" + nested["no_index"]).selectExpr("sha2(byteArray, 256) h").collect()
    assert got == want, "the walk read the nested file differently from its index"
    res = {"rows": args.rows, "file_bytes": size, "index_bytes": os.path.getsize(side), "split": args.split,
           "master": args.master, "partitions": parts, "load": os.getloadavg()[0]}
    res.update({k: round(v, 2) for k, v in sorted(best.items())})
    res["write_index_cost_pct"] = round(100 * (best["write_with_index_s"] / best["write_no_index_s"] - 1), 1)
    res["nested_file_bytes"] = sum(os.path.getsize(f) for f in glob.glob(os.path.join(nested["no_index"], "part-*")))
    for name in ("walk_cached", "walk_from_start", "unsplit"):
        res[f"read_{name}_vs_index"] = round(best[f"read_{name}_s"] / best["read_index_s"], 2)
    for name in ("nested_walk_cached", "nested_walk_from_start"):
        res[f"read_{name}_vs_index"] = round(best[f"read_{name}_s"] / best["read_nested_index_s"], 2)
    print(json.dumps(res, indent=1))
    shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
