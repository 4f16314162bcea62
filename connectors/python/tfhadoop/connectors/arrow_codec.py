"""Serialized records -> Arrow record batches in memory, natively or through the pure path.

Decoding and encoding run in Rust (``_tfarrow``, connectors/native/tfarrow) and reach pyarrow
through the Arrow C data interface; ``native=False`` takes the pure-Python path
(:mod:`.arrow_pure`), which the tests use as the reference (and which is the fallback, with a
warning, when the library is not built). Both apply the same rules with a schema: no kind
conversion, no lossy narrowing, UTF-8 checked, missing non-nullable features rejected; the first
problem (record order, then field order) is reported, prefixed by ``PATH: record at offset N:``
when reading files. Inference (:mod:`.arrow_schema`) happens in the same pass as decoding.
"""
from __future__ import annotations

import pyarrow as pa

from tfhadoop.connectors.arrow_pure import _pure_batch, _pure_check, _pure_decode
from tfhadoop.connectors.arrow_schema import _decode_error, _infer_from, _locate, _scan
from tfhadoop.connectors.dataset import _leaf, is_feature_list


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
