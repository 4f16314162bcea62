"""Native TFRecord framing (iter_record_batches / to-parquet): the same batches and the same
damage errors (wording, file, offset) as the pure-Python reader, plain and compressed, across
files and across read-chunk boundaries; and on the embedded cluster's HDFS."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from tfhadoop.cli import main
from tfhadoop.connectors import arrow as ar
from tfhadoop.connectors import arrow_framing
from tfhadoop.connectors.errors import TFRecordError
from tfhadoop.connectors.example import encode_example
from tfhadoop.connectors.tfrecord_writer import encode_record, write_records

pytest.importorskip("tfhadoop.connectors._tfarrow")


def _recs(n, seed=0):
    return [encode_example({"id": [seed * 1000 + i], "v": [i * 0.5] * (i % 4), "tag": [b"t" * (i % 300)]})
            for i in range(n)]


def _table(paths, native, **kw):
    batches = list(ar.iter_record_batches(paths, native=native, **kw))
    return [b.num_rows for b in batches], pa.Table.from_batches(batches)


@pytest.fixture(params=[1 << 20, 257])
def chunk(request, monkeypatch):
    """Big reads, and tiny ones so that records straddle every read boundary."""
    monkeypatch.setattr(arrow_framing, "_CHUNK", request.param)
    return request.param


@pytest.mark.parametrize("suffix", ["", ".gz", ".zz"])
def test_same_batches_as_pure_reader(tmp_path, chunk, suffix):
    for k in range(3):
        write_records(str(tmp_path / f"part-{k}.tfrecord{suffix}"), _recs(50 + 40 * k, k))
    write_records(str(tmp_path / f"part-3.tfrecord{suffix}"), [])  # an empty file in the middle
    write_records(str(tmp_path / f"part-4.tfrecord{suffix}"), _recs(7, 4))
    for kw in ({}, {"batch_rows": 33}, {"batch_rows": 1}):
        sizes, nat = _table(str(tmp_path), None, **kw)
        psizes, pure = _table(str(tmp_path), False, **kw)
        assert sizes == psizes and nat.equals(pure) and nat.num_rows == 50 + 90 + 130 + 7
        assert nat.schema.field("v").type == pa.list_(pa.float32())


def test_empty_input_gives_one_empty_batch(tmp_path):
    path = str(tmp_path / "empty.tfrecord")
    write_records(path, [])
    assert [b.num_rows for b in ar.iter_record_batches(path)] == [0]
    assert [b.num_rows for b in ar.iter_record_batches(path, native=False)] == [0]


def _damaged(tmp_path, kind, suffix):
    """Two good files, then one whose tail is damaged in the way ``kind`` says."""
    for k in range(2):
        write_records(str(tmp_path / f"part-{k}.tfrecord{suffix}"), _recs(20, k))
    recs = _recs(30, 2)
    raw = b"".join(encode_record(r) for r in recs)
    last = len(raw) - len(recs[-1]) - 16
    if kind == "header_cut":
        raw = raw[: last + 5]
    elif kind == "data_cut":
        raw = raw[: last + 12 + 3]
    elif kind == "footer_cut":
        raw = raw[:-2]
    elif kind == "data_flip":
        raw = raw[: last + 14] + bytes([raw[last + 14] ^ 1]) + raw[last + 15:]
    elif kind == "length_flip":
        raw = raw[:last] + bytes([raw[last] ^ 1]) + raw[last + 1:]
    elif kind == "junk_tail":
        raw = raw + b"\x00" * 40
    path = tmp_path / f"part-2.tfrecord{suffix}"
    if suffix == ".gz":
        import gzip

        raw = gzip.compress(raw)
    path.write_bytes(raw)
    return str(path), last


@pytest.mark.parametrize("kind", ["header_cut", "data_cut", "footer_cut", "data_flip", "length_flip", "junk_tail"])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_damage_raises_what_the_pure_reader_raises(tmp_path, chunk, kind, suffix, capsys):
    path, last = _damaged(tmp_path, kind, suffix)
    errors = []
    for native in (None, False):
        with pytest.raises(TFRecordError) as info:
            list(ar.iter_record_batches(str(tmp_path), native=native, batch_rows=16))
        errors.append((type(info.value), str(info.value), info.value.offset))
    assert errors[0] == errors[1]
    word = "corrupted" if kind in ("data_flip", "length_flip", "junk_tail") else "truncated"
    assert errors[0][1].startswith(f"{path}: {word} record at ")
    want = {"data_flip": last + 12, "junk_tail": last + len(_recs(30, 2)[-1]) + 16}.get(kind, last)
    assert errors[0][2] == want
    out = tmp_path / "out.parquet"
    assert main(["records", "to-parquet", str(tmp_path), "-o", str(out)]) != 0
    assert capsys.readouterr().err.strip().endswith(errors[0][1])
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_later_record_breaking_the_schema_names_its_offset(tmp_path, chunk):
    recs = _recs(40)
    write_records(str(tmp_path / "a.tfrecord"), recs)
    write_records(str(tmp_path / "b.tfrecord"), recs[:5] + [encode_example({"id": [1.5]})])
    offset = sum(len(r) + 16 for r in recs[:5])
    for native in (None, False):
        with pytest.raises(ValueError, match=f"b.tfrecord: record at offset {offset}: feature 'id'"):
            list(ar.iter_record_batches(str(tmp_path), native=native))


@pytest.mark.cluster
def test_to_parquet_from_hdfs(hadoop_cluster, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    monkeypatch.setattr(arrow_framing, "_CHUNK", 4096)
    base = hadoop_cluster.hdfs_url("/tfhadoop-tests/native-framing")
    write_records(f"{base}/part-0.tfrecord", _recs(300))
    write_records(f"{base}/part-1.tfrecord.gz", _recs(200, 1))
    out = tmp_path / "hdfs.parquet"
    assert main(["records", "to-parquet", base, "-o", str(out), "--batch-rows", "64"]) == 0
    _, pure = _table(base, False, batch_rows=64, infer="sample")  # to-parquet's one pass: nullable columns
    assert pq.read_table(out).equals(pure) and pure.num_rows == 500


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_read_table_frames_natively_too(tmp_path, chunk, suffix):
    for k in range(3):
        write_records(str(tmp_path / f"part-{k}.tfrecord{suffix}"), _recs(70, k))
    nat, pure = ar.read_table(str(tmp_path)), ar.read_table(str(tmp_path), native=False)
    assert nat.equals(pure) and nat.num_rows == 210
    assert ar.read_table(str(tmp_path), nat.schema).equals(pure)
    path, _ = _damaged(tmp_path, "data_flip", suffix)
    errors = []
    for native in (None, False):
        with pytest.raises(TFRecordError) as info:
            ar.read_table(str(tmp_path), native=native)
        errors.append(str(info.value))
    assert errors[0] == errors[1] and errors[0].startswith(f"{path}: corrupted record at ")
