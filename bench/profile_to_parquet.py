"""Where `records to-parquet` spends its CPU, stage by stage, each alone in one thread: reading the
files in 8 MiB pieces; framing + CRC32C + decoding to Arrow (the native codec); choosing the
dictionary columns; the Parquet encode + write of the decoded batches for each codec, with the
dictionary on the chosen columns or on all (pyarrow's default), 64k-row and 1M-row groups.

    .venv/bin/python -m bench.profile_to_parquet DIR_OF_TFRECORDS [N_FILES]

(the bench_native_arrow.py data: make it with that script's parquet_bench, or any TFRecord files).
"""
from __future__ import annotations

import glob
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

from tfhadoop.connectors import arrow as ar
from tfhadoop.connectors.records_cli_parquet import _dictionary_columns


def main():
    files = sorted(glob.glob(os.path.join(sys.argv[1], "*.tfrecord")))
    files = files[: int(sys.argv[2])] if len(sys.argv) > 2 else files
    size = sum(os.path.getsize(f) for f in files) / 1e6
    out = os.path.join(sys.argv[1], "profile.parquet.tmp")

    def timed(label, fn):
        w, c = time.perf_counter(), time.process_time()
        r = fn()
        w, c = time.perf_counter() - w, time.process_time() - c
        print(f"{label:58s} wall {w:6.2f}s CPU {c:6.2f}s = {size / c:5.0f} MB of input per CPU-s  "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
        return r

    def read():
        for f in files:
            with open(f, "rb") as fh:
                while fh.read(8 << 20):
                    pass

    print(f"{size:.0f} MB in {len(files)} files")
    timed("read, 8 MiB pieces", read)
    batches = timed("read + frame + CRC + decode to Arrow (native, one thread)",
                    lambda: list(ar.iter_record_batches(files, None, "Example", batch_rows=65536, infer="sample")))
    chosen = timed("dictionary column choice (first batch)", lambda: _dictionary_columns(batches[0]))
    big = pa.Table.from_batches(batches).combine_chunks().to_batches(max_chunksize=1 << 20)
    for codec in ("zstd", "snappy", "lz4", "none"):
        for dic, groups, label in ((chosen, batches, "chosen dict, 64k rows"), (chosen, big, "chosen dict, 1M rows"),
                                   (True, batches, "dict on all, 64k rows")):
            def write(groups=groups, dic=dic, codec=codec):
                with pq.ParquetWriter(out, groups[0].schema, compression=codec, use_dictionary=dic) as w:  # pyright: ignore[reportArgumentType] - pyarrow takes column names too
                    for b in groups:
                        w.write_batch(b)
            timed(f"Parquet encode + write, {codec}, {label}", write)
            print(f"    -> {os.path.getsize(out) / 1e6:.0f} MB")
    os.unlink(out)


if __name__ == "__main__":
    main()
