"""A SavedModel's serving function as scoring needs it: its named inputs (with their specs), its
output keys, and a call from a dict of input tensors to a dict of outputs.

``serving_default`` names each input after the model's input, except that TensorFlow flattens a
composite input into unnamed components: a ``tf.RaggedTensor`` input becomes ``args_0`` (values)
and ``args_0_1`` (row splits), the feature name is gone. For a model with a ragged or sparse
input (issue 30 §5) the inputs come from the Keras model's own saved call instead (``__call__``
with ``training=False``, whose signature keeps the names and the ``RaggedTensorSpec`` /
``SparseTensorSpec``), and its outputs are keyed as ``serving_default`` keys them.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from tfhadoop.errors import CommandError

SIGNATURE = "serving_default"


@dataclass(frozen=True)
class Serving:
    inputs: dict  # input name -> tf.TensorSpec | tf.RaggedTensorSpec | tf.SparseTensorSpec
    outputs: dict  # output key -> tf.TensorSpec
    call: Callable[[dict], dict]  # {input name: tensor} -> {output key: tensor}


def load(folder: str) -> Serving:
    """The serving function of the SavedModel in ``folder``; a CommandError without one."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    loaded = tf.saved_model.load(folder)
    if SIGNATURE not in loaded.signatures:
        raise CommandError(f"the SavedModel has no {SIGNATURE!r} signature (signatures: "
                           f"{', '.join(loaded.signatures) or 'none'})")
    fn = loaded.signatures[SIGNATURE]
    outputs = dict(fn.structured_outputs)
    composite = _composite_inputs(loaded)
    if composite is None:
        return Serving(dict(fn.structured_input_signature[1]), outputs, lambda tensors: fn(**tensors))
    keys = sorted(outputs)

    def call(tensors: dict) -> dict:
        result = loaded(tensors, training=False)
        if isinstance(result, dict):
            return result
        flat = tf.nest.flatten(result)
        if len(flat) != 1 or len(keys) != 1:
            raise ValueError(f"a model with ragged or sparse inputs returned {len(flat)} unnamed outputs: "
                             f"return a dict of named outputs (its signature has {', '.join(keys)})")
        return {keys[0]: flat[0]}

    return Serving(composite, outputs, call)


def _composite_inputs(loaded) -> dict | None:
    """The named input specs of the Keras call when one of them is ragged or sparse, else None."""
    import tensorflow as tf

    call = loaded.__call__ if callable(loaded) else None
    for concrete in getattr(call, "concrete_functions", None) or []:
        args, _ = concrete.structured_input_signature
        if not args or not isinstance(args[0], dict):
            continue
        specs = dict(args[0])
        if any(isinstance(s, (tf.RaggedTensorSpec, tf.SparseTensorSpec)) for s in specs.values()):
            return specs
    return None
