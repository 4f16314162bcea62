"""Arrays of structs as SequenceExample feature lists (issue 30 §2).

An event table's column ``events array<struct<item:bigint, dwell:double>>`` is one sequence per
row, each element a step. In a SequenceExample every field becomes a feature list of its own,
named ``events.item`` and ``events.dwell`` (the data source's ``parent.child`` naming of struct
fields), each step holding that field's value; a field that is itself an array holds its list per
step. The rest of the row (scalars, plain arrays) are the context features, as the data source
writes them. The steps of all of a column's feature lists line up: step i of ``events.item`` and of
``events.dwell`` are element i of ``events``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tfhadoop.errors import CommandError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def struct_lists_as_feature_lists(df: DataFrame) -> tuple[Any, set[str]]:
    """``df`` with every ``array<struct<...>>`` column replaced by one ``array<array<T>>`` column per
    field, and the names of those whose steps hold one value each (their parse spec is then a
    ``FixedLenSequenceFeature`` of shape [1]: dense steps)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    columns, single = [], set()
    for field in df.schema.fields:
        t = field.dataType
        if not (isinstance(t, ArrayType) and isinstance(t.elementType, StructType)):
            columns.append(F.col(f"`{field.name}`"))
            continue
        for sub in t.elementType.fields:
            name = f"{field.name}.{sub.name}"
            if isinstance(sub.dataType, (StructType, MapType)) or (
                    isinstance(sub.dataType, ArrayType) and isinstance(sub.dataType.elementType, (ArrayType, StructType))):
                raise CommandError(f"column {field.name!r}: field {sub.name!r} is {sub.dataType.simpleString()}; a "
                                   f"feature list step holds a number, a string or a flat list of them")
            # one-argument lambdas (Spark's transform passes the index to a second one), so the
            # field name comes from a closure, not a default argument
            if isinstance(sub.dataType, ArrayType):
                steps = F.transform(F.col(f"`{field.name}`"), _field(sub.name))
            else:
                steps = F.transform(F.col(f"`{field.name}`"), _one_value_step(sub.name))
                single.add(name)
            columns.append(steps.alias(name))
    return df.select(*columns), single


def _field(name: str):
    return lambda step: step[name]


def _one_value_step(name: str):
    from pyspark.sql import functions as F

    return lambda step: F.array(step[name])
