"""Examples <-> Arrow: tfhadoop's native codec vs tf.io.parse_example (batched, in a tf.function,
one thread) and vs the pure-Python reference path, 5 and 50 features; to-parquet of a large
dataset (MB/s and peak memory). One core for everyone: TF is pinned to 1 intra/inter-op thread.

    .venv/bin/python -m bench.bench_native_arrow [--rows 100000] [--parquet-mb 1000] [--parquet-dir DIR]
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
from tfhadoop.connectors import dataset
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
    spec = dataset.tf_parse_spec(dataset.parse_spec(schema))
    assert isinstance(spec, dict)  # Examples: one dict (a (context, sequence) pair is for SequenceExamples)
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


def unique_table(n: int, seed: int) -> pa.Table:
    """The 5-feature group of :func:`records` with no repeated rows (ids, floats and list values
    random; the token one of 1000), built in numpy so a 1 GB dataset is made in seconds."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 6, n)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    return pa.table({
        "id0": pa.array(rng.integers(0, 1 << 40, n)),
        "vec0": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(4 * n, dtype=np.float32)), 4),
        "tok0": pa.array([b"token-%d" % i for i in rng.integers(0, 1000, n)], pa.binary()),
        "ids0": pa.ListArray.from_arrays(pa.array(offs), pa.array(rng.integers(0, 1 << 20, int(offs[-1])))),
        "score0": pa.array(rng.random(n, dtype=np.float32)),
    })


def timed(cmd):
    """(wall s, user+sys CPU s, peak RSS MiB, rc, stderr) of a command."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *cmd], capture_output=True, text=True)
    dt = time.perf_counter() - t
    lines = proc.stderr.strip().splitlines()
    user, sys_, rss = lines[-1].split()
    return dt, float(user) + float(sys_), int(rss) / 1024, proc.returncode, "\n".join(lines[:-1])


BOUND = """
import sys, time, pyarrow.parquet as pq
src, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
pf = pq.ParquetFile(src)
table = pf.read()
dictionary = [pf.schema.column(i).path for i in range(len(pf.schema))
              if "RLE_DICTIONARY" in pf.metadata.row_group(0).column(i).encodings]
t = time.perf_counter()
for f in files:
    with open(f, "rb") as fh:
        while fh.read(8 << 20):
            pass
t_read = time.perf_counter() - t
pq.write_table(table, out, compression="zstd", row_group_size=65536, use_dictionary=dictionary)
print(t_read, time.perf_counter() - t)
"""


def parquet_bench(mb, where):
    from tfhadoop.connectors.tfrecord_writer import TFRecordWriter

    if where:
        os.makedirs(where, exist_ok=True)
    d = tempfile.mkdtemp(prefix="bench-parquet-", dir=where)
    per_file = 400_000  # ~53 MB files of ~115-byte Examples
    t0 = time.perf_counter()
    size, files, n = 0, [], 0
    while size < mb * 1e6:
        path = os.path.join(d, f"part-{len(files):04d}.tfrecord")
        with TFRecordWriter(path, index_interval=0) as w:
            w.write_all(ar.table_to_examples(unique_table(per_file, len(files))))
        files.append(path)
        size += os.path.getsize(path)
        n += per_file
    print(f"\nto-parquet input: {size / 1e6:.0f} MB, {len(files)} files, {n} unique Examples (made in "
          f"{time.perf_counter() - t0:.0f}s) under {where or tempfile.gettempdir()}; load {os.getloadavg()}")
    tool = os.path.join(os.path.dirname(sys.executable), "tfhadoop")
    small = files[: max(1, len(files) // 5)]
    small_size = sum(os.path.getsize(f) for f in small)
    cores = min(4, os.cpu_count() or 1)
    runs = [
        (f"default (one pass, zstd, --threads {cores}, 64 MiB row groups)", files, size, []),
        ("--threads 1 (one decoder thread + the writer)", files, size, ["--threads", "1"]),
        ("two passes (--infer all)", files, size, ["--infer", "all"]),
        ("--parquet-compression snappy", files, size, ["--parquet-compression", "snappy"]),
        ("--parquet-compression lz4", files, size, ["--parquet-compression", "lz4"]),
        ("--parquet-compression none", files, size, ["--parquet-compression", "none"]),
        (f"default, first {len(small)} files only (memory vs input size)", small, small_size, []),
    ]
    out = os.path.join(d, "out.parquet")
    for label, inputs, nbytes, extra in runs:
        subprocess.run(["sync"], check=False)
        dt, cpu, rss, rc, err = timed([tool, "records", "to-parquet", *inputs, "-o", out, "--no-progress", *extra])
        print(f"  to-parquet {label}: {nbytes / 1e6:.0f} MB in {dt:.1f}s = {nbytes / 1e6 / dt:.0f} MB/s wall, "
              f"CPU {cpu:.1f}s ({nbytes / 1e6 / cpu:.0f} MB per CPU-second), peak RSS {rss:.0f} MiB, rc={rc}, "
              f"load {os.getloadavg()[0]:.1f}, "
              f"output {os.path.getsize(out) / 1e6 if rc == 0 else 0:.0f} MB{'; ' + err if err else ''}")
        if not extra and inputs is files:
            os.rename(out, out + ".ref")
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S", sys.executable, "-c", BOUND, out + ".ref", out + ".bound", *files],
                          capture_output=True, text=True)
    t_read, t_all = map(float, proc.stdout.split())
    cpu = sum(map(float, proc.stderr.strip().splitlines()[-1].split()))
    print(f"  bound, pyarrow alone (read the TFRecord files in 8 MiB pieces, then write the same table to "
          f"Parquet: zstd, the same dictionary columns, 65536-row groups): read {t_read:.2f}s "
          f"({size / 1e6 / t_read:.0f} MB/s), read + write {t_all:.2f}s = {size / 1e6 / t_all:.0f} MB/s of input "
          f"(CPU of the whole process {cpu:.1f}s, incl. loading the table)")
    from_parquet_bench(out + ".ref", d, size)
    import sysconfig

    big = os.path.join(sysconfig.get_paths()["purelib"], "tensorflow", "libtensorflow_cc.so.2")  # a big file on disk
    for f, flag in ((files[0], None), (big, "iflag=direct")):
        if not os.path.exists(f):
            continue
        cmd = ["dd", f"if={f}", "of=/dev/null", "bs=1M", *([flag] if flag else [])]
        res = subprocess.run(cmd, capture_output=True, text=True).stderr.strip().splitlines()[-1]
        print(f"  dd {'(direct I/O, disk) ' if flag else ''}{os.path.basename(f)}: {res}")
    subprocess.run(["rm", "-rf", d], check=False)


def from_parquet_bench(parquet: str, d: str, tfrecord_bytes: int) -> None:
    """`records from-parquet` of the to-parquet output back to one TFRecord file, and in one process
    the two ways of writing the encoded batches: framed by the native encoder (what from-parquet
    does) vs handed to the Python writer record by record (what it did before)."""
    import pyarrow.parquet as pq

    from tfhadoop.connectors.tfrecord_writer import TFRecordWriter

    tool = os.path.join(os.path.dirname(sys.executable), "tfhadoop")
    back = os.path.join(d, "back.tfrecord")
    dt, cpu, rss, rc, err = timed([tool, "records", "from-parquet", parquet, "-o", back, "--no-progress"])
    rows = pq.ParquetFile(parquet).metadata.num_rows
    print(f"  from-parquet: {rows} rows -> {os.path.getsize(back) / 1e6 if rc == 0 else 0:.0f} MB in {dt:.1f}s = "
          f"{rows / dt:,.0f} rows/s, {tfrecord_bytes / 1e6 / dt:.0f} MB/s of TFRecords, CPU {cpu:.1f}s, "
          f"peak RSS {rss:.0f} MiB, rc={rc}{'; ' + err if err else ''}")
    table = pq.read_table(parquet).slice(0, 2_000_000)

    def per_record():
        with TFRecordWriter(back) as w:
            for batch in table.to_batches(max_chunksize=65536):
                w.write_all(ar.table_to_examples(batch))

    def framed():
        with TFRecordWriter(back) as w:
            for batch in table.to_batches(max_chunksize=65536):
                for buf, starts in ar.table_to_framed(batch):
                    w.write_framed(buf, starts)

    t_rec, t_framed = best(per_record), best(framed)
    print(f"  encode + write {table.num_rows} rows, best of 3: record by record {t_rec:.2f}s "
          f"({table.num_rows / t_rec:,.0f} rows/s), framed natively {t_framed:.2f}s "
          f"({table.num_rows / t_framed:,.0f} rows/s): {t_rec / t_framed:.2f}x")
    os.unlink(back)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--parquet-mb", type=int, default=1000)
    ap.add_argument("--parquet-dir", default=None, help="where the to-parquet data goes (default: $TMPDIR)")
    args = ap.parse_args()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    print(f"pyarrow {pa.__version__}, tensorflow {tf.__version__}; load: {os.getloadavg()}")
    decode_bench(args.rows, 1, 5000)
    decode_bench(args.rows // 10, 10, 1000)
    if args.parquet_mb:
        parquet_bench(args.parquet_mb, args.parquet_dir)
    print(f"bench peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
