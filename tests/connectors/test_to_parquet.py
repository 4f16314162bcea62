"""One-pass to-parquet (schema from the first batch, later records checked strictly), the
streaming `records schema`, Parquet dictionary choice, and errors that name file and offset in
the middle of a multi-file conversion; native and pure paths side by side."""
from __future__ import annotations

import os
import tracemalloc

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tfhadoop.cli import main
from tfhadoop.connectors import arrow as ar
from tfhadoop.connectors import arrow_framing, dataset
from tfhadoop.connectors.errors import TFRecordError
from tfhadoop.connectors.example import encode_example
from tfhadoop.connectors.tfrecord_writer import encode_record, write_records

pytest.importorskip("tfhadoop.connectors._tfarrow")


def _recs(n, seed=0):
    return [encode_example({"id": [seed * 1000 + i], "v": [i * 0.5, 1.0], "tag": [b"t%d" % (i % 7)],
                            "ids": ("int64", list(range(i % 4)))}) for i in range(n)]


def _write(tmp_path, parts):
    """The parts as files part-K.tfrecord in tmp_path/in (outputs go beside, not among them)."""
    d = tmp_path / "in"
    d.mkdir(exist_ok=True)
    for k, recs in enumerate(parts):
        write_records(str(d / f"part-{k}.tfrecord"), recs)
    return str(d)


def _batches(path, native, **kw):
    return list(ar.iter_record_batches(path, native=native, **kw))


@pytest.mark.parametrize("native", [None, False])
def test_sample_gives_what_all_gives_but_nullable(tmp_path, native):
    d = _write(tmp_path, [_recs(70), _recs(50, 1), _recs(30, 2)])
    sample = _batches(d, native, batch_rows=32, infer="sample")
    exact = _batches(d, native, batch_rows=32, infer="all")
    assert [b.num_rows for b in sample] == [b.num_rows for b in exact]
    assert all(f.nullable for f in sample[0].schema) and not any(f.nullable for f in exact[0].schema)
    assert all(b.schema == sample[0].schema for b in sample)
    table = pa.Table.from_batches(sample)
    assert table.cast(exact[0].schema).equals(pa.Table.from_batches(exact))
    # an input that fits in one batch keeps the exact schema
    one = _batches(d, native, batch_rows=1000, infer="sample")
    assert len(one) == 1 and one[0].schema == exact[0].schema


DRIFT = {
    "new feature": ({"extra": [1]}, "feature 'extra' in record 40 is not in the schema"),
    "two values under a scalar": ({"id": [1, 2]}, "feature 'id' has 2 values in record 40 where the schema says one"),
    "empty under a scalar": ({"id": ("int64", [])}, "feature 'id' has 0 values in record 40 where the schema says one"),
    "another kind": ({"id": [0.5]}, "feature 'id' in record 40 holds float values but the schema says int64"),
    "not UTF-8 under string": ({"tag": [b"\xff"]}, "feature 'tag' value in record 40 is not UTF-8"),
    "another fixed length": ({"v": [1.0]}, "feature 'v' has 1 values in record 40 where the schema says 2"),
}


@pytest.mark.parametrize("case", sorted(DRIFT))
def test_a_later_record_that_does_not_fit_the_sample_is_named(tmp_path, case):
    feats, msg = DRIFT[case]
    base = {"id": [5], "v": [1.0, 2.0], "tag": [b"x"], "ids": ("int64", [1])}
    bad = encode_example({**base, **feats})
    d = _write(tmp_path, [_recs(32), _recs(8, 1) + [bad] + _recs(3, 2)])
    offset = sum(len(r) + 16 for r in _recs(8, 1))
    errors = []
    for native in (None, False):
        with pytest.raises(ar.SchemaDrift) as info:
            _batches(d, native, batch_rows=32, infer="sample")
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert errors[0].startswith(f"{d}/part-1.tfrecord: record at offset {offset}: {msg}")
    assert errors[0].endswith("(the schema was inferred from the first 32 records)")
    # the exact inference takes that record in its stride (or, for a kind clash, says what clashes)
    if case == "another kind":
        with pytest.raises(ValueError, match="holds both int64 and float"):
            _batches(d, None, batch_rows=32, infer="all")
    else:
        assert sum(b.num_rows for b in _batches(d, None, batch_rows=32, infer="all")) == 44


def test_missing_features_after_the_sample_are_nulls(tmp_path):
    d = _write(tmp_path, [_recs(32), [encode_example({"id": [7]})]])
    table = pa.Table.from_batches(_batches(d, None, batch_rows=32, infer="sample"))
    assert table.num_rows == 33 and table.column("tag")[32].as_py() is None and table.column("id")[32].as_py() == 7


def test_cli_starts_over_when_the_sample_was_not_enough(tmp_path, capsys):
    d = _write(tmp_path, [_recs(40), _recs(10, 1) + [encode_example({"id": [1, 2]})]])
    out, ref = tmp_path / "out.parquet", tmp_path / "ref.parquet"
    assert main(["records", "to-parquet", d, "-o", str(out), "--batch-rows", "16"]) == 0
    err = capsys.readouterr().err
    offset = sum(len(r) + 16 for r in _recs(10, 1))
    assert f"part-1.tfrecord: record at offset {offset}: feature 'id' has 2 values in record 50" in err
    assert "inferring the schema from all records and starting over" in err
    assert main(["records", "to-parquet", d, "-o", str(ref), "--infer", "all", "--batch-rows", "16"]) == 0
    assert "starting over" not in capsys.readouterr().err
    got = pq.read_table(out)
    assert got.equals(pq.read_table(ref)) and got.schema.field("id").type == pa.list_(pa.int64())
    assert got.num_rows == 51 and not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_cli_to_parquet_sampled_equals_exact(tmp_path, capsys):
    d = _write(tmp_path, [_recs(300), _recs(200, 1)])
    for infer in ("sample", "all"):
        assert main(["records", "to-parquet", d, "-o", str(tmp_path / f"{infer}.parquet"), "--batch-rows", "64",
                     "--infer", infer]) == 0
    a, b = pq.read_table(tmp_path / "sample.parquet"), pq.read_table(tmp_path / "all.parquet")
    assert a.cast(b.schema).equals(b) and a.num_rows == 500
    assert pq.ParquetFile(tmp_path / "sample.parquet").metadata.num_row_groups == 1  # 500 rows < --row-group-mb 16
    assert "starting over" not in capsys.readouterr().err


def _middle_damage(tmp_path, kind):
    """Three files; the second has a damaged record in its middle."""
    parts = [_recs(30), _recs(30, 1), _recs(30, 2)]
    raw = [encode_record(r) for r in parts[1]]
    offset = sum(len(r) for r in raw[:12])
    if kind == "not an Example":
        raw[12] = encode_record(b"\x0a\x05\x0a\x03")  # Features, whose map entry runs past its end
    else:  # a data CRC mismatch
        r = bytearray(raw[12])
        r[14] ^= 0x20
        raw[12] = bytes(r)
    write_records(str(tmp_path / "part-0.tfrecord"), parts[0])
    (tmp_path / "part-1.tfrecord").write_bytes(b"".join(raw))
    write_records(str(tmp_path / "part-2.tfrecord"), parts[2])
    return str(tmp_path / "part-1.tfrecord"), offset


@pytest.mark.parametrize("infer", ["sample", "all"])
@pytest.mark.parametrize("kind", ["not an Example", "bad checksum"])
def test_damage_in_the_middle_of_a_multi_file_conversion_names_file_and_offset(tmp_path, capsys, kind, infer):
    path, offset = _middle_damage(tmp_path, kind)
    out = tmp_path / "out.parquet"
    assert main(["records", "to-parquet", str(tmp_path), "-o", str(out), "--batch-rows", "16", "--infer", infer]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    if kind == "not an Example":
        assert f"{path}: record at offset {offset}: record 42 is not a serialized Example" in err
    else:
        assert f"{path}: corrupted record at {offset + 12}" in err  # the data's offset, as TF reports it
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if ".tmp-" in p]
    for native in (None, False):
        with pytest.raises((ValueError, TFRecordError), match=f"{path}: "):
            _batches(str(tmp_path), native, batch_rows=16, infer=infer)


def test_records_schema_streams_many_files(tmp_path, capsys, monkeypatch):
    import json

    parts = [_recs(1500, k) for k in range(6)] + [[encode_example({"id": [1], "late": [b"z"]})]]
    d = _write(tmp_path, parts)
    every = [r for p in parts for r in p]
    assert main(["records", "schema", d]) == 0
    doc = json.loads(capsys.readouterr().out)
    want = ar.infer_schema(every)
    assert doc["records"] == len(every) and doc["files"] == 7
    assert doc["arrow_schema"] == [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in want]
    assert doc["parse_spec"] == dataset.parse_spec(want)
    assert main(["records", "schema", d, "-n", "10"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["records"] == 10 and [f["nullable"] for f in doc["arrow_schema"]] == [False] * 4
    # bounded memory: the records are not held (the old command kept them all in a list)
    monkeypatch.setattr(arrow_framing, "_CHUNK", 1 << 14)
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    tracemalloc.start()
    try:
        schema, n = ar.stream_schema(d)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == len(every) and schema == want and size > 32 * (1 << 14)
    assert peak < size / 2, (peak, size)


def test_records_schema_names_a_bad_record(tmp_path, capsys):
    path, offset = _middle_damage(tmp_path, "not an Example")
    assert main(["records", "schema", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: record at offset {offset}: record 42 is not a serialized Example" in err


def test_dictionary_only_where_values_repeat(tmp_path):
    from tfhadoop.connectors.records_cli_parquet import _dictionary_columns

    n = 5000
    batch = pa.record_batch({
        "id": pa.array(range(n), pa.int64()),
        "tag": pa.array([f"t{i % 10}" for i in range(n)]),
        "ids": pa.array([[i, i + 1] for i in range(n)]),
        "cats": pa.array([[i % 3] for i in range(n)]),
        "x": pa.array([i / 7 for i in range(n)], pa.float32()),
    })
    assert _dictionary_columns(batch) == ["tag", "cats.list.element"]
    out = tmp_path / "d.parquet"
    with pq.ParquetWriter(out, batch.schema, use_dictionary=_dictionary_columns(batch)) as w:  # pyright: ignore[reportArgumentType] - pyarrow documents a list of column names; its stub admits only bool
        w.write_batch(batch)
    rg = pq.ParquetFile(out).metadata.row_group(0)
    enc = {rg.column(i).path_in_schema: rg.column(i).encodings for i in range(rg.num_columns)}
    assert "RLE_DICTIONARY" in enc["tag"] and "RLE_DICTIONARY" in enc["cats.list.element"]
    assert "RLE_DICTIONARY" not in enc["id"] and "RLE_DICTIONARY" not in enc["x"]
    assert pq.read_table(out).equals(pa.Table.from_batches([batch]))


def test_progress_bars_on_a_terminal(tmp_path, capsys, monkeypatch):
    import sys

    d = _write(tmp_path, [_recs(300), _recs(200, 1) + [encode_example({"id": [1, 2]})]])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    out, back = tmp_path / "out.parquet", tmp_path / "back.tfrecord"
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if not f.startswith("."))
    assert main(["records", "to-parquet", d, "-o", str(out), "--batch-rows", "64"]) == 0
    err = capsys.readouterr().err
    assert "starting over" in err and f"/{size * 2 / 1000:.1f}k" in err  # bytes; two passes after the restart
    assert main(["records", "from-parquet", str(out), "-o", str(back)]) == 0
    assert "0/501 [" in capsys.readouterr().err  # rows
    assert main(["records", "to-parquet", d, "-o", str(out), "--no-progress", "--infer", "all"]) == 0
    assert "/" not in capsys.readouterr().err


@pytest.mark.parametrize("native", [None, False])
def test_sequence_examples_sampled(tmp_path, native):
    from tfhadoop.connectors.example import encode_sequence_example

    recs = [encode_sequence_example({"id": ("int64", [i])}, {"steps": [("float", [1.0 * i, 2.0])] * (i % 3),
                                                            "toks": [("bytes", [b"a"])] * (i % 2)}) for i in range(100)]
    d = _write(tmp_path, [recs[:60], recs[60:]])
    kw = {"record_type": "SequenceExample", "batch_rows": 16}
    sample = pa.Table.from_batches(_batches(d, native, infer="sample", **kw))
    exact = pa.Table.from_batches(_batches(d, native, infer="all", **kw))
    assert sample.cast(exact.schema).equals(exact) and sample.schema.field("steps").metadata == {b"tfhadoop.feature_list": b"1"}
    write_records(os.path.join(d, "part-2.tfrecord"), [encode_sequence_example({"id": ("int64", [1])}, {"steps": [("float", [1.0])]})])
    with pytest.raises(ar.SchemaDrift, match="part-2.tfrecord: record at offset 0: feature 'steps' has 1 values in step 0 "
                                             "of record 100 where the schema says 2"):
        _batches(d, native, infer="sample", **kw)


def test_records_schema_skip_corrupt_and_to_parquet_refuses_it(tmp_path, capsys):
    import json

    path, offset = _middle_damage(tmp_path, "bad checksum")
    assert main(["records", "schema", str(tmp_path)]) == 1
    assert f"{path}: corrupted record at {offset + 12}" in capsys.readouterr().err
    assert main(["records", "schema", "--skip-corrupt", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["records"] == 89 and f"{path}: skipped 1 damaged record(s)" in out.err
    path, offset = _middle_damage(tmp_path, "not an Example")
    assert main(["records", "schema", "--skip-corrupt", str(tmp_path)]) == 1
    assert f"{path}: record at offset {offset}: record 42 is not a serialized Example" in capsys.readouterr().err
    assert main(["records", "to-parquet", "--skip-corrupt", str(tmp_path), "-o", str(tmp_path / "o.parquet")]) == 1
    assert "verify --skip-corrupt" in capsys.readouterr().err


@pytest.mark.parametrize("infer", ["sample", "all", "given"])
def test_files_decoded_in_threads_keep_order_rows_and_schema(tmp_path, infer):
    d = _write(tmp_path, [_recs(70), _recs(5, 1), [], _recs(90, 2), _recs(33, 3)])
    kw = {"batch_rows": 32, "infer": "all" if infer == "given" else infer}
    if infer == "given":
        kw["schema"] = _batches(d, None, batch_rows=32, infer="all")[0].schema
    one = pa.Table.from_batches(_batches(d, None, threads=1, **kw))
    for threads in (2, 3, 8):
        many = _batches(d, None, threads=threads, **kw)
        assert all(b.schema == one.schema for b in many) and max(b.num_rows for b in many) <= 32
        assert pa.Table.from_batches(many).equals(one) and one.num_rows == 198
    # an input within one batch keeps the exact inferred schema in threads too
    exact = _batches(d, None, batch_rows=1000, infer="sample", threads=3)
    assert len(exact) == 1 and not any(f.nullable for f in exact[0].schema) and exact[0].num_rows == 198


def test_errors_from_decoder_threads_read_as_in_one_thread(tmp_path, capsys):
    bad = encode_example({"id": [1, 2], "v": [1.0, 2.0], "tag": [b"x"], "ids": ("int64", [1])})
    d = _write(tmp_path, [_recs(40), _recs(9, 1), _recs(20, 2) + [bad], _recs(50, 3)])
    errors = []
    for threads in (1, 3):
        with pytest.raises(ar.SchemaDrift) as info:
            _batches(d, None, batch_rows=16, infer="sample", threads=threads)
        errors.append(str(info.value))
    offset = sum(len(r) + 16 for r in _recs(20, 2))
    assert errors[0] == errors[1] and errors[0].startswith(f"{d}/part-2.tfrecord: record at offset {offset}: "
                                                           "feature 'id' has 2 values in record 69 ")
    (tmp_path / "x").mkdir()
    path, offset = _middle_damage(tmp_path / "x", "not an Example")
    lines = []
    for threads in ("1", "3"):
        assert main(["records", "to-parquet", str(tmp_path / "x"), "-o", str(tmp_path / "o.parquet"), "--batch-rows",
                     "8", "--threads", threads]) == 1
        lines.append(capsys.readouterr().err.strip())
    assert lines[0] == lines[1] and f"{path}: record at offset {offset}: record 42 is not a serialized Example" in lines[0]
    assert not (tmp_path / "o.parquet").exists()


def test_row_groups_gathered_by_size(tmp_path, capsys):
    d = _write(tmp_path, [_recs(15000, k) for k in range(2)])
    out = tmp_path / "o.parquet"
    assert main(["records", "to-parquet", d, "-o", str(out), "--batch-rows", "1024", "--row-group-mb", "1"]) == 0
    md = pq.ParquetFile(out).metadata
    batch_mb = pa.Table.from_batches(_batches(d, None, batch_rows=1024, infer="sample")).nbytes / 2**20
    assert 1.0 < batch_mb < 2.0 and md.num_row_groups == 2 and md.num_rows == 30000
    assert 15000 < md.row_group(0).num_rows < 30000  # whole batches until >= 1 MiB of Arrow data
    assert pq.read_table(out).equals(pa.Table.from_batches(_batches(d, None, batch_rows=1024, infer="sample")))


def test_parquet_codec_and_level_options(tmp_path, capsys):
    d = _write(tmp_path, [_recs(100)])
    want = pa.Table.from_batches(_batches(d, None, infer="sample"))
    for codec, extra, stored in (("snappy", [], "SNAPPY"), ("none", [], "UNCOMPRESSED"), ("zstd", ["--parquet-compression-level", "9"], "ZSTD"),
                                 ("LZ4", [], "LZ4")):
        out = tmp_path / f"{codec}.parquet"
        assert main(["records", "to-parquet", d, "-o", str(out), "--parquet-compression", codec, *extra]) == 0
        assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == stored
        assert pq.read_table(out).equals(want)
    for bad in (["--parquet-compression", "zip"], ["--threads", "0"], ["--row-group-mb", "x"]):
        with pytest.raises(SystemExit) as info:
            main(["records", "to-parquet", d, "-o", str(tmp_path / "bad.parquet"), *bad])
        assert info.value.code == 2 and bad[0] in capsys.readouterr().err
