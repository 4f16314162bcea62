"""TFRecord files -> Arrow tables and streams of record batches, schema inferred or given.

Streaming over files (:func:`iter_record_batches`) must fix the schema before the first batch is
handed out. ``infer="all"`` reads every record once for the statistics, then decodes (exact, two
passes); ``infer="sample"`` infers from the first batch and decodes the rest against that schema in
the same pass, *strictly*: every column nullable (a later record may lack a feature), and any later
record that does not fit exactly (another kind, another count, a feature the sample never had, an
empty list under a scalar, bytes that are not UTF-8 under string) raises :class:`SchemaDrift`
naming the file and offset. Nothing is converted to fit; the caller starts over with ``"all"``.
"""
from __future__ import annotations

import pyarrow as pa

from tfhadoop.connectors import example as _ex
from tfhadoop.connectors.arrow_codec import _Batches, _use_native
from tfhadoop.connectors.arrow_framing import _fill
from tfhadoop.connectors.arrow_parallel import _sampled_parallel, _stream_parallel
from tfhadoop.connectors.arrow_schema import SchemaDrift, _locate, _nullable


def iter_record_batches(paths, schema: pa.Schema | None = None, record_type: str = "Example", compression: str | None = None,
                        bytes_as: str = "auto", batch_rows: int = 65536, native=None, on_bytes=None, infer: str = "all",
                        threads: int = 1):
    """Record batches of at most ``batch_rows`` rows from TFRecord files, in bounded memory.
    Errors name the file and the record's byte offset. ``on_bytes(n)`` is told the framed bytes
    consumed (progress). With ``schema=None``, ``infer`` says how the schema is found (module
    docstring): ``"all"``, a first pass over every record keeping no values, so the decode pass
    never meets a record the schema does not fit; ``"sample"``, the first batch, in one pass, and
    :class:`SchemaDrift` if a later record does not fit. With the native codec every pass frames,
    checks and decodes in Rust (:func:`.arrow_framing._framed`), no Python object per record. ``threads`` > 1:
    that many files are decoded at once (:func:`.arrow_parallel._stream_parallel`), batches still in file order."""
    if infer not in ("all", "sample"):
        raise ValueError(f"infer must be 'all' or 'sample', not {infer!r}")
    if threads > 1 and _use_native(native) is not None:
        from tfhadoop.connectors import fileio

        paths = fileio.expand(paths)
        if len(paths) < 2:
            threads = 1
    else:
        threads = 1
    if schema is None and infer == "sample":
        if threads > 1:
            yield from _sampled_parallel(paths, record_type, compression, bytes_as, batch_rows, native, on_bytes, threads)
        else:
            yield from _stream_sampled(paths, record_type, compression, bytes_as, batch_rows, native, on_bytes)
        return
    if schema is None:
        schema = _stream_schema(paths, None, record_type, compression, bytes_as, batch_rows, native, on_bytes)
    if threads > 1:
        yield from _stream_parallel(paths, schema, False, record_type, compression, bytes_as, batch_rows, native,
                                    on_bytes, threads)
    else:
        yield from _stream(paths, schema, record_type, compression, bytes_as, batch_rows, native, on_bytes)


def stream_schema(paths, record_type: str = "Example", compression: str | None = None, bytes_as: str = "auto",
                  native=None, on_bytes=None, limit: int | None = None) -> tuple[pa.Schema, int]:
    """(schema inferred from every record of the files, or the first ``limit``; records read):
    one streaming pass keeping only per-feature statistics, so memory does not grow with the data."""
    b = _Batches(None, record_type, bytes_as, native, keep=False)
    for _ in _fill(b, paths, compression, 65536, on_bytes, limit):
        pass
    return b.inferred(), b.rows


def infer_schema_located(located, record_type: str = "Example", bytes_as: str = "auto", native=None,
                         limit: int | None = None) -> tuple[pa.Schema, int]:
    """:func:`stream_schema` over ``(path, offset, record)`` triples from any reader (e.g. one that
    skips damage): statistics only, errors name the record's file and offset."""
    b = _Batches(None, record_type, bytes_as, native, keep=False)
    chunk, origins = [], []

    def flush():
        base = b.rows
        try:
            b.add(chunk)
        except ValueError as exc:
            raise _locate(exc, lambda rec: origins[rec - base]) from None
        chunk.clear()
        origins.clear()

    for path, offset, data in located:
        if limit is not None and b.rows + len(chunk) >= limit:
            break
        chunk.append(data)
        origins.append((path, offset))
        if len(chunk) >= 8192:
            flush()
    flush()
    return b.inferred(), b.rows


def _stream_sampled(paths, record_type, compression, bytes_as, batch_rows, native, on_bytes):
    """One pass: the first batch is decoded while inferring, the rest strictly against its schema
    (made all-nullable). The first batch is held until a second exists, so an input that fits in
    one batch keeps the exact inferred schema."""
    b = _Batches(None, record_type, bytes_as, native)
    held, sample = None, 0
    try:
        for _ in _fill(b, paths, compression, batch_rows, on_bytes):
            batch = b.finish()
            if not b.strict:
                held, sample = batch, b.rows
                b.freeze(_nullable(batch.schema))
                continue
            if held is not None:
                yield pa.RecordBatch.from_arrays(held.columns, schema=b.schema)
                held = None
            yield batch
    except ValueError as exc:
        if not b.strict or isinstance(exc, _ex.ExampleDecodeError):
            raise
        drift = SchemaDrift(f"{exc} (the schema was inferred from the first {sample} records)")
        drift.record = getattr(exc, "record", None)
        raise drift from None
    if held is not None:
        yield held


def _stream(paths, schema, record_type, compression, bytes_as, batch_rows, native, on_bytes, keep=True):
    b = _Batches(schema, record_type, bytes_as, native, keep=keep)
    for _ in _fill(b, paths, compression, batch_rows, on_bytes):
        if keep:
            yield b.finish()
    return None if keep else b.inferred()


def _stream_schema(*args):
    gen = _stream(*args, keep=False)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return stop.value


def read_table(paths, schema: pa.Schema | None = None, record_type: str = "Example", compression: str | None = None,
               bytes_as: str = "auto", native=None) -> pa.Table:
    """All records of TFRecord files (paths, globs, directories, hdfs:// or fsspec URLs) as a table.
    Without a schema it is inferred in the same pass that decodes (no second read)."""
    b = _Batches(schema, record_type, bytes_as, native)
    batches = [b.finish() for _ in _fill(b, paths, compression, 65536, None) if schema is not None]
    if schema is None:
        batches.append(b.finish())
    return pa.Table.from_batches(batches, schema=batches[-1].schema)
