"""Issue 20 in the Python reader: byte-range splits (tfhadoop.connectors.splits.read_split) of
files whose records hold TFRecord framing give every record once, in order, at any split size,
with the writers' record-boundary index and without it; TensorFlow's whole-file read agrees."""
from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfhadoop.cli import main
from tfhadoop.connectors.errors import TFRecordError
from tfhadoop.connectors.splits import BoundaryIndex, load_boundary_index, read_split, sidecar_path
from tfhadoop.connectors.tfrecord_writer import encode_record, write_records


def nested_records(rng: random.Random, n: int, max_len: int, big: int) -> list[bytes]:
    """Nested streams (even twice), payloads holding a whole frame, empty records, records larger
    than ``big`` bytes made of frames, and plain bytes."""
    out = []
    for _ in range(n):
        kind = rng.randrange(6)
        if kind == 0:
            out.append(b"")
        elif kind in (1, 2):
            inner = [rng.randbytes(rng.randint(0, max_len)) for _ in range(rng.randint(1, 4))]
            if kind == 2:
                inner[0] = encode_record(inner[0])
            out.append(b"".join(map(encode_record, inner)))
        elif kind == 3:
            f = encode_record(rng.randbytes(rng.randint(0, max_len)))
            pad = rng.randbytes(rng.randint(0, max_len))
            at = rng.randint(0, len(pad))
            out.append(pad[:at] + f + pad[at:])
        elif kind == 4 and big:
            parts, total = [], 0
            while total < big:
                parts.append(encode_record(rng.randbytes(rng.randint(1, max(1, big // 3)))))
                total += len(parts[-1])
            out.append(b"".join(parts))
        else:
            out.append(rng.randbytes(rng.randint(0, max_len)))
    return out


def read_cut(path: str, size: int, split: int, **kw) -> list[tuple[int, bytes]]:
    got = []
    for s in range(0, max(size, 1), split):
        got.extend(read_split(path, s, s + split if s + split < size else None, **kw))
    return got


def whole(path: str) -> list[bytes]:
    return [r for _, r in read_split(path, 0, None)]  # pyright: ignore[reportReturnType] - read_split yields (offset, bytes) pairs; the reader's unannotated generator is inferred as a union


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), n=st.integers(1, 80), max_len=st.integers(0, 1500),
       big=st.sampled_from([0, 5_000, 50_000]), interval=st.integers(64, 1 << 16),
       split_log=st.integers(10, 26))
def test_any_cut_reads_every_record_once(tmp_path, seed, n, max_len, big, interval, split_log):
    rng = random.Random(seed)
    records = nested_records(rng, n, max_len, big)
    path = str(tmp_path / f"f{seed}.tfrecord")
    write_records(path, records, index_interval=interval)
    size = os.path.getsize(path)
    assert load_boundary_index(path) is not None
    split = max(1 << split_log, size // 60)  # 1 KB .. 64 MB, at most ~60 splits (keeps the run short)
    for kw in ({}, {"use_index": False, "walk_cache": False}, {"use_index": False}):
        got = read_cut(path, size, split, **kw)
        assert [r for _, r in got] == records, kw
        assert [o for o, _ in got] == sorted({o for o, _ in got})


def test_issue_cases_match_tensorflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    rng = random.Random(20)
    small = [b"".join(encode_record(rng.randbytes(rng.randint(0, 200))) for _ in range(rng.randint(1, 4)))
             for _ in range(2000)]
    large = [b"".join(encode_record(rng.randbytes(rng.randint(0, 60_000))) for _ in range(rng.randint(1, 4)))
             for _ in range(30)]
    for name, records, splits in (("small", small, (4 << 10, 64 << 10, 1 << 20)), ("large", large, (None, 64 << 10))):
        path = str(tmp_path / f"{name}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for r in records:
                w.write(r)
        want = [r.numpy() for r in tf.data.TFRecordDataset([path])]
        assert want == records and not os.path.exists(sidecar_path(path))
        size = os.path.getsize(path)
        for split in splits:
            split = split or size // 2 + 1
            assert [r for _, r in read_cut(path, size, split)] == want, (name, split)
        # `tfhadoop records index` writes the boundary index for files made elsewhere
        assert main(["records", "index", "--interval", "4096", path]) == 0
        idx = load_boundary_index(path)
        assert idx is not None and idx.records == len(records) and len(idx.offsets) > 1
        assert [r for _, r in read_cut(path, size, 3000)] == want


def test_stale_or_damaged_index_is_ignored(tmp_path, caplog):
    rng = random.Random(3)
    records = nested_records(rng, 200, 1000, 0)
    path = str(tmp_path / "a.tfrecord")
    write_records(path, records, index_interval=512)
    side = sidecar_path(path)
    good = open(side, "rb").read()
    write_records(path, records + [b"x"], index_interval=0)
    open(side, "wb").write(good)
    assert load_boundary_index(path) is None and "stale index" in caplog.text
    assert [r for _, r in read_cut(path, os.path.getsize(path), 1000)] == records + [b"x"]
    bad = bytearray(good)
    bad[60] ^= 1
    open(side, "wb").write(bytes(bad))
    assert load_boundary_index(path) is None
    with pytest.raises(ValueError, match="checksum"):
        BoundaryIndex.from_bytes(bytes(bad), side)


def test_real_corruption_names_file_and_offset(tmp_path):
    rng = random.Random(4)
    records = nested_records(rng, 200, 1000, 0)
    path = str(tmp_path / "bad.tfrecord")
    write_records(path, records, index_interval=2048)
    offsets = [o for o, _ in read_split(path, 0, None)]
    data = bytearray(open(path, "rb").read())
    victim = next(i for i in range(150, 200) if records[i])
    data[offsets[victim] + 12] ^= 0x40
    open(path, "wb").write(bytes(data))
    os.remove(sidecar_path(path))
    write_records(str(tmp_path / "good.tfrecord"), records, index_interval=2048)
    os.replace(sidecar_path(str(tmp_path / "good.tfrecord")), sidecar_path(path))  # a fresh index of the same layout
    for kw in ({}, {"use_index": False}):
        for split in (1000, 7777, 1 << 20):
            with pytest.raises(TFRecordError, match=rf"bad\.tfrecord.*{offsets[victim]}|{offsets[victim]}.*bad\.tfrecord"):
                read_cut(path, len(data), split, **kw)


def test_ranges_inside_a_huge_record_holding_a_stream_return_nothing(tmp_path):
    """What no check of a resync candidate can decide: a record far longer than the range (and any
    look-ahead) whose payload is a valid stream of plain records. Only the walk from a proven
    boundary knows those ranges hold no record start; read in reverse, no range can lean on the
    boundary its predecessor proved."""
    from tfhadoop.connectors.splits import forget_boundaries

    rng = random.Random(77)
    inner = b"".join(encode_record(rng.randbytes(1000)) for _ in range(3000))
    records = [b"\x01\x02", inner, b"", b"\x03"]
    path = str(tmp_path / "huge.tfrecord")
    write_records(path, records, index_interval=0)
    size = os.path.getsize(path)
    for walk_cache in (False, True):
        forget_boundaries()
        kw = {"walk_cache": walk_cache}
        assert list(read_split(path, 1 << 20, (1 << 20) + 1024, **kw)) == []
        parts = [list(read_split(path, s, s + 65536 if s + 65536 < size else None, **kw))
                 for s in reversed(range(0, size, 65536))]
        assert [r for part in reversed(parts) for _, r in part] == records, walk_cache
        assert [r for _, r in read_cut(path, size, 1024, **kw)] == records, walk_cache
