"""TensorFlow's ``example.proto`` / ``feature.proto`` as protobuf classes, built at import time
from a hand-written descriptor in a *private* descriptor pool, so neither ``protoc`` nor
TensorFlow is needed and importing TensorFlow later cannot clash with our registrations.

Used for the protobuf JSON mapping (``google.protobuf.json_format``) and as a cross-check of the
hand-written wire codec in :mod:`tfhadoop.connectors.example`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/example.proto", package="tensorflow", syntax="proto3")

    def message(name, *fields, map_entry=False, parent=None):
        m = (parent.nested_type if parent is not None else fd.message_type).add(name=name)
        if map_entry:
            m.options.map_entry = True
        for number, fname, ftype, label, type_name, extra in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label, json_name=_camel(fname))
            if type_name:
                f.type_name = type_name
            if extra == "packed":
                f.options.packed = True
            elif extra == "oneof":
                f.oneof_index = 0
        return m

    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    message("BytesList", (1, "value", _F.TYPE_BYTES, rep, None, None))
    message("FloatList", (1, "value", _F.TYPE_FLOAT, rep, None, "packed"))
    message("Int64List", (1, "value", _F.TYPE_INT64, rep, None, "packed"))
    feature = message(
        "Feature",
        (1, "bytes_list", _F.TYPE_MESSAGE, opt, ".tensorflow.BytesList", "oneof"),
        (2, "float_list", _F.TYPE_MESSAGE, opt, ".tensorflow.FloatList", "oneof"),
        (3, "int64_list", _F.TYPE_MESSAGE, opt, ".tensorflow.Int64List", "oneof"),
    )
    feature.oneof_decl.add(name="kind")
    features = message("Features", (1, "feature", _F.TYPE_MESSAGE, rep, ".tensorflow.Features.FeatureEntry", None))
    message("FeatureEntry", (1, "key", _F.TYPE_STRING, opt, None, None), (2, "value", _F.TYPE_MESSAGE, opt, ".tensorflow.Feature", None), map_entry=True, parent=features)
    message("FeatureList", (1, "feature", _F.TYPE_MESSAGE, rep, ".tensorflow.Feature", None))
    lists = message("FeatureLists", (1, "feature_list", _F.TYPE_MESSAGE, rep, ".tensorflow.FeatureLists.FeatureListEntry", None))
    message("FeatureListEntry", (1, "key", _F.TYPE_STRING, opt, None, None), (2, "value", _F.TYPE_MESSAGE, opt, ".tensorflow.FeatureList", None), map_entry=True, parent=lists)
    message("Example", (1, "features", _F.TYPE_MESSAGE, opt, ".tensorflow.Features", None))
    message(
        "SequenceExample",
        (1, "context", _F.TYPE_MESSAGE, opt, ".tensorflow.Features", None),
        (2, "feature_lists", _F.TYPE_MESSAGE, opt, ".tensorflow.FeatureLists", None),
    )
    return fd


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


POOL = descriptor_pool.DescriptorPool()
POOL.Add(_file())
if TYPE_CHECKING:  # the same messages as TensorFlow's generated classes, whose stubs give their fields
    from tensorflow.core.example.example_pb2 import Example, SequenceExample
    from tensorflow.core.example.feature_pb2 import Feature, Features
else:
    Example = message_factory.GetMessageClass(POOL.FindMessageTypeByName("tensorflow.Example"))
    SequenceExample = message_factory.GetMessageClass(POOL.FindMessageTypeByName("tensorflow.SequenceExample"))
    Features = message_factory.GetMessageClass(POOL.FindMessageTypeByName("tensorflow.Features"))
    Feature = message_factory.GetMessageClass(POOL.FindMessageTypeByName("tensorflow.Feature"))



