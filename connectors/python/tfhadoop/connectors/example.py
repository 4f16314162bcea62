"""tf.train.Example and SequenceExample encode/decode without importing TensorFlow.

Built on the upb-backed classes of :mod:`tfhadoop.connectors.example_proto` (TensorFlow's own
``tf.train.Example`` is the same upb message type), which measured faster than the hand wire
codec in :mod:`tfhadoop.connectors.example_wire` both ways. Output is byte-identical to
TensorFlow's ``SerializeToString()`` for features given in the same order (protobuf orders map
entries by hash, so TensorFlow re-serializing a parsed Example may itself reorder them);
``deterministic=True`` gives protobuf's deterministic serialization, like TensorFlow's.

Values: lists/tuples/numpy arrays/scalars of int/bool (Int64List), float (FloatList), bytes/str
(BytesList, str UTF-8 encoded), or an explicit ``(kind, values)`` with kind "int64"/"float"/
"bytes" (needed to type an empty list). Decoding gives ``{name: [values]}``; ``typed=True`` gives
``{name: (kind, [values])}`` (kind None for a Feature with no list set).
"""
from __future__ import annotations

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from tfhadoop.connectors import example_proto as _pb
from tfhadoop.connectors.dataset import BYTES, FLOAT, INT64, KIND_OF_FIELD, LIST_FIELD
from tfhadoop.connectors.example_wire import ExampleDecodeError, _explicit, _kind_of

__all__ = [
    "encode_example",
    "decode_example",
    "encode_sequence_example",
    "decode_sequence_example",
    "to_json_dict",
    "ExampleDecodeError",
    "INT64",
    "FLOAT",
    "BYTES",
    "RECORD_TYPES",
]

RECORD_TYPES = ("Example", "SequenceExample")


def _kind_and_values(values, kind=None):
    if _explicit(values):
        return values
    if isinstance(values, (bytes, bytearray, str, int, float)) or getattr(values, "ndim", 1) == 0:
        values = [values]
    tolist = getattr(values, "tolist", None)  # numpy
    if tolist is not None:
        k = kind or _kind_of(values)
        values = tolist()
        if k == BYTES:
            values = [v.encode("utf-8") if isinstance(v, str) else v for v in values]
        return k, values
    return kind or _kind_of(values), values


def _fill(feature, values, kind=None) -> None:
    kind, values = _kind_and_values(values, kind)
    if kind is None:
        return
    target = getattr(feature, LIST_FIELD[kind])
    if kind == BYTES:
        values = [v.encode("utf-8") if isinstance(v, str) else v for v in values]
    try:
        target.value.extend(values)
    except TypeError as exc:
        try:  # bools (and numpy bools) are int64 features; upb wants real ints
            conv = int if kind == INT64 else float if kind == FLOAT else None
            if conv is None or not all(isinstance(v, (bool, int, float)) or hasattr(v, "dtype") for v in values):
                raise TypeError
            del target.value[:]  # extend may have taken a prefix before failing
            target.value.extend([conv(v) for v in values])
        except (TypeError, ValueError):
            raise TypeError(f"cannot store {values!r} as {kind}: {exc}") from None
    if not values:
        target.SetInParent()  # an empty list still says which kind it is


def _fill_features(fmap, features: dict) -> None:
    for name, values in features.items():
        _fill(fmap[name], values)


def encode_example(features: dict, deterministic: bool = False) -> bytes:
    """Serialized ``tf.train.Example`` holding ``{name: values}``."""
    m = _pb.Example()
    m.features.SetInParent()
    _fill_features(m.features.feature, features)
    return m.SerializeToString(deterministic=deterministic)


def encode_sequence_example(context: dict | None = None, feature_lists: dict | None = None, deterministic: bool = False) -> bytes:
    """Serialized ``tf.train.SequenceExample``; ``feature_lists`` maps name -> list of steps.
    Empty steps take the kind of the list's other steps, so TensorFlow parses them."""
    m = _pb.SequenceExample()
    if context is not None:
        m.context.SetInParent()
        _fill_features(m.context.feature, context)
    if feature_lists is not None:
        m.feature_lists.SetInParent()
        lists = m.feature_lists.feature_list
        for name, steps in feature_lists.items():
            kind = None
            for step in steps:
                kind = _kind_and_values(step)[0]
                if kind is not None:
                    break
            fl = lists[name]
            for step in steps:
                _fill(fl.feature.add(), step, kind)
    return m.SerializeToString(deterministic=deterministic)


def _decode_features(fmap, typed: bool) -> dict:
    out = {}
    for name, f in fmap.items():
        which = f.WhichOneof("kind")
        values = list(getattr(f, which).value) if which else []
        out[name] = (KIND_OF_FIELD[which] if which else None, values) if typed else values
    return out


def _parse(cls, data):
    try:
        return cls.FromString(data)
    except DecodeError as exc:
        raise ExampleDecodeError(f"not a serialized {cls.DESCRIPTOR.name}: {exc}") from None


def decode_example(data: bytes, typed: bool = False) -> dict:
    """``{name: [values]}`` of a serialized ``tf.train.Example``."""
    return _decode_features(_parse(_pb.Example, data).features.feature, typed)


def decode_sequence_example(data: bytes, typed: bool = False):
    """``(context, feature_lists)`` of a serialized ``tf.train.SequenceExample``."""
    m = _parse(_pb.SequenceExample, data)
    context = _decode_features(m.context.feature, typed)
    lists = {}
    for name, fl in m.feature_lists.feature_list.items():
        steps = []
        for f in fl.feature:
            which = f.WhichOneof("kind")
            values = list(getattr(f, which).value) if which else []
            steps.append((KIND_OF_FIELD[which] if which else None, values) if typed else values)
        lists[name] = steps
    return context, lists


def to_json_dict(data: bytes, record_type: str = "Example") -> dict:
    """The protobuf JSON mapping of a serialized message, exactly as
    ``google.protobuf.json_format.MessageToDict`` gives it for TensorFlow's class: camelCase
    keys (``int64List``), int64 as strings, bytes base64, NaN/Infinity as strings."""
    cls = _pb.SequenceExample if record_type == "SequenceExample" else _pb.Example
    return json_format.MessageToDict(_parse(cls, data))
