"""Streaming TFRecord writer in pure Python: the bytes TensorFlow's TFRecordWriter writes.

Records are framed into a buffer (``uint64 length | uint32 masked_crc(length) | data | uint32
masked_crc(data)``, little-endian) with the length's checksum remembered per length value, then
compressed if asked; an uncompressed file written to a path gets its record-boundary index
sidecar (tfhadoop.connectors.splits). The reader is tfhadoop.connectors.tfrecord.
"""
from __future__ import annotations

import bisect
import io
import os
import struct

from tfhadoop.connectors import compression as _comp
from tfhadoop.connectors import fileio
from tfhadoop.connectors.crc import MASK_DELTA as _DELTA
from tfhadoop.connectors.crc import U32_MASK as _M32
from tfhadoop.connectors.crc import crc32c, masked_crc

__all__ = ["TFRecordWriter", "encode_record", "frame_records", "write_records"]

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def encode_record(data: bytes) -> bytes:
    """One framed record (header, data, footer) as bytes."""
    header = _U64.pack(len(data))
    return header + _U32.pack(masked_crc(header)) + data + _U32.pack(masked_crc(data))


class TFRecordWriter:
    """Write records to a path or binary stream; ``write`` returns the record's offset.

    Records are framed into an in-memory buffer flushed every ``buffer_size`` bytes, then
    compressed (``compression``: None = from the file name, "GZIP", "ZLIB", "NONE"). An
    uncompressed file written to a path gets the record-boundary index sidecar
    (tfhadoop.connectors.splits) on close, an entry every ``index_interval`` bytes (0: none).
    """

    def __init__(self, dest, compression: str | None = None, buffer_size: int = 1 << 20, level: int = 6,
                 overwrite: bool = True, index_interval: int = 1 << 20):
        is_path = isinstance(dest, (str, os.PathLike))
        if is_path:
            self.path = os.fspath(dest)
            raw = fileio.open_write(self.path, overwrite=overwrite)
        else:
            self.path = getattr(dest, "name", "<stream>")
            raw = dest
        self.compression = _comp.normalize(compression, self.path)
        self._index = None
        if is_path and not self.compression and index_interval > 0:
            from tfhadoop.connectors.splits import IndexBuilder

            self._index = IndexBuilder(index_interval)
        elif is_path and fileio.scheme(self.path) in ("", "file"):
            from tfhadoop.connectors.splits import sidecar_path

            try:  # an index left by an earlier file of this name would describe other bytes
                os.remove(fileio._local(sidecar_path(self.path)))
            except FileNotFoundError:
                pass
        self._sink = _comp.DeflatingWriter(raw, self.compression, level) if self.compression else raw
        self._buf = bytearray()
        self._limit = buffer_size
        self._lcrc: dict[int, bytes] = {}
        self.offset = 0  # uncompressed bytes written so far = the next record's offset
        self.records = 0
        self._closed = False

    def write(self, data) -> int:
        length = len(data)
        header = self._lcrc.get(length)
        if header is None:
            h = _U64.pack(length)
            header = h + _U32.pack(masked_crc(h))
            if len(self._lcrc) < 65536:
                self._lcrc[length] = header
        c = crc32c(data if type(data) is bytes else bytes(data))
        buf = self._buf
        buf += header
        buf += data
        buf += _U32.pack(((((c >> 15) | (c << 17)) & _M32) + _DELTA) & _M32)
        at = self.offset
        if self._index is not None and at - self._index._last >= self._index.interval:
            self._index.before_record(self.records, at)
        self.offset = at + length + 16
        self.records += 1
        if len(buf) >= self._limit:
            self._sink.write(buf)
            buf.clear()
        return at

    def write_all(self, records) -> int:
        for r in records:
            self.write(r)
        return self.records

    def write_framed(self, framed, starts) -> None:
        """Records framed already (``frame_records``, or the native encoder's ``table_to_framed``):
        ``framed`` holds them back to back, ``starts`` each one's offset in it. The same bytes and
        the same boundary index as ``write`` of each record, in one call."""
        n = len(starts)
        if not n:
            return
        at = self.offset
        if self._index is not None:
            idx, i = self._index, 0
            while (i := bisect.bisect_left(starts, idx._last + idx.interval - at, i)) < n:
                idx.before_record(self.records + i, at + starts[i])
                i += 1
        if self._buf:
            self._sink.write(self._buf)
            self._buf.clear()
        self._sink.write(framed)
        self.offset = at + len(framed)
        self.records += n

    def flush(self) -> None:
        if self._buf:
            self._sink.write(self._buf)
            self._buf.clear()
        if hasattr(self._sink, "flush"):
            self._sink.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._buf:
            self._sink.write(self._buf)
            self._buf.clear()
        self._sink.close()
        if self._index is not None:
            self._index.build(self.offset, self.records).save(self.path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def frame_records(records) -> tuple[bytes, list[int]]:
    """``records`` framed as TFRecords back to back, and each one's offset in the result."""
    out = io.BytesIO()
    writer = TFRecordWriter(out, "NONE", index_interval=0)
    starts = [writer.write(r) for r in records]
    writer.flush()
    return out.getvalue(), starts


def write_records(path, records, compression: str | None = None, **kw) -> int:
    """Write an iterable of bytes to ``path``; returns the number of records."""
    with TFRecordWriter(path, compression, **kw) as writer:
        return writer.write_all(records)
