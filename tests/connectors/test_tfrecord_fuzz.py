"""Property tests: arbitrary bytes give records or a clean TFRecordError, never a hang or crash."""
from __future__ import annotations

import io
import zlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfhadoop.connectors.errors import TFRecordError
from tfhadoop.connectors.tfrecord import TFRecordReader
from tfhadoop.connectors.tfrecord_writer import TFRecordWriter, encode_record

FAST = settings(max_examples=400, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


def _read(data: bytes, compression="NONE", on_corrupt="raise", buffer_size=64):
    reader = TFRecordReader(io.BytesIO(data), compression, on_corrupt=on_corrupt, buffer_size=buffer_size, name="fuzz")
    records: list[bytes] = list(reader)  # pyright: ignore[reportAssignmentType] - records are bytes without offsets asked for; the reader's unannotated generator is inferred as a union
    return records, reader.stats


@FAST
@given(st.binary(max_size=2000))
def test_any_bytes(data):
    try:
        records, _ = _read(data)
    except TFRecordError as exc:
        assert exc.path == "fuzz" and 0 <= exc.offset <= len(data)
        return
    assert sum(len(r) + 16 for r in records) == len(data)  # no silent short read


@FAST
@given(st.binary(max_size=2000))
def test_any_bytes_skip_mode_accounts_for_every_byte(data):
    records, stats = _read(data, on_corrupt="skip")
    assert sum(len(r) + 16 for r in records) + stats.skipped_bytes == len(data)


@FAST
@given(st.lists(st.binary(max_size=300), max_size=20), st.binary(max_size=50), st.integers(0, 10_000))
def test_valid_records_survive_damage_in_skip_mode(records, junk, where):
    framed = [encode_record(r) for r in records]
    if framed:
        i = where % (len(framed) + 1)
        framed.insert(i, junk)
    data = b"".join(framed)
    got, stats = _read(data, on_corrupt="skip")
    assert sum(len(r) + 16 for r in got) + stats.skipped_bytes == len(data)
    # Every intact record is found again unless the junk happened to look like records.
    if not junk:
        assert got == records and stats.skipped_records == 0


@FAST
@given(st.binary(max_size=3000), st.sampled_from(["GZIP", "ZLIB"]))
def test_any_bytes_compressed(data, compression):
    for payload in (data, zlib.compress(data)):
        try:
            _read(payload, compression)
        except TFRecordError:
            pass


@FAST
@given(st.lists(st.binary(max_size=500), max_size=30), st.sampled_from(["NONE", "GZIP", "ZLIB"]), st.integers(1, 300))
def test_roundtrip(records, compression, buffer_size):
    sink = io.BytesIO()
    sink.close = lambda: None  # keep the buffer readable after the writer closes it
    with TFRecordWriter(sink, compression, buffer_size=buffer_size) as w:
        for r in records:
            w.write(r)
    got, stats = _read(sink.getvalue(), compression, buffer_size=buffer_size)
    assert got == records and stats.records == len(records)


@FAST
@given(st.lists(st.binary(max_size=200), max_size=25), st.lists(st.integers(0, 6000), max_size=6))
def test_byte_range_splits_read_every_record_once(records, cuts):
    data = b"".join(encode_record(r) for r in records)
    bounds = sorted({0, len(data), *[c % (len(data) + 1) for c in cuts]})
    got = []
    for start, end in zip(bounds, bounds[1:]):
        reader = TFRecordReader(io.BytesIO(data), "NONE", offset=start, end=end, resync=True, buffer_size=64, name="split")
        part = list(reader)
        assert reader.stats.records == len(part)
        got.extend(part)
    assert got == records
