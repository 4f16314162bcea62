"""TFRecord files -> records handed to a decoder (:class:`.arrow_codec._Batches`) in batches,
in bounded memory: framed in Rust from large reads when the native codec is built, record by
record in Python otherwise, with the same yields and the same errors (file and offset named)."""
from __future__ import annotations

from tfhadoop.connectors.arrow_codec import _Batches
from tfhadoop.connectors.arrow_schema import _locate


def _with_offsets(paths, compression):
    from tfhadoop.connectors import fileio
    from tfhadoop.connectors.tfrecord import TFRecordReader

    for path in fileio.expand(paths):
        with TFRecordReader(path, compression) as reader:
            for offset, data in reader.with_offsets():
                yield path, offset, data


_CHUNK = 8 << 20  # bytes read per call when the native codec frames the records


def _framed(paths, compression, b: _Batches, batch_rows: int, on_bytes, max_rows=None):
    """Native framing: each file's (decompressed) stream is read in ``_CHUNK`` pieces and handed
    whole to Rust, which frames, checks and decodes the records in place (no Python object per
    record). Yields each time the decoder holds ``batch_rows`` records. Memory stays at one
    chunk plus one batch. Damage is re-read by the pure reader so its errors are the same.
    ``max_rows``: stop after that many records (a schema from the first N)."""
    from tfhadoop.connectors import fileio
    from tfhadoop.connectors.tfrecord import TFRecordReader

    limit = batch_rows if b.keep else 1 << 62
    left = 1 << 62 if max_rows is None else max_rows
    pending = 0
    for path in fileio.expand(paths):
        if left <= 0:
            break
        with TFRecordReader(path, compression) as reader:
            stream, buf, base, eof = reader.stream, b"", 0, False
            while not eof and left > 0:
                piece = stream.read(_CHUNK)
                eof = not piece
                buf = buf + piece if buf else piece
                pos = 0
                while True:
                    new, n, bad = b.add_framed(buf, pos, base, min(limit - pending, left), path)
                    if on_bytes is not None and new > pos:
                        on_bytes(new - pos)
                    pos, pending, left = new, pending + n, left - n
                    if left <= 0:
                        break
                    if pending >= limit:
                        yield
                        pending = 0
                        continue
                    if bad or (eof and pos < len(buf)):
                        _raise_damage(path, buf[pos:], base + pos)
                    break
                base += pos
                buf = buf[pos:]
    if pending or not b.rows:
        yield


def _raise_damage(path: str, tail: bytes, offset: int):
    """Raise the pure reader's error for damaged bytes at stream ``offset`` (one wording)."""
    import io

    from tfhadoop.connectors.tfrecord import ReadStats, _records

    for _ in _records(io.BytesIO(tail), path, offset, ReadStats(), True, False, True, 1 << 20):
        pass
    raise RuntimeError(f"{path}: the native framer stopped at offset {offset} but the reference reader found no damage")


def _chunked(paths, compression, b: _Batches, batch_rows: int, on_bytes, max_rows=None):
    """The pure reader's twin of :func:`_framed`, with the same yields: records framed in Python
    are handed to ``b`` in chunks of ``batch_rows``; a decode error names the record's file and
    offset."""
    chunk, origins, pending = [], [], 0

    def flush():
        nonlocal pending
        base = b.rows
        try:
            b.add(chunk)
        except ValueError as exc:
            raise _locate(exc, lambda rec: origins[rec - base]) from None
        if on_bytes is not None:
            on_bytes(sum(len(r) for r in chunk) + 16 * len(chunk))
        pending += len(chunk)
        chunk.clear()
        origins.clear()

    for path, offset, data in _with_offsets(paths, compression):
        if max_rows is not None and b.rows + len(chunk) >= max_rows:
            break
        chunk.append(data)
        origins.append((path, offset))
        if len(chunk) >= batch_rows:
            flush()
            if b.keep:
                yield
                pending = 0
    flush()
    if pending or not b.rows:
        yield


def _fill(b: _Batches, paths, compression, batch_rows: int, on_bytes, max_rows=None):
    """Records into ``b``, yielding whenever it holds a batch: native framing when built."""
    if b.mod is not None:
        return _framed(paths, compression, b, batch_rows, on_bytes, max_rows)
    return _chunked(paths, compression, b, batch_rows, on_bytes, max_rows)
