"""``tfhadoop records to-parquet | from-parquet``: TFRecord files <-> one Parquet file, streaming,
the output published only when complete."""
from __future__ import annotations

import contextlib
import os
import sys

from tfhadoop.connectors.records_cli_input import _compression, _files, _first_kind, _Progress
from tfhadoop.errors import CommandError


@contextlib.contextmanager
def _published(tmp: str, dest: str, progress):
    """Write to ``tmp`` in the block; ``dest`` appears (with its index) only when the block ends
    well, an I/O error becomes one line, and nothing half-written stays behind either way."""
    from tfhadoop.connectors.splits import replace_with_index

    try:
        yield
        replace_with_index(tmp, dest)
    except OSError as exc:
        raise CommandError(str(exc)) from None
    finally:
        progress.close()
        if os.path.exists(tmp):
            os.unlink(tmp)


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
    with _published(tmp, args.output, progress):
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
        except (TFRecordError, ValueError, TypeError) as exc:
            raise CommandError(str(exc).splitlines()[0]) from None
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
    from tfhadoop.connectors.tfrecord_writer import TFRecordWriter

    try:
        sources = [pq.ParquetFile(p) for p in args.paths]
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc).splitlines()[0]) from None
    progress = _Progress([], args, rows=sum(s.metadata.num_rows for s in sources))
    ext = "".join(s for s in (".gz", ".zz", ".zlib") if args.output.endswith(s))
    tmp = f"{args.output}.tmp-{os.getpid()}{ext}"
    compression = None if args.compression == "auto" else args.compression
    rows = 0
    current = args.paths[0]
    with _published(tmp, args.output, progress):
        try:
            with TFRecordWriter(tmp, compression) as writer:
                for current, src in zip(args.paths, sources):  # noqa: B007 - named in errors
                    for batch in src.iter_batches(batch_size=args.batch_rows):
                        for framed, starts in ar.table_to_framed(batch, args.record_type):
                            writer.write_framed(framed, starts)
                        rows += batch.num_rows
                        progress.update(batch.num_rows)
        except (ValueError, TypeError) as exc:
            raise CommandError(f"{current}: {str(exc).splitlines()[0]}") from None
    print(f"{args.output}: {rows} records ({args.record_type}) from {len(sources)} file(s)")
    return 0
