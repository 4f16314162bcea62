"""No silent wrong values from the tfrecord source: a missing feature under a non-nullable column
and a feature of another kind than its column are named errors (file and record offset included);
the lossless conversions still read; Spark ML vector columns round-trip (byte-checked against
TensorFlow's own encoding); columns written exactly (exactColumns) read back exactly."""
from __future__ import annotations

import datetime
import decimal
import math
import os
import re

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

tf = pytest.importorskip("tensorflow")

from pyspark.ml.linalg import DenseVector, SparseVector, VectorUDT  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from tfhadoop.spark.tfrecord import read_tfrecord, write_tfrecord  # noqa: E402


def local(path) -> str:
    return "file://" + str(path)


def feature(v):
    if v is None:
        return tf.train.Feature()
    kind, values = v
    if kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    if kind == "b":
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def example(**features):
    return tf.train.Example(features=tf.train.Features(feature={k: feature(v) for k, v in features.items()}))


def write_records(path, messages):
    """Writes the records and returns their byte offsets."""
    offsets, pos = [], 0
    with tf.io.TFRecordWriter(str(path)) as w:
        for m in messages:
            data = m.SerializeToString()
            w.write(data)
            offsets.append(pos)
            pos += 16 + len(data)
    return offsets


def read_error(spark, path, schema, **kw) -> str:
    with pytest.raises(Exception) as exc:
        read_tfrecord(spark, local(path), schema=schema, **kw).collect()
    return str(exc.value)


def field(name, t, nullable=True):
    return T.StructType([T.StructField("id", T.LongType()), T.StructField(name, t, nullable)])


def test_missing_feature_under_non_nullable_column_is_an_error(spark, tmp_path):
    path = tmp_path / "missing" / "part-00003.tfrecord"
    path.parent.mkdir()
    offsets = write_records(path, [example(id=("i", [0]), label=("f", [1.5]), n=("i", [2]), s=("b", [b"x"]),
                                           arr=("i", [1, 2])),
                                   example(id=("i", [1]))])
    for name, t in (("label", T.FloatType()), ("n", T.LongType()), ("s", T.StringType()),
                    ("arr", T.ArrayType(T.LongType()))):
        msg = read_error(spark, path.parent, field(name, t, nullable=False))
        assert (f"feature '{name}' is missing in record at offset {offsets[1]} of file:{path}, but column "
                f"{name} is not nullable") in msg, msg
        # nullable: the same record reads as null
        got = {r["id"]: r[name] for r in read_tfrecord(spark, local(path.parent), schema=field(name, t)).collect()}
        assert got[1] is None
    # a struct column: its fields are the dotted features
    st = T.StructType([T.StructField("a", T.LongType(), False), T.StructField("b", T.LongType())])
    path2 = tmp_path / "st" / "s.tfrecord"
    path2.parent.mkdir()
    offs = write_records(path2, [example(id=("i", [0]), **{"p.a": ("i", [1])}), example(id=("i", [1]), **{"p.b": ("i", [2])})])
    msg = read_error(spark, path2.parent, field("p", st))
    assert f"feature 'p.a' is missing in record at offset {offs[1]}" in msg, msg
    msg = read_error(spark, path2.parent, T.StructType([T.StructField("id", T.LongType()),
                                                        T.StructField("q", st, False)]))
    assert f"no feature of struct column q (q.*) is present in record at offset {offs[0]}" in msg, msg
    # an empty list under a non-nullable scalar holds no value either
    path3 = tmp_path / "empty" / "e.tfrecord"
    path3.parent.mkdir()
    offs = write_records(path3, [example(id=("i", [0]), label=("f", []))])
    msg = read_error(spark, path3.parent, field("label", T.FloatType(), nullable=False))
    assert f"feature 'label' has no value in record at offset {offs[0]}" in msg, msg


def sequence_example(context, lists):
    ctx = tf.train.Features(feature={k: feature(v) for k, v in context.items()})
    fl = tf.train.FeatureLists(feature_list={k: tf.train.FeatureList(feature=[feature(x) for x in v])
                                             for k, v in lists.items()})
    return tf.train.SequenceExample(context=ctx, feature_lists=fl)


def test_missing_in_sequence_examples(spark, tmp_path):
    path = tmp_path / "seq" / "s.tfrecord"
    path.parent.mkdir()
    offs = write_records(path, [
        sequence_example({"id": ("i", [0]), "label": ("i", [1])}, {"steps": [("f", [1.0]), ("f", [2.0, 3.0])]}),
        sequence_example({"id": ("i", [1])}, {})])
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("label", T.LongType(), False)])
    msg = read_error(spark, path.parent, schema, record_type="SequenceExample")
    assert f"feature 'label' is missing in record at offset {offs[1]} of file:{path}" in msg, msg
    schema = T.StructType([T.StructField("id", T.LongType()),
                           T.StructField("steps", T.ArrayType(T.ArrayType(T.FloatType())), False)])
    msg = read_error(spark, path.parent, schema, record_type="SequenceExample")
    assert f"feature 'steps' is missing in record at offset {offs[1]}" in msg, msg
    got = {r["id"]: r["steps"] for r in read_tfrecord(spark, local(path.parent), record_type="SequenceExample",
                                                      schema=schema.fields[0:1] and T.StructType(
                                                          [schema.fields[0], T.StructField("steps", schema.fields[1].dataType)])).collect()}
    assert got == {0: [[1.0], [2.0, 3.0]], 1: None}
    # a kind mismatch inside a feature list
    bad = T.StructType([T.StructField("id", T.LongType()), T.StructField("steps", T.ArrayType(T.ArrayType(T.LongType())))])
    msg = read_error(spark, path.parent, bad, record_type="SequenceExample")
    assert "feature 'steps' is a float_list but column steps is array<bigint>" in msg, msg
    assert f"record at offset {offs[0]} of file:{path}" in msg, msg


MISMATCHES = [
    (("f", [2.5]), T.IntegerType(), "float_list", "int"),
    (("f", [2.5]), T.LongType(), "float_list", "bigint"),
    (("f", [1.0]), T.BooleanType(), "float_list", "boolean"),
    (("f", [1.0]), T.DateType(), "float_list", "date"),
    (("f", [1.0]), T.TimestampType(), "float_list", "timestamp"),
    (("f", [2.5]), T.StringType(), "float_list", "string"),
    (("i", [5]), T.FloatType(), "int64_list", "float"),
    (("i", [5]), T.DoubleType(), "int64_list", "double"),
    (("i", [4]), T.StringType(), "int64_list", "string"),
    (("b", [b"7"]), T.LongType(), "bytes_list", "bigint"),
    (("b", [b"7"]), T.FloatType(), "bytes_list", "float"),
    (("b", [b"7"]), T.DoubleType(), "bytes_list", "double"),
    (("b", [b"7"]), T.DecimalType(10, 2), "bytes_list", "decimal(10,2)"),
    (("b", [b"7"]), T.ArrayType(T.IntegerType()), "bytes_list", "int"),
    (("f", [1.0, 2.0]), T.ArrayType(T.LongType()), "float_list", "bigint"),
]


def test_kind_mismatches_are_named_errors(spark, tmp_path):
    for k, (value, t, kind, _tname) in enumerate(MISMATCHES):
        path = tmp_path / f"mm{k}" / "part-0.tfrecord"
        path.parent.mkdir()
        offs = write_records(path, [example(id=("i", [0]), x=("i", [1]) if value[0] != "i" else ("f", [1.0])),
                                    example(id=("i", [1]), x=value)])
        # the first record's x is of a kind the column does not take either, unless it is the same kind
        msg = read_error(spark, path.parent, field("x", t))
        assert re.search(rf"feature 'x' is a \w+_list but column x is {re.escape(t.simpleString())}", msg), msg
        assert "record at offset" in msg and f"file:{path}" in msg, msg
        # the second record (the one under test) alone
        path2 = tmp_path / f"mm{k}b" / "part-0.tfrecord"
        path2.parent.mkdir()
        offs = write_records(path2, [example(id=("i", [1]), x=value)])
        msg = read_error(spark, path2.parent, field("x", t))
        assert f"feature 'x' is a {kind} but column x is {t.simpleString()}" in msg, (t, msg)
        assert f"(record at offset {offs[0]} of file:{path2})" in msg, msg


def test_narrowing_that_does_not_fit_is_an_error(spark, tmp_path):
    cases = [(300, T.ByteType()), (40000, T.ShortType()), (2**31, T.IntegerType()), (2, T.BooleanType()),
             (2**40, T.DateType()), (123456, T.DecimalType(4, 0))]
    for k, (v, t) in enumerate(cases):
        path = tmp_path / f"n{k}" / "a.tfrecord"
        path.parent.mkdir()
        offs = write_records(path, [example(id=("i", [0]), x=("i", [v]))])
        msg = read_error(spark, path.parent, field("x", t))
        assert f"feature 'x' holds int64 {v}" in msg or f"feature 'x' holds {v}" in msg, (t, msg)
        assert f"record at offset {offs[0]}" in msg, msg
    # a float that a decimal can only hold rounded
    path = tmp_path / "dec" / "a.tfrecord"
    path.parent.mkdir()
    write_records(path, [example(id=("i", [0]), x=("f", [0.125]))])
    msg = read_error(spark, path.parent, field("x", T.DecimalType(5, 2)))
    assert "feature 'x' holds 0.125, which column x of type decimal(5,2) cannot hold without rounding" in msg, msg


def test_lossless_conversions_still_read(spark, tmp_path):
    d = tmp_path / "ok"
    d.mkdir()
    write_records(d / "a.tfrecord", [example(
        i=("i", [-5]), sh=("i", [300]), by=("i", [-128]), flag=("i", [1]), day=("i", [18262]),
        ts=("i", [1_600_000_000_000_000]), dec=("i", [12]), fdec=("f", [0.25]), f=("f", [0.5]), d=("f", [0.1]),
        s=("b", ["é".encode()]), bin=("b", [b"\x00\xff"]), longs=("i", [1, 2]), ints=("i", [3]))])
    schema = ("i int, sh short, by byte, flag boolean, day date, ts timestamp, dec decimal(5,1), "
              "fdec decimal(4,2), f float, d double, s string, bin binary, longs array<bigint>, ints array<int>")
    r = read_tfrecord(spark, local(d), schema=schema).collect()[0]
    assert (r["i"], r["sh"], r["by"], r["flag"]) == (-5, 300, -128, True)
    assert r["day"] == datetime.date(2020, 1, 1)
    assert r["ts"] == datetime.datetime.fromtimestamp(1_600_000_000, datetime.timezone.utc).astimezone().replace(
        tzinfo=None)
    assert r["dec"] == decimal.Decimal("12.0") and r["fdec"] == decimal.Decimal("0.25")
    assert r["f"] == 0.5 and r["d"] == pytest.approx(0.1, rel=1e-7)  # the float32 widened exactly
    assert r["d"] == float(tf.constant(0.1, tf.float32).numpy())
    assert (r["s"], bytes(r["bin"]), r["longs"], r["ints"]) == ("é", b"\x00\xff", [1, 2], [3])


def test_inferred_float_column_reads_int64_values_it_holds_exactly(spark, tmp_path):
    d = tmp_path / "mixed"
    d.mkdir()
    write_records(d / "a.tfrecord", [example(id=("i", [0]), v=("f", [0.5])), example(id=("i", [1]), v=("i", [3]))])
    df = read_tfrecord(spark, local(d))
    assert {r["id"]: r["v"] for r in df.collect()} == {0: 0.5, 1: 3.0}
    write_records(d / "b.tfrecord", [example(id=("i", [2]), v=("i", [2**24 + 1]))])
    with pytest.raises(Exception, match=r"feature 'v' holds int64 16777217, which float column v cannot hold exactly"):
        read_tfrecord(spark, local(d)).collect()


VEC_SCHEMA = T.StructType([T.StructField("features", VectorUDT()), T.StructField("id", T.LongType())])


def test_vector_columns_round_trip(spark, tmp_path):
    vectors = [DenseVector([1.0, -2.5, 3.25]), SparseVector(5, {1: 2.0, 4: -1.5}), DenseVector([]),
               DenseVector([float("nan"), 0.1]), SparseVector(3, {})]
    rows = [(v, i) for i, v in enumerate(vectors)] + [(None, 99)]
    out = tmp_path / "vec"
    write_tfrecord(spark.createDataFrame(rows, VEC_SCHEMA).coalesce(1), local(out))
    files = sorted(str(p) for p in out.glob("part-*"))
    records = [r.numpy() for r in tf.data.TFRecordDataset(files)]
    by_id = {tf.train.Example.FromString(b).features.feature["id"].int64_list.value[0]: b for b in records}
    for v, i in rows:
        dense = [] if v is None else v.toArray().tolist()
        feats = {"id": feature(("i", [i]))}
        if v is not None:
            feats["features"] = feature(("f", dense))
        # byte for byte what TensorFlow's own encoder writes (features in name order, packed floats)
        want = tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString(deterministic=True)
        assert by_id[i] == want, (i, by_id[i], want)
    # read back into a vector column: DenseVector of the float32 values
    back = {r["id"]: r["features"] for r in read_tfrecord(spark, local(out), schema=VEC_SCHEMA).collect()}
    for v, i in rows:
        if v is None:
            assert back[i] is None
            continue
        got, want = back[i].toArray().tolist(), [float(tf.constant(x, tf.float32).numpy()) for x in v.toArray()]
        assert isinstance(back[i], DenseVector) and len(got) == len(want)
        assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(got, want)), (got, want)
    # an int64 feature reads into a vector too; bytes do not
    d = tmp_path / "vi"
    d.mkdir()
    write_records(d / "a.tfrecord", [example(id=("i", [0]), features=("i", [1, 2, 3]))])
    assert read_tfrecord(spark, local(d), schema=VEC_SCHEMA).collect()[0]["features"] == DenseVector([1, 2, 3])
    write_records(d / "b.tfrecord", [example(id=("i", [1]), features=("b", [b"x"]))])
    with pytest.raises(Exception, match="feature 'features' is a bytes_list but column features is a vector"):
        read_tfrecord(spark, local(d), schema=VEC_SCHEMA).collect()


def test_vector_feature_lists_in_sequence_examples(spark, tmp_path):
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("ctx", VectorUDT()),
                           T.StructField("frames", T.ArrayType(VectorUDT()))])
    rows = [(1, DenseVector([1.0, 2.0]), [DenseVector([0.5]), SparseVector(3, {2: 4.0})]), (2, None, [])]
    out = tmp_path / "seqvec"
    write_tfrecord(spark.createDataFrame(rows, schema), local(out), record_type="SequenceExample")
    files = sorted(str(p) for p in out.glob("part-*"))
    seqs = {}
    for r in tf.data.TFRecordDataset(files):
        s = tf.train.SequenceExample.FromString(r.numpy())
        seqs[s.context.feature["id"].int64_list.value[0]] = s
    assert list(seqs[1].context.feature["ctx"].float_list.value) == [1.0, 2.0]
    assert [list(f.float_list.value) for f in seqs[1].feature_lists.feature_list["frames"].feature] == [
        [0.5], [0.0, 0.0, 4.0]]
    back = {r["id"]: r for r in read_tfrecord(spark, local(out), schema=schema, record_type="SequenceExample").collect()}
    assert back[1]["ctx"] == DenseVector([1.0, 2.0])
    assert back[1]["frames"] == [DenseVector([0.5]), DenseVector([0.0, 0.0, 4.0])]
    assert back[2]["ctx"] is None and back[2]["frames"] == []


def test_exact_columns_write_and_read_without_rounding(spark, tmp_path):
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("d", T.DoubleType()),
                           T.StructField("big", T.DecimalType(38, 18)), T.StructField("n", T.DecimalType(12, 0))])
    rows = [(0, 1234567890123.0, decimal.Decimal("12345678.123456789"), decimal.Decimal(123456789012)),
            (1, 0.1, decimal.Decimal("-0.5"), decimal.Decimal(0))]
    out = tmp_path / "exact"
    write_tfrecord(spark.createDataFrame(rows, schema).coalesce(1), local(out), exactColumns="d,big,n")
    files = sorted(str(p) for p in out.glob("part-*"))
    exs = {e.features.feature["id"].int64_list.value[0]: e.features.feature
           for e in (tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(files))}
    assert list(exs[0]["d"].int64_list.value) == [1234567890123]
    assert list(exs[1]["d"].bytes_list.value) == [b"0.1"]
    assert list(exs[0]["big"].bytes_list.value) == [b"12345678.123456789000000000"]
    assert list(exs[0]["n"].int64_list.value) == [123456789012]
    back = {r["id"]: tuple(r) for r in read_tfrecord(spark, local(out), schema=schema, exactColumns="d,big,n").collect()}
    assert back == {r[0]: r for r in rows}
    # without the option the exact forms are kinds the columns do not read
    with pytest.raises(Exception, match="feature 'd' is a (int64|bytes)_list but column d is double"):
        read_tfrecord(spark, local(out), schema=schema).collect()
    with pytest.raises(Exception, match="exactColumns names nope"):
        write_tfrecord(spark.createDataFrame(rows, schema), local(tmp_path / "x"), exactColumns="nope")


def test_default_double_and_decimal_are_float32(spark, tmp_path):
    """The documented default: TF has no float64, so doubles/decimals are written as float32."""
    out = tmp_path / "f32"
    write_tfrecord(spark.createDataFrame([(1, 1234567890123.0)], "id long, d double"), local(out))
    back = read_tfrecord(spark, local(out), schema="id long, d double").collect()[0]["d"]
    assert back == float(tf.constant(1234567890123.0, tf.float32).numpy()) != 1234567890123.0
    assert os.path.isdir(out)
