"""Several TFRecord files decoded at once by worker threads, their batches still handed out in
file order and their errors worded as one sequential pass words them (``threads`` > 1 in
:func:`.arrow_read.iter_record_batches`)."""
from __future__ import annotations

from tfhadoop.connectors import example as _ex
from tfhadoop.connectors.arrow_codec import _Batches
from tfhadoop.connectors.arrow_framing import _fill
from tfhadoop.connectors.arrow_schema import SchemaDrift, _nullable


def _sampled_parallel(paths, record_type, compression, bytes_as, batch_rows, native, on_bytes, threads):
    """:func:`.arrow_read._stream_sampled` with the files decoded ``threads`` at a time: the schema comes from
    the first ``batch_rows`` records (decoded once more, strictly, by the workers: ~1 batch of
    extra work), then every file is decoded strictly against it (made all-nullable)."""
    b = _Batches(None, record_type, bytes_as, native)
    for _ in _fill(b, paths, compression, batch_rows, None, batch_rows):
        pass
    sample = b.finish()
    if b.rows < batch_rows:  # the whole input: the exact inferred schema, as in one thread
        if on_bytes is not None:
            on_bytes(sum(_bytes_of(p) for p in paths))
        yield sample
        return
    try:
        yield from _stream_parallel(paths, _nullable(sample.schema), True, record_type, compression, bytes_as,
                                    batch_rows, native, on_bytes, threads)
    except ValueError as exc:
        if isinstance(exc, _ex.ExampleDecodeError):
            raise
        drift = SchemaDrift(f"{exc} (the schema was inferred from the first {b.rows} records)")
        drift.record = getattr(exc, "record", None)
        raise drift from None


def _bytes_of(path) -> int:
    from tfhadoop.connectors import fileio

    return fileio.size(path) or 0


def _stream_parallel(files, schema, strict, record_type, compression, bytes_as, batch_rows, native, on_bytes,
                     threads, depth: int = 2):
    """Batches of ``files`` decoded by ``threads`` workers at once (the codec releases the GIL while
    it frames and decodes), yielded in file order, as :func:`.arrow_read._stream` would. Worker ``j`` takes
    files ``j, j+threads, ...`` into its own queue of ``depth`` batches, so memory stays at about
    ``threads * (depth + 1)`` batches. A worker's error is re-raised by decoding that file again
    in this thread with the record numbering of one sequential pass (the same message, the file
    and offset named), then the worker's own error if that pass does not fail."""
    import queue
    import threading

    stop = threading.Event()
    queues = [queue.Queue(depth) for _ in range(threads)]

    def put(q, item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def work(j):
        q = queues[j]
        for i in range(j, len(files), threads):
            seen = []
            try:
                b = _Batches(schema, record_type, bytes_as, native)
                if strict:
                    b.freeze(schema)
                for _ in _fill(b, [files[i]], compression, batch_rows, seen.append):
                    if not put(q, ("batch", b.finish(), sum(seen))):
                        return
                    seen.clear()
            except Exception as exc:  # noqa: BLE001 - re-raised by the consumer, in file order
                put(q, ("error", exc, 0))
                return
            if not put(q, ("end", None, 0)):
                return

    workers = [threading.Thread(target=work, args=(j,), name=f"tfrecord-decode-{j}", daemon=True)
               for j in range(threads)]
    for w in workers:
        w.start()
    rows, last = 0, None
    try:
        for i, path in enumerate(files):
            q, start = queues[i % threads], rows
            while True:
                kind, item, nbytes = q.get()
                if kind == "end":
                    break
                if kind == "error":
                    _reraise(path, item, schema, strict, record_type, compression, bytes_as, batch_rows, native, start)
                if on_bytes is not None and nbytes:
                    on_bytes(nbytes)
                last = item
                if item.num_rows:
                    rows += item.num_rows
                    yield item
        if not rows and last is not None:
            yield last  # no records at all: one empty batch with the schema, as in one thread
    finally:
        stop.set()
        for w in workers:
            w.join()


def _reraise(path, exc, schema, strict, record_type, compression, bytes_as, batch_rows, native, rows_before):
    """Raise a worker's error for ``path`` as one sequential pass words it (its record numbers)."""
    b = _Batches(schema, record_type, bytes_as, native, keep=False)
    if strict:
        b.freeze(schema)
    b.rows = rows_before
    if b.mod is not None:
        b.dec.rows = rows_before
    for _ in _fill(b, [path], compression, batch_rows, None):
        pass
    raise exc
