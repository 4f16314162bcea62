"""Whole-stream compression of TFRecord files: TensorFlow's ``GZIP`` and ``ZLIB`` options.

Decompression is streamed in large pieces so a multi-GB ``.tfrecord.gz`` never sits in memory.
A stream that ends before its compressed end marker raises, so a cut-off download is never
mistaken for a short file.
"""
from __future__ import annotations

import zlib

from tfhadoop.connectors.errors import CorruptedRecordError, TruncatedRecordError

NONE, GZIP, ZLIB = "", "GZIP", "ZLIB"
_WBITS = {GZIP: 31, ZLIB: 15}
_EXTENSIONS = {".gz": GZIP, ".gzip": GZIP, ".zz": ZLIB, ".zlib": ZLIB, ".deflate": ZLIB}


def normalize(compression: str | None, path: str | None = None) -> str:
    """``None``/``"auto"`` means: from the file name (``.gz`` -> GZIP, ``.zz``/``.zlib`` -> ZLIB)."""
    if compression is None or str(compression).lower() == "auto":
        name = str(path or "").lower()
        for ext, kind in _EXTENSIONS.items():
            if name.endswith(ext):
                return kind
        return NONE
    value = str(compression).upper()
    if value in ("", "NONE", "UNCOMPRESSED"):
        return NONE
    if value in ("GZIP", "GZ"):
        return GZIP
    if value in ("ZLIB", "DEFLATE"):
        return ZLIB
    raise ValueError(f"unknown compression {compression!r}: use GZIP, ZLIB or NONE")


class InflatingReader:
    """``read(n)`` over a compressed raw stream; returns b'' only at the compressed end."""

    def __init__(self, raw, compression: str, path: str, chunk: int = 1 << 20):
        self._raw, self._path, self._chunk = raw, path, chunk
        self._wbits = _WBITS[compression]
        self._d = zlib.decompressobj(self._wbits)
        self._out = 0  # uncompressed bytes returned so far, for error offsets
        self._raw_seen = False
        self._done = False

    def read(self, n: int = -1) -> bytes:
        limit = n if n and n > 0 else self._chunk  # at most n bytes per call, like a file
        while not self._done:
            d = self._d
            if d.unconsumed_tail:
                data = d.unconsumed_tail
            elif d.eof:
                data = d.unused_data or self._raw.read(self._chunk)
                if not data:
                    self._done = True
                    break
                # Concatenated gzip members (what `cat a.gz b.gz` gives) continue the stream.
                d = self._d = zlib.decompressobj(self._wbits)
            else:
                data = self._raw.read(self._chunk)
                if not data:
                    self._done = True
                    if self._raw_seen:
                        raise TruncatedRecordError(
                            self._path, self._out, "compressed stream ends before its end marker"
                        )
                    break  # an empty file holds no records, compressed or not
            self._raw_seen = True
            try:
                out = d.decompress(data, limit)
            except zlib.error as exc:
                raise CorruptedRecordError(self._path, self._out, f"cannot decompress: {exc}") from None
            if out:
                self._out += len(out)
                return out
        return b""

    def close(self) -> None:
        self._raw.close()


class DeflatingWriter:
    """``write(bytes)`` compressing into a raw writable stream; ``close`` writes the end marker."""

    def __init__(self, raw, compression: str, level: int = 6):
        self._raw = raw
        self._c = zlib.compressobj(level, zlib.DEFLATED, _WBITS[compression])

    def write(self, data) -> int:
        out = self._c.compress(data)
        if out:
            self._raw.write(out)
        return len(data)

    def flush(self) -> None:
        self._raw.flush() if hasattr(self._raw, "flush") else None

    def close(self) -> None:
        tail = self._c.flush()
        if tail:
            self._raw.write(tail)
        self._raw.close()
