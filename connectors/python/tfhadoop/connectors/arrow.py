"""Arrow tables <-> serialized tf.train.Example / SequenceExample.

Schema inference looks at every decoded record, not just the first: a feature's Arrow type is
``int64`` / ``float32`` / ``binary`` (``string`` when every value is UTF-8 and
``bytes_as="auto"``), a scalar when every record holds exactly one value, a fixed-size list when
every record holds the same number (other than 1), a list otherwise; a feature missing from some
record is nullable. A feature that is only ever empty and untyped becomes ``list<binary>``.
SequenceExample feature lists become ``list<list<T>>`` (``list<fixed_size_list<T, n>>`` when
every step has n values), their context features follow the Example rules.

Decoding and encoding run in Rust (``_tfarrow``, connectors/native/tfarrow) and reach pyarrow
through the Arrow C data interface; ``native=False`` takes the pure-Python path, which the tests
use as the reference (and which is the fallback, with a warning, when the library is not built).
Both apply the same rules with a schema: no kind conversion, no lossy narrowing, UTF-8 checked,
missing non-nullable features rejected; the first problem (record order, then field order) is
reported, prefixed by ``PATH: record at offset N:`` when reading files. Inference happens in the
same pass as decoding.

Streaming over files (:func:`iter_record_batches`) must fix the schema before the first batch is
handed out. ``infer="all"`` reads every record once for the statistics, then decodes (exact, two
passes); ``infer="sample"`` infers from the first batch and decodes the rest against that schema in
the same pass, *strictly*: every column nullable (a later record may lack a feature), and any later
record that does not fit exactly (another kind, another count, a feature the sample never had, an
empty list under a scalar, bytes that are not UTF-8 under string) raises :class:`SchemaDrift`
naming the file and offset. Nothing is converted to fit; the caller starts over with ``"all"``.

Which Arrow type holds which feature kind, and the parse spec of a schema, are the dataset's
rules (:mod:`tfhadoop.connectors.dataset`).
"""
from __future__ import annotations

import array
import sys

import pyarrow as pa

from tfhadoop.connectors import example as _ex
from tfhadoop.connectors.dataset import BYTES, arrow_kind, arrow_type, is_feature_list
from tfhadoop.connectors.tfrecord import frame_records

__all__ = [
    "read_table",
    "iter_record_batches",
    "SchemaDrift",
    "stream_schema",
    "infer_schema_located",
    "write_table",
    "infer_schema",
    "examples_to_table",
    "table_to_examples",
]


class SchemaDrift(ValueError):
    """A record after the sample does not fit the schema inferred from the sample
    (``infer="sample"``): the schema must be inferred from all records instead."""

    record: int | None = None  # the index of that record, when known


class _Stats:
    """What inference knows about one feature so far."""

    __slots__ = ("kind", "lengths", "utf8", "seen", "bad_utf8")

    def __init__(self):
        self.kind, self.lengths, self.utf8, self.seen, self.bad_utf8 = None, set(), True, 0, 0

    def add(self, kind, values, rec=0):
        self.seen += 1
        if kind is not None:
            if self.kind is not None and self.kind != kind:
                raise ValueError(f"feature holds both {self.kind} and {kind} values")
            self.kind = kind
        self.lengths.add(len(values))
        if kind == BYTES and self.utf8:
            try:
                for v in values:
                    v.decode("utf-8")
            except UnicodeDecodeError:
                self.utf8, self.bad_utf8 = False, rec

    def arrow_type(self, name: str, bytes_as: str, scalar_ok: bool = True):
        base = arrow_type(self.kind or BYTES)
        if (self.kind or BYTES) == BYTES and (bytes_as == "string" or (bytes_as == "auto" and self.utf8 and self.kind)):
            if not self.utf8:
                raise _decode_error(f"feature '{name}' value in record {self.bad_utf8} is not UTF-8 (the schema says string)",
                                    self.bad_utf8, False)
            base = pa.string()
        if len(self.lengths) == 1:
            (n,) = self.lengths
            if n == 1 and scalar_ok:
                return base
            if n > 1:
                return pa.list_(base, n)
        return pa.list_(base)


def _scan(decoded_rows, record_type: str, stats, base: int) -> None:
    """Add decoded rows to the inference statistics ``stats`` = (context, feature lists)."""
    ctx, seq = stats
    for i, row in enumerate(decoded_rows):
        rec = base + i
        context, lists = row if record_type == "SequenceExample" else (row, {})
        try:
            for name, (kind, values) in context.items():
                ctx.setdefault(name, _Stats()).add(kind, values, rec)
            for name, steps in lists.items():
                steps_stats, count = seq.setdefault(name, (_Stats(), _Stats()))
                count.add(None, steps, rec)
                for kind, values in steps:
                    steps_stats.add(kind, values, rec)
        except ValueError as exc:
            raise _decode_error(f"feature '{name}' (record {rec}): {exc}", rec, False) from None


def _infer_from(stats, rows: int, bytes_as: str) -> pa.Schema:
    ctx, seq = stats
    fields = []
    for name in sorted(ctx):
        st = ctx[name]
        fields.append(pa.field(name, st.arrow_type(name, bytes_as), nullable=st.seen < rows))
    for name in sorted(seq):
        st, _count = seq[name]
        inner = st.arrow_type(name, bytes_as, scalar_ok=False) if st.seen else pa.list_(pa.binary())
        fields.append(
            pa.field(name, pa.list_(inner), nullable=_count.seen < rows, metadata={b"tfhadoop.feature_list": b"1"})
        )
    return pa.schema(fields)


# ------------------------------------------------------------------------- native or pure


def _native_module():
    """The Rust extension (connectors/native/tfarrow), or None with a one-time warning."""
    global _NATIVE
    if _NATIVE is None:
        try:
            from tfhadoop.connectors import _tfarrow

            _NATIVE = _tfarrow
        except ImportError as exc:
            import warnings

            warnings.warn(f"tfhadoop's native Arrow codec is not built ({exc}); using the pure-Python path, "
                          "~20x slower (run `make native`)", RuntimeWarning, stacklevel=3)
            _NATIVE = False
    return _NATIVE or None


_NATIVE = None


def _use_native(native):
    if native is False:
        return None
    mod = _native_module()
    if native and mod is None:
        raise RuntimeError("the native Arrow codec (_tfarrow) is not built: run `make native`")
    return mod


def _locate(exc: Exception, origins) -> Exception:
    """The same error, prefixed with the file and byte offset of the record it names."""
    rec = getattr(exc, "record", None)
    if origins is None or rec is None:
        return exc
    path, offset = origins(rec)
    new = type(exc)(f"{path}: record at offset {offset}: {exc}")
    new.record = rec  # pyright: ignore[reportAttributeAccessIssue] - any exception takes it; see _decode_error
    return new


def _decode_error(msg: str, rec: int, malformed: bool) -> Exception:
    exc = _ex.ExampleDecodeError(msg) if malformed else ValueError(msg)
    # the record index rides on the built-in class both codecs raise (their errors must match):
    exc.record = rec  # pyright: ignore[reportAttributeAccessIssue] - exceptions take attributes
    return exc


def _leaf(t):
    while _is_list(t):
        t = t.value_type
    return t


class _Batches:
    """Serialized records -> record batches, natively or through the pure reference path.

    ``schema=None`` infers while decoding (one pass: columns are kept as they are discovered);
    ``add`` may be called any number of times, ``finish`` returns what was added since the last
    ``finish``. With ``keep=False`` values are dropped after each ``add`` (a schema-only pass)."""

    def __init__(self, schema, record_type, bytes_as="auto", native=None, keep=True):
        self.schema, self.record_type, self.bytes_as, self.keep = schema, record_type, bytes_as, keep
        self.seq = record_type == "SequenceExample"
        self.mod = _use_native(native)
        self.rows, self.strict = 0, False
        if self.mod is not None:
            self.dec = self._decoder(self.mod, schema, False)
        else:
            self.pending, self.stats = [], ({}, {})

    def _decoder(self, mod, schema, strict):
        if schema is None:
            return mod.Decoder(None, sequence=self.seq, bytes_as=self.bytes_as)
        fl = [self.seq and is_feature_list(f) for f in schema]
        return mod.Decoder(schema.__arrow_c_schema__(), fl, [str(f.type) for f in schema],
                                [str(_leaf(f.type)) for f in schema], self.seq, self.bytes_as, strict)

    def freeze(self, schema: pa.Schema) -> None:
        """From now on decode strictly against ``schema`` (inferred so far); call between batches."""
        self.schema, self.strict = schema, True
        if self.mod is not None:
            dec = self._decoder(self.mod, schema, True)
            dec.rows = self.dec.rows
            self.dec = dec

    def add(self, records: list) -> None:
        if self.mod is not None:
            try:
                self.dec.add(records)
            except self.mod.DecodeError as exc:
                raise _decode_error(*exc.args) from None
            if not self.keep:
                self.dec.clear()
        else:
            decoded = _pure_decode(records, self.record_type, self.rows)
            if self.schema is None:
                _scan(decoded, self.record_type, self.stats, self.rows)
            else:
                _pure_check(decoded, self.schema, self.record_type, self.rows, self.strict)
            if self.keep:
                self.pending.extend(decoded)
        self.rows += len(records)

    def add_framed(self, buf: bytes, pos: int, base: int, max_records: int, path: str):
        """Native only: frame and decode records from ``buf[pos:]`` (see ``_tfarrow``'s
        ``add_framed``); returns (new pos, records taken, bad checksum seen)."""
        if self.mod is None:
            raise RuntimeError("add_framed needs the native Arrow codec")
        try:
            pos, n, bad = self.dec.add_framed(buf, pos, base, max_records)
        except self.mod.DecodeError as exc:
            msg, rec, malformed, offset = exc.args
            raise _locate(_decode_error(msg, rec, malformed), lambda _rec: (path, offset)) from None
        if not self.keep:
            self.dec.clear()
        self.rows += n
        return pos, n, bad

    def inferred(self) -> pa.Schema:
        if self.mod is not None:
            s = pa.Schema._import_from_c_capsule(self.dec.schema()) if hasattr(pa.Schema, "_import_from_c_capsule") \
                else pa.schema(pa.DataType._import_from_c_capsule(self.dec.schema()))
            return pa.schema(list(s))
        return _infer_from(self.stats, self.rows, self.bytes_as)

    def finish(self) -> pa.RecordBatch:
        if self.mod is not None:
            try:
                s, a = self.dec.finish()
            except ValueError as exc:
                raise ValueError(str(exc)) from None
            batch = pa.RecordBatch._import_from_c_capsule(s, a)
            if self.schema is not None:
                batch = pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
            return batch
        schema = self.schema if self.schema is not None else _infer_from(self.stats, self.rows, self.bytes_as)
        decoded, self.pending = self.pending, []
        return _pure_batch(decoded, schema, self.record_type)


def infer_schema(records, record_type: str = "Example", bytes_as: str = "auto", native=None) -> pa.Schema:
    """Arrow schema for serialized records (an iterable of bytes); see the module docstring."""
    b = _Batches(None, record_type, bytes_as, native, keep=False)
    chunk = []
    for r in records:
        chunk.append(r)
        if len(chunk) >= 8192:
            b.add(chunk)
            chunk = []
    b.add(chunk)
    return b.inferred()


def examples_to_table(records, schema: pa.Schema | None = None, record_type: str = "Example", bytes_as: str = "auto",
                      native=None) -> pa.Table:
    """Decode serialized records into a table (schema inferred from all of them, in the same pass,
    when not given). Features not in the schema are ignored; a record without a feature gives
    null. ``native=False`` takes the pure-Python reference path."""
    b = _Batches(schema, record_type, bytes_as, native)
    b.add(records if isinstance(records, list) else list(records))
    batch = b.finish()
    return pa.Table.from_batches([batch], schema=batch.schema)


def _with_offsets(paths, compression):
    from tfhadoop.connectors import fileio
    from tfhadoop.connectors.tfrecord import TFRecordReader

    for path in fileio.expand(paths):
        with TFRecordReader(path, compression) as reader:
            for offset, data in reader.with_offsets():
                yield path, offset, data


def iter_record_batches(paths, schema: pa.Schema | None = None, record_type: str = "Example", compression: str | None = None,
                        bytes_as: str = "auto", batch_rows: int = 65536, native=None, on_bytes=None, infer: str = "all",
                        threads: int = 1):
    """Record batches of at most ``batch_rows`` rows from TFRecord files, in bounded memory.
    Errors name the file and the record's byte offset. ``on_bytes(n)`` is told the framed bytes
    consumed (progress). With ``schema=None``, ``infer`` says how the schema is found (module
    docstring): ``"all"``, a first pass over every record keeping no values, so the decode pass
    never meets a record the schema does not fit; ``"sample"``, the first batch, in one pass, and
    :class:`SchemaDrift` if a later record does not fit. With the native codec every pass frames,
    checks and decodes in Rust (:func:`_framed`), no Python object per record. ``threads`` > 1:
    that many files are decoded at once (:func:`_stream_parallel`), batches still in file order."""
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


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in schema], metadata=schema.metadata)


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


def _sampled_parallel(paths, record_type, compression, bytes_as, batch_rows, native, on_bytes, threads):
    """:func:`_stream_sampled` with the files decoded ``threads`` at a time: the schema comes from
    the first ``batch_rows`` records (decoded once more, strictly, by the workers: ~1 batch of
    extra work), then every file is decoded strictly against it (made all-nullable)."""
    b = _Batches(None, record_type, bytes_as, native)
    for _ in _fill(b, paths, compression, batch_rows, None, batch_rows):
        pass
    sample = b.finish()
    if b.rows < batch_rows:  # the whole input: the exact inferred schema, as in one thread
        if on_bytes is not None:
            on_bytes(sum(_bytes_of(p) for p in paths))
        yield sample
        return
    try:
        yield from _stream_parallel(paths, _nullable(sample.schema), True, record_type, compression, bytes_as,
                                    batch_rows, native, on_bytes, threads)
    except ValueError as exc:
        if isinstance(exc, _ex.ExampleDecodeError):
            raise
        drift = SchemaDrift(f"{exc} (the schema was inferred from the first {b.rows} records)")
        drift.record = getattr(exc, "record", None)
        raise drift from None


def _bytes_of(path) -> int:
    from tfhadoop.connectors import fileio

    return fileio.size(path) or 0


def _stream_parallel(files, schema, strict, record_type, compression, bytes_as, batch_rows, native, on_bytes,
                     threads, depth: int = 2):
    """Batches of ``files`` decoded by ``threads`` workers at once (the codec releases the GIL while
    it frames and decodes), yielded in file order, as :func:`_stream` would. Worker ``j`` takes
    files ``j, j+threads, ...`` into its own queue of ``depth`` batches, so memory stays at about
    ``threads * (depth + 1)`` batches. A worker's error is re-raised by decoding that file again
    in this thread with the record numbering of one sequential pass (the same message, the file
    and offset named), then the worker's own error if that pass does not fail."""
    import queue
    import threading

    stop = threading.Event()
    queues = [queue.Queue(depth) for _ in range(threads)]

    def put(q, item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def work(j):
        q = queues[j]
        for i in range(j, len(files), threads):
            seen = []
            try:
                b = _Batches(schema, record_type, bytes_as, native)
                if strict:
                    b.freeze(schema)
                for _ in _fill(b, [files[i]], compression, batch_rows, seen.append):
                    if not put(q, ("batch", b.finish(), sum(seen))):
                        return
                    seen.clear()
            except Exception as exc:  # noqa: BLE001 - re-raised by the consumer, in file order
                put(q, ("error", exc, 0))
                return
            if not put(q, ("end", None, 0)):
                return

    workers = [threading.Thread(target=work, args=(j,), name=f"tfrecord-decode-{j}", daemon=True)
               for j in range(threads)]
    for w in workers:
        w.start()
    rows, last = 0, None
    try:
        for i, path in enumerate(files):
            q, start = queues[i % threads], rows
            while True:
                kind, item, nbytes = q.get()
                if kind == "end":
                    break
                if kind == "error":
                    _reraise(path, item, schema, strict, record_type, compression, bytes_as, batch_rows, native, start)
                if on_bytes is not None and nbytes:
                    on_bytes(nbytes)
                last = item
                if item.num_rows:
                    rows += item.num_rows
                    yield item
        if not rows and last is not None:
            yield last  # no records at all: one empty batch with the schema, as in one thread
    finally:
        stop.set()
        for w in workers:
            w.join()


def _reraise(path, exc, schema, strict, record_type, compression, bytes_as, batch_rows, native, rows_before):
    """Raise a worker's error for ``path`` as one sequential pass words it (its record numbers)."""
    b = _Batches(schema, record_type, bytes_as, native, keep=False)
    if strict:
        b.freeze(schema)
    b.rows = rows_before
    if b.mod is not None:
        b.dec.rows = rows_before
    for _ in _fill(b, [path], compression, batch_rows, None):
        pass
    raise exc


_CHUNK = 8 << 20  # bytes read per call when the native codec frames the records


def _framed(paths, compression, b: _Batches, batch_rows: int, on_bytes, max_rows=None):
    """Native framing: each file's (decompressed) stream is read in ``_CHUNK`` pieces and handed
    whole to Rust, which frames, checks and decodes the records in place (no Python object per
    record). Yields each time the decoder holds ``batch_rows`` records. Memory stays at one
    chunk plus one batch. Damage is re-read by the pure reader so its errors are the same.
    ``max_rows``: stop after that many records (a schema from the first N)."""
    from tfhadoop.connectors import fileio
    from tfhadoop.connectors.tfrecord import TFRecordReader

    limit = batch_rows if b.keep else 1 << 62
    left = 1 << 62 if max_rows is None else max_rows
    pending = 0
    for path in fileio.expand(paths):
        if left <= 0:
            break
        with TFRecordReader(path, compression) as reader:
            stream, buf, base, eof = reader.stream, b"", 0, False
            while not eof and left > 0:
                piece = stream.read(_CHUNK)
                eof = not piece
                buf = buf + piece if buf else piece
                pos = 0
                while True:
                    new, n, bad = b.add_framed(buf, pos, base, min(limit - pending, left), path)
                    if on_bytes is not None and new > pos:
                        on_bytes(new - pos)
                    pos, pending, left = new, pending + n, left - n
                    if left <= 0:
                        break
                    if pending >= limit:
                        yield
                        pending = 0
                        continue
                    if bad or (eof and pos < len(buf)):
                        _raise_damage(path, buf[pos:], base + pos)
                    break
                base += pos
                buf = buf[pos:]
    if pending or not b.rows:
        yield


def _raise_damage(path: str, tail: bytes, offset: int):
    """Raise the pure reader's error for damaged bytes at stream ``offset`` (one wording)."""
    import io

    from tfhadoop.connectors.tfrecord import ReadStats, _records

    for _ in _records(io.BytesIO(tail), path, offset, ReadStats(), True, False, True, 1 << 20):
        pass
    raise RuntimeError(f"{path}: the native framer stopped at offset {offset} but the reference reader found no damage")


def _chunked(paths, compression, b: _Batches, batch_rows: int, on_bytes, max_rows=None):
    """The pure reader's twin of :func:`_framed`, with the same yields: records framed in Python
    are handed to ``b`` in chunks of ``batch_rows``; a decode error names the record's file and
    offset."""
    chunk, origins, pending = [], [], 0

    def flush():
        nonlocal pending
        base = b.rows
        try:
            b.add(chunk)
        except ValueError as exc:
            raise _locate(exc, lambda rec: origins[rec - base]) from None
        if on_bytes is not None:
            on_bytes(sum(len(r) for r in chunk) + 16 * len(chunk))
        pending += len(chunk)
        chunk.clear()
        origins.clear()

    for path, offset, data in _with_offsets(paths, compression):
        if max_rows is not None and b.rows + len(chunk) >= max_rows:
            break
        chunk.append(data)
        origins.append((path, offset))
        if len(chunk) >= batch_rows:
            flush()
            if b.keep:
                yield
                pending = 0
    flush()
    if pending or not b.rows:
        yield


def _fill(b: _Batches, paths, compression, batch_rows: int, on_bytes, max_rows=None):
    """Records into ``b``, yielding whenever it holds a batch: native framing when built."""
    if b.mod is not None:
        return _framed(paths, compression, b, batch_rows, on_bytes, max_rows)
    return _chunked(paths, compression, b, batch_rows, on_bytes, max_rows)


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


def write_table(data, path: str, record_type: str = "Example", compression: str | None = None) -> int:
    """Write a Table/RecordBatch to one TFRecord file (one record per row); returns the row count."""
    from tfhadoop.connectors.tfrecord import write_records

    return write_records(path, table_to_examples(data, record_type), compression)


# ------------------------------------------------------------------ pure-Python reference path


def _pure_decode(records, record_type, base):
    decode = _ex.decode_sequence_example if record_type == "SequenceExample" else _ex.decode_example
    out = []
    for i, r in enumerate(records):
        try:
            out.append(decode(r, True))
        except _ex.ExampleDecodeError as exc:
            detail = str(exc).split(": ", 1)[-1]
            raise _decode_error(f"record {base + i} is not a serialized {record_type}: {detail}", base + i, True) from None
    return out


def _is_list(t) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


_RANGES = {"int8": 7, "int16": 15, "int32": 31, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 63, "bool": 1}


class _FieldRule:
    """What the schema allows for one field, checked exactly like the native decoder does."""

    def __init__(self, field: pa.Field, seq: bool):
        self.name, self.seq, self.nullable, self.type_name = field.name, seq, field.nullable, str(field.type)
        t = field.type.value_type if seq else field.type
        self.size = t.list_size if pa.types.is_fixed_size_list(t) else None
        self.scalar = not _is_list(t)
        leaf = _leaf(t)
        self.leaf_name = str(leaf)
        self.kind = arrow_kind(leaf)
        # decoding narrows nothing: no float16, and decimals or fixed-size binaries are written only
        if self.kind is None or pa.types.is_float16(leaf) or pa.types.is_decimal(leaf) or pa.types.is_fixed_size_binary(leaf):
            raise TypeError(f"column {field.name!r} of type {field.type} cannot be decoded from tf.train.Feature values")
        self.utf8 = pa.types.is_string(leaf) or pa.types.is_large_string(leaf)
        bits = _RANGES.get(self.leaf_name)
        self.range = None
        if bits is not None:
            signed = self.leaf_name.startswith("int")
            self.range = (-(1 << bits), (1 << bits) - 1) if signed else (0, (1 << bits) - 1)
            if self.leaf_name == "uint64":
                self.range = (0, (1 << 63) - 1)

    def check(self, kind, values, rec, step=None, strict=False):
        name = self.name
        if kind is not None and kind != self.kind:
            raise _decode_error(f"feature '{name}' in record {rec} holds {kind} values but the schema says {self.type_name}", rec, False)
        n = len(values)
        want = 1 if self.scalar and not self.seq else self.size
        if want is not None and n != want and not (n == 0 and self.scalar and self.nullable and step is None and not strict):
            at = f"step {step} of record {rec}" if step is not None else f"record {rec}"
            says = "one" if self.scalar and not self.seq else str(want)
            raise _decode_error(f"feature '{name}' has {n} values in {at} where the schema says {says}", rec, False)
        if self.range is not None:
            lo, hi = self.range
            for v in values:
                if v < lo or v > hi:
                    raise _decode_error(f"feature '{name}' value {v} in record {rec} does not fit {self.leaf_name}", rec, False)
        if self.utf8:
            for v in values:
                try:
                    v.decode("utf-8")
                except UnicodeDecodeError:
                    raise _decode_error(f"feature '{name}' value in record {rec} is not UTF-8 (the schema says {self.leaf_name})",
                                        rec, False) from None


def _rules(schema, record_type):
    seq = record_type == "SequenceExample"
    return [_FieldRule(f, seq and is_feature_list(f)) for f in schema]


def _pure_check(decoded, schema, record_type, base, strict=False):
    """Row by row, field by field: the first problem wins, as in the native decoder. ``strict``:
    a feature the schema does not name, or an empty list under a scalar, is an error too."""
    rules = _rules(schema, record_type)
    seq = record_type == "SequenceExample"
    known = ({r.name for r in rules if not r.seq}, {r.name for r in rules if r.seq})
    for i, row in enumerate(decoded):
        rec = base + i
        context, lists = row if seq else (row, {})
        if strict:
            for what, names, have in (("feature", context, known[0]), ("feature list", lists, known[1])):
                for name in names:
                    if name not in have:
                        raise _decode_error(f"{what} '{name}' in record {rec} is not in the schema", rec, False)
        for rule in rules:
            got = (lists if rule.seq else context).get(rule.name)
            if got is None:
                if not rule.nullable:
                    raise _decode_error(f"feature '{rule.name}' is missing from record {rec} but the schema says not null", rec, False)
            elif rule.seq:
                for s, (kind, values) in enumerate(got):
                    rule.check(kind, values, rec, s, strict)
            else:
                rule.check(got[0], got[1], rec, None, strict)


def _pure_batch(decoded, schema, record_type) -> pa.RecordBatch:
    seq = record_type == "SequenceExample"
    rules = _rules(schema, record_type)
    arrays = []
    for field, rule in zip(schema, rules):
        leaf = _leaf(field.type)
        conv = (lambda v: v.decode("utf-8")) if rule.utf8 else bool if pa.types.is_boolean(leaf) else None
        cells = []
        for row in decoded:
            context, lists = row if seq else (row, {})
            got = (lists if rule.seq else context).get(rule.name)
            if got is None:
                cells.append(None)
            elif rule.seq:
                cells.append([[conv(v) for v in s[1]] if conv else list(s[1]) for s in got])
            else:
                values = [conv(v) for v in got[1]] if conv else list(got[1])
                cells.append((values[0] if values else None) if rule.scalar else values)
        arrays.append(pa.array(cells, type=field.type))
    if not arrays:  # no columns: still one row per record, like the native path
        return pa.RecordBatch.from_struct_array(pa.array([{}] * len(decoded), pa.struct([])))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _python_cells(column: pa.ChunkedArray | pa.Array, name: str):
    t = column.type
    base = t
    while _is_list(base):
        base = base.value_type
    if pa.types.is_dictionary(base):
        column, base = column.cast(base.value_type), base.value_type
    kind = arrow_kind(base)
    if kind is None:
        raise TypeError(f"column {name!r} of type {t} has no tf.train.Feature equivalent (int, float, bool, string, binary and lists of them)")
    cells = column.to_pylist()
    if pa.types.is_decimal(base):
        cells = _map_leaves(cells, float)
    return kind, cells


def _map_leaves(cells, fn):
    return [None if c is None else _map_leaves(c, fn) if isinstance(c, list) else fn(c) for c in cells]


def table_to_examples(data, record_type: str = "Example", deterministic: bool = False, native=None):
    """Yield a serialized record per row of a Table/RecordBatch. Null cells leave the feature out;
    scalars become one-value lists; a null inside a list is an error (a Feature cannot hold it).
    For SequenceExample, list-of-list columns become feature lists, the others context features.
    ``deterministic`` writes features sorted by name (protobuf's deterministic serialization)."""
    for records in _encoded_batches(data, record_type, deterministic, native, framed=False):
        yield from records


def table_to_framed(data, record_type: str = "Example", deterministic: bool = False, native=None):
    """Yield ``(framed, starts)`` per batch of rows: the records of ``table_to_examples`` already
    framed as TFRecords in one buffer, and each record's offset in it, for
    ``TFRecordWriter.write_framed`` (framing record by record in Python costs more than encoding)."""
    yield from _encoded_batches(data, record_type, deterministic, native, framed=True)


def _encoded_batches(data, record_type: str, deterministic: bool, native, framed: bool):
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    seq = record_type == "SequenceExample"
    for field in data.schema:
        if _is_list(field.type) and _is_list(field.type.value_type) and not seq:
            raise TypeError(f"column {field.name!r} ({field.type}) is a list of lists: write it as SequenceExample")
    mod = _use_native(native)
    for batch in data.to_batches(max_chunksize=8192):
        if mod is None:
            records = list(_pure_encode(batch, seq, deterministic))
            yield frame_records(records) if framed else records
            continue
        batch = _encodable(batch)
        names = batch.schema.names
        order = sorted(range(len(names)), key=lambda i: names[i].encode("utf-8")) if deterministic else list(range(len(names)))
        fl = [seq and _is_list(f.type) and _is_list(f.type.value_type) for f in batch.schema]
        s, a = batch.__arrow_c_array__()
        try:
            if not framed:
                yield mod.encode(s, a, fl, order, seq)
                continue
            buf, starts = mod.encode(s, a, fl, order, seq, True)
        except TypeError as exc:
            raise TypeError(f"{exc} (int, float, bool, string, binary and lists of them)") from None
        offsets = array.array("Q")
        offsets.frombytes(starts)
        if sys.byteorder == "big":  # the native side writes them little-endian
            offsets.byteswap()
        yield buf, offsets


def _encodable(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Dictionary, decimal, float16 and view leaves cast to what the native encoder reads."""
    def plain(t):
        if _is_list(t):
            inner = plain(t.value_type)
            if inner == t.value_type:
                return t
            if pa.types.is_fixed_size_list(t):
                return pa.list_(inner, t.list_size)
            return pa.large_list(inner) if pa.types.is_large_list(t) else pa.list_(inner)
        if pa.types.is_dictionary(t):
            return plain(t.value_type)
        if pa.types.is_decimal(t):
            return pa.float64()
        if pa.types.is_float16(t):
            return pa.float32()
        if t == pa.string_view():
            return pa.string()
        if t == pa.binary_view():
            return pa.binary()
        return t

    cols, changed = [], False
    for field, col in zip(batch.schema, batch.columns):
        t = plain(field.type)
        if t != field.type:
            col, changed = col.cast(t), True
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names) if changed else batch


def _pure_encode(batch: pa.RecordBatch, seq: bool, deterministic: bool):
    columns = []
    for field, col in zip(batch.schema, batch.columns):
        kind, cells = _python_cells(col, field.name)
        nested = _is_list(field.type) and _is_list(field.type.value_type)
        columns.append((field.name, kind, cells, _is_list(field.type), nested))
    for i in range(batch.num_rows):
        context, lists = {}, {}
        for name, kind, cells, is_list, nested in columns:
            v = cells[i]
            if v is None:
                continue
            if nested:
                if any(s is None or None in s for s in v):
                    raise ValueError(f"column '{name}' row {i} holds a null inside a list: a tf.train.Feature cannot hold it")
                lists[name] = [(kind, s) for s in v]
            else:
                if is_list and None in v:
                    raise ValueError(f"column '{name}' row {i} holds a null inside a list: a tf.train.Feature cannot hold it")
                context[name] = (kind, v if is_list else [v])
        if seq:
            yield _ex.encode_sequence_example(context, lists, deterministic=deterministic)
        else:
            yield _ex.encode_example(context, deterministic=deterministic)
