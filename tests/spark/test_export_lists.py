"""Issue 30 §1-§3, the export's side without a cluster: the manifest's parse spec for a sparse ML
vector column (one ``SparseFeature`` of its size), the longest list of each variable-length column
(``max_length``, what the submit check compares a dense input's width with) and ``--pad``."""
from __future__ import annotations

import pytest
from pyspark.sql.types import ArrayType, FloatType, LongType, StringType, StructField, StructType

from tfhadoop.errors import CommandError
from tfhadoop.spark.export_options import ExportOptions, parse_pad
from tfhadoop.spark.export_schema import manifest_of

SCHEMA = StructType([  # as the export writes the table: vec already the indices + values pair
    StructField("hist", ArrayType(LongType())), StructField("tags", ArrayType(StringType())),
    StructField("vec", StructType([StructField("indices", ArrayType(LongType())),
                                   StructField("values", ArrayType(FloatType()))])),
    StructField("label", FloatType(), nullable=False)])


def _manifest(**options):
    profile = {"schema": SCHEMA, "records": 10, "nulls": {}, "minlen": {"hist": 0, "tags": 0},
               "maxlen": {"hist": 200, "tags": 3}, "f32changed": {}, "f32maxchange": {}}
    opts = ExportOptions(output="/tmp/x", table="t", **options)
    return manifest_of(opts, None, profile, [{"path": "part-0", "records": 10, "bytes": 1}], {}, 1.0,
                       sparse_sizes={"vec": 30})


def test_a_sparse_vector_is_one_sparse_feature_and_lists_record_their_longest():
    spec = _manifest()["parse_spec"]["features"]
    assert spec["vec"] == {"type": "SparseFeature", "index_key": "vec.indices", "value_key": "vec.values",
                           "dtype": "float32", "size": 30}
    assert "vec.indices" not in spec and "vec.values" not in spec
    assert spec["hist"] == {"type": "VarLenFeature", "dtype": "int64", "max_length": 200}
    assert spec["tags"] == {"type": "VarLenFeature", "dtype": "string", "max_length": 3}


def test_the_declared_padding_value_is_in_the_parse_spec():
    spec = _manifest(pad=parse_pad("hist=-1,tags=<pad>"))["parse_spec"]["features"]
    assert spec["hist"]["pad"] == -1 and spec["tags"]["pad"] == "<pad>"
    assert "pad" not in spec["label"]


def test_pad_values_parse_by_kind_and_bad_entries_are_named():
    assert parse_pad("a=-1,b=0.5,c=x") == {"a": -1, "b": 0.5, "c": "x"}
    assert parse_pad(None) == {} and parse_pad({"a": 1}) == {"a": 1}
    with pytest.raises(CommandError, match="--pad entries look like column=value, not 'hist'"):
        parse_pad("hist")


def test_pad_names_a_list_column_with_a_value_of_its_kind():
    from types import SimpleNamespace

    from tfhadoop.spark.export_plan import check_pad

    table = SimpleNamespace(schema=SCHEMA)  # check_pad reads only the schema
    check_pad(table, {"hist": -1, "tags": "<pad>"})
    with pytest.raises(CommandError, match="--pad 'label' is of type float; padding applies to a list column"):
        check_pad(table, {"label": 0})
    with pytest.raises(CommandError, match="--pad 'nope' is not a column of the input"):
        check_pad(table, {"nope": 0})
    with pytest.raises(CommandError, match=r"--pad hist=0.5 does not fit the column's array<bigint>"):
        check_pad(table, {"hist": 0.5})
    with pytest.raises(CommandError, match=r"--pad tags=-1 does not fit the column's array<string>"):
        check_pad(table, {"tags": -1})
