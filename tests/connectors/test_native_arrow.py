"""The native Example <-> Arrow codec (connectors/native/tfarrow) against the pure-Python
reference path and TensorFlow's own parser: property tests, error parity, round trips, fuzz."""
from __future__ import annotations

import os
import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tfhadoop.connectors import arrow as ar
from tfhadoop.connectors import arrow_codec, dataset
from tfhadoop.connectors import example_proto as pb
from tfhadoop.connectors.dataset import _leaf
from tfhadoop.connectors.example import ExampleDecodeError, encode_example, encode_sequence_example

native = pytest.importorskip("tfhadoop.connectors._tfarrow")

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType] - iterating HealthCheck yields its (non-deprecated) members; the checker types them as its metaclass

_int = st.integers(-(1 << 63), (1 << 63) - 1)
_float = st.floats(width=32, allow_nan=False)
_bytes = st.binary(max_size=8)
_text = st.text(max_size=5).map(lambda s: s.encode())
_LEAF = {"int64": (_int, pa.int64()), "float": (_float, pa.float32()), "bytes": (_bytes, pa.binary()), "str": (_text, pa.string())}


@st.composite
def example_sets(draw):
    """(schema, records): a random spec and Examples that fit it (missing only where nullable)."""
    names = draw(st.lists(st.text("abcdefgh_", min_size=1, max_size=6), min_size=1, max_size=6, unique=True))
    cols = []
    for name in names:
        leaf = draw(st.sampled_from(sorted(_LEAF)))
        shape = draw(st.sampled_from(["scalar", "fixed", "var"]))
        size = draw(st.integers(2, 3)) if shape == "fixed" else None
        nullable = draw(st.booleans()) or shape == "var"
        cols.append((name, leaf, shape, size, nullable))
    n = draw(st.integers(1, 12))
    records, fields = [], []
    for name, leaf, shape, size, nullable in cols:
        t = _LEAF[leaf][1]
        t = t if shape == "scalar" else pa.list_(t, size) if shape == "fixed" else pa.list_(t)
        fields.append(pa.field(name, t, nullable=nullable))
    for _ in range(n):
        feats = {}
        for name, leaf, shape, size, nullable in cols:
            if nullable and draw(st.integers(0, 3)) == 0:
                continue
            count = 1 if shape == "scalar" else size if shape == "fixed" else draw(st.integers(0, 4))
            kind = {"int64": "int64", "float": "float", "bytes": "bytes", "str": "bytes"}[leaf]
            feats[name] = (kind, draw(st.lists(_LEAF[leaf][0], min_size=count, max_size=count)))
        records.append(encode_example(feats))
    return pa.schema(fields), records


@SETTINGS
@given(example_sets())
def test_native_equals_pure_with_schema_and_inferred(case):
    schema, records = case
    nat = ar.examples_to_table(records, schema)
    pure = ar.examples_to_table(records, schema, native=False)
    assert nat.equals(pure), (nat, pure)
    assert ar.examples_to_table(records).equals(ar.examples_to_table(records, native=False))
    assert ar.infer_schema(records) == ar.infer_schema(records, native=False)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType] - iterating HealthCheck yields its (non-deprecated) members; the checker types them as its metaclass
@given(example_sets())
def test_native_equals_tensorflow_parse_example(case):
    import tensorflow as tf

    schema, records = case
    table = ar.examples_to_table(records, schema)
    features = dataset.tf_parse_spec(dataset.parse_spec(schema))
    assert isinstance(features, dict)  # Examples: one dict, not a (context, sequence) pair
    parsed = tf.io.parse_example(tf.constant(records), features)
    for field in schema:
        got = table.column(field.name).to_pylist()
        t = parsed[field.name]
        if isinstance(t, tf.SparseTensor):
            rows = tf.RaggedTensor.from_sparse(t).to_list()
            ours = [[] if v is None else (v if isinstance(v, list) else [v]) for v in got]
        else:
            rows = t.numpy().tolist()
            ours = got
        enc = [[x.encode() if isinstance(x, str) else x for x in r] if isinstance(r, list) else (r.encode() if isinstance(r, str) else r) for r in ours]
        if pa.types.is_floating(_leaf(field.type)):
            assert np.allclose(np.array(rows, dtype=object).astype(float) if rows and not isinstance(rows[0], list) else 0,
                               np.array(enc, dtype=object).astype(float) if enc and not isinstance(enc[0], list) else 0)
            assert [np.float32(x).tolist() for r in rows for x in (r if isinstance(r, list) else [r])] == \
                   [np.float32(x).tolist() for r in enc for x in (r if isinstance(r, list) else [r])]
        else:
            assert rows == enc, field.name


@st.composite
def sequence_sets(draw):
    n = draw(st.integers(1, 6))
    kinds = {"clicks": ("int64", _int), "scores": ("float", _float), "words": ("bytes", _bytes)}
    recs = []
    for _ in range(n):
        ctx = {"user": ("bytes", draw(st.lists(_bytes, min_size=1, max_size=1)))}
        lists = {}
        for name, (kind, strat) in kinds.items():
            if draw(st.booleans()):
                steps = draw(st.lists(st.lists(strat, max_size=3), max_size=3))
                lists[name] = [(kind, s) for s in steps]
        recs.append(encode_sequence_example(ctx, lists))
    return recs


@SETTINGS
@given(sequence_sets())
def test_sequence_examples_native_equals_pure(records):
    nat = ar.examples_to_table(records, record_type="SequenceExample")
    pure = ar.examples_to_table(records, record_type="SequenceExample", native=False)
    assert nat.equals(pure)
    assert nat.schema.equals(pure.schema, check_metadata=True)
    explicit = ar.examples_to_table(records, nat.schema, record_type="SequenceExample")
    assert explicit.equals(nat)


def test_sequence_examples_against_tensorflow():
    import tensorflow as tf

    recs = [encode_sequence_example({"user": [b"u%d" % i]}, {"clicks": [[1, i], [2, i]], "words": [[b"a"] * i, [b"b"]]}) for i in range(4)]
    t = ar.examples_to_table(recs, record_type="SequenceExample")
    ctx_spec, seq_spec = dataset.tf_parse_spec(dataset.parse_spec(t.schema, "SequenceExample"))
    for rec, row in zip(recs, t.to_pylist()):
        ctx, seq = tf.io.parse_single_sequence_example(rec, ctx_spec, seq_spec)
        assert ctx["user"].numpy().decode() == row["user"]
        assert seq["clicks"].numpy().tolist() == row["clicks"]
        assert [[w.decode() for w in s] for s in seq["words"].to_list()] == row["words"]


_ARROW_TYPES = [pa.int64(), pa.int32(), pa.uint8(), pa.bool_(), pa.float32(), pa.float64(), pa.binary(), pa.string(), pa.large_string()]


@st.composite
def tables(draw):
    n = draw(st.integers(0, 10))
    cols = {}
    for i in range(draw(st.integers(1, 5))):
        leaf = draw(st.sampled_from(_ARROW_TYPES))
        shape = draw(st.sampled_from(["scalar", "list", "fixed", "large_list"]))
        if pa.types.is_integer(leaf):
            bits = leaf.bit_width if leaf != pa.uint8() else 8
            strat = st.integers(0, 255) if leaf == pa.uint8() else st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        elif pa.types.is_boolean(leaf):
            strat = st.booleans()
        elif pa.types.is_floating(leaf):
            strat = _float
        elif pa.types.is_binary(leaf):
            strat = _bytes
        else:
            strat = st.text(max_size=4)
        cell = strat if shape == "scalar" else st.lists(strat, min_size=2, max_size=2) if shape == "fixed" else st.lists(strat, max_size=3)
        values = draw(st.lists(st.one_of(st.none(), cell), min_size=n, max_size=n))
        t = leaf if shape == "scalar" else pa.list_(leaf, 2) if shape == "fixed" else pa.large_list(leaf) if shape == "large_list" else pa.list_(leaf)
        cols[f"c{i}"] = pa.array(values, t)
    return pa.table(cols)


@SETTINGS
@given(tables())
def test_arrow_example_arrow_round_trip_and_bytes_equal_pure(table):
    nat = list(ar.table_to_examples(table, deterministic=True))
    pure = list(ar.table_to_examples(table, deterministic=True, native=False))
    assert nat == pure
    assert ar.examples_to_table(nat, table.schema).equals(table.combine_chunks())


@SETTINGS
@given(tables(), st.integers(1, 300))
@example(pa.table({"c": pa.array(range(100), pa.int64())}), 16 + 14)  # every record starts on an index step
@example(pa.table({"c": pa.array(range(100), pa.int64())}), 2 * (16 + 14))
def test_framed_batches_write_the_same_file_and_index_as_record_by_record(table, interval):
    """from-parquet writes whole batches the native encoder framed: byte for byte what writing each
    record does, with the same boundary-index entries, native and pure."""
    import tempfile

    from tfhadoop.connectors.splits import sidecar_path
    from tfhadoop.connectors.tfrecord_writer import TFRecordWriter

    with tempfile.TemporaryDirectory() as d:
        for native_ in (None, False):
            files = []
            for framed in (False, True):
                path = os.path.join(d, f"{native_}-{framed}.tfrecord")
                with TFRecordWriter(path, index_interval=interval) as w:
                    w.write(b"a record before the batches")
                    if framed:
                        for buf, starts in ar.table_to_framed(table, native=native_):
                            w.write_framed(buf, starts)
                    else:
                        w.write_all(ar.table_to_examples(table, native=native_))
                    w.write(b"and one after")
                files.append((open(path, "rb").read(), open(sidecar_path(path), "rb").read()))
            assert files[1] == files[0]


def test_sequence_round_trip_bytes_equal_pure():
    t = pa.table({"u": pa.array([b"a", None, b"c"]), "s": pa.array([[[1, 2], []], None, [[3]]], pa.list_(pa.list_(pa.int64())))})
    nat = list(ar.table_to_examples(t, "SequenceExample", deterministic=True))
    assert nat == list(ar.table_to_examples(t, "SequenceExample", deterministic=True, native=False))
    assert ar.examples_to_table(nat, t.schema, "SequenceExample").equals(t)


def _both_raise(records, schema=None, record_type="Example"):
    errs = []
    for native_flag in (None, False):
        with pytest.raises(ValueError) as info:
            ar.examples_to_table(records, schema, record_type, native=native_flag)
        errs.append(info.value)
    assert type(errs[0]) is type(errs[1])
    return [str(e) for e in errs]


@pytest.mark.parametrize("schema, feats, message", [
    (pa.schema([pa.field("x", pa.int64(), nullable=False)]), {"y": [1]},
     "feature 'x' is missing from record 1 but the schema says not null"),
    (pa.schema([pa.field("x", pa.int64())]), {"x": [1.0]}, "feature 'x' in record 1 holds float values but the schema says int64"),
    (pa.schema([pa.field("x", pa.list_(pa.float32()))]), {"x": [1]},
     "feature 'x' in record 1 holds int64 values but the schema says list<item: float>"),
    (pa.schema([pa.field("x", pa.float64())]), {"x": [b"1"]}, "feature 'x' in record 1 holds bytes values but the schema says double"),
    (pa.schema([pa.field("x", pa.int32())]), {"x": [1 << 40]}, f"feature 'x' value {1 << 40} in record 1 does not fit int32"),
    (pa.schema([pa.field("x", pa.uint8())]), {"x": [-1]}, "feature 'x' value -1 in record 1 does not fit uint8"),
    (pa.schema([pa.field("x", pa.bool_())]), {"x": [2]}, "feature 'x' value 2 in record 1 does not fit bool"),
    (pa.schema([pa.field("x", pa.string())]), {"x": [b"\xff"]}, "feature 'x' value in record 1 is not UTF-8 (the schema says string)"),
    (pa.schema([pa.field("x", pa.list_(pa.int64(), 2))]), {"x": [1, 2, 3]},
     "feature 'x' has 3 values in record 1 where the schema says 2"),
])
def test_schema_errors_same_in_both_paths(schema, feats, message):
    good = encode_example({"x": (("float" if "float" in str(schema) or "double" in str(schema) else
                                 "bytes" if "string" in str(schema) else "int64"),
                                [1.0] if ("float" in str(schema) or "double" in str(schema)) else [b"a"] if "string" in str(schema) else [1] * (2 if "[2]" in str(schema) else 1))})
    nat, pure = _both_raise([good, encode_example(feats)], schema)
    assert nat == pure == message


def test_first_error_wins_in_record_then_field_order():
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.int32())])
    recs = [encode_example({"a": [1], "b": [5]}), encode_example({"a": [1], "b": [1 << 33]}), encode_example({"b": [1]})]
    nat, pure = _both_raise(recs, schema)
    assert nat == pure and "record 1" in nat


def test_kind_conflict_when_inferring():
    nat, pure = _both_raise([encode_example({"x": [1]}), encode_example({"x": [1.5]})])
    assert nat == pure == "feature 'x' (record 1): feature holds both int64 and float values"


def test_errors_name_file_and_offset(tmp_path):
    from tfhadoop.connectors.tfrecord_writer import write_records

    path = str(tmp_path / "part-0.tfrecord")
    recs = [encode_example({"x": [1]}), encode_example({"x": [2]}), encode_example({"x": [0.5]})]
    write_records(path, recs)
    offset = sum(len(r) + 16 for r in recs[:2])
    schema = pa.schema([pa.field("x", pa.int64())])
    for flag in (None, False):
        with pytest.raises(ValueError, match=f"^{path}: record at offset {offset}: feature 'x' in record 2 holds float"):
            ar.read_table(path, schema, native=flag)
        with pytest.raises(ValueError, match=f"^{path}: record at offset {offset}: "):
            list(ar.iter_record_batches(path, schema, batch_rows=2, native=flag))
    write_records(path, recs[:2] + [b"\x0a\x05\x0a"])
    with pytest.raises(ExampleDecodeError, match=f"^{path}: record at offset {offset}: record 2 is not a serialized Example"):
        ar.read_table(path)


def _mutate(rng, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        if op < 0.4 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op < 0.7 and b:
            del b[rng.randrange(len(b)):]
        else:
            b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
    return bytes(b)


def test_corrupt_and_truncated_records_same_errors_as_pure_path():
    rng = random.Random(7)
    base = [encode_example({"a": [1, 2, 300], "b": [0.5], "c": [b"xy", b""]}), encode_example({"a": [7], "c": []})]
    schema = pa.schema([pa.field("a", pa.list_(pa.int64())), pa.field("b", pa.list_(pa.float32())), pa.field("c", pa.list_(pa.binary()))])
    outcomes = {"ok": 0, "error": 0}
    for _ in range(1500):
        recs = [base[0], _mutate(rng, rng.choice(base))]
        results = []
        for flag in (None, False):
            try:
                results.append(("ok", ar.examples_to_table(recs, schema, native=flag)))
            except ValueError as exc:
                results.append((type(exc).__name__, str(exc).split(": ", 1)[0] if isinstance(exc, ExampleDecodeError) else str(exc)))
        (k1, v1), (k2, v2) = results
        assert k1 == k2, (recs[1].hex(), results)
        if k1 == "ok":
            assert v1.equals(v2)
            outcomes["ok"] += 1
        else:
            assert v1 == v2
            outcomes["error"] += 1
    assert outcomes["ok"] > 50 and outcomes["error"] > 50


def test_fuzz_random_bytes_native_agrees_with_upb():
    """A CI-sized fuzz (the 1M run is tools/fuzz-tfarrow): no crash, same accept/reject as upb."""
    rng = random.Random(11)
    seeds = [encode_example({"a": [1, -2], "b": [0.5], "c": [b"x"]}),
             encode_sequence_example({"u": [b"q"]}, {"s": [[1], [2, 3]], "t": [[b"a"], []]})]
    for i in range(20000):
        data = os.urandom(rng.randint(0, 40)) if i % 3 == 0 else _mutate(rng, rng.choice(seeds))
        for seq, cls in ((False, pb.Example), (True, pb.SequenceExample)):
            mine = native.check(data, seq)
            try:
                cls.FromString(data)
                ref = None
            except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError
                ref = exc
            assert (mine is None) == (ref is None), (data.hex(), mine, ref)


def test_encode_rejects_nulls_inside_lists_and_odd_types():
    t = pa.table({"x": pa.array([[1, None]], pa.list_(pa.int64()))})
    for flag in (None, False):
        with pytest.raises(ValueError, match="column 'x' row 0 holds a null inside a list"):
            list(ar.table_to_examples(t, native=flag))
        with pytest.raises(TypeError, match="struct_col"):
            list(ar.table_to_examples(pa.table({"struct_col": [{"a": 1}]}), native=flag))


def test_sliced_batches_and_dictionary_columns_encode():
    t = pa.table({"d": pa.array(["a", "b", "a", None]).dictionary_encode(), "i": [1, 2, 3, 4]})
    sliced = t.slice(1, 3)
    nat = list(ar.table_to_examples(sliced, deterministic=True))
    assert nat == list(ar.table_to_examples(sliced, deterministic=True, native=False))
    back = ar.examples_to_table(nat, pa.schema([pa.field("d", pa.string()), pa.field("i", pa.int64())]))
    assert back.to_pydict() == {"d": ["b", "a", None], "i": [2, 3, 4]}


def test_cli_to_parquet_and_back(tmp_path, capsys):
    import pyarrow.parquet as pq

    from tfhadoop.cli import main
    from tfhadoop.connectors.tfrecord import read_records
    from tfhadoop.connectors.tfrecord_writer import write_records

    recs = [encode_example({"id": [i], "v": [i * 0.5, 1.0], "tag": [b"t%d" % i]}) for i in range(1000)]
    for k in range(3):
        write_records(str(tmp_path / f"part-{k}.tfrecord.gz"), recs[k::3])
    out = str(tmp_path / "all.parquet")
    assert main(["records", "to-parquet", str(tmp_path), "-o", out, "--batch-rows", "100"]) == 0
    table = pq.read_table(out)
    assert table.num_rows == 1000 and pq.ParquetFile(out).metadata.num_row_groups == 1  # batches gathered up to --row-group-mb
    assert sorted(table.column("id").to_pylist()) == list(range(1000))
    assert table.schema.field("v").type.list_size == 2 and _leaf(table.schema.field("v").type) == pa.float32()
    back = str(tmp_path / "back.tfrecord.zz")
    assert main(["records", "from-parquet", out, "-o", back]) == 0
    again = ar.examples_to_table(list(read_records(back)), table.schema)
    assert again.equals(table)
    plain = str(tmp_path / "back.tfrecord")  # uncompressed: written with its record-boundary index
    assert main(["records", "from-parquet", out, "-o", plain]) == 0
    assert os.path.exists(tmp_path / ".back.tfrecord.tfrindex")
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]
    capsys.readouterr()
    write_records(str(tmp_path / "part-1.tfrecord.gz"), [encode_example({"id": [0.5]})])
    assert main(["records", "to-parquet", str(tmp_path / "part-*.tfrecord.gz"), "-o", str(tmp_path / "bad.parquet")]) != 0
    err = capsys.readouterr().err
    assert "part-1.tfrecord.gz: record at offset 0:" in err and "feature 'id'" in err
    assert not os.path.exists(tmp_path / "bad.parquet")


def test_fallback_to_pure_path_warns_once(monkeypatch):
    import sys
    import warnings

    import tfhadoop.connectors as pkg

    monkeypatch.setitem(sys.modules, "tfhadoop.connectors._tfarrow", None)  # import fails
    monkeypatch.delattr(pkg, "_tfarrow", raising=False)
    monkeypatch.setattr(arrow_codec, "_NATIVE", None)
    recs = [encode_example({"x": [1]})]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ar.examples_to_table(recs).column("x").to_pylist() == [1]
        assert ar.examples_to_table(recs).column("x").to_pylist() == [1]
    assert len([w for w in caught if "native Arrow codec" in str(w.message)]) == 1
    with pytest.raises(RuntimeError, match="make native"):
        ar.examples_to_table(recs, native=True)
