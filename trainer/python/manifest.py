"""The export job's dataset manifest (``_tfhadoop.json``): which shard files make up each split,
how many records each holds, and how to parse them. The trainer needs nothing else to build its
input pipeline, so a user writes no input code."""
from __future__ import annotations

import json
from dataclasses import dataclass

MANIFEST = "_tfhadoop.json"


class ManifestError(ValueError):
    """The dataset directory has no usable manifest."""


@dataclass(frozen=True)
class ShardFile:
    path: str  # relative to the dataset directory
    records: int
    bytes: int
    split: str | None  # None: the dataset was exported without splits


@dataclass(frozen=True)
class Manifest:
    root: str
    compression: str
    files: tuple[ShardFile, ...]
    parse_spec: dict
    raw: dict

    def split(self, name: str | None) -> list[ShardFile]:
        """The files of split ``name``; None: every file (a dataset exported without splits)."""
        return [f for f in self.files if name is None or f.split == name]

    def split_names(self) -> list[str]:
        """The named splits, in file order; empty for a dataset exported without ``--split``."""
        return list(dict.fromkeys(f.split for f in self.files if f.split))

    def records(self, split: str | None) -> int:
        return sum(f.records for f in self.split(split))


def _read_text(url: str) -> str:
    if url.startswith("hdfs://"):
        from tfhadoop.connectors.hdfs import filesystem

        with filesystem(url).open_read(url) as f:
            return f.read().decode("utf-8")
    with open(url.removeprefix("file://"), encoding="utf-8") as f:
        return f.read()


def parse(raw: dict, root: str) -> Manifest:
    """Validate a manifest dict (as written by the export job) into a :class:`Manifest`."""
    if raw.get("format") != "tfrecord" or raw.get("record_type", "Example") != "Example":
        raise ManifestError(f"{root}: only tfrecord datasets of tf.Example are supported "
                            f"(format={raw.get('format')!r}, record_type={raw.get('record_type')!r})")
    compression = raw.get("compression", "none")
    if compression not in ("gzip", "zlib", "none"):
        raise ManifestError(f"{root}: unknown compression {compression!r}")
    if "parse_spec" not in raw:
        raise ManifestError(f"{root}: manifest has no parse_spec")
    files = []
    for entry in raw.get("files", []):
        try:
            files.append(ShardFile(entry["path"], int(entry["records"]), int(entry.get("bytes", 0)),
                                   entry.get("split", "train")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"{root}: bad file entry {entry!r}: {exc}") from exc
    if not files:
        raise ManifestError(f"{root}: manifest lists no files")
    return Manifest(root.rstrip("/"), compression, tuple(files), raw["parse_spec"], raw)


def load(dataset_dir: str) -> Manifest:
    """The manifest of ``dataset_dir`` (local path or hdfs:// URL)."""
    url = dataset_dir.rstrip("/") + "/" + MANIFEST
    try:
        text = _read_text(url)
    except (OSError, FileNotFoundError) as exc:
        raise ManifestError(f"no dataset manifest at {url}: {exc}") from exc
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{url} is not JSON: {exc}") from exc
    return parse(raw, dataset_dir)


def local_name(shard: ShardFile) -> str:
    """A shard's plain file name (folders become ``__``), for tools that copy shards to local disk
    (bench/bench_trainer.py's peer runs); the trainer itself reads shards where they lie."""
    return shard.path.replace("/", "__")


def shard_url(manifest: Manifest, shard: ShardFile) -> str:
    """The URL a worker's TensorFlow opens (hdfs://... through the tfhdfs plugin): shards are
    read where they lie, never copied into containers."""
    return f"{manifest.root}/{shard.path}"


def load_indexes(manifest: Manifest, split: str | None, threads: int = 8) -> dict:
    """shard path -> (ordinals, offsets) of its record-boundary index sidecar, or None when the
    shard has none (older datasets), is compressed (TensorFlow's GZIP/ZLIB reader cannot start
    inside a stream) or the index does not describe the file (logged by the loader)."""
    from concurrent.futures import ThreadPoolExecutor

    from tfhadoop.connectors.splits import load_boundary_index

    shards = manifest.split(split)
    if manifest.compression != "none":
        return {s.path: None for s in shards}

    def one(shard):
        idx = load_boundary_index(shard_url(manifest, shard))
        return shard.path, (None if idx is None or idx.records != shard.records else (idx.ordinals, idx.offsets))

    with ThreadPoolExecutor(max(1, min(threads, len(shards)))) as pool:
        return dict(pool.map(one, shards))
