"""Examples <-> Arrow: tfhadoop's native codec vs tf.io.parse_example (batched, in a tf.function,
one thread) and vs the pure-Python reference path, 5 and 50 features; to-parquet of a large
dataset (MB/s and peak memory). One core for everyone: TF is pinned to 1 intra/inter-op thread.

    .venv/bin/python bench/bench_native_arrow.py [--rows 100000] [--parquet-mb 1000]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from tfhadoop.connectors import arrow as ar
from tfhadoop.connectors.example import encode_example


def records(n: int, groups: int, seed: int = 0):
    """n Examples of 5 * groups features: int64 id, float[4] vector, bytes token, int64 var list, float score."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        feats = {}
        for g in range(groups):
            feats[f"id{g}"] = [int(rng.integers(1 << 40))]
            feats[f"vec{g}"] = rng.random(4, dtype=np.float32)
            feats[f"tok{g}"] = [b"token-%d" % (i % 1000)]
            feats[f"ids{g}"] = ("int64", rng.integers(0, 1 << 20, int(rng.integers(0, 6))).tolist())
            feats[f"score{g}"] = [float(rng.random())]
        out.append(encode_example(feats))
    return out


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def decode_bench(n, groups, pure_n):
    import tensorflow as tf

    recs = records(n, groups)
    schema = ar.infer_schema(recs)
    nfeat = 5 * groups
    spec = ar.tf_feature_spec(ar.feature_spec(schema))
    batches = [tf.constant(recs[i:i + 4096]) for i in range(0, n, 4096)]
    parse = tf.function(lambda x: tf.io.parse_example(x, spec))
    for b in batches[:2]:
        parse(b)  # trace
    t_tf = best(lambda: [parse(b) for b in batches])
    t_nat = best(lambda: ar.examples_to_table(recs, schema))
    t_inf = best(lambda: ar.examples_to_table(recs))
    t_pure = best(lambda: ar.examples_to_table(recs[:pure_n], schema, native=False), 1) * n / pure_n
    table = ar.examples_to_table(recs, schema)
    t_enc = best(lambda: sum(1 for _ in ar.table_to_examples(table)))
    sub = table.slice(0, pure_n)
    t_enc_pure = best(lambda: sum(1 for _ in ar.table_to_examples(sub, native=False)), 1) * n / pure_n
    r = lambda t: n / t  # noqa: E731
    print(f"\n{nfeat} features, {n} Examples ({sum(map(len, recs)) / n:.0f} B each)")
    print(f"  decode  native (schema)   {r(t_nat):>10,.0f} Examples/s  {r(t_nat) * nfeat / 1e6:6.2f} M features/s")
    print(f"  decode  native (inferred) {r(t_inf):>10,.0f} Examples/s  {r(t_inf) * nfeat / 1e6:6.2f} M features/s")
    print(f"  decode  tf.io.parse_example (graph, batch 4096, 1 thread) {r(t_tf):>10,.0f} Examples/s  "
          f"{r(t_tf) * nfeat / 1e6:6.2f} M features/s")
    print(f"  decode  pure Python       {r(t_pure):>10,.0f} Examples/s")
    print(f"  encode  native            {r(t_enc):>10,.0f} Examples/s  {r(t_enc) * nfeat / 1e6:6.2f} M features/s")
    print(f"  encode  pure Python       {r(t_enc_pure):>10,.0f} Examples/s")
    print(f"  ratio   decode native / TF = {t_tf / t_nat:.2f}x   native / pure = {t_pure / t_nat:.1f}x   "
          f"encode native / pure = {t_enc_pure / t_enc:.1f}x")


def parquet_bench(mb):
    from tfhadoop.connectors.tfrecord import TFRecordWriter

    d = tempfile.mkdtemp(prefix="bench-parquet-")
    recs = records(20000, 1, seed=1)
    per = sum(len(r) + 16 for r in recs)
    files = max(1, int(mb * 1e6 / per / 20))
    for f in range(files):
        with TFRecordWriter(os.path.join(d, f"part-{f:04d}.tfrecord")) as w:
            for _ in range(20):
                w.write_all(recs)
    size = files * 20 * per
    out = os.path.join(d, "out.parquet")
    subprocess.run(["sync"], check=False)
    t = time.perf_counter()
    cmd = [os.path.join(os.path.dirname(sys.executable), "tfhadoop"), "records", "to-parquet", os.path.join(d, "*.tfrecord"), "-o", out,
           "--no-progress"]
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True)
    dt = time.perf_counter() - t
    rss = proc.stderr.strip().splitlines()[-1]
    dd = subprocess.run(["dd", f"if={os.path.join(d, 'part-0000.tfrecord')}", "of=/dev/null", "bs=1M", "iflag=direct"],
                        capture_output=True, text=True).stderr.strip().splitlines()[-1]
    print(f"\nto-parquet: {size / 1e6:.0f} MB of TFRecords ({files} files, {files * 20 * len(recs)} records) in {dt:.1f}s "
          f"= {size / 1e6 / dt:.0f} MB/s (two passes: schema, then decode+write), peak RSS {int(rss) / 1024:.0f} MiB; "
          f"rc={proc.returncode}; raw disk read (dd, direct I/O): {dd}")
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd[:-3], "-o", out + "2", "--schema-from", out, "--no-progress"],
                          capture_output=True, text=True)
    dt = time.perf_counter() - t
    rss = proc.stderr.strip().splitlines()[-1]
    print(f"to-parquet --schema-from (one pass): {dt:.1f}s = {size / 1e6 / dt:.0f} MB/s, peak RSS {int(rss) / 1024:.0f} MiB; "
          f"rc={proc.returncode}")
    subprocess.run(["rm", "-rf", d], check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--parquet-mb", type=int, default=1000)
    args = ap.parse_args()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    print(f"pyarrow {pa.__version__}, tensorflow {tf.__version__}; load: {os.getloadavg()}")
    decode_bench(args.rows, 1, 5000)
    decode_bench(args.rows // 10, 10, 1000)
    if args.parquet_mb:
        parquet_bench(args.parquet_mb)
    print(f"bench peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
