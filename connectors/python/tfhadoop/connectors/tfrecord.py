"""Streaming TFRecord reader in pure Python, checked like TensorFlow checks (the writer: tfrecord_writer).

Record layout: ``uint64 length | uint32 masked_crc(length) | data | uint32 masked_crc(data)``
(little-endian). The reader pulls the file in big pieces (1 MiB by default) and slices records
out of that buffer, so the per-record cost is one slice and one C CRC call; the length checksum
is remembered per length value (the same 8 bytes always have the same CRC), which makes
fixed-size records nearly free to frame.

Damage raises :class:`~tfhadoop.connectors.errors.CorruptedRecordError` or
:class:`~tfhadoop.connectors.errors.TruncatedRecordError` with TensorFlow's offset. Unlike
TensorFlow, a file cut inside a record *header* also raises (TensorFlow ends silently there).
With ``on_corrupt="skip"`` the reader resynchronises instead: a record whose header checksum
holds but whose data does not is skipped by its (trusted) length; otherwise the reader scans
forward byte by byte for the next offset whose length checksum and data checksum both hold.
Each damaged stretch counts as one skipped record; skipped bytes are counted exactly.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from tfhadoop.connectors import compression as _comp
from tfhadoop.connectors import fileio
from tfhadoop.connectors.crc import MASK_DELTA as _DELTA
from tfhadoop.connectors.crc import U32_MASK as _M32
from tfhadoop.connectors.crc import crc32c, masked_crc
from tfhadoop.connectors.errors import CorruptedRecordError, TFRecordError, TruncatedRecordError

__all__ = [
    "TFRecordReader",
    "ReadStats",
    "read_records",
]

_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")
HEADER_SIZE, FOOTER_SIZE = 12, 4
_MAX_READ = 64 << 20  # never ask a stream for more than this in one call


@dataclass
class ReadStats:
    """What a reader saw. Counters are final once iteration ends (or the reader is closed)."""

    records: int = 0
    bytes: int = 0  # record payload bytes returned
    skipped_records: int = 0  # damaged stretches skipped (on_corrupt="skip")
    skipped_bytes: int = 0
    corruptions: list = field(default_factory=list)  # the first 1000 TFRecordErrors skipped

    def add(self, other: ReadStats) -> None:
        self.records += other.records
        self.bytes += other.bytes
        self.skipped_records += other.skipped_records
        self.skipped_bytes += other.skipped_bytes
        self.corruptions.extend(other.corruptions[: max(0, 1000 - len(self.corruptions))])


class _Window:
    """A sliding view of the stream: ``buf`` holds the bytes from file offset ``base`` on."""

    __slots__ = ("stream", "buf", "base", "eof", "chunk")

    def __init__(self, stream, base: int, chunk: int):
        self.stream, self.buf, self.base, self.eof, self.chunk = stream, b"", base, False, chunk

    def fill(self, pos: int, need: int) -> int:
        """Make ``need`` bytes from ``pos`` available if the stream has them; drops what lies
        before ``pos`` and returns the new index of ``pos`` (0 unless nothing had to be read)."""
        have = len(self.buf) - pos
        if have >= need or self.eof:
            return pos
        parts = [self.buf[pos:]] if have else []
        self.base += pos
        read = self.stream.read
        while have < need:
            piece = read(min(max(self.chunk, need - have), _MAX_READ))
            if not piece:
                self.eof = True
                break
            parts.append(piece)
            have += len(piece)
        self.buf = b"".join(parts) if len(parts) != 1 else bytes(parts[0])
        return 0


def _records(stream, path, start, stats, check_crc, skip, with_offsets, chunk, resync=False) -> Generator[Any, None, None]:
    """The reading loop: yields payloads (or ``(offset, payload)``) from ``stream``. One loop for
    both (it is the hot path): the element type follows ``with_offsets``, so the public
    iterators below state it."""
    w = _Window(stream, start, chunk)
    if resync:
        first = _resync(w, 0)
        if first is None:
            return
        start_pos = first  # the bytes before it end the previous split's record: not damage
    else:
        start_pos = 0
    unpack_header = _HEADER.unpack_from
    unpack_u32 = _U32.unpack_from
    lcrc_cache: dict[int, int] = {}
    pos = start_pos
    nrec = nbytes = 0
    try:
        while True:
            buf = w.buf
            n = len(buf)
            # Fast path: whole records inside the buffer.
            while pos + HEADER_SIZE <= n:
                length, lcrc = unpack_header(buf, pos)
                good = lcrc_cache.get(length)
                if good is None:
                    c = crc32c(buf[pos : pos + 8])
                    good = ((((c >> 15) | (c << 17)) & _M32) + _DELTA) & _M32
                    if len(lcrc_cache) < 65536:
                        lcrc_cache[length] = good
                if good != lcrc:
                    break
                dstart = pos + HEADER_SIZE
                dend = dstart + length
                if dend + FOOTER_SIZE > n:
                    break
                data = buf[dstart:dend]
                if check_crc:
                    c = crc32c(data)
                    if ((((c >> 15) | (c << 17)) & _M32) + _DELTA) & _M32 != unpack_u32(buf, dend)[0]:
                        break
                nrec += 1
                nbytes += length
                yield (w.base + pos, data) if with_offsets else data
                pos = dend + FOOTER_SIZE
            # Slow path: one record that straddles the buffer end, damage, or the end of input.
            pos = w.fill(pos, HEADER_SIZE)
            buf = w.buf
            avail = len(buf) - pos
            if avail == 0:
                return
            rec = w.base + pos
            if avail < HEADER_SIZE:
                err = TruncatedRecordError(path, rec, f"{avail} of {HEADER_SIZE} header bytes")
                pos = _damaged(w, pos, err, stats, skip, None)
                continue
            length, lcrc = unpack_header(buf, pos)
            if masked_crc(buf[pos : pos + 8]) != lcrc:
                err = CorruptedRecordError(path, rec, "length checksum mismatch")
                pos = _damaged(w, pos, err, stats, skip, None)
                continue
            pos = w.fill(pos, HEADER_SIZE + length + FOOTER_SIZE)
            buf = w.buf
            rec = w.base + pos
            if len(buf) - pos < HEADER_SIZE + length + FOOTER_SIZE:
                got = len(buf) - pos - HEADER_SIZE
                err = TruncatedRecordError(path, rec, f"record of {length} bytes, input ends after {got}")
                pos = _damaged(w, pos, err, stats, skip, None)
                continue
            dend = pos + HEADER_SIZE + length
            data = buf[pos + HEADER_SIZE : dend]
            if check_crc and masked_crc(data) != unpack_u32(buf, dend)[0]:
                err = CorruptedRecordError(
                    path, rec + HEADER_SIZE, f"data checksum mismatch in the record at {rec}", rec
                )
                pos = _damaged(w, pos, err, stats, skip, length)
                continue
            nrec += 1
            nbytes += length
            yield (rec, data) if with_offsets else data
            pos = dend + FOOTER_SIZE
    finally:
        stats.records += nrec
        stats.bytes += nbytes


def _damaged(w: _Window, pos: int, err: TFRecordError, stats: ReadStats, skip: bool, length):
    """Raise ``err``, or (skip mode) count it and return the index of the next good record."""
    if not skip:
        raise err
    stats.skipped_records += 1
    if len(stats.corruptions) < 1000:
        stats.corruptions.append(err)
    start = w.base + pos
    if length is not None:  # header checksum held: the length is trustworthy
        new = pos + HEADER_SIZE + length + FOOTER_SIZE
    else:
        new = _resync(w, pos + 1)
    if new is None:  # nothing valid up to the end: everything from the damage on is skipped
        end = w.base + len(w.buf)
        stats.skipped_bytes += end - start
        w.buf, w.base = b"", end
        return 0
    stats.skipped_bytes += w.base + new - start
    return new


def _resync(w: _Window, pos: int):
    """Index of the first offset >= pos where a whole valid record starts, or None at EOF.
    May move the window (``w.base`` grows); the caller measures skipped bytes by file offsets."""
    unpack_header = _HEADER.unpack_from
    while True:
        pos = w.fill(pos, HEADER_SIZE)
        buf = w.buf
        end = len(buf) - HEADER_SIZE
        while pos <= end:
            length, lcrc = unpack_header(buf, pos)
            if masked_crc(buf[pos : pos + 8]) == lcrc:
                break
            pos += 1
        else:
            if w.eof:
                return None
            pos = max(pos, 0)
            continue
        pos = w.fill(pos, HEADER_SIZE + length + FOOTER_SIZE)
        buf = w.buf
        dend = pos + HEADER_SIZE + length
        if dend + FOOTER_SIZE <= len(buf) and masked_crc(buf[pos + HEADER_SIZE : dend]) == _U32.unpack_from(buf, dend)[0]:
            return pos
        pos += 1


class TFRecordReader:
    """Iterate over the records of one TFRecord file (or open binary stream).

    ``compression``: None (from the file name), "GZIP", "ZLIB" or "" / "NONE".
    ``on_corrupt``: "raise" (default, like TensorFlow) or "skip" (resync, counted in ``stats``).
    ``offset``: start at this byte offset (of the uncompressed stream), e.g. from a record index.
    ``check_crc=False`` skips the data checksum (the length checksum is always checked).
    ``resync=True`` (with an ``offset`` that is not known to be a record start, e.g. a split
    boundary): start at the first offset >= ``offset`` where a record with valid length and data
    checksums begins. ``end``: stop before the first record starting at or after ``end``. With
    both, byte-range splits of one file read every record exactly once (a record belongs to the
    split it starts in). A payload that itself embeds a framed TFRecord can fool ``resync``;
    ``tfhadoop.connectors.splits.read_split`` is exact.
    """

    def __init__(
        self,
        source,
        compression: str | None = None,
        on_corrupt: str = "raise",
        check_crc: bool = True,
        offset: int = 0,
        buffer_size: int = 1 << 20,
        name: str | None = None,
        end: int | None = None,
        resync: bool = False,
    ):
        if on_corrupt not in ("raise", "skip"):
            raise ValueError("on_corrupt must be 'raise' or 'skip'")
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            raw = fileio.open_read(self.path)
        else:
            self.path = name or getattr(source, "name", "<stream>")
            raw = source
        self.compression = _comp.normalize(compression, self.path)
        self._raw = raw
        self.stream = raw
        if self.compression:
            self.stream = _comp.InflatingReader(raw, self.compression, self.path, buffer_size)
        if offset:
            _seek(self.stream, offset, self.path, self.compression)
        self.offset = offset
        self.stats = ReadStats()
        self._skip = on_corrupt == "skip"
        self._check_crc = check_crc
        self._buffer_size = buffer_size
        self._end = end
        self._resync = bool(resync and offset)

    def _gen(self, with_offsets):
        return _records(self.stream, self.path, self.offset, self.stats, self._check_crc, self._skip,
                        with_offsets or self._end is not None, self._buffer_size, self._resync)

    def __iter__(self) -> Iterator[bytes]:
        if self._end is None:
            return self._gen(False)
        return (data for _, data in self._bounded(self._end))

    def with_offsets(self) -> Iterator[tuple[int, bytes]]:
        """Iterate ``(offset, record)`` pairs; offset is where the record's header starts."""
        return self._gen(True) if self._end is None else self._bounded(self._end)

    def _bounded(self, end: int) -> Iterator[tuple[int, bytes]]:
        gen = self._gen(True)
        extra = None
        try:
            for item in gen:
                if item[0] >= end:
                    extra = item  # read to find the boundary; it belongs to the next split
                    break
                yield item
        finally:
            gen.close()
            if extra is not None:
                self.stats.records -= 1
                self.stats.bytes -= len(extra[1])

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _seek(stream, offset: int, path: str, compressed: str) -> None:
    if not compressed and getattr(stream, "seekable", lambda: False)():
        stream.seek(offset)
        return
    left = offset  # compressed (or unseekable) input: read and drop
    while left:
        piece = stream.read(min(left, 1 << 20))
        if not piece:
            raise TruncatedRecordError(path, offset - left, f"cannot seek to {offset}: input ends first")
        if len(piece) > left:
            raise ValueError("stream returned more than asked")
        left -= len(piece)


def read_records(paths, compression: str | None = None, on_corrupt: str = "raise", stats: ReadStats | None = None,
                 **kw) -> Iterator[bytes]:
    """Yield the records of every file in ``paths`` (globs and directories expanded), in order."""
    for path in fileio.expand(paths):
        with TFRecordReader(path, compression, on_corrupt, **kw) as reader:
            try:
                yield from reader
            finally:
                if stats is not None:
                    stats.add(reader.stats)
