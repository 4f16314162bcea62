"""Export throughput: `tfhadoop export` of a Hive table to sharded TFRecords on the embedded HDFS vs
writing the same table as Parquet to the same HDFS, in one run and one Spark session.

    .venv/bin/python -m bench.bench_export --rows 1000000

``--table ragged`` (issue 30 §6): the table holds variable-length lists instead, as a feature
table of user histories does: user_id bigint, item_history array<bigint> of 0..200 ids (mean ~20,
exponential, capped), tags array<string> of 0..5, label.

Prints seconds, rows/s and the ratio export/Parquet (target >= 0.8) for uncompressed output
(export compression=none vs Parquet uncompressed) and gzip output (both gzip). The variants run
in interleaved rounds (best of --repeat), so load from other jobs falls on all of them alike. Starts the embedded cluster in a temporary state dir unless HADOOP_CONF_DIR or
--state-dir points at a running one.
"""
from __future__ import annotations

import argparse
import json
import time
import uuid

from bench.common import bench_cluster

TABLES = {
    "features": ("id", "cast(id % 1000 as int) as i", "cast(id as float) / 3 as f", "concat('name-', id) as s",
                 "transform(sequence(1, 32), k -> cast(k * id as float)) as fa",
                 "array(concat('a', id % 7), concat('b', id % 11), 'c') as sa", "cast(id % 2 as bigint) as label"),
    # n: exponential lengths of mean 20 capped at 200; slice(..., 1, 0) is the empty list
    "ragged": ("id as user_id",
               "slice(transform(sequence(1, 200), k -> (id * 31 + k) % 100000), 1, "
               "cast(least(200, floor(-20 * ln(rand(7) + 1e-9))) as int)) as item_history",
               "slice(array('new', 'sale', 'gift', 'eu', 'mobile'), 1, cast(id % 6 as int)) as tags",
               "cast(id % 2 as bigint) as label"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3, help="best of N interleaved rounds")
    ap.add_argument("--state-dir", help="a running embedded cluster to use")
    ap.add_argument("--table", choices=sorted(TABLES), default="features", help="the table's columns (see above)")
    args = ap.parse_args()

    with bench_cluster(args.state_dir) as cluster:
        return run(args, cluster.fs)


def run(args, fs: str) -> int:
    from tfhadoop.spark.export import ExportOptions, run_export
    from tfhadoop.spark.session import hive_session

    spark = hive_session("bench-export", extra_conf={"spark.driver.memory": "4g", "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    table = f"bench_export_{uuid.uuid4().hex[:6]}"
    spark.range(args.rows, numPartitions=4).selectExpr(*TABLES[args.table]).write.format("parquet").saveAsTable(table)
    base = f"{fs}/bench/{table}"

    variants: dict[str, float] = {}

    def export(compression):
        return lambda: run_export(spark, ExportOptions(output=f"{base}/tfr-{compression}", table=table,
                                                       shards=args.shards, compression=compression, overwrite=True))

    def parquet(codec):
        return lambda: spark.table(table).repartition(args.shards).write.mode("overwrite") \
            .option("compression", codec).parquet(f"{base}/parquet-{codec}")

    jobs = {"export-none": export("none"), "parquet-none": parquet("none"),
            "export-gzip": export("gzip"), "parquet-gzip": parquet("gzip")}
    for _ in range(args.repeat):
        for name, job in jobs.items():
            t0 = time.perf_counter()
            job()
            dt = time.perf_counter() - t0
            variants[name] = min(variants.get(name, dt), dt)
    results = {"table": args.table, "rows": args.rows, "shards": args.shards, "repeat": args.repeat}
    if args.table == "ragged":
        lengths = spark.table(table).selectExpr("size(item_history) as n").agg(
            {"n": "avg"}).collect()[0][0], spark.table(table).selectExpr("max(size(item_history))").collect()[0][0]
        results["item_history_length"] = {"mean": round(lengths[0], 1), "max": lengths[1]}
    for label, codec in (("uncompressed", "none"), ("gzip", "gzip")):
        t_ours, t_peer = variants[f"export-{codec}"], variants[f"parquet-{codec}"]
        results[label] = {"export_s": round(t_ours, 2), "parquet_s": round(t_peer, 2),
                          "export_rows_per_s": round(args.rows / t_ours), "parquet_rows_per_s": round(args.rows / t_peer),
                          "ratio_export_vs_parquet": round(t_peer / t_ours, 2)}
    print(json.dumps(results, indent=2))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
