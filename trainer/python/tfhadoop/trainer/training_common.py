"""The parts of a training run that both strategies' trainers use: the PS coordinator
(``coordinator``) and the allreduce training process (``allreduce``) import them from here, so
neither module doubles as the other's library.
"""
from __future__ import annotations

import importlib
import json


def build_model(strategy, build, ref: str):
    """The user's compiled model from ``build`` (the model function named ``ref``) under
    ``strategy``'s scope, with its optimizer's slots created there too (PS mode and allreduce alike):
    variables placed by the strategy, checkpointable at once."""
    with strategy.scope():
        model = build()
        if model.optimizer is None:
            raise ValueError(f"{ref} returned a model that is not compiled")
        model.optimizer.build(model.trainable_variables)
    return model


def load_model_fn(name: str):
    """``pkg.module:function`` -> the function."""
    module, _, attr = name.partition(":")
    if not attr:
        raise ValueError(f"--model must be MODULE:FUNCTION, got {name!r}")
    return getattr(importlib.import_module(module), attr)


class Progress:
    """Progress and results for the client, in the Skein key-value store."""

    def __init__(self, app):
        self.app = app

    def put(self, key: str, value: dict) -> None:
        if self.app is not None:
            self.app.kv[key] = json.dumps(value).encode()

    def put_list(self, key: str, value: list) -> None:
        if self.app is not None:
            self.app.kv[key] = json.dumps(value).encode()

    def stop_request(self) -> dict | None:
        """What ``tfhadoop stop`` asked ({"time", "user"}), or None: read at each epoch's end."""
        from tfhadoop.trainer import protocol

        raw = self.app.kv.get(protocol.KV_STOP) if self.app is not None else None
        return json.loads(raw.decode()) if raw else None


def training_done(state: dict, epochs: int | None, steps: int | None) -> bool:
    """``--epochs``: all epochs done; ``--steps``: that many steps taken (epochs run on); or
    ``tfhadoop stop`` was honoured at an epoch's end (``state["stopped"]``, kept in checkpoints)."""
    if state.get("stopped"):
        return True
    if steps:
        return state["steps"] >= steps
    return state["epoch"] >= epochs


def input_report(indexes: dict) -> dict:
    """metrics.json's ``input``: how many train shards have a record index (their tasks start at a
    byte offset, the streaming path) out of all; the others' tasks read from the shard start."""
    return {"train_shards": len(indexes), "indexed_shards": sum(1 for i in indexes.values() if i is not None)}
