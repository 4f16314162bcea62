"""``tfhadoop records cat | head | count | schema | verify | index | to-parquet | from-parquet``: TFRecord files.

PATHs are local files, ``hdfs://`` or fsspec URLs, globs (``'hdfs:///data/part-*'``) or
directories (their visible files, recursively). Compression comes from the extension
(``.gz``, ``.zz``/``.zlib``) unless ``--compression`` says otherwise. Nothing here imports
TensorFlow, so every command starts in well under a second.
"""
from __future__ import annotations

import argparse
import os

from tfhadoop.connectors.records_cli_inspect import _cat, _count, _index, _schema, _verify
from tfhadoop.connectors.records_cli_parquet import _from_parquet, _to_parquet

# This module holds the arguments of every action; the actions are in records_cli_inspect
# (cat, head, count, schema, verify, index) and records_cli_parquet (to-parquet, from-parquet),
# the reading they share in records_cli_input.

RECORD_TYPES = ("auto", "Example", "SequenceExample", "bytes")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "records",
        help="read, inspect and verify TFRecord files",
        description=(__doc__ or "").split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="records_command", metavar="ACTION", required=True)

    def common(sp, record_type=False):
        sp.add_argument("paths", nargs="+", metavar="PATH", help="files, directories, globs, hdfs:// or fsspec URLs")
        sp.add_argument("--compression", default="auto", choices=["auto", "none", "gzip", "zlib"], type=str.lower,
                        help="whole-file compression (default: from the extension)")
        sp.add_argument("--skip-corrupt", action="store_true",
                        help="resync past damaged records and report them instead of stopping at the first")
        if record_type:
            sp.add_argument("--record-type", default="auto", choices=RECORD_TYPES,
                            help="how to decode records (default auto: SequenceExample if it has feature "
                                 "lists, else Example); bytes prints {len, sha256}")
        return sp

    cat = common(sub.add_parser("cat", help="print every record as one JSON object per line",
                                description="Print each record as one JSON line: Examples and SequenceExamples in "
                                            "protobuf's JSON mapping (as json_format.MessageToDict gives it: camelCase "
                                            "keys, int64 as strings, bytes base64), raw records as {len, sha256}."),
                 record_type=True)
    cat.add_argument("-n", "--limit", type=int, default=None, help="stop after N records")
    cat.set_defaults(func=_cat)

    head = common(sub.add_parser("head", help="print the first records (10 by default) as JSON lines"), record_type=True)
    head.add_argument("-n", "--limit", type=int, default=10, help="number of records (default 10)")
    head.set_defaults(func=_cat)

    count = common(sub.add_parser("count", help="count records (checking every checksum)"))
    count.add_argument("--per-file", action="store_true", help="print a count per file before the total")
    count.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    count.set_defaults(func=_count)

    schema = common(sub.add_parser("schema", help="infer the Arrow schema and the tf.io parse spec",
                                   description="Decode records and print, as JSON, the Arrow schema inferred from all "
                                               "of them (or the first --limit) and the feature spec for "
                                               "tf.io.parse_example derived from it. One streaming pass over all "
                                               "files that keeps per-feature statistics only: memory does not grow "
                                               "with the data."), record_type=True)
    schema.add_argument("-n", "--limit", type=int, default=None, help="look at the first N records only")
    schema.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    schema.set_defaults(func=_schema)

    verify = common(sub.add_parser("verify", help="check every record's checksums",
                                   description="Read every record and check both checksums. Exits 1 naming the first "
                                               "damaged file and byte offset (offsets as TensorFlow reports them). With "
                                               "--skip-corrupt, reads on through damage and reports per-file counts of "
                                               "skipped records and bytes (still exit 1 if anything was damaged)."))
    verify.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    verify.set_defaults(func=_verify)

    index = common(sub.add_parser("index", help="write the record-boundary index (.<file>.tfrindex) beside each file",
                                  description="Scan each uncompressed file once (checking every checksum) and write the "
                                              "hidden sidecar .<file>.tfrindex: a record boundary every ~1 MiB, which "
                                              "split readers (Spark, MapReduce, Hive, tfhadoop.connectors.splits) start "
                                              "from with no scan. --per-record writes <file>.idx instead: one "
                                              "'<offset> <framed length>' line per record (NVIDIA DALI's tfrecord2idx "
                                              "layout), for random access and record-range sharding."))
    index.add_argument("--per-record", action="store_true", help="write the per-record <file>.idx (DALI layout)")
    index.add_argument("--interval", type=int, default=1 << 20, metavar="BYTES",
                       help="bytes between boundary-index entries (default 1 MiB)")
    index.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    index.set_defaults(func=_index)

    to_pq = common(sub.add_parser("to-parquet", help="convert TFRecord files to one Parquet file (streaming)",
                                  description="Decode every record (natively) into Arrow batches and write them to one "
                                              "Parquet file, in bounded memory, in one pass: the schema is inferred "
                                              "from the first batch (every column nullable) and each later record "
                                              "must fit it exactly; if one does not, that is said on stderr and the "
                                              "conversion starts over with the schema inferred from all records "
                                              "(--infer all does that from the start: two passes). Dictionary "
                                              "encoding only for columns whose first batch repeats values. The output "
                                              "appears only when complete."), record_type=True)
    to_pq.add_argument("-o", "--output", required=True, help="Parquet file to write")
    to_pq.add_argument("--batch-rows", type=int, default=65536, help="rows per batch / row group (default 65536)")
    to_pq.add_argument("--schema-from", metavar="PARQUET", help="take the schema from this Parquet file (skips inference)")
    to_pq.add_argument("--infer", default="sample", choices=["sample", "all"],
                       help="schema from the first batch, checked against every later record (default), or from "
                            "all records in a first pass")
    to_pq.add_argument("--parquet-compression", default="zstd", type=str.lower,
                       choices=["zstd", "snappy", "lz4", "gzip", "brotli", "none"],
                       help="Parquet codec (default zstd: the smallest output; snappy/lz4/none cost less CPU, "
                            "see BENCHMARKS.md)")
    to_pq.add_argument("--parquet-compression-level", type=int, metavar="N",
                       help="codec level (zstd, gzip, brotli; default: the codec's own)")
    to_pq.add_argument("--row-group-mb", type=_positive, default=16, metavar="MB",
                       help="Arrow data per Parquet row group (default 16): batches are gathered up to this, so "
                            "memory holds one row group (larger groups did not encode faster: BENCHMARKS.md)")
    to_pq.add_argument("--threads", type=_positive, default=min(4, os.cpu_count() or 1),
                       help="files decoded at once (default: cores, at most 4); the Parquet writer is one more "
                            "thread. Batches keep the files' order")
    to_pq.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    to_pq.set_defaults(func=_to_parquet)

    from_pq = sub.add_parser("from-parquet", help="convert Parquet files to one TFRecord file (streaming)",
                             description="Read Parquet files batch by batch and write one Example (or SequenceExample) "
                                         "per row to a TFRecord file (.gz/.zz: compressed). Null cells leave the "
                                         "feature out. The output appears only when complete.")
    from_pq.add_argument("paths", nargs="+", metavar="PARQUET", help="Parquet files (local)")
    from_pq.add_argument("-o", "--output", required=True, help="TFRecord file to write")
    from_pq.add_argument("--record-type", default="Example", choices=["Example", "SequenceExample"])
    from_pq.add_argument("--compression", default="auto", choices=["auto", "none", "gzip", "zlib"], type=str.lower,
                         help="output compression (default: from the extension)")
    from_pq.add_argument("--batch-rows", type=int, default=65536, help="rows per batch (default 65536)")
    from_pq.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    from_pq.set_defaults(func=_from_parquet)


def _positive(text: str) -> int:
    """argparse type: an integer >= 1 (a 0 would mean no row group or no decoder)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, not {text!r}")
    return n
