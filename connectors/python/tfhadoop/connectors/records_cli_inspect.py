"""``tfhadoop records cat | head | count | schema | verify | index``: print, count, check and
index TFRecord files without converting them."""
from __future__ import annotations

import hashlib
import json
import os
import sys

from tfhadoop.connectors.records_cli_input import (
    _compression,
    _files,
    _first_kind,
    _iterate,
    _Progress,
    _reader,
    _record_type,
)
from tfhadoop.errors import CommandError


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


def _report_skips(stats) -> None:
    for path, st in stats.items():
        if st.skipped_records:
            print(f"{path}: skipped {st.skipped_records} damaged record(s), {st.skipped_bytes} bytes", file=sys.stderr)


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
