"""tf.train.Example / SequenceExample without TensorFlow, checked against TensorFlow."""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfhadoop.connectors import example as ex
from tfhadoop.connectors import example_wire as wire

FEATURES = {
    "id": [7],
    "big": [-(1 << 63), (1 << 63) - 1, -1, 0, 300],
    "score": [0.1, -2.5, float("inf"), 1e-30],
    "name": [b"caf\xc3\xa9", b"", b"\x00\xff"],
    "empty_int": ("int64", []),
    "empty_float": ("float", []),
    "empty_bytes": ("bytes", []),
    "unset": [],
    "n\u00e4me with space": [b"x"],
}


def _f32(values):
    return [struct.unpack("<f", struct.pack("<f", v))[0] for v in values]


def _tf_example(features):
    import tensorflow as tf

    m = tf.train.Example()
    m.features.SetInParent()
    for name, values in features.items():
        kind, vals = values if isinstance(values, tuple) else (None, values)
        f = m.features.feature[name]
        if kind == "int64" or (kind is None and vals and isinstance(vals[0], int)):
            f.int64_list.value.extend(vals)
            f.int64_list.SetInParent()
        elif kind == "float" or (kind is None and vals and isinstance(vals[0], float)):
            f.float_list.value.extend(vals)
            f.float_list.SetInParent()
        elif kind == "bytes" or (kind is None and vals):
            f.bytes_list.value.extend(vals)
            f.bytes_list.SetInParent()
    return m


def _expected(features):
    out = {}
    for name, values in features.items():
        vals = values[1] if isinstance(values, tuple) else values
        out[name] = _f32(vals) if vals and isinstance(vals[0], float) else list(vals)
    return out


def test_bytes_identical_to_tensorflow():
    m = _tf_example(FEATURES)
    assert ex.encode_example(FEATURES) == m.SerializeToString()
    assert ex.encode_example(FEATURES, deterministic=True) == m.SerializeToString(deterministic=True)
    # The hand codec orders entries by name; TensorFlow parses it to the same message.
    import tensorflow as tf

    assert tf.train.Example.FromString(wire.encode_example(FEATURES)) == m
    for name, values in FEATURES.items():  # one feature: no ordering question, bytes must match
        one = _tf_example({name: values}).SerializeToString()
        assert wire.encode_example({name: values}) == one == ex.encode_example({name: values})


@pytest.mark.parametrize("codec", [ex, wire])
def test_decodes_tensorflow_bytes(codec):
    data = _tf_example(FEATURES).SerializeToString()
    assert codec.decode_example(data) == _expected(FEATURES)
    typed = codec.decode_example(data, typed=True)
    assert typed["empty_float"] == ("float", []) and typed["unset"] == (None, [])
    assert typed["big"] == ("int64", FEATURES["big"])


def test_tensorflow_parses_what_we_encode():
    import tensorflow as tf

    data = ex.encode_example({"id": np.array([3, 4]), "score": np.float32(0.5), "name": "héllo", "v": [1.0, 2.0, 3.0]})
    spec = {
        "id": tf.io.FixedLenFeature([2], tf.int64),
        "score": tf.io.FixedLenFeature([], tf.float32),
        "name": tf.io.FixedLenFeature([], tf.string),
        "v": tf.io.VarLenFeature(tf.float32),
    }
    got = tf.io.parse_single_example(data, spec)
    assert got["id"].numpy().tolist() == [3, 4]
    assert got["score"].numpy() == np.float32(0.5)
    assert got["name"].numpy().decode() == "héllo"
    assert got["v"].values.numpy().tolist() == [1.0, 2.0, 3.0]


def test_nan_and_json_mapping_match_tensorflow():
    from google.protobuf import json_format

    feats = dict(FEATURES, nan=[float("nan"), float("-inf")])
    m = _tf_example(feats)
    ours = ex.to_json_dict(m.SerializeToString())
    assert ours == json_format.MessageToDict(m)
    assert ours["features"]["feature"]["big"] == {"int64List": {"value": [str(v) for v in FEATURES["big"]]}}
    assert ours["features"]["feature"]["name"]["bytesList"]["value"][1] == ""
    assert ours["features"]["feature"]["nan"]["floatList"]["value"] == ["NaN", "-Infinity"]
    decoded = ex.decode_example(m.SerializeToString())["nan"]
    assert math.isnan(decoded[0]) and decoded[1] == float("-inf")


def test_sequence_example_both_ways():
    import tensorflow as tf
    from google.protobuf import json_format

    context = {"user": [b"u1"], "age": [33]}
    lists = {"clicks": [[1, 2], [], [3]], "dwell": [[0.5], [1.5]], "words": [[b"a", b"b"], [b"c"]]}
    data = ex.encode_sequence_example(context, lists)
    m = tf.train.SequenceExample.FromString(data)
    assert [list(f.int64_list.value) for f in m.feature_lists.feature_list["clicks"].feature] == [[1, 2], [], [3]]
    assert m.feature_lists.feature_list["clicks"].feature[1].HasField("int64_list")
    ctx, seq = tf.io.parse_single_sequence_example(
        data,
        context_features={"user": tf.io.FixedLenFeature([], tf.string), "age": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features={"clicks": tf.io.RaggedFeature(tf.int64), "dwell": tf.io.FixedLenSequenceFeature([], tf.float32)},
    )
    assert seq["clicks"].to_list() == [[1, 2], [], [3]] and ctx["age"].numpy() == 33
    assert seq["dwell"].numpy().tolist() == [0.5, 1.5]
    for codec in (ex, wire):
        c, s = codec.decode_sequence_example(m.SerializeToString())
        assert c == context and s == lists
    assert tf.train.SequenceExample.FromString(wire.encode_sequence_example(context, lists)) == m
    assert ex.to_json_dict(data, "SequenceExample") == json_format.MessageToDict(m)


def test_bad_values_and_bad_bytes():
    with pytest.raises(TypeError):
        ex.encode_example({"x": [object()]})
    with pytest.raises(TypeError):
        wire.encode_example({"x": [None]})
    for codec in (ex, wire):
        with pytest.raises(ex.ExampleDecodeError):
            codec.decode_example(b"\x0a\x05\x0a\x03")


_values = st.one_of(
    st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=5),
    st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=5),
    st.lists(st.binary(max_size=8), min_size=1, max_size=5),
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _values, max_size=6))
def test_codecs_agree(features):
    a, b = ex.encode_example(features), wire.encode_example(features)
    expected = {k: list(v) for k, v in features.items()}
    for data in (a, b):
        assert ex.decode_example(data) == expected == wire.decode_example(data)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_decodes_or_raises_cleanly(data):
    for codec in (ex, wire):
        for fn in (codec.decode_example, codec.decode_sequence_example):
            try:
                fn(data)
            except ex.ExampleDecodeError:
                pass


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_example_files_both_ways(tmp_path, compression):
    """Files, not just messages: TF writes Examples/SequenceExamples, we read them, and back."""
    import tensorflow as tf

    from tfhadoop.connectors.tfrecord import read_records
    from tfhadoop.connectors.tfrecord_writer import write_records

    rows = [{"id": [i], "w": [0.5 * i, -1.0], "s": [b"r%d" % i]} for i in range(20)]
    seqs = [({"id": [i]}, {"steps": [[i], [i, i + 1]]}) for i in range(5)]
    opts = tf.io.TFRecordOptions(compression_type=compression)
    tf_path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(tf_path, options=opts) as w:
        for r in rows:
            w.write(_tf_example(r).SerializeToString())
        for ctx, lists in seqs:
            m = tf.train.SequenceExample()
            m.context.feature["id"].int64_list.value.extend(ctx["id"])
            for step in lists["steps"]:
                m.feature_lists.feature_list["steps"].feature.add().int64_list.value.extend(step)
            w.write(m.SerializeToString())
    got: list[bytes] = list(read_records(tf_path, compression or "NONE"))  # pyright: ignore[reportAssignmentType] - records are bytes without offsets asked for; the reader's unannotated generator is inferred as a union
    assert [ex.decode_example(r) for r in got[:20]] == _expected_rows(rows)
    assert [ex.decode_sequence_example(r) for r in got[20:]] == seqs

    py_path = str(tmp_path / "py.tfrecord")
    write_records(py_path, [ex.encode_example(r) for r in rows], compression or "NONE")
    spec = {"id": tf.io.FixedLenFeature([], tf.int64), "w": tf.io.FixedLenFeature([2], tf.float32), "s": tf.io.FixedLenFeature([], tf.string)}
    parsed = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(py_path, compression_type=compression)]
    assert [int(p["id"]) for p in parsed] == list(range(20))
    assert [p["w"].numpy().tolist() for p in parsed] == [r["w"] for r in rows]
    assert [p["s"].numpy() for p in parsed] == [r["s"][0] for r in rows]
    assert [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(py_path, compression_type=compression)] == [
        _tf_example(r) for r in rows
    ]


def _expected_rows(rows):
    return [_expected(r) for r in rows]
