"""Python TFRecord library vs TensorFlow, same files, same run.

    .venv/bin/python -m bench.bench_python_records [--small-mb 10] [--large-mb 100] [--hdfs]

Measures: reading 100 B and 10 KB records (tfhadoop.connectors TFRecordReader vs
tf.data.TFRecordDataset iterated from Python, eager and as_numpy_iterator, plus TF batched as a
reference for its in-graph rate), writing (TFRecordWriter vs tf.io.TFRecordWriter), Example
decoding (upb classes vs the hand wire codec) and Examples -> Arrow. With ``--hdfs`` (a cluster
from tfhadoop.hadoop.load_conf()): raw read throughput of a ~100 MB file over hdfs-native vs
WebHDFS. Prints ratios (Python / TensorFlow; > 1 means Python is faster).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from typing import Any


def best(fn, repeat) -> tuple[float, Any]:
    """(best seconds, result) over ``repeat`` runs."""
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def make_records(size, total_bytes, seed=0):
    rng = random.Random(seed)
    n = max(1, total_bytes // (size + 16))
    pool = [rng.randbytes(size) for _ in range(64)]  # distinct payloads, cheap to make
    return [pool[i % 64] for i in range(n)]


def bench_read(tf, path, n, nbytes, repeat, results, label):
    from tfhadoop.connectors.tfrecord import TFRecordReader

    def py():
        c = 0
        for _ in TFRecordReader(path):
            c += 1
        return c

    def tf_eager():
        c = 0
        for _ in tf.data.TFRecordDataset(path):
            c += 1
        return c

    def tf_numpy():
        c = 0
        for _ in tf.data.TFRecordDataset(path).as_numpy_iterator():
            c += 1
        return c

    def tf_batched():
        c = 0
        for b in tf.data.TFRecordDataset(path).batch(4096).prefetch(2):
            c += int(b.shape[0])
        return c

    rows = {}
    for name, fn, rep in (("python", py, repeat), ("tf_eager", tf_eager, 1), ("tf_numpy", tf_numpy, 1), ("tf_batched_4096", tf_batched, repeat)):
        secs, count = best(fn, rep)
        assert count == n, (name, count, n)
        rows[name] = {"records_per_s": n / secs, "mb_per_s": nbytes / secs / 1e6, "seconds": secs}
    rows["ratio_vs_tf_eager"] = rows["python"]["records_per_s"] / rows["tf_eager"]["records_per_s"]
    rows["ratio_vs_tf_numpy"] = rows["python"]["records_per_s"] / rows["tf_numpy"]["records_per_s"]
    rows["ratio_vs_tf_batched"] = rows["python"]["records_per_s"] / rows["tf_batched_4096"]["records_per_s"]
    results[f"read_{label}"] = rows


def bench_write(tf, records, workdir, repeat, results, label):
    from tfhadoop.connectors.tfrecord_writer import TFRecordWriter

    nbytes = sum(len(r) for r in records)

    def py():
        with TFRecordWriter(os.path.join(workdir, "w_py.tfrecord")) as w:
            for r in records:
                w.write(r)

    def tfw():
        with tf.io.TFRecordWriter(os.path.join(workdir, "w_tf.tfrecord")) as w:
            for r in records:
                w.write(r)

    a, _ = best(py, repeat)
    b, _ = best(tfw, repeat)
    same = open(os.path.join(workdir, "w_py.tfrecord"), "rb").read() == open(os.path.join(workdir, "w_tf.tfrecord"), "rb").read()
    results[f"write_{label}"] = {
        "python": {"records_per_s": len(records) / a, "mb_per_s": nbytes / a / 1e6},
        "tf": {"records_per_s": len(records) / b, "mb_per_s": nbytes / b / 1e6},
        "ratio": b / a,
        "identical_bytes": same,
    }


def bench_examples(tf, workdir, n, repeat, results):
    from tfhadoop.connectors import arrow as ar
    from tfhadoop.connectors import dataset
    from tfhadoop.connectors import example as ex
    from tfhadoop.connectors import example_wire as wire
    from tfhadoop.connectors.tfrecord import read_records
    from tfhadoop.connectors.tfrecord_writer import write_records

    rng = random.Random(1)
    rows = [
        {"id": [i], "label": [rng.random()], "emb": [rng.random() for _ in range(16)], "tags": [b"tag%d" % j for j in range(3)], "ids": [rng.randrange(1 << 40) for _ in range(8)]}
        for i in range(n)
    ]
    enc_upb, data = best(lambda: [ex.encode_example(r) for r in rows], repeat)
    enc_wire, _ = best(lambda: [wire.encode_example(r) for r in rows], repeat)
    dec_upb, _ = best(lambda: [ex.decode_example(d) for d in data], repeat)
    dec_wire, _ = best(lambda: [wire.decode_example(d) for d in data], repeat)
    path = os.path.join(workdir, "examples.tfrecord")
    write_records(path, data)
    schema = ar.infer_schema(data)
    to_arrow, table = best(lambda: ar.examples_to_table(read_records(path), schema), repeat)
    to_arrow_infer, _ = best(lambda: ar.examples_to_table(list(read_records(path))), repeat)
    from_arrow, _ = best(lambda: sum(1 for _ in ar.table_to_examples(table)), repeat)
    spec = dataset.tf_parse_spec(dataset.parse_spec(schema))

    def tf_parse():
        c = 0
        for b in tf.data.TFRecordDataset(path).batch(1024).map(lambda s: tf.io.parse_example(s, spec)):
            c += int(b["id"].shape[0])
        return c

    tfp, count = best(tf_parse, repeat)
    assert count == n and table.num_rows == n
    results["examples_5_features"] = {
        "encode_per_s": {"upb": n / enc_upb, "wire": n / enc_wire},
        "decode_per_s": {"upb": n / dec_upb, "wire": n / dec_wire},
        "file_to_arrow_per_s": n / to_arrow,
        "file_to_arrow_inferred_schema_per_s": n / to_arrow_infer,
        "arrow_to_examples_per_s": n / from_arrow,
        "tf_parse_example_batched_per_s": n / tfp,
    }


def bench_hdfs(workdir, mb, repeat, results):
    from tfhadoop import hadoop
    from tfhadoop.connectors import hdfs
    from tfhadoop.connectors.tfrecord import TFRecordReader
    from tfhadoop.connectors.tfrecord_writer import write_records

    conf = hadoop.load_conf()
    url = conf.default_fs.rstrip("/") + "/tmp/tfhadoop-bench/hdfs_read.tfrecord"
    records = make_records(10_000, mb << 20, seed=3)
    write_records(url, records)
    size = hdfs.filesystem(url, "native").size(url)
    out: dict[str, Any] = {"file_mb": size / 1e6}
    for kind in hdfs.BACKENDS:
        fs = hdfs.filesystem(url, kind)

        def raw(fs=fs):
            f, got = fs.open_read(url), 0
            while True:
                piece = f.read(1 << 20)  # the reader's own buffer size
                if not piece:
                    break
                got += len(piece)
            f.close()
            return got

        def recs(fs=fs):
            return sum(1 for _ in TFRecordReader(fs.open_read(url), "NONE", name=url))

        secs, got = best(raw, repeat)
        assert got == size
        rsecs, n = best(recs, repeat)
        assert n == len(records)
        out[kind] = {"raw_mb_per_s": size / secs / 1e6, "tfrecord_mb_per_s": size / rsecs / 1e6}
    out["native_over_webhdfs"] = out["native"]["raw_mb_per_s"] / out["webhdfs"]["raw_mb_per_s"]
    hdfs.filesystem(url, "native").delete(url)
    results["hdfs_read"] = out


def main(argv=None):
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--small-mb", type=int, default=10, help="size of the 100 B-record file (default 10)")
    p.add_argument("--large-mb", type=int, default=100, help="size of the 10 KB-record file (default 100)")
    p.add_argument("--examples", type=int, default=50_000, help="Examples for the decode/Arrow rates")
    p.add_argument("--repeat", type=int, default=3, help="best of N for the fast paths (TF eager runs once)")
    p.add_argument("--hdfs", action="store_true", help="also measure hdfs-native vs WebHDFS")
    p.add_argument("--hdfs-mb", type=int, default=100)
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--workdir", help="where to put the files (default: a temp dir)")
    args = p.parse_args(argv)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    from tfhadoop.connectors.tfrecord_writer import write_records

    results = {}
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        for label, size, mb in (("100B", 100, args.small_mb), ("10KB", 10_000, args.large_mb)):
            records = make_records(size, mb << 20)
            path = os.path.join(workdir, f"r{label}.tfrecord")
            write_records(path, records)
            bench_read(tf, path, len(records), size * len(records), args.repeat, results, label)
            bench_write(tf, records, workdir, args.repeat, results, label)
            del records
        bench_examples(tf, workdir, args.examples, args.repeat, results)
        if args.hdfs:
            bench_hdfs(workdir, args.hdfs_mb, args.repeat, results)

    print(f"python {sys.version.split()[0]}, tensorflow {tf.__version__}, {os.cpu_count()} cpus")
    for label in ("100B", "10KB"):
        r = results[f"read_{label}"]
        print(f"read {label:>5}: python {r['python']['records_per_s']:>11,.0f} rec/s {r['python']['mb_per_s']:7.1f} MB/s | "
              f"tf eager {r['tf_eager']['records_per_s']:>9,.0f} rec/s {r['tf_eager']['mb_per_s']:6.1f} MB/s | "
              f"tf numpy {r['tf_numpy']['records_per_s']:>9,.0f} | tf batched {r['tf_batched_4096']['records_per_s']:>11,.0f} | "
              f"ratio vs eager {r['ratio_vs_tf_eager']:.1f}x, vs numpy {r['ratio_vs_tf_numpy']:.1f}x, vs batched {r['ratio_vs_tf_batched']:.2f}x")
        w = results[f"write_{label}"]
        print(f"write {label:>4}: python {w['python']['records_per_s']:>11,.0f} rec/s {w['python']['mb_per_s']:7.1f} MB/s | "
              f"tf {w['tf']['records_per_s']:>11,.0f} rec/s {w['tf']['mb_per_s']:7.1f} MB/s | ratio {w['ratio']:.2f}x | identical bytes {w['identical_bytes']}")
    e = results["examples_5_features"]
    print(f"Examples (5 features): encode upb {e['encode_per_s']['upb']:,.0f}/s wire {e['encode_per_s']['wire']:,.0f}/s; "
          f"decode upb {e['decode_per_s']['upb']:,.0f}/s wire {e['decode_per_s']['wire']:,.0f}/s")
    print(f"  file -> Arrow {e['file_to_arrow_per_s']:,.0f} Examples/s (schema given), {e['file_to_arrow_inferred_schema_per_s']:,.0f}/s (inferred); "
          f"Arrow -> Examples {e['arrow_to_examples_per_s']:,.0f}/s; tf.io.parse_example batched {e['tf_parse_example_batched_per_s']:,.0f}/s")
    if "hdfs_read" in results:
        h = results["hdfs_read"]
        print(f"HDFS read {h['file_mb']:.0f} MB: hdfs-native {h['native']['raw_mb_per_s']:.0f} MB/s raw, {h['native']['tfrecord_mb_per_s']:.0f} MB/s records | "
              f"WebHDFS {h['webhdfs']['raw_mb_per_s']:.0f} MB/s raw, {h['webhdfs']['tfrecord_mb_per_s']:.0f} MB/s records | native/webhdfs {h['native_over_webhdfs']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main()
