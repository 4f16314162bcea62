"""tf.data.TFRecordDataset over ``hdfs://`` (the tfhdfs plugin) vs the same file on local disk, and
vs reading it with the hdfs-native Python package, in one run.

    .venv/bin/python -m bench.bench_tfhdfs --mb 512

One uncompressed TFRecord file of ~1 KB records is written to local disk and copied to the
embedded HDFS. Variants, in interleaved rounds (best of --repeat) so other load falls on all alike:

- ``tf-local``: ``TFRecordDataset(local path)``;
- ``tf-hdfs``: ``TFRecordDataset("hdfs://...")`` through the plugin;
- ``hdfs-native-to-tf``: what a user without the plugin does: the hdfs-native Python client reads the
  file in 8 MiB pieces, tfhadoop's Python TFRecord reader frames it, ``Dataset.from_generator``
  hands the records to TensorFlow (batched by 1024 to keep per-element overhead low);
- ``hdfs-native-download+tf-local``: the other way without the plugin: hdfs-native copies the file
  to local disk, then ``TFRecordDataset`` reads the copy (needs the disk space of the data);
- ``hdfs-native-raw``: hdfs-native reading the bytes only (no framing): the transport's bound.

Each TF variant batches by 1024 and counts inside the graph (``reduce``), so neither Python
iteration nor tf.data's per-element overhead hides the reading. Prints records/s, MB/s and the ratios tf-hdfs/tf-local (target
>= 0.8) and vs both hdfs-native ways. Starts the embedded cluster in a temporary state dir unless
HADOOP_CONF_DIR or --state-dir points at a running one.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid

from bench.common import bench_cluster


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=512, help="file size in MB")
    ap.add_argument("--record-bytes", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="best of N interleaved rounds")
    ap.add_argument("--state-dir", help="a running embedded cluster to use")
    args = ap.parse_args()

    with bench_cluster(args.state_dir) as cluster:
        return run(args, cluster.conf)


def run(args, conf) -> int:
    import hdfs_native
    import numpy as np
    import tensorflow as tf

    import tfhadoop.tfhdfs  # noqa: F401
    from tfhadoop.connectors.tfrecord import read_records

    n = args.mb * 1_000_000 // (args.record_bytes + 16)
    workdir = tempfile.mkdtemp(prefix="bench-tfhdfs-")
    local = os.path.join(workdir, "data.tfrecord")
    rng = np.random.default_rng(0)
    block = rng.bytes(args.record_bytes * 1024)
    with tf.io.TFRecordWriter(local) as w:
        for i in range(n):
            j = (i * 7919) % 1000
            w.write(block[j:j + args.record_bytes])
    size = os.path.getsize(local)
    remote_dir = conf.default_fs.rstrip("/") + f"/bench/tfhdfs-{uuid.uuid4().hex[:6]}"
    remote = f"{remote_dir}/data.tfrecord"
    tf.io.gfile.makedirs(remote_dir)
    t = time.perf_counter()
    tf.io.gfile.copy(local, remote)
    upload_s = time.perf_counter() - t
    client = hdfs_native.Client(conf.default_fs)
    remote_path = remote[len(conf.default_fs.rstrip("/")):]

    def tf_count(path):
        ds = tf.data.TFRecordDataset(path).batch(1024)
        return int(ds.reduce(np.int64(0), lambda acc, b: acc + tf.cast(tf.size(b), tf.int64)))

    def native_to_tf():
        ds = tf.data.Dataset.from_generator(
            lambda: read_records(remote), output_signature=tf.TensorSpec([], tf.string)
        ).batch(1024)
        return int(ds.reduce(np.int64(0), lambda acc, b: acc + tf.cast(tf.size(b), tf.int64)))

    def native_download_then_local():
        copy = os.path.join(workdir, "copy.tfrecord")
        with client.read(remote_path) as f, open(copy, "wb") as out:
            while chunk := f.read(8 << 20):
                out.write(chunk)
        try:
            return tf_count(copy)
        finally:
            os.remove(copy)

    def native_raw():
        total = 0
        with client.read(remote_path) as f:
            while chunk := f.read(8 << 20):
                total += len(chunk)
        assert total == size
        return n

    variants = {
        "tf-local": lambda: tf_count(local),
        "tf-hdfs": lambda: tf_count(remote),
        "hdfs-native-to-tf": native_to_tf,
        "hdfs-native-download+tf-local": native_download_then_local,
        "hdfs-native-raw": native_raw,
    }
    best: dict[str, float] = {}
    try:
        for _ in range(args.repeat):
            for name, fn in variants.items():
                t = time.perf_counter()
                got = fn()
                dt = time.perf_counter() - t
                if got != n:
                    raise SystemExit(f"{name} read {got} records, expected {n}")
                best[name] = min(best.get(name, dt), dt)
    finally:
        tf.io.gfile.rmtree(remote_dir)
        os.remove(local)
        os.rmdir(workdir)

    result = {
        "records": n,
        "file_mb": round(size / 1e6, 1),
        "upload_via_plugin_mb_s": round(size / 1e6 / upload_s, 1),
        "variants": {
            k: {"seconds": round(v, 3), "records_per_s": round(n / v), "mb_per_s": round(size / 1e6 / v, 1)}
            for k, v in best.items()
        },
        "ratio_hdfs_vs_local": round(best["tf-local"] / best["tf-hdfs"], 2),
        "ratio_hdfs_vs_hdfs_native_to_tf": round(best["hdfs-native-to-tf"] / best["tf-hdfs"], 2),
        "ratio_hdfs_vs_hdfs_native_download": round(best["hdfs-native-download+tf-local"] / best["tf-hdfs"], 2),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
