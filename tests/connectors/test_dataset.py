"""The dataset module's one kind mapping, end to end: an Arrow schema's parse spec goes into a
manifest as the export writes it, comes back through the trainer's loader, and TensorFlow parses
Examples encoded from the same table with it into the same values and dtypes."""
from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tfhadoop.connectors import arrow as ar
from tfhadoop.connectors import dataset
from tfhadoop.connectors import example as ex
from tfhadoop.connectors.example_proto import Feature

ROWS = 3
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("flag", pa.bool_(), nullable=False),
    pa.field("score", pa.float32(), nullable=False),
    pa.field("price", pa.decimal128(10, 2), nullable=False),
    pa.field("vec", pa.list_(pa.float32(), 2), nullable=False),
    pa.field("tags", pa.list_(pa.string()), nullable=False),
    pa.field("blob", pa.binary(), nullable=False),
    pa.field("maybe", pa.int64(), nullable=True),
])
TABLE = pa.table({
    "id": [1, 2, 3], "flag": [True, False, True], "score": [0.5, 1.5, -2.0],
    "price": pa.array([Decimal("1.00"), Decimal("2.00"), Decimal("3.00")], pa.decimal128(10, 2)),
    "vec": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "tags": [["a"], [], ["b", "c"]],
    "blob": [b"\x00", b"\x01", b"\x02"], "maybe": [7, None, 9],
}, schema=SCHEMA)

# what each column is in a tf.train.Feature and what tf.io parses it as
WANT = {"id": ("int64_list", "int64", "FixedLenFeature", []),
        "flag": ("int64_list", "int64", "FixedLenFeature", []),
        "score": ("float_list", "float32", "FixedLenFeature", []),
        "price": ("float_list", "float32", "FixedLenFeature", []),
        "vec": ("float_list", "float32", "FixedLenFeature", [2]),
        "tags": ("bytes_list", "string", "VarLenFeature", None),
        "blob": ("bytes_list", "string", "FixedLenFeature", []),
        "maybe": ("int64_list", "int64", "VarLenFeature", None)}


def test_kind_tables_agree_with_the_proto_and_tensorflow():
    tf = pytest.importorskip("tensorflow")
    oneof = {f.name for f in Feature.DESCRIPTOR.oneofs_by_name["kind"].fields}
    assert set(dataset.LIST_FIELD.values()) == oneof
    assert {dataset.KIND_OF_FIELD[f] for f in oneof} == {dataset.INT64, dataset.FLOAT, dataset.BYTES}
    for kind, dtype in dataset.DTYPE.items():
        assert tf.as_dtype(dtype).name == dtype
        assert dataset.arrow_kind(dataset.arrow_type(kind)) == kind
    assert dataset.arrow_kind(pa.date32()) is None  # no Feature holds it: callers raise, nothing is converted


def test_manifest_round_trip_to_tf_parse(tmp_path):
    tf = pytest.importorskip("tensorflow")
    records: list[bytes] = list(ar.table_to_examples(TABLE))  # pyright: ignore[reportAssignmentType] - serialized Examples; the unannotated encoder's generators are inferred as a union
    for name, (field, _, _, _) in WANT.items():  # the kind each column is encoded as
        t = SCHEMA.field(name).type
        leaf = t.value_type if pa.types.is_list(t) or pa.types.is_fixed_size_list(t) else t
        kind = dataset.arrow_kind(leaf)
        assert kind is not None and dataset.LIST_FIELD[kind] == field, name
        kinds = {ex.decode_example(r, typed=True)[name][0] for r in records if name in ex.decode_example(r)}
        assert kinds == {dataset.KIND_OF_FIELD[field]}, name

    files = [{"path": "part-00000-of-00001.tfrecord", "records": ROWS, "bytes": 10, "split": "train"}]
    doc = dataset.manifest_doc("Example", "none", files, parse_spec=dataset.parse_spec(SCHEMA), created="test")
    (tmp_path / dataset.MANIFEST).write_text(dataset.dumps(doc))
    m = dataset.load(str(tmp_path))
    assert m.records("train") == ROWS and m.compression == "none" and m.raw["version"] == dataset.VERSION
    assert m.parse_spec == json.loads(json.dumps(dataset.parse_spec(SCHEMA)))

    spec = dataset.tf_parse_spec(m.parse_spec)
    assert isinstance(spec, dict)  # an Example dataset: one dict, not a (context, sequence) pair
    features: dict[str, Any] = spec  # tf.io's feature kinds differ in their attributes: checked by kind below
    for name, (_, dtype, kind, shape) in WANT.items():
        assert type(features[name]).__name__ == kind and features[name].dtype.name == dtype, name
        if shape is not None:
            assert list(features[name].shape) == shape, name
    parsed = tf.io.parse_example(tf.constant(records), spec)
    assert parsed["id"].numpy().tolist() == [1, 2, 3]
    assert parsed["flag"].numpy().tolist() == [1, 0, 1]
    np.testing.assert_array_equal(parsed["price"].numpy(), np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(parsed["vec"].numpy(), np.array([[1, 2], [3, 4], [5, 6]], np.float32))
    assert tf.sparse.to_dense(parsed["tags"], b"").numpy().tolist() == [[b"a", b""], [b"", b""], [b"b", b"c"]]
    assert parsed["blob"].numpy().tolist() == [b"\x00", b"\x01", b"\x02"]
    assert parsed["maybe"].indices.numpy()[:, 0].tolist() == [0, 2]  # the null row holds nothing


def test_writer_refuses_what_the_reader_refuses(tmp_path):
    with pytest.raises(ValueError, match="unknown compression 'snappy'"):
        dataset.manifest_doc("Example", "snappy", [])
    doc = dataset.manifest_doc("ByteArray", "gzip", [{"path": "a", "records": 1, "bytes": 1}], parse_spec={})
    with pytest.raises(dataset.ManifestError, match="only tfrecord datasets of Example or SequenceExample"):
        dataset.parse(doc, str(tmp_path))
    doc = dataset.manifest_doc("SequenceExample", "gzip", [{"path": "a", "records": 1, "bytes": 1}], parse_spec={})
    assert dataset.parse(doc, str(tmp_path)).raw["record_type"] == "SequenceExample"  # the trainer reads them
