"""TFRecord framing: the Python reader/writer against TensorFlow's own, on the same bytes."""
from __future__ import annotations

import os
import random
import re
from typing import Literal

import pytest

from tfhadoop.connectors.errors import CorruptedRecordError, TruncatedRecordError
from tfhadoop.connectors.tfrecord import ReadStats, TFRecordReader, read_records
from tfhadoop.connectors.tfrecord_writer import TFRecordWriter, encode_record, write_records

RECORDS = [b"", b"a", os.urandom(100), b"\x00" * 1000, os.urandom(10_000), b""]
TF_COMPRESSION = {"": "", "GZIP": "GZIP", "ZLIB": "ZLIB"}


def _tf():
    import tensorflow as tf

    return tf


def _tf_read(path, compression: Literal["", "ZLIB", "GZIP"] = ""):
    """(records, error kind, error offset) as TensorFlow's TFRecordDataset reports them."""
    tf = _tf()
    out = []
    try:
        for r in tf.data.TFRecordDataset(str(path), compression_type=compression):
            out.append(r.numpy())
    except tf.errors.DataLossError as exc:
        m = re.search(r"(corrupted|truncated) record at (\d+)", str(exc))
        assert m, str(exc)
        return out, m.group(1), int(m.group(2))
    return out, None, None


def _py_read(path, compression=None):
    out = []
    try:
        for r in TFRecordReader(str(path), compression):
            out.append(r)
    except (CorruptedRecordError, TruncatedRecordError) as exc:
        assert str(path) in str(exc)
        return out, exc.kind, exc.offset
    return out, None, None


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_reads_what_tensorflow_writes(tmp_path, compression):
    tf = _tf()
    path = tmp_path / "tf.tfrecord"
    big = os.urandom(5 << 20)
    records = RECORDS + [big, b"tail"]
    with tf.io.TFRecordWriter(str(path), options=tf.io.TFRecordOptions(compression_type=compression)) as w:
        for r in records:
            w.write(r)
    got = list(TFRecordReader(str(path), compression or "NONE"))
    assert got == records


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_tensorflow_reads_what_we_write(tmp_path, compression):
    path = tmp_path / "py.tfrecord"
    records = RECORDS + [os.urandom(5 << 20), b"tail"]
    with TFRecordWriter(str(path), compression or "NONE", buffer_size=4096) as w:
        offsets = [w.write(r) for r in records]
    assert offsets[0] == 0 and offsets[1] == 16 and offsets[2] == 33
    got, kind, _ = _tf_read(path, compression)
    assert kind is None and got == records


def test_plain_bytes_match_tensorflow_writer(tmp_path):
    tf = _tf()
    path = tmp_path / "tf.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as w:
        for r in RECORDS:
            w.write(r)
    assert path.read_bytes() == b"".join(encode_record(r) for r in RECORDS)


def test_compression_from_extension_and_offsets(tmp_path):
    for name in ("x.tfrecord.gz", "x.tfrecord.zz", "x.tfrecord"):
        p = str(tmp_path / name)
        assert write_records(p, RECORDS) == len(RECORDS)
        assert list(read_records(p)) == RECORDS
    raw = (tmp_path / "x.tfrecord.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    pairs = list(TFRecordReader(str(tmp_path / "x.tfrecord.gz")).with_offsets())
    assert [o for o, _ in pairs] == [0, 16, 33, 149, 1165, 11181]
    # Start at an offset (random access), compressed and not.
    for name in ("x.tfrecord.gz", "x.tfrecord"):
        assert list(TFRecordReader(str(tmp_path / name), offset=149)) == RECORDS[3:]


def test_globs_directories_and_concatenated_gzip(tmp_path):
    d = tmp_path / "ds"
    d.mkdir()
    write_records(str(d / "part-0.tfrecord.gz"), RECORDS[:3])
    write_records(str(d / "part-1.tfrecord.gz"), RECORDS[3:])
    (d / "_SUCCESS").write_bytes(b"")
    assert list(read_records(str(d))) == RECORDS
    assert list(read_records(str(tmp_path / "ds" / "part-*.tfrecord.gz"))) == RECORDS
    cat = tmp_path / "cat.tfrecord.gz"
    cat.write_bytes((d / "part-0.tfrecord.gz").read_bytes() + (d / "part-1.tfrecord.gz").read_bytes())
    assert list(read_records(str(cat))) == RECORDS
    with pytest.raises(FileNotFoundError):
        list(read_records(str(tmp_path / "nope-*.tfrecord")))


def test_fsspec_url():
    import fsspec

    url = "memory://tfhadoop-test/a.tfrecord"
    write_records(url, RECORDS)
    opened = fsspec.open(url, "rb")
    assert isinstance(opened, fsspec.core.OpenFile)  # one URL: one file
    assert opened.open().read() == b"".join(encode_record(r) for r in RECORDS)
    assert list(read_records("memory://tfhadoop-test/*.tfrecord")) == RECORDS


def _sample_file(tmp_path, compression=""):
    rng = random.Random(7)
    records = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40))) for _ in range(6)]
    path = tmp_path / "ok.tfrecord"
    write_records(str(path), records, compression or "NONE")
    return records, path.read_bytes()


def _compare_with_tf(path):
    tf_out = _tf_read(path)
    py_out = _py_read(path, "NONE")
    assert py_out == tf_out, (tf_out, py_out)
    return py_out


def test_bit_flips_match_tensorflow(tmp_path):
    records, raw = _sample_file(tmp_path)
    seen = set()
    for pos in range(len(raw)):  # every byte of the file, one flipped bit each
        bad = bytearray(raw)
        bad[pos] ^= 1 << (pos % 8)
        p = tmp_path / "flip.tfrecord"
        p.write_bytes(bytes(bad))
        out, kind, offset = _compare_with_tf(p)
        assert kind == "corrupted"
        seen.add(offset)
    # Both error offsets appear: record start (header) and record start + 12 (data).
    assert 0 in seen and 12 in seen


def test_truncation_matches_tensorflow_where_tensorflow_reports_it(tmp_path):
    records, raw = _sample_file(tmp_path)
    boundaries = set(o for o, _ in TFRecordReader(str(tmp_path / "ok.tfrecord")).with_offsets())
    for cut in range(1, len(raw)):
        p = tmp_path / "cut.tfrecord"
        p.write_bytes(raw[:cut])
        tf_out, tf_kind, tf_off = _tf_read(p)
        py_out, py_kind, py_off = _py_read(p, "NONE")
        if cut in boundaries:
            assert py_kind is None and tf_kind is None and py_out == tf_out
        elif tf_kind is not None:
            assert (py_out, py_kind, py_off) == (tf_out, tf_kind, tf_off)
        else:
            # TensorFlow ends silently when the file stops inside a header; we never do.
            assert py_out == tf_out and py_kind == "truncated"
            assert py_off == max(b for b in boundaries if b < cut)


def test_bad_length_crc_garbage_and_huge_length(tmp_path):
    records, raw = _sample_file(tmp_path)
    bad = bytearray(raw)
    bad[8] ^= 0xFF  # first record's length CRC
    cases = {"lencrc": bytes(bad), "garbage_tail": raw + b"garbage!" * 3, "garbage_head": b"\x07" * 20 + raw}
    cases["huge"] = raw + encode_record(b"x" * 40)[:12] + b"x" * 3  # a valid header, data cut short
    for name, data in cases.items():
        p = tmp_path / f"{name}.tfrecord"
        p.write_bytes(data)
        _compare_with_tf(p)


def test_skip_mode_resyncs_and_counts(tmp_path):
    records, raw = _sample_file(tmp_path)
    offsets = [o for o, _ in TFRecordReader(str(tmp_path / "ok.tfrecord")).with_offsets()]
    bad = bytearray(raw)
    bad[offsets[1] + 3] ^= 0x10  # record 1: length field -> header checksum fails, scan forward
    bad[offsets[3] + 12] ^= 0x01 if len(records[3]) else 0  # record 3: data checksum
    p = tmp_path / "bad.tfrecord"
    p.write_bytes(bytes(bad) + b"trailing-garbage")
    stats = ReadStats()
    got = list(read_records(str(p), on_corrupt="skip", stats=stats))
    expected = [r for i, r in enumerate(records) if i not in (1, 3 if records[3] else -1)]
    assert got == expected
    assert stats.skipped_records == (3 if records[3] else 2)
    skipped = (offsets[2] - offsets[1]) + len(b"trailing-garbage")
    if records[3]:
        skipped += offsets[4] - offsets[3]
    assert stats.skipped_bytes == skipped
    assert stats.records == len(expected)
    assert [e.kind for e in stats.corruptions][0] == "corrupted"
    with pytest.raises(CorruptedRecordError, match=r"bad\.tfrecord: corrupted record at %d" % offsets[1]):
        list(read_records(str(p)))


def test_compressed_truncation_is_never_silent(tmp_path):
    p = tmp_path / "x.tfrecord.gz"
    write_records(str(p), [os.urandom(1000) for _ in range(50)])
    raw = p.read_bytes()
    for cut in (len(raw) - 1, len(raw) - 8, len(raw) // 2):
        q = tmp_path / "cut.tfrecord.gz"
        q.write_bytes(raw[:cut])
        with pytest.raises(TruncatedRecordError, match="cut.tfrecord.gz"):
            list(read_records(str(q)))
    q.write_bytes(raw[:100] + b"\xff" * 50 + raw[150:])
    with pytest.raises((CorruptedRecordError, TruncatedRecordError)):
        list(read_records(str(q)))
