"""What a trainer task costs by where it lies in its shard, read from hdfs:// through TensorFlow
(tfhdfs plugin) exactly as a worker's closure reads it (trainer/python/tfhadoop/trainer/step.py):

- before: ``TFRecordDataset(shard, GZIP).skip(start).take(n)`` on a gzip shard (the export's
  default; what the trainer did up to issue 11), also uncompressed, for the read without inflate;
- after: ``records_from(shard, offset)`` at the record-boundary index entry before ``start``
  (uncompressed shard with its ``.tfrindex`` sidecar), then skip the few records after it.

Prints the first and last task of a shard (time ratio last/first; target <= 1.2 after) and the
epoch time (every task of every shard, one after the other, each a fresh pipeline as a closure
is) over the same records cut into shards of 10k, 100k and 1M records (target: flat). The skip
paths' epochs over 100k- and 1M-record shards are estimated from every 10th / 50th task (evenly
spread over the shard, so the mean cost is the epoch's; the full run is quadratic).

    .venv/bin/python bench/bench_task_offsets.py [--records 1000000] [--task-records 1000]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchcluster import bench_cluster


def encoded(records):
    """The bench's records, encoded once (the same bytes in every layout): an Example of 4 int64
    and 4 float features, ~80 bytes framed."""
    from tfhadoop.connectors.example import encode_example

    return [encode_example({"id": [j, j % 1000, 7, 11], "x": [0.5 * j, 1.0, 2.0, 3.0]}) for j in range(records)]


def write_shards(url, data, per_shard, compression):
    """Shards of ``per_shard`` records written straight to HDFS by our writer (it adds the index
    sidecar to uncompressed files)."""
    from tfhadoop.connectors.tfrecord import write_records

    ext = ".tfrecord.gz" if compression else ".tfrecord"
    shards = []
    for i in range(len(data) // per_shard):
        path = f"{url}/part-{i:05d}{ext}"
        write_records(path, data[i * per_shard:(i + 1) * per_shard], compression=compression)
        shards.append(path)
    return shards


def reader(compression):
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


def plan(shard, per_shard, task_records, indexed):
    from tfhadoop.connectors.splits import load_boundary_index
    from tfhadoop.trainer.tasks import start_point

    index = None
    if indexed:
        idx = load_boundary_index(shard)
        assert idx is not None and idx.records == per_shard, f"no usable index for {shard}"
        index = (idx.ordinals, idx.offsets)
    return [(shard, *start_point(index, s), min(task_records, per_shard - s)) for s in range(0, per_shard, task_records)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--task-records", type=int, default=1000)
    ap.add_argument("--shard-sizes", default="10000,100000,1000000")
    ap.add_argument("--sample-every", default="10000:1,100000:10,1000000:50",
                    help="skip paths: time every Nth task of shards of that size (their epoch is quadratic)")
    args = ap.parse_args()
    with bench_cluster():
        import uuid

        import tfhadoop.tfhdfs  # noqa: F401
        from tfhadoop.connectors import hdfs

        root = f"hdfs:///tmp/bench-task-offsets-{uuid.uuid4().hex[:8]}"
        print(f"load: {os.getloadavg()[0]:.2f} (1-min) on {os.cpu_count()} cores; {args.records} records, "
              f"tasks of {args.task_records}")
        modes = [("after: uncompressed + index, start at offset", None, True),
                 ("before: gzip, skip from shard start", "gzip", False),
                 ("before: uncompressed, skip from shard start", None, False)]
        sizes = [int(s) for s in args.shard_sizes.split(",")]
        every = {int(k): int(v) for k, v in (p.split(":") for p in args.sample_every.split(","))}
        data = encoded(args.records)
        rows = []
        for per_shard in sizes:
            for label, comp, indexed in modes:
                url = f"{root}/{per_shard}-{comp or 'none'}"
                t0 = time.perf_counter()
                shards = write_shards(url, data, per_shard, comp)
                written = time.perf_counter() - t0
                task = reader({"gzip": "GZIP"}.get(comp, ""))
                tasks = [t for s in shards for t in plan(s, per_shard, args.task_records, indexed)]
                task(*tasks[0])  # trace the function once
                first = min(task(*tasks[0]) for _ in range(3))
                last = min(task(*tasks[len(tasks) // len(shards) - 1]) for _ in range(3))
                sample = 1 if indexed else every.get(per_shard, 1)
                t0 = time.perf_counter()
                timed = tasks[::sample]
                for t in timed:
                    task(*t)
                epoch = (time.perf_counter() - t0) * len(tasks) / len(timed)
                rows.append((per_shard, label, first, last, epoch, sample))
                print(f"{per_shard:>8} records/shard | {label:<46} | first task {first * 1e3:7.1f} ms | last task "
                      f"{last * 1e3:8.1f} ms | last/first {last / first:6.2f} | epoch {epoch:7.1f} s"
                      f"{'' if sample == 1 else f' (estimated from every {sample}th task)'} | written in {written:.0f} s",
                      flush=True)
                hdfs.delete(url)
        hdfs.delete(root)
        print("\nepoch time by shard size (same records):")
        for _, label, *_ in rows[:len(modes)]:
            line = [f"{r[0]}: {r[4]:.1f} s" for r in rows if r[1] == label]
            print(f"  {label:<46} " + " | ".join(line))
        print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
