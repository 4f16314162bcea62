"""What every ``tfhadoop records`` command shares: the files its PATHs name, a reader for each
(damage turned into one-line errors, or skipped), the records with their offsets, the record
type of a record, and the progress bar on stderr."""
from __future__ import annotations

import os
import sys

from tfhadoop.errors import CommandError


def _files(args) -> list[str]:
    from tfhadoop.connectors import fileio

    try:
        return fileio.expand(args.paths)
    except FileNotFoundError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(str(exc)) from None


def _compression(args):
    return None if args.compression == "auto" else args.compression


def _reader(path, args):
    from tfhadoop.connectors.tfrecord import TFRecordReader

    try:
        return TFRecordReader(path, _compression(args), on_corrupt="skip" if args.skip_corrupt else "raise")
    except FileNotFoundError as exc:
        raise CommandError(f"{path}: no such file" if str(exc).find(path) < 0 else str(exc)) from None
    except OSError as exc:
        raise CommandError(str(exc)) from None


class _Progress:
    """A bytes progress bar on stderr, only when stdout is a terminal (and tqdm is there)."""

    def __init__(self, files, args, enabled=True, rows=None):
        """A bar over the bytes of ``files``, or over ``rows`` rows when given."""
        self.bar = None
        if not enabled or getattr(args, "no_progress", False) or not sys.stdout.isatty():
            return
        try:
            from tqdm import tqdm

            from tfhadoop.connectors import compression as comp
            from tfhadoop.connectors import fileio
        except ImportError:
            return
        if rows is not None:
            self.bar = tqdm(total=rows, unit="rows", file=sys.stderr, leave=False, dynamic_ncols=True)
            return
        total = 0
        for f in files:
            size = fileio.size(f) if not comp.normalize(_compression(args), f) else None
            if size is None:
                total = None
                break
            total += size
        self.bar = tqdm(total=total, unit="B", unit_scale=True, file=sys.stderr, leave=False, dynamic_ncols=True)

    def update(self, n):
        if self.bar is not None:
            self.bar.update(n)

    def file(self, path):
        if self.bar is not None:
            self.bar.set_postfix_str(os.path.basename(path), refresh=False)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _iterate(files, args, progress=None, stats=None):
    """(path, offset, record) over all files, damage turned into CommandError (or skipped)."""
    from tfhadoop.connectors.errors import TFRecordError

    for path in files:
        reader = _reader(path, args)
        if progress:
            progress.file(path)
        try:
            pending = 0
            for offset, data in reader.with_offsets():
                if progress is not None:
                    pending += len(data) + 16
                    if pending > 1 << 20:
                        progress.update(pending)
                        pending = 0
                yield path, offset, data
            if progress is not None:
                progress.update(pending)
        except TFRecordError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"{path}: {exc}") from None
        finally:
            reader.close()
            if stats is not None:
                stats[path] = reader.stats


def _record_type(data: bytes, wanted: str) -> str:
    if wanted != "auto":
        return wanted
    from tfhadoop.connectors import example_proto as pb

    try:
        m = pb.SequenceExample.FromString(data)
    except Exception:  # noqa: BLE001 - not a protobuf at all
        return "bytes?"
    return "SequenceExample" if m.HasField("feature_lists") else "Example"


def _first_kind(files, args) -> str:
    """--record-type auto: SequenceExample if the first record has feature lists, else Example."""
    for path, offset, data in _iterate(files, args):
        k = _record_type(data, "auto")
        if k == "bytes?":
            raise CommandError(f"{path}: the record at {offset} is not a serialized Example or SequenceExample")
        return k
    return "Example"
