"""Exact byte-range splits of TFRecord files, and the record-boundary index that makes them cheap.

The index is a hidden sidecar ``.<file>.tfrindex`` beside the data file with an entry (record
ordinal, record offset, compressed-member offset) every ~1 MiB; its layout is documented once, in
connectors/python/README.md "Record-boundary index" (the JVM side reads and writes the same bytes).
``read_split(path, start, end)`` gives the records of the byte range [start, end) so that the
ranges of any cut of a file together give each record exactly once, in order:

* with a fresh index the range is snapped to indexed boundaries (no scan);
* without one, the resync candidate (first offset with valid length and data checksums) is checked
  by walking the header chain from it; if that chain breaks, or a payload on it starts like a
  frame (a record holding a TFRecord stream), the first boundary is found by walking the true
  chain from the file start (``verify="always"`` does that in every split).
"""
from __future__ import annotations

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
LOOKAHEAD = 1 << 20
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


_BROKEN, _NESTED = -1, -2


def _walk(f, start: int, until: int, size: int, stop_on_nested: bool) -> int:
    """Follow record headers from boundary ``start`` to the first boundary >= ``until`` (or the
    file end); _BROKEN when the chain breaks, _NESTED when a payload starts like a frame."""
    p = start
    f.seek(p)
    while p < until and p < size:
        if size - p < 16:
            return _BROKEN
        h = f.read(24 if stop_on_nested else 12)
        if len(h) < 12 or masked_crc(h[:8]) != _U32.unpack_from(h, 8)[0]:
            return _BROKEN
        n = struct.unpack_from("<Q", h)[0]
        if n > size - p - 16:
            return _BROKEN
        if stop_on_nested and n >= 16 and len(h) == 24 and masked_crc(h[12:20]) == _U32.unpack_from(h, 20)[0] \
                and struct.unpack_from("<Q", h, 12)[0] <= n - 16:
            return _NESTED
        p += 16 + n
        f.seek(p)
    return p


def read_split(path: str, start: int, end: int | None, use_index: bool = True, verify: str = "auto"):
    """Yield ``(offset, record)`` for the records of ``path`` that belong to byte range
    [start, end) (``end=None``: to the file end); see the module docstring for the rule."""
    if verify not in ("auto", "always"):
        raise ValueError("verify must be 'auto' or 'always'")
    size = fileio.size(path)
    if size is None:
        raise ValueError(f"{path}: size unknown, cannot split")
    if end is not None and end >= size:
        end = None
    idx = load_boundary_index(path) if use_index and (start > 0 or end is not None) else None
    if idx is not None:
        start = idx.boundary_at_or_after(start)
        if end is not None:
            end = idx.boundary_at_or_after(end)
            end = None if end >= size else end
    elif start > 0:
        start = _first_boundary(path, start, end, size, verify)
        if start is None:
            return
    if start >= size or (end is not None and start >= end):
        return
    with TFRecordReader(path, "NONE", offset=start, end=end if end is not None else None) as r:
        yield from r.with_offsets()


def _first_boundary(path, start, end, size, verify):
    with TFRecordReader(path, "NONE", offset=start, resync=True) as r:
        cand = next((off for off, _ in r.with_offsets()), None)
    if cand is None or (end is not None and cand >= end):
        return None
    with fileio.open_read(path) as f:
        if verify == "auto":
            until = size if end is None else min(size, end + LOOKAHEAD)
            if _walk(f, cand, until, size, True) >= 0:
                return cand
        true = _walk(f, 0, start, size, False)
    if true < 0:
        return cand  # the chain from the file start breaks before this range: that range reports it
    return None if (end is not None and true >= end) else true
