"""Arrow <-> Examples: inference, round trips, and TensorFlow parsing with the derived spec."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from tfhadoop.connectors import arrow as ar
from tfhadoop.connectors import dataset
from tfhadoop.connectors.example import decode_example, encode_example, encode_sequence_example


def _records():
    out = []
    for i in range(5):
        feats = {"id": [i], "emb": [i * 0.5, 1.0, 2.0], "tags": [b"t%d" % j for j in range(i)], "raw": [b"\xff\x00"], "name": "n%d" % i}
        if i % 2:
            feats["maybe"] = [i * 10]
        out.append(encode_example(feats))
    return out


def _examples(data) -> list[bytes]:
    """The serialized Examples of a table's rows."""
    records: list[bytes] = list(ar.table_to_examples(data))  # pyright: ignore[reportAssignmentType] - the unannotated encoder's generators are inferred as a union
    return records


def test_inference_covers_every_record():
    schema = ar.infer_schema(_records())
    types = {f.name: (str(f.type), f.nullable) for f in schema}
    assert types == {
        "emb": ("fixed_size_list<item: float>[3]", False),
        "id": ("int64", False),
        "maybe": ("int64", True),
        "name": ("string", False),
        "raw": ("binary", False),
        "tags": ("list<item: string>", False),
    }
    assert ar.infer_schema(_records(), bytes_as="binary").field("name").type == pa.binary()


def test_table_round_trip_and_values():
    t = ar.examples_to_table(_records())
    assert t.column("id").to_pylist() == list(range(5))
    assert t.column("maybe").to_pylist() == [None, 10, None, 30, None]
    assert t.column("tags").to_pylist()[2] == ["t0", "t1"]
    back = [decode_example(r) for r in _examples(t)]
    assert back == [decode_example(r) for r in _records()]


def test_table_to_examples_types():
    t = pa.table(
        {
            "i32": pa.array([1, None], pa.int32()),
            "f64": [0.25, 1.5],
            "flag": [True, False],
            "s": ["é", "b"],
            "ls": pa.array([[1, 2], []], pa.list_(pa.int64())),
            "fx": pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32(), 2)),
        }
    )
    got = [decode_example(r) for r in _examples(t.to_batches()[0])]
    assert got[0] == {"i32": [1], "f64": [0.25], "flag": [1], "s": ["é".encode()], "ls": [1, 2], "fx": [1.0, 2.0]}
    assert "i32" not in got[1] and got[1]["ls"] == []
    with pytest.raises(TypeError, match="struct_col"):
        list(ar.table_to_examples(pa.table({"struct_col": [{"a": 1}]})))


def test_tensorflow_parses_with_derived_spec():
    import tensorflow as tf

    t = ar.examples_to_table(_records())
    spec = dataset.parse_spec(t.schema)
    json.dumps(spec)  # plain JSON for a manifest
    assert spec["features"]["emb"] == {"type": "FixedLenFeature", "shape": [3], "dtype": "float32"}
    assert spec["features"]["maybe"]["type"] == "VarLenFeature"
    features = dataset.tf_parse_spec(spec)
    assert isinstance(features, dict)  # Examples: one dict, not a (context, sequence) pair
    parsed = tf.io.parse_example(tf.constant(_examples(t)), features)
    assert parsed["id"].numpy().tolist() == t.column("id").to_pylist()
    assert np.allclose(parsed["emb"].numpy(), np.array(t.column("emb").to_pylist(), np.float32))
    assert [v.decode() for v in parsed["name"].numpy()] == t.column("name").to_pylist()
    assert tf.sparse.to_dense(parsed["maybe"]).numpy()[:, 0].tolist() == [0, 10, 0, 30, 0]
    sparse_tags = parsed["tags"]
    assert isinstance(sparse_tags, tf.SparseTensor)  # a VarLenFeature
    tags = tf.RaggedTensor.from_sparse(sparse_tags).to_list()
    assert [[v.decode() for v in row] for row in tags] == t.column("tags").to_pylist()


def test_sequence_examples_to_arrow_and_tensorflow():
    import tensorflow as tf

    recs = [encode_sequence_example({"user": [b"u%d" % i]}, {"clicks": [[1, i], [2, i]], "words": [[b"a"] * i, [b"b"]]}) for i in range(3)]
    t = ar.examples_to_table(recs, record_type="SequenceExample")
    assert t.column("clicks").to_pylist()[2] == [[1, 2], [2, 2]]
    assert str(t.schema.field("words").type) == "list<item: list<item: string>>"
    spec = dataset.parse_spec(t.schema, "SequenceExample")
    assert spec["sequence_features"]["clicks"]["type"] == "FixedLenSequenceFeature"
    ctx_spec, seq_spec = dataset.tf_parse_spec(spec)
    for rec, row in zip(ar.table_to_examples(t, "SequenceExample"), t.to_pylist()):
        ctx, seq = tf.io.parse_single_sequence_example(rec, ctx_spec, seq_spec)
        assert ctx["user"].numpy().decode() == row["user"]
        assert seq["clicks"].numpy().tolist() == row["clicks"]
        assert [[w.decode() for w in s] for s in seq["words"].to_list()] == row["words"]


def test_conflicting_kinds_are_reported():
    recs = [encode_example({"x": [1]}), encode_example({"x": [1.5]})]
    with pytest.raises(ValueError, match="both int64 and float"):
        ar.infer_schema(recs)


def test_columnar_path_nulls_and_shape_errors():
    recs = [encode_example({"x": [1, 2], "s": [5], "v": [b"a"]}), encode_example({"v": [b"b", b"c"]}), encode_example({"x": [3, 4], "s": []})]
    schema = pa.schema([pa.field("x", pa.list_(pa.int64(), 2)), pa.field("s", pa.int64()), pa.field("v", pa.list_(pa.string()))])
    t = ar.examples_to_table(recs, schema)
    assert t.to_pydict() == {"x": [[1, 2], None, [3, 4]], "s": [5, None, None], "v": [["a"], ["b", "c"], None]}
    with pytest.raises(ValueError, match="'x' has 1 values in record 0 where the schema says 2"):
        ar.examples_to_table([encode_example({"x": [1]})], schema)
    with pytest.raises(ValueError, match="missing from record 0"):
        ar.examples_to_table([encode_example({})], pa.schema([pa.field("s", pa.int64(), nullable=False)]))
    with pytest.raises(ValueError, match="'v'"):
        ar.examples_to_table([encode_example({"v": [b"\xff"]})], schema)


def test_read_and_write_table_files(tmp_path):
    t = pa.table({"id": [1, 2, 3], "v": pa.array([[0.5], [], [1.5, 2.5]], pa.list_(pa.float32()))})
    for name in ("t.tfrecord", "t.tfrecord.gz"):
        assert ar.write_table(t, str(tmp_path / name)) == 3
        back = ar.read_table(str(tmp_path / name), t.schema)
        assert back.equals(t)
