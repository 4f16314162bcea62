"""Arrow tables -> serialized tf.train.Example / SequenceExample records, framed TFRecord
buffers or a TFRecord file: natively (``_tfarrow``) or through the pure path (:mod:`.arrow_pure`)."""
from __future__ import annotations

import array
import sys

import pyarrow as pa

from tfhadoop.connectors.arrow_codec import _use_native
from tfhadoop.connectors.arrow_pure import _pure_encode
from tfhadoop.connectors.dataset import _is_list
from tfhadoop.connectors.tfrecord_writer import frame_records


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


def write_table(data, path: str, record_type: str = "Example", compression: str | None = None) -> int:
    """Write a Table/RecordBatch to one TFRecord file (one record per row); returns the row count."""
    from tfhadoop.connectors.tfrecord_writer import write_records

    return write_records(path, table_to_examples(data, record_type), compression)


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
