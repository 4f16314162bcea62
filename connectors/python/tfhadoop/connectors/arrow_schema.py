"""What Arrow schema serialized tf.train.Example / SequenceExample records infer to, and how a
record that does not fit is reported: the rules both codecs (:mod:`.arrow_codec`) share.

Schema inference looks at every decoded record, not just the first: a feature's Arrow type is
``int64`` / ``float32`` / ``binary`` (``string`` when every value is UTF-8 and
``bytes_as="auto"``), a scalar when every record holds exactly one value, a fixed-size list when
every record holds the same number (other than 1), a list otherwise; a feature missing from some
record is nullable. A feature that is only ever empty and untyped becomes ``list<binary>``.
SequenceExample feature lists become ``list<list<T>>`` (``list<fixed_size_list<T, n>>`` when
every step has n values), their context features follow the Example rules.

Which Arrow type holds which feature kind, and the parse spec of a schema, are the dataset's
rules (:mod:`tfhadoop.connectors.dataset`).
"""
from __future__ import annotations

import pyarrow as pa

from tfhadoop.connectors import example as _ex
from tfhadoop.connectors.dataset import BYTES, arrow_type


class SchemaDrift(ValueError):
    """A record after the sample does not fit the schema inferred from the sample
    (``infer="sample"``): the schema must be inferred from all records instead."""

    record: int | None = None  # the index of that record, when known


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


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in schema], metadata=schema.metadata)
