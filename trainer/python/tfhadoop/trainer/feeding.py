"""How each parsed feature reaches the model: as the model's ``Input`` declares it.

``tf.io.parse_example`` gives a variable-length feature (``VarLenFeature``) as a ``tf.SparseTensor``
and a fixed-length one as a dense tensor. A Keras model says what it takes per input:
``Input(ragged=True)`` a ``tf.RaggedTensor`` (a user's last N item ids, no padding),
``Input(sparse=True)`` a ``tf.SparseTensor`` whose dense shape is the input's width, any other
input a dense tensor (a variable-length list padded to the input's width, or to the batch's
longest where the input leaves its width open; a longer list is an error, never cut). The padding
value is 0 (the empty string for strings) unless the parse spec's entry declares one (``"pad"``,
from ``tfhadoop export --pad``). One mapping,
built once per model, used by every path that feeds it (PS closures, the allreduce ring, eval,
the submit-time check).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import tensorflow as tf

FeedKind = Literal["dense", "ragged", "sparse"]
DENSE: FeedKind = "dense"
RAGGED: FeedKind = "ragged"
SPARSE: FeedKind = "sparse"


@dataclass(frozen=True)
class Feed:
    """One model input's wish: its kind, and for a sparse input its width (the dense shape's last
    dimension; None when the input leaves it open); for a dense one the value lists are padded
    with (None: 0 or the empty string)."""
    kind: FeedKind
    width: int | None = None
    pad: int | float | str | None = None


def with_padding(feeds: dict[str, Feed], parse_spec: dict) -> dict[str, Feed]:
    """``feeds`` with the padding value each feature's parse-spec entry declares on its dense feed."""
    out = dict(feeds)
    for name, entry in parse_spec.get("features", {}).items():
        if entry.get("pad") is not None and out.get(name, Feed(DENSE)).kind == DENSE:
            out[name] = replace(out.get(name, Feed(DENSE)), pad=entry["pad"])
    return out


def model_feeds(model, features: list[str]) -> dict[str, Feed]:
    """Feature name -> :class:`Feed` for each ragged or sparse input, and each dense one of a known
    width (a variable-length list is padded to it, not to the batch's longest). Inputs are matched
    to features by name, or a single input to a single feature whatever its name
    (``keras_step.model_inputs``)."""
    feeds = {}
    for name, inp in matched_inputs(model, features):
        spec = getattr(inp, "type_spec", None)
        shape = getattr(spec, "shape", None)
        width = shape[-1] if shape is not None and shape.rank == 2 else None
        width = int(width) if width is not None else None
        if isinstance(spec, tf.RaggedTensorSpec):
            feeds[name] = Feed(RAGGED)
        elif isinstance(spec, tf.SparseTensorSpec):
            feeds[name] = Feed(SPARSE, width)
        elif width is not None:
            feeds[name] = Feed(DENSE, width)
    return feeds


def matched_inputs(model, features: list[str]) -> list[tuple[str, object]]:
    """``(feature name, model input)`` pairs: by name, or a single input to a single feature."""
    inputs = list(getattr(model, "inputs", None) or [])
    single = len(features) == 1 and len(inputs) == 1
    return [(features[0] if single else inp.name.split(":")[0], inp) for inp in inputs]


SEQUENCE_KINDS = ("FixedLenSequenceFeature", "RaggedFeature")  # a SequenceExample's feature lists


def dimensions_per_example(entry: dict) -> int:
    """How many dimensions one example's value of a parse-spec entry has: a fixed-length feature
    its shape's, a variable-length list 1, a feature list its steps plus each step's."""
    kind, shape = entry.get("type"), list(entry.get("shape") or [])
    if kind == "FixedLenFeature":
        return len(shape)
    if kind == "FixedLenSequenceFeature":
        return 1 + len(shape)
    return 2 if kind == "RaggedFeature" else 1


def mismatch(name: str, inp, entry: dict) -> str | None:
    """Why model input ``inp`` cannot take feature ``name`` (its parse-spec entry), in words, or
    None. The submit-time check names it before any container starts."""
    spec = getattr(inp, "type_spec", None)
    rank = spec.shape.rank if spec is not None and spec.shape is not None else None
    per_example = dimensions_per_example(entry)
    if isinstance(spec, tf.RaggedTensorSpec) and rank is not None and rank - 1 != per_example:
        return (f"is ragged with {rank - 1} dimensions per example but feature {name!r} has "
                f"{per_example} (a list per example is Input((None,), ragged=True))")
    if isinstance(spec, tf.SparseTensorSpec) and entry.get("dtype") == "string":
        return (f"is sparse but feature {name!r} holds strings: take a string list with a ragged or dense "
                f"input and a StringLookup")
    if entry.get("type") in SEQUENCE_KINDS and rank is not None and rank - 1 != per_example:
        return (f"has {rank - 1} dimensions per example but feature {name!r} is a feature list of "
                f"{per_example} (steps first): declare it Input((None, ...), ragged=True)")
    return too_narrow(name, spec, entry)


def too_narrow(name: str, spec, entry: dict) -> str | None:
    """Why a dense or sparse input of a known width cannot hold feature ``name``'s lists, or None:
    a sparse vector of a larger size, or lists longer than the width (the export records the
    longest as ``max_length``; a list is padded, never cut)."""
    if isinstance(spec, tf.RaggedTensorSpec) or spec is None or spec.shape is None or spec.shape.rank != 2:
        return None
    width = spec.shape[-1]
    kind = "sparse" if isinstance(spec, tf.SparseTensorSpec) else "dense"
    if width is None:
        return None
    if entry.get("type") == "SparseFeature" and int(entry.get("size") or 0) > width:
        return (f"is {kind} of width {width} but feature {name!r} is a sparse vector of size {entry['size']}: "
                f"declare it Input(({entry['size']},), sparse=True)")
    longest = entry.get("max_length")
    if entry.get("type") == "VarLenFeature" and longest is not None and int(longest) > width:
        return (f"is {kind} of width {width} but feature {name!r} holds lists of up to {longest} values (a list is "
                f"padded to the width, never cut): declare it Input(({longest},)) or Input((None,), ragged=True)")
    return None


def feed(name: str, value, want: Feed | None):
    """``value`` (a parsed batch of feature ``name``) in the form ``want`` asks for (dense when
    None). A list longer than a sparse or dense input's width fails the step with a message
    naming the feature (the submit-time check finds it on the first batch already)."""
    kind = want.kind if want else DENSE
    width = want.width if want else None
    if isinstance(value, tf.RaggedTensor):  # a SequenceExample's feature list: [batch, steps, ...]
        if kind == RAGGED:
            return value
        value = value.to_sparse()
    if isinstance(value, tf.SparseTensor):
        if kind == RAGGED:
            return tf.RaggedTensor.from_sparse(value)
        if kind == SPARSE:
            return within_width(name, value, width)
        pad = None if want is None or want.pad is None else tf.constant(want.pad, value.dtype)
        return tf.sparse.to_dense(within_width(name, value, width), default_value=pad)  # padded to the width
    if kind == RAGGED and value.shape.rank and value.shape.rank >= 2:
        # a fixed-length list, every row its full length (a classmethod behind a decorator Pyright cannot see)
        return tf.RaggedTensor.from_tensor(value)  # pyright: ignore[reportAttributeAccessIssue]
    if kind == SPARSE:
        return within_width(name, tf.sparse.from_dense(value), width)
    return value


def within_width(name: str, value: tf.SparseTensor, width: int | None) -> tf.SparseTensor:
    """``value`` with the dense shape ``[batch, width]`` the model's input declares."""
    if width is None:
        return value
    longest = value.dense_shape[-1]
    check = tf.debugging.assert_less_equal(
        longest, tf.constant(width, tf.int64),
        message=f"feature {name!r} has a list longer than the model's input width {width}")
    with tf.control_dependencies([check]):
        shape = tf.concat([value.dense_shape[:-1], tf.constant([width], tf.int64)], axis=0)
        return tf.SparseTensor(value.indices, value.values, shape)
