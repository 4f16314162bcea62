"""The parts of a training run that both strategies' trainers use: the PS coordinator
(``coordinator``) and the allreduce training process (``allreduce``) import them from here, so
neither module doubles as the other's library.
"""
from __future__ import annotations

import importlib
import json
import time


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


def plain_copy(build, model):
    """A plain (non-distributed) copy of the trained ``model`` from ``build`` (the user's model
    function): what is evaluated and exported."""
    plain = build()
    plain.set_weights(model.get_weights())
    return plain


def has_eval(manifest, job) -> bool:
    return bool(job.eval_split and manifest.split(job.eval_split))


def evaluate(plain, manifest, job) -> dict | None:
    """The eval split's metrics of ``plain`` (see ``plain_copy``), or None when the job has no eval
    split: the one evaluation both strategies run, at the end and, with ``--eval-every-epochs``,
    after epochs (``epoch_end``)."""
    import tensorflow as tf

    from tfhadoop.connectors.dataset import shard_url
    from tfhadoop.trainer.step import COMPRESSION, model_inputs, model_parse_fn

    if not has_eval(manifest, job):
        return None
    parse = model_parse_fn(plain, manifest.parse_spec, job.label, job.sample_weight)
    files = [shard_url(manifest, s) for s in manifest.split(job.eval_split)]
    ds = tf.data.TFRecordDataset(files, compression_type=COMPRESSION[manifest.compression]).batch(256).map(parse)
    ds = ds.map(lambda f, *y_and_weight: (model_inputs(plain, f), *y_and_weight))
    return {k: float(v) for k, v in plain.evaluate(ds, verbose=0, return_dict=True).items()}


def eval_due(job, manifest, epoch: int, done: bool) -> bool:
    """``--eval-every-epochs N``: after epochs N-1, 2N-1, ... (0-based) of a job with an eval split,
    not after the last (the final evaluation follows it). Off (0): never, and an epoch's end costs
    nothing more than before."""
    n = job.eval_every_epochs
    return bool(n) and (epoch + 1) % n == 0 and not done and has_eval(manifest, job)


def epoch_end(state: dict, entry: dict, summaries, evaluation: dict | None = None) -> None:
    """Close an epoch in ``state``'s history (checkpointed, so it survives restarts): ``entry``
    with the wall time and ``evaluation`` (``evaluate``'s metrics when ``eval_due``) as its
    ``eval``; the epoch's train loss and the evaluation as TensorBoard scalars at its step."""
    entry["time"] = time.time()
    if evaluation is not None:
        entry["eval"] = evaluation
        if "loss" in evaluation:  # what every progress report carries (last_eval), without a history scan
            state["last_eval"] = {"epoch": entry["epoch"], "loss": round(evaluation["loss"], 6), "time": entry["time"]}
    state["history"].append(entry)
    if summaries:
        summaries.scalars("train", entry["steps"], {"epoch_loss": entry["mean_loss"]})
        if evaluation is not None:
            summaries.scalars("eval", entry["steps"], evaluation)


def last_eval(state: dict) -> dict:
    """The newest epoch evaluation as progress fields (``{"eval": {epoch, loss, time}}``), or none:
    the live job page draws the eval curve from the progress samples. Called at every progress
    report, so it reads what ``epoch_end`` kept, never the whole history."""
    return {"eval": state["last_eval"]} if state.get("last_eval") else {}


def per_second(examples: dict, seconds: float) -> dict:
    """Examples per role (``worker/<slot>``, ``rank/<i>``) over ``seconds`` -> examples/s: the
    per-role throughput of a progress report."""
    return {k: round(n / max(seconds, 1e-9), 1) for k, n in sorted(examples.items())}
