"""The pure-Python Arrow codec: the reference the native one (``_tfarrow``) is tested against,
and the fallback when it is not built. It applies the same rules with a schema, and words and
orders its errors the same way (record order, then field order; see :mod:`.arrow_codec`)."""
from __future__ import annotations

import pyarrow as pa

from tfhadoop.connectors import example as _ex
from tfhadoop.connectors.arrow_schema import _decode_error
from tfhadoop.connectors.dataset import _is_list, _leaf, arrow_kind, is_feature_list


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
