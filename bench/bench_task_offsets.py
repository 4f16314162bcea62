"""What a trainer task costs by where it lies in its shard, read from hdfs:// through TensorFlow
(tfhdfs plugin) exactly as a worker's closure reads it (trainer/python/tfhadoop/trainer/step.py):
``records_from(shard, offset)`` at the record-boundary index entry before the task's first record
(uncompressed shard with its ``.tfrindex`` sidecar), then skip the few records after it.

Prints the first and last task of a shard (time ratio last/first; target <= 1.2) and the epoch
time (every task of every shard, one after the other, each a fresh pipeline as a closure is) over
the same records cut into shards of 10k, 100k and 1M records (target: flat). The path it replaced
(``skip(start)`` from the shard's start, quadratic in the shard's length) is gone from the trainer
and from this bench: its last figures are in docs/benchmark-history.md.

``--from-export``: the shards are written by ``tfhadoop export`` (``run_export``) with its defaults
(compression, index interval) from a Spark DataFrame of the same records, only the shard size set
(``--records-per-shard``; the export's own default is 100,000-record shards), and the tasks are
planned as the trainer plans them (manifest, ``load_indexes``, ``plan_epoch``) and read with the
manifest's compression: the figure issue 32 asks for on the default export's output.

    .venv/bin/python -m bench.bench_task_offsets [--records 1000000] [--task-records 1000] [--from-export]
"""
from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING

from bench.common import bench_cluster, tf_env

if TYPE_CHECKING:
    from tfhadoop.trainer.step import TFCompression

tf_env()


def encoded(records):
    """The bench's records, encoded once (the same bytes in every layout): an Example of 4 int64
    and 4 float features, ~80 bytes framed."""
    from tfhadoop.connectors.example import encode_example

    return [encode_example({"id": [j, j % 1000, 7, 11], "x": [0.5 * j, 1.0, 2.0, 3.0]}) for j in range(records)]


def write_shards(url, data, per_shard):
    """Uncompressed shards of ``per_shard`` records written straight to HDFS by our writer, which
    adds the index sidecar."""
    from tfhadoop.connectors.tfrecord_writer import write_records

    shards = []
    for i in range(len(data) // per_shard):
        path = f"{url}/part-{i:05d}.tfrecord"
        write_records(path, data[i * per_shard:(i + 1) * per_shard])
        shards.append(path)
    return shards


def export_shards(spark, url, records, per_shard, task_records):
    """The records of :func:`encoded` (as Spark columns) exported by ``run_export`` with the export's
    defaults but the shard size; returns the tasks the trainer plans over them and the manifest."""
    from tfhadoop.connectors import dataset
    from tfhadoop.spark.export import ExportOptions, run_export
    from tfhadoop.trainer.tasks import plan_epoch

    view = f"bench_offsets_{per_shard}"
    spark.range(records, numPartitions=4).selectExpr(
        "array(id, id % 1000, cast(7 as bigint), cast(11 as bigint)) as id",
        "array(cast(0.5 * id as float), cast(1 as float), cast(2 as float), cast(3 as float)) as x",
    ).createOrReplaceTempView(view)
    manifest = run_export(spark, ExportOptions(output=url, query=f"select * from {view}", records_per_shard=per_shard))
    m = dataset.load(url)
    indexes = dataset.load_indexes(m, None)
    return manifest, plan_epoch(m, None, task_records, shuffle=False, indexes=indexes), indexes


def reader(compression: TFCompression = ""):
    import tensorflow as tf

    from tfhadoop.trainer.step import records_from, without_rewrites

    @tf.function
    def read(path, offset, skip, count):
        ds = without_rewrites(records_from(path, offset, compression).skip(skip).take(count))
        return ds.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1)

    def task(path, offset, skip, count):
        t0 = time.perf_counter()
        n = int(read(tf.constant(path), tf.constant(offset, tf.int64), tf.constant(skip, tf.int64),
                     tf.constant(count, tf.int64)))
        assert n == count, (path, offset, skip, count, n)
        return time.perf_counter() - t0

    return task


def plan(shard, per_shard, task_records):
    from tfhadoop.connectors.splits import load_boundary_index
    from tfhadoop.trainer.tasks import start_point

    idx = load_boundary_index(shard)
    assert idx is not None and idx.records == per_shard, f"no usable index for {shard}"
    index = (idx.ordinals, idx.offsets)
    return [(shard, *start_point(index, s), min(task_records, per_shard - s)) for s in range(0, per_shard, task_records)]


def from_export(args, hdfs) -> None:
    """The first and last task of each shard of the default export's output (see the docstring)."""
    import uuid

    from tfhadoop.spark.export import ExportOptions
    from tfhadoop.spark.session import get_session
    from tfhadoop.trainer.step import COMPRESSION

    spark = get_session("bench-task-offsets", extra_conf={"spark.driver.memory": "3g", "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    root = f"hdfs:///tmp/bench-task-offsets-export-{uuid.uuid4().hex[:8]}"
    try:
        for per_shard in (int(s) for s in args.shard_sizes.split(",")):
            url = f"{root}/{per_shard}"
            t0 = time.perf_counter()
            manifest, tasks, indexes = export_shards(spark, url, args.records, per_shard, args.task_records)
            written = time.perf_counter() - t0
            comp = manifest["compression"]
            assert comp == ExportOptions.compression, manifest["compression"]
            indexed = sum(1 for i in indexes.values() if i is not None)
            print(f"export defaults: compression {comp}, {indexed} of {len(indexes)} shards indexed, "
                  f"{manifest['bytes'] / 1e6:.1f} MB, records per shard {[f['records'] for f in manifest['files']]}",
                  flush=True)
            task = reader(COMPRESSION[comp])
            shard = tasks[0].path
            mine = [t for t in tasks if t.path == shard]

            def run(t, task=task):
                return task(t.path, t.offset, t.records_to_skip, t.count)

            run(mine[0])  # trace the function once
            first = min(run(mine[0]) for _ in range(3))
            last = min(run(mine[-1]) for _ in range(3))
            t0 = time.perf_counter()
            for t in tasks:
                run(t)
            epoch = time.perf_counter() - t0
            print(f"{len(mine) and mine[-1].start + mine[-1].count:>8} records/shard (export) | first task "
                  f"{first * 1e3:7.1f} ms | last task (record {mine[-1].start}, byte {mine[-1].offset}) "
                  f"{last * 1e3:8.1f} ms | last/first {last / first:6.2f} (target <= 1.2) | epoch {epoch:7.1f} s | "
                  f"exported in {written:.0f} s", flush=True)
            hdfs.delete(url)
    finally:
        hdfs.delete(root)
        spark.stop()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--task-records", type=int, default=1000)
    ap.add_argument("--shard-sizes", default="10000,100000,1000000")
    ap.add_argument("--from-export", action="store_true", help="shards written by `tfhadoop export`'s defaults")
    args = ap.parse_args()
    with bench_cluster():
        import uuid

        import tfhadoop.tfhdfs  # noqa: F401
        from tfhadoop.connectors import hdfs

        root = f"hdfs:///tmp/bench-task-offsets-{uuid.uuid4().hex[:8]}"
        print(f"load: {os.getloadavg()[0]:.2f} (1-min) on {os.cpu_count()} cores; {args.records} records, "
              f"tasks of {args.task_records}")
        if args.from_export:
            from_export(args, hdfs)
            print(f"load after: {os.getloadavg()[0]:.2f}")
            return 0
        data = encoded(args.records)
        task = reader()
        rows = []
        for per_shard in (int(s) for s in args.shard_sizes.split(",")):
            url = f"{root}/{per_shard}"
            t0 = time.perf_counter()
            shards = write_shards(url, data, per_shard)
            written = time.perf_counter() - t0
            tasks = [t for s in shards for t in plan(s, per_shard, args.task_records)]
            task(*tasks[0])  # trace the function once
            first = min(task(*tasks[0]) for _ in range(3))
            last = min(task(*tasks[len(tasks) // len(shards) - 1]) for _ in range(3))
            t0 = time.perf_counter()
            for t in tasks:
                task(*t)
            epoch = time.perf_counter() - t0
            rows.append((per_shard, epoch))
            print(f"{per_shard:>8} records/shard | first task {first * 1e3:7.1f} ms | last task {last * 1e3:8.1f} ms | "
                  f"last/first {last / first:6.2f} (target <= 1.2) | epoch {epoch:7.1f} s | written in {written:.0f} s",
                  flush=True)
            hdfs.delete(url)
        hdfs.delete(root)
        print("epoch time by shard size (same records; target: flat): " +
              " | ".join(f"{n}: {e:.1f} s" for n, e in rows))
        print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
