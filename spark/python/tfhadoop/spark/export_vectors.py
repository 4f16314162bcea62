"""Spark ML sparse vectors as sparse features (issue 30 §1).

A ``SparseVector`` column (a one-hot or hashed feature, VectorAssembler's output) holds a few
values of a large size. Written as the vector's ``size`` floats it is mostly zeros on disk and a
dense ``[batch, size]`` tensor in the trainer; a Keras ``Input((size,), sparse=True)`` wants a
``tf.SparseTensor``. So a vector column with any sparse row is written as two list features,
``NAME.indices`` (int64) and ``NAME.values`` (float), the data source's ``parent.child`` naming of
a struct's fields, and its parse-spec entry is one ``SparseFeature`` of the largest size seen: it
parses to a ``tf.SparseTensor`` of dense shape ``[batch, size]``. A dense row of such a column
keeps all its values (index i for value i).

Which columns: those with a sparse row whose stored indices and values together are fewer than
their dense values (fewer than half the values set, on average). VectorAssembler stores each row
in its smaller form, so a column of a few small numeric features mixes dense and sparse rows: it
stays a float list of the vector's size, as does a column of dense vectors. The training does not
depend on the choice: a dense ``Input`` gets either form densified, a sparse one either form as a
``tf.SparseTensor`` of its width (``tfhadoop.trainer.feeding``); the choice is what is stored and
parsed.

Scoring (``tfhadoop.spark.scoring_batches``) feeds a sparse model input from a vector column the same
way: each row's own indices and values (:func:`pair`, :func:`sparse_tensor`), never densified.

The vector's own indices and values are read through the UDT's JSON form (what ``to_json``
writes: ``type`` 0 sparse, 1 dense), so nothing is densified and no Python runs per row.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tfhadoop.spark.export_plan import is_vector

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

INDICES, VALUES = "indices", "values"  # the struct's fields: features NAME.indices and NAME.values
_JSON = "struct<v: struct<type: tinyint, size: int, indices: array<int>, values: array<double>>>"


def _parsed(name: str):
    from pyspark.sql import functions as F

    return F.from_json(F.to_json(F.struct(F.col(f"`{name}`").alias("v"))), _JSON)["v"]


def sparse_vectors_as_pairs(df: DataFrame) -> tuple[Any, dict[str, int]]:
    """``df`` with each sparse vector column (see the module's docstring) replaced by a struct of
    its indices and values, and {column: size} for those (the largest size among its rows). One
    pass over the data, only when ``df`` has vector columns."""
    from pyspark.sql import functions as F

    vectors = [f.name for f in df.schema.fields if is_vector(f.dataType)]
    if not vectors:
        return df, {}
    stats = []
    for i, name in enumerate(vectors):
        v = _parsed(name)
        size = F.when(v["type"] == 0, v["size"]).otherwise(F.size(v["values"]))
        stats += [F.max(F.when(v["type"] == 0, 1).otherwise(0)).alias(f"s{i}"), F.max(size).alias(f"n{i}"),
                  F.sum(F.size(v["values"])).alias(f"set{i}"), F.sum(size).alias(f"all{i}")]
    row = df.agg(*stats).collect()[0]
    sizes = {name: int(row[f"n{i}"] or 0) for i, name in enumerate(vectors)
             if row[f"s{i}"] and 2 * (row[f"set{i}"] or 0) < (row[f"all{i}"] or 0)}
    if not sizes:
        return df, {}
    columns = [pair(f.name) if f.name in sizes else F.col(f"`{f.name}`") for f in df.schema.fields]
    return df.select(*columns), sizes


def pair(name: str):
    """Vector column ``name`` as ``struct<indices: array<bigint>, values: array<float>>`` (null
    where the vector is): what the export writes and what scoring feeds a sparse input from."""
    from pyspark.sql import functions as F

    v = _parsed(name)
    n = F.size(v["values"])
    dense_indices = F.when(n > 0, F.sequence(F.lit(0), n - 1)).otherwise(F.array().cast("array<int>"))
    indices = F.when(v["type"] == 0, v["indices"]).otherwise(dense_indices)
    both = F.struct(indices.cast("array<bigint>").alias(INDICES), v["values"].cast("array<float>").alias(VALUES))
    return F.when(F.col(f"`{name}`").isNotNull(), both).alias(name)


def sparse_tensor(tf, arr, column: str, width: int | None, dtype: str = "float32"):
    """A batch of :func:`pair` rows (an Arrow struct array without nulls) as the
    ``tf.SparseTensor`` of dense shape ``[rows, width]`` a sparse model input takes (an input of
    open width: the batch's largest index + 1); an index at or past ``width`` (a vector larger than
    the input) is an error naming the column."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    children = dict(zip([f.name for f in arr.type], arr.flatten()))  # flatten: the batch's slice of each field
    indices, values = children[INDICES], children[VALUES]
    lengths = pc.call_function("list_value_length", [indices]).to_numpy(zero_copy_only=False).astype(np.int64)
    cols = indices.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    if width is None:
        width = int(cols.max()) + 1 if len(cols) else 0
    if len(cols) and int(cols.max()) >= width:
        raise ValueError(f"column {column!r} holds a vector with index {int(cols.max())} but the model input takes "
                         f"{width} values")
    rows = np.repeat(np.arange(len(arr), dtype=np.int64), lengths)
    flat = values.flatten().to_numpy(zero_copy_only=False).astype(dtype)
    return tf.sparse.reorder(tf.SparseTensor(np.stack([rows, cols], axis=1).reshape(-1, 2), flat, [len(arr), width]))


def sparse_entries(spec: dict, sizes: dict[str, int]) -> dict:
    """The parse spec with each pair's two list features replaced by one ``SparseFeature`` entry
    named after the column (``spec`` is changed and returned)."""
    for group in spec.values():
        for name, size in sizes.items():
            if f"{name}.{INDICES}" not in group:
                continue
            group.pop(f"{name}.{INDICES}")
            group.pop(f"{name}.{VALUES}", None)
            group[name] = {"type": "SparseFeature", "index_key": f"{name}.{INDICES}",
                           "value_key": f"{name}.{VALUES}", "dtype": "float32", "size": size}
    return spec
