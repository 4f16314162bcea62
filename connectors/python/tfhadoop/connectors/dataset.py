"""A tfhadoop dataset: a directory of TFRecord shards with a manifest (``_tfhadoop.json``) that
says which shards make up each split, how many records each holds, and how to parse them.

One module for what the export job writes, what the trainer and the records CLI read, and the
feature-kind rules between them, so the three cannot drift apart:

- feature kinds: a ``tf.train.Feature`` holds an int64, float or bytes list; how each kind is
  named in the proto (``int64_list``...), as a TensorFlow dtype (``int64``/``float32``/``string``)
  and in Arrow;
- the parse spec: JSON that travels in the manifest (:func:`parse_spec`, from an Arrow schema) and
  becomes ``tf.io`` feature objects where TensorFlow runs (:func:`tf_parse_spec`);
- the manifest: :func:`manifest_doc` builds it (the export), :func:`load`/:func:`parse` read and
  check it (the trainer), :class:`Manifest` answers what the trainer asks of it.

No heavy import at module level: the trainer's roles and the CLI import this before TensorFlow.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

# -- feature kinds ---------------------------------------------------------------------------------

INT64, FLOAT, BYTES = "int64", "float", "bytes"
LIST_FIELD = {INT64: "int64_list", FLOAT: "float_list", BYTES: "bytes_list"}  # tf.train.Feature's oneof
KIND_OF_FIELD = {field: kind for kind, field in LIST_FIELD.items()}
DTYPE = {INT64: "int64", FLOAT: "float32", BYTES: "string"}  # the dtype tf.io parses a kind as


def arrow_kind(t) -> str | None:
    """The kind an Arrow leaf type is stored as in a Feature: integers and booleans int64, floats
    and decimals float, strings and binaries bytes; None where no Feature holds it."""
    import pyarrow as pa

    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return INT64
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return FLOAT
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)):
        return BYTES
    return None


def arrow_type(kind: str):
    """The Arrow type a kind's values are read as (bytes as binary; inference may choose string)."""
    import pyarrow as pa

    return {INT64: pa.int64(), FLOAT: pa.float32(), BYTES: pa.binary()}[kind]


# -- parse spec ------------------------------------------------------------------------------------

def _is_list(t) -> bool:
    import pyarrow as pa

    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _leaf(t):
    while _is_list(t):
        t = t.value_type
    return t


def is_feature_list(field) -> bool:
    """A SequenceExample feature list: a list of lists, or marked so in the field's metadata."""
    import pyarrow as pa

    t = field.type
    return pa.types.is_list(t) and _is_list(t.value_type) or bool(field.metadata and b"tfhadoop.feature_list" in field.metadata)


def parse_spec(schema, record_type: str = "Example") -> dict:
    """A JSON-able parse spec for an Arrow schema: ``{"features": {name: entry}}`` plus
    ``"sequence_features"`` for SequenceExample. Entries: ``{"type": "FixedLenFeature", "shape":
    [...], "dtype": ...}`` (non-nullable scalars and fixed-size lists), ``{"type": "VarLenFeature",
    "dtype": ...}`` (variable or nullable), ``{"type": "FixedLenSequenceFeature", "shape": [...]}``
    or ``{"type": "RaggedFeature"}`` for feature lists; the export adds ``{"type": "SparseFeature",
    "index_key": ..., "value_key": ..., "size": n}`` for a sparse ML vector column (written as two
    list features). dtype is one of :data:`DTYPE`'s values."""
    import pyarrow as pa

    features, sequence = {}, {}
    for field in schema:
        t = field.type
        dtype = DTYPE[arrow_kind(_leaf(t)) or BYTES]
        if record_type == "SequenceExample" and _is_list(t) and is_feature_list(field):
            inner = t.value_type
            if pa.types.is_fixed_size_list(inner):
                sequence[field.name] = {"type": "FixedLenSequenceFeature", "shape": [inner.list_size], "dtype": dtype,
                                        "allow_missing": True}
            else:
                sequence[field.name] = {"type": "RaggedFeature", "dtype": dtype}
        elif field.nullable or (_is_list(t) and not pa.types.is_fixed_size_list(t)):
            features[field.name] = {"type": "VarLenFeature", "dtype": dtype}
        else:
            shape = [t.list_size] if pa.types.is_fixed_size_list(t) else []
            features[field.name] = {"type": "FixedLenFeature", "shape": shape, "dtype": dtype}
    spec = {"features": features}
    if record_type == "SequenceExample":
        spec["sequence_features"] = sequence
    return spec


def tf_parse_spec(spec: dict):
    """``tf.io`` feature objects for a :func:`parse_spec`: a dict for ``tf.io.parse_example``, or
    ``(context, sequence)`` dicts when the spec has sequence features."""
    import tensorflow as tf

    def build(entry):
        dtype = tf.as_dtype(entry["dtype"])
        kind = entry["type"]
        if kind == "FixedLenFeature":
            return tf.io.FixedLenFeature(entry["shape"], dtype)
        if kind == "VarLenFeature":
            return tf.io.VarLenFeature(dtype)
        if kind == "FixedLenSequenceFeature":
            return tf.io.FixedLenSequenceFeature(entry["shape"], dtype, allow_missing=entry.get("allow_missing", True))
        if kind == "RaggedFeature":
            return tf.io.RaggedFeature(dtype)
        if kind == "SparseFeature":  # a tf.SparseTensor of dense shape [batch, size]
            return tf.io.SparseFeature(entry["index_key"], entry["value_key"], dtype, entry["size"])
        raise ValueError(f"unknown feature type {kind!r}")

    context = {k: build(v) for k, v in spec.get("features", {}).items()}
    if "sequence_features" in spec:
        return context, {k: build(v) for k, v in spec["sequence_features"].items()}
    return context


def tf_example_spec(spec: dict) -> dict:
    """:func:`tf_parse_spec` of an Example dataset (for ``tf.io.parse_example``); a ValueError for
    a SequenceExample one (the trainer parses those itself: ``step.parse_fn``)."""
    features = tf_parse_spec(spec)
    if isinstance(features, tuple):
        raise ValueError("a SequenceExample dataset: parse it with tf.io.parse_sequence_example")
    return features


# -- manifest --------------------------------------------------------------------------------------

MANIFEST = "_tfhadoop.json"
FORMAT, VERSION = "tfrecord", 1
RECORD_TYPES = ("Example", "SequenceExample")  # what a dataset's records are (the trainer parses both)
COMPRESSION_SUFFIX = {"gzip": ".gz", "zlib": ".zlib", "none": ""}  # the compressions a dataset may use


class ManifestError(ValueError):
    """The dataset directory has no usable manifest."""


def manifest_doc(record_type: str, compression: str, files: list, **fields) -> dict:
    """The manifest of a dataset whose shards are ``files`` (dicts with path relative to the
    dataset directory, records, bytes, split): the fields every reader relies on first (format,
    version, record type, compression, totals, files), then ``fields`` in the order given
    (``parse_spec`` among them)."""
    if compression not in COMPRESSION_SUFFIX:
        raise ValueError(f"unknown compression {compression!r}")
    return {"format": FORMAT, "version": VERSION, "record_type": record_type, "compression": compression,
            "records": sum(f["records"] for f in files), "bytes": sum(f["bytes"] for f in files),
            "files": files, **fields}


def dumps(doc: dict) -> str:
    """A manifest's text, as it is stored in ``_tfhadoop.json``."""
    return json.dumps(doc, indent=2)


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


def parse(raw: dict, root: str) -> Manifest:
    """Validate a manifest dict (as :func:`manifest_doc` builds it) into a :class:`Manifest`."""
    if raw.get("format") != FORMAT or raw.get("record_type", "Example") not in RECORD_TYPES:
        raise ManifestError(f"{root}: only tfrecord datasets of {' or '.join(RECORD_TYPES)} are supported "
                            f"(format={raw.get('format')!r}, record_type={raw.get('record_type')!r})")
    compression = raw.get("compression", "none")
    if compression not in COMPRESSION_SUFFIX:
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


def _read_text(url: str) -> str:
    if url.startswith("hdfs://"):
        from tfhadoop.connectors.hdfs import filesystem

        with filesystem(url).open_read(url) as f:
            return f.read().decode("utf-8")
    with open(url.removeprefix("file://"), encoding="utf-8") as f:
        return f.read()


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


def rewrite_command(dataset_dir: str) -> str:
    """The command that rewrites a dataset uncompressed with record indexes, so that trainer tasks
    start at a byte offset (``tfhadoop export`` copies a dataset's records, splits and manifest)."""
    return (f"tfhadoop export --input {dataset_dir} --input-format tfrecord --compression none "
            f"--output {dataset_dir.rstrip('/')}-indexed")


def slow_path_note(manifest: Manifest, indexes: dict) -> str | None:
    """One line saying that tasks in ``indexes``' unindexed shards read from the shard start, and
    how to fix it; None when every shard has its index (``indexes``: :func:`load_indexes`)."""
    unindexed = sorted(p for p, i in indexes.items() if i is None)
    if not unindexed:
        return None
    why = f"{manifest.compression}-compressed" if manifest.compression != "none" else "without a record index"
    return (f"note: {len(unindexed)} of {len(indexes)} train shards are {why} (e.g. {unindexed[0]}): each task "
            f"reads its shard from the start up to its first record, slower the later it starts; "
            f"`{rewrite_command(manifest.root)}` rewrites the dataset so that tasks start at a byte offset")
