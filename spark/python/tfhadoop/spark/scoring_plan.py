"""What a SavedModel's scoring needs from a DataFrame, decided on the driver before any task runs.

Every serving input is matched to the column of its name, its type and width checked against the
input's spec (dense, ``Input(ragged=True)`` or ``Input(sparse=True)``), and the output columns and
their Spark types fixed, so a missing or mistyped column is one error naming every problem, not
a failed task. The executors' side: :mod:`tfhadoop.spark.scoring_batches`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tfhadoop.errors import CommandError


@dataclass(frozen=True)
class Feed:
    """How one model input is fed: from ``column``, ``width`` values per row (None: a scalar),
    reshaped to ``shape`` (the input's shape after the batch dimension), as numpy ``dtype``;
    ``kind`` "ragged": each row's list as it is (a ``tf.RaggedTensor``, empty lists included),
    "sparse": the rows' values as a ``tf.SparseTensor`` of the input's width."""

    name: str
    column: str
    width: int | None
    shape: tuple
    dtype: str
    kind: str = "dense"


@dataclass(frozen=True)
class Output:
    """One model output: its signature key, the column it becomes, scalar or array, numpy dtype."""

    key: str
    column: str
    scalar: bool
    dtype: str


def signature_specs(served) -> tuple[dict, dict]:
    """({input name: spec}, {output key: TensorSpec}) of a :class:`serving.Serving`."""
    return dict(served.inputs), dict(served.outputs)


def _describe_column(t) -> str:
    return t.simpleString()


def plan_feeds(schema, inputs: dict, where: str) -> tuple[list[Feed], dict]:
    """Each model input matched to the column of its name, type and width checked; returns the
    feeds and {column: "vector"} for ML vector columns the driver turns into arrays first.
    Raises CommandError naming every problem at once."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        ByteType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
    )

    from tfhadoop.spark.export_plan import is_vector

    numeric = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, BooleanType)
    types = {f.name: f.dataType for f in schema.fields}
    columns = ", ".join(f"{f.name} {_describe_column(f.dataType)}" for f in schema.fields)
    feeds, vectors, problems = [], {}, []
    for name, spec in sorted(inputs.items()):
        shape = tuple(spec.shape.as_list()[1:]) if spec.shape.rank is not None else None
        is_string = spec.dtype.name == "string"
        want = f"{'string' if is_string else spec.dtype.name} {list(shape) if shape is not None else '[?]'}"
        if name not in types:
            problems.append(f"the model needs column {name!r} ({want}), which {where} does not have")
            continue
        t = types[name]
        kind = {"RaggedTensorSpec": "ragged", "SparseTensorSpec": "sparse"}.get(type(spec).__name__, "dense")
        if kind == "ragged":
            elem = t.elementType if isinstance(t, ArrayType) else None
            if elem is None or spec.shape.rank != 2 or not (
                    isinstance(elem, (StringType, BinaryType)) if is_string else isinstance(elem, numeric)):
                problems.append(f"column {name!r} is {_describe_column(t)} but the model input {name!r} is a "
                                f"ragged list of {want.split()[0]} (an array column feeds it)")
                continue
            feeds.append(Feed(name, name, None, (), "object" if is_string else spec.dtype.as_numpy_dtype.__name__,
                              "ragged"))
            continue
        elem, width = t, None
        if is_vector(t):  # a sparse input gets each row's indices and values (export_vectors.pair)
            vectors[name] = "sparse" if kind == "sparse" else "vector"
            elem = DoubleType()
        elif isinstance(t, ArrayType):
            elem = t.elementType
        if is_vector(t) or isinstance(t, ArrayType):
            width = -1  # per row: checked against the input's shape on the executors
        ok_type = isinstance(elem, (StringType, BinaryType)) if is_string else isinstance(elem, numeric)
        if shape is None:
            problems.append(f"model input {name!r} has no known rank; cannot feed it from a column")
            continue
        size = 1
        for d in shape:
            size = size * d if d is not None and size is not None else None
        if width is None and size != 1:
            ok_type = False  # a scalar column cannot feed a wider input
        if width is not None:
            if len(shape) == 0:
                ok_type = False  # an array column cannot feed a scalar input
            width = size  # None: any length, equal within a batch
        if not ok_type:
            problems.append(f"column {name!r} is {_describe_column(t)} but the model input {name!r} is {want}")
            continue
        dtype = "object" if is_string else spec.dtype.as_numpy_dtype.__name__
        feeds.append(Feed(name, name, width, shape, dtype, kind))
    if problems:
        raise CommandError("; ".join(problems) + f" (columns: {columns})")
    return feeds, vectors


def plan_outputs(outputs: dict, prediction_col: str, existing: list[str]) -> list[Output]:
    """One column per output: ``prediction_col`` for a single output, else the output keys."""
    out = []
    for key, spec in sorted(outputs.items()):
        dims = spec.shape.as_list()[1:] if spec.shape.rank is not None else None
        scalar = dims is not None and (dims == [] or dims == [1])
        column = prediction_col if len(outputs) == 1 else key
        if column in existing:
            raise CommandError(f"the output column {column!r} exists in the input already; "
                               f"{'pick another --prediction-col' if len(outputs) == 1 else 'rename the input column'}")
        dtype = spec.dtype.as_numpy_dtype.__name__ if spec.dtype.name != "string" else "object"
        out.append(Output(key, column, scalar, dtype))
    return out


def spark_type(o: Output):
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
    )

    leaf = {"float32": FloatType(), "float16": FloatType(), "float64": DoubleType(), "int32": IntegerType(),
            "int64": LongType(), "bool": BooleanType(), "object": BinaryType()}.get(o.dtype)
    if leaf is None:
        raise CommandError(f"model output {o.key!r} has dtype {o.dtype}, which has no Spark column type")
    return leaf if o.scalar else ArrayType(leaf, containsNull=False)
