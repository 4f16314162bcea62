"""TensorFlow training that runs inside the YARN application.

``from tfhadoop.trainer import Trainer, Model`` is the pipeline API; it is loaded on first use so
that the roles inside YARN (which import ``tfhadoop.trainer.*``) do not pay for it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what static tools see; at run time __getattr__ imports it on first use
    from tfhadoop.trainer.pipeline import Model, Trainer

__all__ = ["Model", "Trainer"]


def __getattr__(name: str):
    if name in __all__:
        from tfhadoop.trainer import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'tfhadoop.trainer' has no attribute {name!r}")
