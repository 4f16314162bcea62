"""Exact byte-range splits of TFRecord files, and the record-boundary index that makes them cheap.

The index is a hidden sidecar ``.<file>.tfrindex`` beside the data file with an entry (record
ordinal, record offset, compressed-member offset) every ~1 MiB; its layout is documented once, in
connectors/python/README.md "Record-boundary index" (the JVM side reads and writes the same bytes).
``read_split(path, start, end)`` gives the records of the byte range [start, end) so that the
ranges of any cut of a file together give each record exactly once, in order:

* with a fresh index the range is snapped to indexed boundaries (no scan);
* without one, nothing is guessed (a payload can hold valid frames, so an offset whose checksums
  match proves nothing): the first record at or after ``start`` is found by walking the header
  chain (12-byte headers, payloads seeked over) from the nearest proven boundary, the file start
  or one this process already proved for the same local file version. Only where that chain
  breaks before the range (the file is corrupt there; the range holding the break reports it)
  does the reader fall back to the first offset with valid length and data checksums.
"""
from __future__ import annotations

import io
import logging
import os
import struct
from dataclasses import dataclass

from tfhadoop.connectors import fileio
from tfhadoop.connectors.crc import masked_crc
from tfhadoop.connectors.tfrecord import TFRecordReader

__all__ = ["BoundaryIndex", "IndexBuilder", "sidecar_path", "load_boundary_index", "build_boundary_index",
           "read_split", "SUFFIX", "DEFAULT_INTERVAL"]

log = logging.getLogger(__name__)

SUFFIX = ".tfrindex"
DEFAULT_INTERVAL = 1 << 20
MARK_INTERVAL = 1 << 20
_KNOWN_FILES = 256
MAGIC = b"TFRIDX\x00\x01"
_HEAD = struct.Struct("<8sIIQQQQQ")
_ENTRY = struct.Struct("<QQQ")
_U32 = struct.Struct("<I")


def sidecar_path(path: str) -> str:
    """``dir/.name.tfrindex`` for ``dir/name``: hidden, so Hadoop, Spark and the peers skip it."""
    path = os.fspath(path)
    head, sep, base = path.rpartition("/")
    return f"{head}{sep}.{base}{SUFFIX}"


def replace_with_index(src: str, dst: str) -> None:
    """``os.replace`` of a local data file that takes its index sidecar along (the sidecar is
    named after the file, so a file written under a temporary name and renamed into place would
    otherwise lose its index and leave the old one behind); a stale sidecar of ``dst`` goes."""
    os.replace(src, dst)
    if os.path.exists(sidecar_path(src)):
        os.replace(sidecar_path(src), sidecar_path(dst))
    elif os.path.exists(sidecar_path(dst)):
        os.remove(sidecar_path(dst))


@dataclass
class BoundaryIndex:
    data_length: int
    stream_length: int
    records: int
    interval: int
    ordinals: list
    offsets: list
    members: list
    compression: int = 0

    def to_bytes(self) -> bytes:
        body = bytearray(_HEAD.pack(MAGIC, 1, self.compression, self.data_length, self.stream_length,
                                    self.records, self.interval, len(self.offsets)))
        for e in zip(self.ordinals, self.offsets, self.members):
            body += _ENTRY.pack(*e)
        return bytes(body) + _U32.pack(masked_crc(bytes(body)))

    @classmethod
    def from_bytes(cls, b: bytes, where: str) -> BoundaryIndex:
        if len(b) < _HEAD.size + 4 or b[:8] != MAGIC:
            raise ValueError(f"{where} is not a tfrecord index (bad magic)")
        if masked_crc(b[:-4]) != _U32.unpack_from(b, len(b) - 4)[0]:
            raise ValueError(f"{where}: index checksum mismatch")
        _, version, comp, dlen, slen, recs, interval, n = _HEAD.unpack_from(b)
        if version != 1:
            raise ValueError(f"{where}: index version {version} is not supported (1 is)")
        if n < 1 or _HEAD.size + _ENTRY.size * n + 4 != len(b):
            raise ValueError(f"{where}: index holds {n} entries but is {len(b)} bytes")
        ent = [_ENTRY.unpack_from(b, _HEAD.size + _ENTRY.size * i) for i in range(n)]
        if ent[0] != (0, 0, 0) or any(not all(a[k] < c[k] for k in range(3)) for a, c in zip(ent, ent[1:])):
            raise ValueError(f"{where}: index entries out of order")
        return cls(dlen, slen, recs, interval, [e[0] for e in ent], [e[1] for e in ent], [e[2] for e in ent], comp)

    def boundary_at_or_after(self, pos: int) -> int:
        import bisect

        i = bisect.bisect_left(self.offsets, pos)
        return self.offsets[i] if i < len(self.offsets) else self.stream_length

    def save(self, data_path: str) -> str:
        target = sidecar_path(data_path)
        with fileio.open_write(target) as f:
            f.write(self.to_bytes())
        return target


class IndexBuilder:
    """Entries while a writer frames records: one whenever ``interval`` bytes passed since the last."""

    def __init__(self, interval: int = DEFAULT_INTERVAL):
        self.interval = max(1, int(interval))
        self.ordinals = [0]
        self.offsets = [0]
        self._last = 0

    def before_record(self, ordinal: int, pos: int) -> None:
        if pos - self._last >= self.interval:
            self.ordinals.append(ordinal)
            self.offsets.append(pos)
            self._last = pos

    def build(self, length: int, records: int) -> BoundaryIndex:
        return BoundaryIndex(length, length, records, self.interval, self.ordinals, self.offsets, list(self.offsets))


def load_boundary_index(path: str) -> BoundaryIndex | None:
    """The index of an uncompressed ``path``, or None when absent or not describing the file as it
    is now (logged and ignored)."""
    side = sidecar_path(path)
    try:
        with fileio.open_read(side) as f:
            data = f.read()
    except (FileNotFoundError, OSError):
        return None
    try:
        idx = BoundaryIndex.from_bytes(data, side)
    except ValueError as exc:
        log.warning("ignoring index %s", exc)
        return None
    size = fileio.size(path)
    if idx.compression or size != idx.data_length or idx.stream_length != idx.data_length:
        log.warning("ignoring stale index %s: it describes a file of %d bytes, %s has %s", side, idx.data_length,
                    path, size)
        return None
    return idx


def build_boundary_index(path: str, interval: int = DEFAULT_INTERVAL, save: bool = True) -> BoundaryIndex:
    """Scan an uncompressed file once (every checksum checked) and index its record boundaries."""
    b = IndexBuilder(interval)
    n = end = 0
    with TFRecordReader(path, "NONE") as r:
        for off, data in r.with_offsets():
            b.before_record(n, off)
            n += 1
            end = off + 16 + len(data)
    idx = b.build(end, n)
    if save:
        idx.save(path)
    return idx


_BROKEN = -1
_known: dict = {}  # (path, size, mtime_ns) -> sorted proven boundaries; insertion order = age


def _file_key(path: str, size: int):
    """The version of a local file (None elsewhere: remote ranges walk from the file start)."""
    if fileio.scheme(path) not in ("", "file"):
        return None
    try:
        st = os.stat(fileio._local(path))
    except OSError:
        return None
    return (os.path.realpath(fileio._local(path)), size, st.st_mtime_ns)


def _nearest_known(key, pos: int) -> int:
    import bisect

    marks = _known.get(key) if key else None
    if not marks:
        return 0
    i = bisect.bisect_right(marks, pos) - 1
    return marks[i] if i >= 0 else 0


def _remember(key, offsets) -> None:
    if not key:
        return
    marks = _known.pop(key, [])
    _known[key] = sorted(set(marks).union(o for o in offsets if o > 0))
    while len(_known) > _KNOWN_FILES:
        _known.pop(next(iter(_known)))


def forget_boundaries() -> None:
    """Drop the boundaries this process proved (benchmarks measure the walk from the file start)."""
    _known.clear()


def _walk(f, start: int, until: int, size: int, marks: list | None = None) -> int:
    """Follow record headers from proven boundary ``start`` to the first boundary >= ``until`` (or
    the file end); _BROKEN when the chain breaks. Appends a checkpoint to ``marks`` every
    MARK_INTERVAL bytes and the last boundary before ``until``."""
    p = last = mark = start
    f.seek(p)
    while p < until and p < size:
        if size - p < 16:
            return _BROKEN
        h = f.read(12)
        if len(h) < 12 or masked_crc(h[:8]) != _U32.unpack_from(h, 8)[0]:
            return _BROKEN
        n = struct.unpack_from("<Q", h)[0]
        if n > size - p - 16:
            return _BROKEN
        if marks is not None and p - mark >= MARK_INTERVAL:
            marks.append(p)
            mark = p
        last = p
        p += 16 + n
        f.seek(p)
    if marks is not None:
        marks.append(last)
    return p


def read_split(path: str, start: int, end: int | None, use_index: bool = True, walk_cache: bool = True):
    """Yield ``(offset, record)`` for the records of ``path`` that belong to byte range
    [start, end) (``end=None``: to the file end); see the module docstring for the rule.
    ``walk_cache=False`` walks from the file start even where this process proved a nearer boundary."""
    size = fileio.size(path)
    if size is None:
        raise ValueError(f"{path}: size unknown, cannot split")
    if end is not None and end >= size:
        end = None
    idx = load_boundary_index(path) if use_index and (start > 0 or end is not None) else None
    key = _file_key(path, size) if walk_cache and idx is None else None
    if idx is not None:
        start = idx.boundary_at_or_after(start)
        if end is not None:
            end = idx.boundary_at_or_after(end)
            end = None if end >= size else end
    elif start > 0:
        first, proven = _first_boundary(path, start, end, size, key)
        if first is None:
            return
        start, key = first, key if proven else None
    if start >= size or (end is not None and start >= end):
        return
    last = None
    with TFRecordReader(path, "NONE", offset=start, end=end if end is not None else None) as r:
        for item in r.with_offsets():
            last = item[0]
            yield item
    if last is not None:
        _remember(key, [last])  # the next range's walk is one header from here


def _first_boundary(path, start, end, size, key):
    marks: list = []
    with fileio.open_read(path) as raw:
        f = io.BufferedReader(raw, 1 << 16) if isinstance(raw, io.RawIOBase) else raw
        known = _nearest_known(key, start)
        true = _walk(f, known, start, size, marks)
        if true < 0 and known > 0:
            true = _walk(f, 0, start, size, marks)  # a remembered boundary that does not hold
    if true < 0:
        # the chain from the file start breaks before this range: that range reports it; this one
        # resyncs on the first offset with valid checksums, as reading on after the damage would
        with TFRecordReader(path, "NONE", offset=start, resync=True) as r:
            cand = next((off for off, _ in r.with_offsets()), None)
        return (None if cand is None or (end is not None and cand >= end) else cand), False
    _remember(key, marks)
    return (None if (end is not None and true >= end) else true), True
