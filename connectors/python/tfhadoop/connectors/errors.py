"""Errors for damaged TFRecord input, worded and numbered the way TensorFlow reports them.

TensorFlow (tsl/lib/io/record_reader.cc) says ``corrupted record at N`` for a checksum mismatch
and ``truncated record at N`` for a stream that ends inside a record. N is the record's start for
a bad header or a short record, and the record's start + 12 (its data) for a bad data checksum.
``offset`` carries TensorFlow's number, ``record_offset`` always the record's start. Offsets of a
compressed file count uncompressed bytes, as TensorFlow's do.
"""
from __future__ import annotations


class TFRecordError(Exception):
    """Base class of every damaged-input error raised by ``tfhadoop.connectors``."""

    kind = "error"

    def __init__(self, path: str, offset: int, detail: str = "", record_offset: int | None = None):
        self.path = str(path)
        self.offset = int(offset)
        self.record_offset = int(offset if record_offset is None else record_offset)
        self.detail = detail
        word = "corrupted" if self.kind == "corrupted" else "truncated"
        msg = f"{self.path}: {word} record at {self.offset}"
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)


class CorruptedRecordError(TFRecordError):
    """A checksum mismatch (length or data), or a compressed stream that cannot be inflated."""

    kind = "corrupted"


class TruncatedRecordError(TFRecordError):
    """The input ends inside a record (header, data or footer), or inside a compressed stream."""

    kind = "truncated"
