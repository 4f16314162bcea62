"""`tfhadoop export`'s options: the validated ExportOptions and the flags that build them."""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

from tfhadoop.connectors.dataset import COMPRESSION_SUFFIX
from tfhadoop.errors import CommandError


@dataclass(frozen=True)
class ExportOptions:
    """The export's options, validated once."""

    output: str
    table: str | None = None
    query: str | None = None
    input: str | None = None
    input_format: str = "parquet"
    shards: int | None = None
    records_per_shard: int | None = None
    # none: a trainer task starts at a byte offset (the shard's index sidecar); a gzip or zlib stream
    # cannot be entered mid-way, so each task there decompresses its shard from the start
    compression: str = "none"
    partition_by: str | None = None
    splits: dict = field(default_factory=dict)  # name -> fraction, in the order given
    split_key: str | None = None
    record_type: str = "Example"
    overwrite: bool = False
    master: str | None = None
    label: str | None = None
    exact_columns: tuple = ()  # double/decimal columns written exactly instead of as float32
    # variable-length list column -> the value a dense model input is padded with (0 without one);
    # recorded in the parse spec, so every training of the dataset pads alike
    pad: dict = field(default_factory=dict)

    def __post_init__(self):
        sources = [s for s in (self.table, self.query, self.input) if s]
        if len(sources) != 1:
            raise CommandError("give exactly one of --table, --query or --input")
        if self.shards is not None and self.records_per_shard is not None:
            raise CommandError("--shards and --records-per-shard exclude each other")
        if self.shards is not None and self.shards < 1 or self.records_per_shard is not None and self.records_per_shard < 1:
            raise CommandError("--shards / --records-per-shard must be at least 1")
        if self.compression not in COMPRESSION_SUFFIX:
            raise CommandError(f"--compression must be gzip, zlib or none, not {self.compression!r}")
        if self.record_type not in ("Example", "SequenceExample"):
            raise CommandError(f"--record-type must be Example or SequenceExample, not {self.record_type!r}")
        if self.input_format not in ("parquet", "orc", "csv", "json", "tfrecord"):
            raise CommandError(f"--input-format must be parquet, orc, csv, json or tfrecord, not {self.input_format!r}")
        if self.splits and abs(sum(self.splits.values()) - 1.0) > 1e-6:
            raise CommandError(f"--split fractions must add up to 1, not {sum(self.splits.values()):g}")


def parse_splits(text: str | None) -> dict:
    """``train=0.9,eval=0.1`` -> {"train": 0.9, "eval": 0.1}."""
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        name, sep, frac = part.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_-]+", name.strip()):
            raise CommandError(f"--split entries look like name=fraction, not {part!r}")
        try:
            out[name.strip()] = float(frac)
        except ValueError:
            raise CommandError(f"--split fraction {frac!r} of {name!r} is not a number") from None
        if not 0 < out[name.strip()] <= 1:
            raise CommandError(f"--split fraction of {name!r} must be in (0, 1]")
    return out



def parse_pad(text: str | dict | None) -> dict:
    """``hist=-1,tags=<pad>`` -> {"hist": -1, "tags": "<pad>"}: an integer, a number or a string."""
    if isinstance(text, dict) or not text:
        return dict(text or {})
    out: dict = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"--pad entries look like column=value, not {part!r}")
        for kind in (int, float):
            try:
                out[name.strip()] = kind(value)
                break
            except ValueError:
                continue
        else:
            out[name.strip()] = value
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("source (exactly one)")
    src.add_argument("--table", help="a Hive table, db.table")
    src.add_argument("--query", help="a Spark SQL query")
    src.add_argument("--input", help="files or a directory (local or hdfs://)")
    src.add_argument("--input-format", default=ExportOptions.input_format,
                     help=f"parquet | orc | csv | json | tfrecord (default {ExportOptions.input_format})")
    p.add_argument("--output", required=True, help="the dataset directory, e.g. hdfs:///datasets/clicks")
    p.add_argument("--shards", type=int, help="number of shard files (per split: in proportion to its fraction)")
    p.add_argument("--records-per-shard", type=int, help="records per shard file instead of --shards")
    p.add_argument("--compression", default=ExportOptions.compression,
                   help=f"none | gzip | zlib (default {ExportOptions.compression}: trainer tasks start at a byte "
                        "offset; a compressed shard is read from its start by every task, and holds ~2-3x less)")
    p.add_argument("--partition-by", help="write one directory per value of this column")
    p.add_argument("--split", help="named splits with fractions, e.g. train=0.9,eval=0.1")
    p.add_argument("--split-key", help="column whose hash assigns a row to a split (default: the whole row)")
    p.add_argument("--record-type", default=ExportOptions.record_type,
                   help=f"Example | SequenceExample (default {ExportOptions.record_type})")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output dataset")
    p.add_argument("--label", help="the label column: checked to be one value per record (not a vector or array)")
    p.add_argument("--exact-columns", help="double/decimal columns to write exactly (int64 or decimal text) "
                                           "instead of float32, comma-separated")
    p.add_argument("--pad", help="the padding value of variable-length list columns a model takes as a dense "
                                 "input, e.g. hist=-1,tags=<pad> (default 0 or the empty string); recorded in "
                                 "the parse spec")
    p.add_argument("--master", help="Spark master: local[N] (default local[2]) or yarn")


def options_from_args(args) -> ExportOptions:
    return ExportOptions(output=args.output, table=args.table, query=args.query, input=args.input,
                         input_format=args.input_format, shards=args.shards,
                         records_per_shard=args.records_per_shard, compression=args.compression,
                         partition_by=args.partition_by, splits=parse_splits(args.split), split_key=args.split_key,
                         record_type=args.record_type, overwrite=args.overwrite, master=args.master,
                         label=args.label, exact_columns=tuple(c.strip() for c in (args.exact_columns or "").split(",")
                                                               if c.strip()),
                         pad=parse_pad(args.pad))
