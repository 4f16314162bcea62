"""``tfhadoop records cat | head | count | schema | verify | index | to-parquet | from-parquet``: TFRecord files.

PATHs are local files, ``hdfs://`` or fsspec URLs, globs (``'hdfs:///data/part-*'``) or
directories (their visible files, recursively). Compression comes from the extension
(``.gz``, ``.zz``/``.zlib``) unless ``--compression`` says otherwise. Nothing here imports
TensorFlow, so every command starts in well under a second.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

from tfhadoop.errors import CommandError

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


# ------------------------------------------------------------------------------------ helpers


def _positive(text: str) -> int:
    """argparse type: an integer >= 1 (a 0 would mean no row group or no decoder)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, not {text!r}")
    return n


def _files(args) -> list[str]:
    from tfhadoop.connectors import fileio

    try:
        return fileio.expand(args.paths)
    except FileNotFoundError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(str(exc)) from None


def _compression(args):
    return None if args.compression == "auto" else args.compression


def _reader(path, args):
    from tfhadoop.connectors.tfrecord import TFRecordReader

    try:
        return TFRecordReader(path, _compression(args), on_corrupt="skip" if args.skip_corrupt else "raise")
    except FileNotFoundError as exc:
        raise CommandError(f"{path}: no such file" if str(exc).find(path) < 0 else str(exc)) from None
    except OSError as exc:
        raise CommandError(str(exc)) from None


class _Progress:
    """A bytes progress bar on stderr, only when stdout is a terminal (and tqdm is there)."""

    def __init__(self, files, args, enabled=True, rows=None):
        """A bar over the bytes of ``files``, or over ``rows`` rows when given."""
        self.bar = None
        if not enabled or getattr(args, "no_progress", False) or not sys.stdout.isatty():
            return
        try:
            from tqdm import tqdm

            from tfhadoop.connectors import compression as comp
            from tfhadoop.connectors import fileio
        except ImportError:
            return
        if rows is not None:
            self.bar = tqdm(total=rows, unit="rows", file=sys.stderr, leave=False, dynamic_ncols=True)
            return
        total = 0
        for f in files:
            size = fileio.size(f) if not comp.normalize(_compression(args), f) else None
            if size is None:
                total = None
                break
            total += size
        self.bar = tqdm(total=total, unit="B", unit_scale=True, file=sys.stderr, leave=False, dynamic_ncols=True)

    def update(self, n):
        if self.bar is not None:
            self.bar.update(n)

    def file(self, path):
        if self.bar is not None:
            self.bar.set_postfix_str(os.path.basename(path), refresh=False)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _iterate(files, args, progress=None, stats=None):
    """(path, offset, record) over all files, damage turned into CommandError (or skipped)."""
    from tfhadoop.connectors.errors import TFRecordError

    for path in files:
        reader = _reader(path, args)
        if progress:
            progress.file(path)
        try:
            pending = 0
            for offset, data in reader.with_offsets():
                if progress is not None:
                    pending += len(data) + 16
                    if pending > 1 << 20:
                        progress.update(pending)
                        pending = 0
                yield path, offset, data
            if progress is not None:
                progress.update(pending)
        except TFRecordError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"{path}: {exc}") from None
        finally:
            reader.close()
            if stats is not None:
                stats[path] = reader.stats


def _record_type(data: bytes, wanted: str) -> str:
    if wanted != "auto":
        return wanted
    from tfhadoop.connectors import example_proto as pb

    try:
        m = pb.SequenceExample.FromString(data)
    except Exception:  # noqa: BLE001 - not a protobuf at all
        return "bytes?"
    return "SequenceExample" if m.HasField("feature_lists") else "Example"


def _as_json(data: bytes, record_type: str, path: str, offset: int) -> dict:
    if record_type == "bytes":
        return {"len": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    from tfhadoop.connectors.example import ExampleDecodeError, to_json_dict

    if record_type == "bytes?":
        raise CommandError(f"{path}: the record at {offset} is not a serialized Example or SequenceExample; "
                           "use --record-type bytes")
    try:
        return to_json_dict(data, record_type)
    except ExampleDecodeError as exc:
        raise CommandError(f"{path}: the record at {offset} is not a serialized {record_type} ({exc}); "
                           "use --record-type bytes") from None


def _guard_pipe(fn):
    """`tfhadoop records cat ... | head` closes the pipe early: end quietly, exit 0."""

    def run(args):
        try:
            return fn(args)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0

    return run


# ------------------------------------------------------------------------------------ commands


@_guard_pipe
def _cat(args) -> int:
    files = _files(args)
    out = sys.stdout
    limit = args.limit
    n = 0
    stats = {}
    if limit is not None and limit <= 0:
        return 0
    for path, offset, data in _iterate(files, args, stats=stats):
        obj = _as_json(data, _record_type(data, args.record_type), path, offset)
        out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        n += 1
        if limit is not None and n >= limit:
            break
    out.flush()
    _report_skips(stats)
    return 0


def _report_skips(stats) -> None:
    for path, st in stats.items():
        if st.skipped_records:
            print(f"{path}: skipped {st.skipped_records} damaged record(s), {st.skipped_bytes} bytes", file=sys.stderr)


@_guard_pipe
def _count(args) -> int:
    files = _files(args)
    progress = _Progress(files, args)
    stats = {}
    total = 0
    try:
        for path in files:
            n = sum(1 for _ in _iterate([path], args, progress, stats))
            total += n
            if args.per_file:
                print(f"{n}\t{path}")
    finally:
        progress.close()
    print(total)
    _report_skips(stats)
    return 0


def _schema(args) -> int:
    from tfhadoop.connectors import arrow as ar
    from tfhadoop.connectors import dataset
    from tfhadoop.connectors.errors import TFRecordError
    from tfhadoop.connectors.example import ExampleDecodeError

    files = _files(args)
    if args.record_type == "bytes":
        raise CommandError("schema needs Example or SequenceExample records")
    kind = args.record_type if args.record_type != "auto" else _first_kind(files, args)
    progress = _Progress(files, args)
    stats = {}
    try:
        if args.skip_corrupt:  # the pure reader resyncs past damage; the statistics stay native
            schema, n = ar.infer_schema_located(_iterate(files, args, progress, stats), kind, limit=args.limit)
        else:
            schema, n = ar.stream_schema(files, kind, _compression(args), on_bytes=progress.update, limit=args.limit)
    except TFRecordError as exc:
        raise CommandError(str(exc)) from None
    except (ExampleDecodeError, ValueError) as exc:
        raise CommandError(f"cannot infer a schema: {exc}") from None
    except OSError as exc:
        raise CommandError(str(exc)) from None
    finally:
        progress.close()
    doc = {
        "record_type": kind,
        "records": n,
        "files": len(files),
        "arrow_schema": [
            {"name": f.name, "type": str(f.type), "nullable": f.nullable}
            for f in schema
        ],
        "parse_spec": dataset.parse_spec(schema, kind),
    }
    print(json.dumps(doc, indent=2))
    _report_skips(stats)
    return 0


def _first_kind(files, args) -> str:
    """--record-type auto: SequenceExample if the first record has feature lists, else Example."""
    for path, offset, data in _iterate(files, args):
        k = _record_type(data, "auto")
        if k == "bytes?":
            raise CommandError(f"{path}: the record at {offset} is not a serialized Example or SequenceExample")
        return k
    return "Example"


def _verify(args) -> int:
    from tfhadoop.connectors.errors import TFRecordError

    files = _files(args)
    progress = _Progress(files, args)
    damaged, total = 0, 0
    try:
        for path in files:
            reader = _reader(path, args)
            progress.file(path)
            try:
                n = 0
                for data in reader:
                    n += 1
                    if not n & 0x3FF:
                        progress.update((len(data) + 16) << 10)
            except TFRecordError as exc:
                progress.close()
                raise CommandError(str(exc)) from None
            except OSError as exc:
                raise CommandError(f"{path}: {exc}") from None
            finally:
                reader.close()
            st = reader.stats
            total += st.records
            if st.skipped_records:
                damaged += 1
                where = ", ".join(f"{e.kind} at {e.offset}" for e in st.corruptions[:5])
                more = " ..." if st.skipped_records > 5 else ""
                print(f"DAMAGED {path}: {st.records} good records, skipped {st.skipped_records} damaged record(s), "
                      f"{st.skipped_bytes} bytes ({where}{more})")
            else:
                print(f"OK {path}: {st.records} records, {st.bytes} payload bytes")
    finally:
        progress.close()
    print(f"{len(files)} file(s), {total} good records, {damaged} damaged file(s)")
    return 1 if damaged else 0


def _index(args) -> int:
    from tfhadoop.connectors.errors import TFRecordError
    from tfhadoop.connectors.index import build_index
    from tfhadoop.connectors.splits import build_boundary_index, sidecar_path

    if args.skip_corrupt:
        raise CommandError("an index of a damaged file would be wrong: run `verify` and repair it first")
    if args.interval < 1:
        raise CommandError(f"--interval must be a positive number of bytes, got {args.interval}")
    for path in _files(args):
        if path.endswith(".idx"):
            continue
        try:
            if args.per_record:
                idx = build_index(path, _compression(args))
                print(f"{path}.idx: {len(idx)} records")
                continue
            if _compression(args) not in (None, "", "NONE") or path.endswith((".gz", ".zlib", ".deflate")):
                print(f"{path}: compressed, read whole: no boundary index needed")
                continue
            bidx = build_boundary_index(path, args.interval)
            print(f"{sidecar_path(path)}: {bidx.records} records, {len(bidx.offsets)} entries")
        except TFRecordError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"{path}: {exc}") from None
    return 0


def _publish(tmp: str, dest: str) -> None:
    from tfhadoop.connectors.splits import replace_with_index

    replace_with_index(tmp, dest)


def _to_parquet(args) -> int:
    """TFRecords -> Parquet: schema pass (unless given), then decode-and-write pass, both streaming."""
    import pyarrow.parquet as pq

    from tfhadoop.connectors import arrow as ar
    from tfhadoop.connectors.errors import TFRecordError

    if args.skip_corrupt:
        raise CommandError("to-parquet stops at the first damaged record (file and offset named); "
                           "find the damage with `tfhadoop records verify --skip-corrupt`")
    files = _files(args)
    record_type = "Example" if args.record_type in ("auto", "bytes") else args.record_type
    if args.record_type == "auto":
        record_type = _first_kind(files[:1], args)
    schema = pq.read_schema(args.schema_from) if args.schema_from else None
    progress = _Progress(files, args)
    infer = args.infer
    if progress.bar is not None and progress.bar.total and schema is None and infer == "all":
        progress.bar.total *= 2  # two passes
    tmp = f"{args.output}.tmp-{os.getpid()}"
    try:
        try:
            rows = _write_parquet(tmp, files, schema, record_type, infer, args, progress)
        except ar.SchemaDrift as exc:
            msg = f"tfhadoop: {exc}; inferring the schema from all records and starting over"
            if progress.bar is not None:
                progress.bar.write(msg, file=sys.stderr)
            else:
                print(msg, file=sys.stderr)
            if progress.bar is not None:  # two more passes over the input
                progress.bar.reset(progress.bar.total * 2 if progress.bar.total else None)
            rows = _write_parquet(tmp, files, schema, record_type, "all", args, progress)
        _publish(tmp, args.output)
    except (TFRecordError, ValueError, TypeError) as exc:
        raise CommandError(str(exc).splitlines()[0]) from None
    except OSError as exc:
        raise CommandError(str(exc)) from None
    finally:
        progress.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
    print(f"{args.output}: {rows} rows ({record_type}) from {len(files)} file(s)")
    return 0


def _write_parquet(tmp, files, schema, record_type, infer, args, progress) -> int:
    """Decode (``--threads`` files at once, in threads ahead of this one, :func:`_ahead`) and write
    every batch to ``tmp``, gathered into row groups of ``--row-group-mb``; returns the rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tfhadoop.connectors import arrow as ar

    rows, writer, group, group_bytes = 0, None, [], 0
    limit = args.row_group_mb << 20

    def flush(writer):
        nonlocal group, group_bytes
        n = sum(b.num_rows for b in group)
        writer.write_table(pa.Table.from_batches(group), row_group_size=max(n, 1))  # one row group, no concat
        group, group_bytes = [], 0

    batches = _ahead(ar.iter_record_batches(files, schema, record_type, _compression(args), batch_rows=args.batch_rows,
                                            on_bytes=progress.update, infer=infer, threads=args.threads))
    try:
        for batch in batches:
            if writer is None:
                writer = pq.ParquetWriter(tmp, batch.schema, compression=args.parquet_compression,
                                          compression_level=args.parquet_compression_level,
                                          # pyarrow documents "bool or list"; its unannotated default is True
                                          use_dictionary=_dictionary_columns(batch))  # pyright: ignore[reportArgumentType]
            group.append(batch)
            group_bytes += batch.nbytes
            rows += batch.num_rows
            if group_bytes >= limit:
                flush(writer)
        if group:
            flush(writer)
    finally:
        batches.close()
        if writer is not None:
            writer.close()
    return rows


def _dictionary_columns(batch, ratio: float = 0.5) -> list[str]:
    """Parquet column paths worth dictionary encoding: those whose first batch holds at most
    ``ratio`` distinct values per value. pyarrow tries a dictionary for every column by default,
    and on high-cardinality ids and floats that attempt costs more than all the rest of the
    Parquet encoding (BENCHMARKS.md, issue 16) while the pages come out no smaller."""
    import pyarrow.compute as pc

    from tfhadoop.connectors.dataset import _is_list

    paths = []
    for field, col in zip(batch.schema, batch.columns):
        depth, values = 0, col
        while _is_list(values.type):
            values, depth = values.flatten(), depth + 1
        values = values.slice(0, 1 << 16)
        if len(values) and pc.call_function("count_distinct", [values]).as_py() <= ratio * len(values):
            paths.append(field.name + ".list.element" * depth)
    return paths


def _ahead(gen, depth: int = 2):
    """Run ``gen`` in a thread, ``depth`` items ahead: the native decoder and the Parquet writer
    both release the GIL, so decoding batch n+1 overlaps writing batch n. Memory grows by at
    most ``depth`` batches; the producer's exception is re-raised here, unchanged."""
    import queue
    import threading

    q, stop, done = queue.Queue(depth), threading.Event(), object()

    def produce():
        err = None
        try:
            for item in gen:
                if stop.is_set():
                    return
                q.put((item, None))  # the consumer drains the queue until this thread ends
        except Exception as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            err = exc
        finally:
            q.put((done, err))

    worker = threading.Thread(target=produce, name="to-parquet-decode", daemon=True)
    worker.start()
    try:
        while True:
            item, exc = q.get()
            if exc is not None:
                raise exc
            if item is done:
                return
            yield item
    finally:
        stop.set()
        while worker.is_alive():
            try:
                q.get(timeout=0.1)
            except queue.Empty:
                pass
        worker.join()
        gen.close()


def _from_parquet(args) -> int:
    """Parquet -> TFRecords, batch by batch through the native encoder."""
    import pyarrow.parquet as pq

    from tfhadoop.connectors import arrow as ar
    from tfhadoop.connectors.tfrecord import TFRecordWriter

    try:
        sources = [pq.ParquetFile(p) for p in args.paths]
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc).splitlines()[0]) from None
    progress = _Progress([], args, rows=sum(s.metadata.num_rows for s in sources))
    ext = "".join(s for s in (".gz", ".zz", ".zlib") if args.output.endswith(s))
    tmp = f"{args.output}.tmp-{os.getpid()}{ext}"
    compression = None if args.compression == "auto" else args.compression
    rows = 0
    try:
        with TFRecordWriter(tmp, compression) as writer:
            current = args.paths[0]
            for current, src in zip(args.paths, sources):  # noqa: B007 - named in errors
                for batch in src.iter_batches(batch_size=args.batch_rows):
                    for framed, starts in ar.table_to_framed(batch, args.record_type):
                        writer.write_framed(framed, starts)
                    rows += batch.num_rows
                    progress.update(batch.num_rows)
        _publish(tmp, args.output)
    except (ValueError, TypeError) as exc:
        raise CommandError(f"{current}: {str(exc).splitlines()[0]}") from None
    except OSError as exc:
        raise CommandError(str(exc)) from None
    finally:
        progress.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
    print(f"{args.output}: {rows} records ({args.record_type}) from {len(sources)} file(s)")
    return 0
