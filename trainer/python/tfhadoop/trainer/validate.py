"""Submit-time checks of a training job: every mistake that would otherwise fail inside YARN
minutes later (a path YARN cannot localize, a split or label that is not there, an export that
would be refused at the end, another job's checkpoints, a model that cannot be imported or does
not fit the dataset) is an error here, in the client, before anything is submitted.

The model check imports the model's module with the job's ``--python-path``, builds it, matches
its inputs to the manifest's features and runs one forward pass and loss on a small batch read
from the first train shard (``--no-validate`` skips this part).
"""
from __future__ import annotations

import importlib
import itertools
import json
import os
import sys
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from tfhadoop.errors import ValidationError
from tfhadoop.trainer import protocol

if TYPE_CHECKING:
    from tfhadoop.trainer.spec import JobSettings

CLUSTER_SCHEMES = ("hdfs", "viewfs")


def qualify(path: str, default_fs: str, flag: str, local_ok: bool = False) -> str:
    """``hdfs:///x``, ``/x`` and ``x`` (relative to ``/user/<user>``) as full URLs of the cluster's
    file system, as Hadoop's own tools resolve them; a URL with a host is kept. ``file://`` is
    taken only where ``local_ok``."""
    parsed = urlparse(path)
    fs = urlparse(default_fs)
    if parsed.scheme == "file":
        if local_ok:
            return path
        raise ValidationError(f"{flag} {path}: must be on the cluster's file system (hdfs://...), "
                              "not a local path")
    if parsed.scheme and parsed.scheme not in CLUSTER_SCHEMES:
        raise ValidationError(f"{flag} {path}: unsupported scheme {parsed.scheme!r} (use hdfs://)")
    if parsed.scheme and parsed.netloc:
        return path
    if parsed.scheme and parsed.scheme != fs.scheme:
        raise ValidationError(f"{flag} {path}: no host in the URL and fs.defaultFS is {default_fs}")
    p = parsed.path if parsed.scheme else path
    if not p.startswith("/"):
        p = f"/user/{protocol.user()}/{p}"
    return f"{default_fs.rstrip('/')}{p}"


def _local_hint(original: str) -> str:
    if urlparse(original).scheme or not os.path.exists(original):
        return ""
    return f"; did you mean file://{os.path.abspath(original)} (the local folder)?"


def qualify_paths(job: JobSettings, default_fs: str) -> JobSettings:
    """The job with its paths as full URLs of the cluster's file system (``job`` is not changed)."""
    return replace(job, data=qualify(job.data, default_fs, "--data", local_ok=True),
                   checkpoint_dir=qualify(job.checkpoint_dir, default_fs, "--checkpoint-dir"),
                   export_dir=qualify(job.export_dir, default_fs, "--export-dir"),
                   python_archive=job.python_archive and qualify(job.python_archive, default_fs, "--python-archive"))


def describe_features(parse_spec: dict, label=None) -> str:
    labels = [label] if isinstance(label, str) else list(label or [])
    out = []
    for name, spec in sorted({**parse_spec.get("features", {}), **parse_spec.get("sequence_features", {})}.items()):
        kind = spec.get("type", "?").replace("Feature", "").replace("FixedLenSequence", "feature list") \
            .replace("Ragged", "feature list").replace("FixedLen", "fixed").replace("VarLen", "var-len")
        shape = spec.get("shape")
        out.append(f"{name} ({spec.get('dtype', '?')} {kind}{' ' + str(list(shape)) if shape is not None else ''}"
                   f"{', the label' if name in labels else ''})")
    return ", ".join(out)


def check_columns(job, parse_spec: dict) -> None:
    """Every label column is a column of the dataset; a ``--sample-weight`` column is one too,
    not a label, and holds one number per example (what Keras takes as ``sample_weight``)."""
    from tfhadoop.trainer.spec import label_columns

    features = parse_spec.get("features", {})
    try:
        labels = label_columns(job.label)
    except ValueError as exc:
        raise ValidationError(f"--label: {exc}") from exc
    for name in labels:
        if name not in features:
            raise ValidationError(f"--label {name!r} is not a column of {job.data}; "
                                  f"features: {describe_features(parse_spec)}")
    weight = job.sample_weight
    if weight is None:
        return
    if weight not in features:
        raise ValidationError(f"--sample-weight {weight!r} is not a column of {job.data}; "
                              f"features: {describe_features(parse_spec)}")
    if weight in labels:
        raise ValidationError(f"--sample-weight {weight!r} is also a --label column")
    f = features[weight]
    numeric = f.get("dtype") in ("float16", "bfloat16", "float32", "float64", "int32", "int64")
    scalar = f.get("type") == "FixedLenFeature" and list(f.get("shape") or []) in ([], [1])
    if not (numeric and scalar):
        raise ValidationError(f"--sample-weight {weight!r} must be a numeric column with one value per example "
                              f"(FixedLenFeature of shape [] or [1]); it is {describe_features({'features': {weight: f}})}")


def check_dataset(job: JobSettings, original: str, notice) -> tuple[JobSettings, object]:
    """The job with its train/eval splits resolved (an unsplit dataset trains on every record,
    without evaluation) and the manifest; the label is a column."""
    from tfhadoop.connectors.dataset import ManifestError, load, rewrite_command

    try:
        manifest = load(job.data)
    except ManifestError as exc:
        raise ValidationError(f"--data {original}: no dataset manifest at {job.data}/_tfhadoop.json"
                              f"{_local_hint(original)}") from exc
    check_columns(job, manifest.parse_spec)
    if manifest.compression != "none":  # it trains, on the slow path: said once, before submitting
        notice(f"{job.data} is {manifest.compression}-compressed: each trainer task decompresses its shard from "
               f"the start, slower the later the task; `{rewrite_command(job.data)}` rewrites it uncompressed with "
               "record indexes, so that tasks start at a byte offset")
    names = manifest.split_names()
    if not names:
        if job.train_split not in (None, "train") or job.eval_split not in (None, "eval"):
            raise ValidationError(f"{job.data} was exported without splits: no split "
                                  f"{job.train_split if job.train_split != 'train' else job.eval_split!r}")
        job = replace(job, train_split=None, eval_split=None)
        notice(f"{job.data} has no splits: training on all {manifest.records(None)} records, no eval split")
    else:
        if job.train_split not in names:
            raise ValidationError(f"{job.data} has no split {job.train_split!r} (splits: {', '.join(names)}); "
                                  "choose one with --train-split")
        if job.eval_split and job.eval_split not in names:
            if job.eval_split != "eval":
                raise ValidationError(f"{job.data} has no split {job.eval_split!r} (splits: {', '.join(names)})")
            job = replace(job, eval_split=None)
            notice(f"{job.data} has no eval split: no evaluation at the end")
    return job, manifest


def check_outputs(job, notice) -> None:
    """The export directory must not exist; the checkpoint directory must be empty or hold this
    same job (model, dataset, label), which then resumes."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import jobdir

    if hdfs.exists(job.export_dir):
        raise ValidationError(f"--export-dir {job.export_dir} exists already: choose a new one "
                              "(a SavedModel is never overwritten)")
    ckpt = job.checkpoint_dir
    names = hdfs.list_names(ckpt)
    if not names:
        return
    try:
        before = json.loads(hdfs.read_bytes(protocol.job_file(ckpt, protocol.JOB_FILE)))
    except (FileNotFoundError, ValueError):
        before = None
    fresh = f"give a new --checkpoint-dir to start fresh, or delete it: hdfs dfs -rm -r {ckpt}"
    if before is None:
        if any(n.startswith(("latest", "ckpt-")) for n in names):
            raise ValidationError(f"--checkpoint-dir {ckpt} holds checkpoints of an unknown job; {fresh}")
        return
    theirs = {k: before.get(k) for k in ("model", "data", "label")}
    ours = {k: getattr(job, k) for k in theirs}
    if theirs != ours:
        diff = ", ".join(f"{k} {theirs[k]}" for k in theirs if theirs[k] != ours[k])
        raise ValidationError(f"--checkpoint-dir {ckpt} holds another job's checkpoints ({diff}); {fresh}")
    state = jobdir.latest_state(ckpt)
    if state:
        notice(f"resuming from step {state.get('steps', 0)} (epoch {state.get('epoch', 0)}) "
               f"of {before.get('app', 'an earlier job')} in {ckpt}")


def _import_model(job):
    module, _, fn = job.model.partition(":")
    search = [os.path.abspath(p) for p in job.python_path]
    for p in reversed(search):
        if p not in sys.path:
            sys.path.insert(0, p)
    where = ", ".join(search) if search else "no --python-path"
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise ValidationError(f"--model {job.model}: no module {module!r} on the python path "
                                  f"({where}, then this environment's site-packages)") from exc
        raise ValidationError(f"--model {job.model}: importing {module} failed: {exc}") from exc
    except Exception as exc:
        raise ValidationError(f"--model {job.model}: importing {module} raised {type(exc).__name__}: {exc}") from exc
    if not callable(getattr(mod, fn, None)):
        defined = sorted(n for n, v in vars(mod).items() if callable(v) and not n.startswith("_")
                         and getattr(v, "__module__", None) == mod.__name__)
        raise ValidationError(f"--model {job.model}: {module} ({mod.__file__}) has no function {fn!r}; "
                              f"it defines: {', '.join(defined) or 'no functions'}")
    return getattr(mod, fn)


def _first_batch(manifest, split, n: int) -> list:
    from tfhadoop.connectors.tfrecord import read_records

    shard = manifest.split(split)[0]
    comp = None if manifest.compression == "none" else manifest.compression
    return list(itertools.islice(read_records([f"{manifest.root}/{shard.path}"], compression=comp), n))


def check_model(job, manifest) -> None:
    """Import, build, match inputs to features, one forward pass and loss on a small batch."""
    protocol.tf_environment()
    build = _import_model(job)
    import tensorflow as tf

    from tfhadoop.trainer.feeding import mismatch
    from tfhadoop.trainer.keras_step import compute_loss
    from tfhadoop.trainer.spec import label_columns
    from tfhadoop.trainer.step import model_parse_fn

    try:
        model = build()
    except Exception as exc:
        raise ValidationError(f"--model {job.model}: calling it raised {type(exc).__name__}: {exc}") from exc
    if getattr(model, "optimizer", None) is None:
        raise ValidationError(f"--model {job.model} returned a model that is not compiled (call model.compile)")
    spec = manifest.parse_spec
    labels = label_columns(job.label)
    features = {k: v for k, v in {**spec.get("features", {}), **spec.get("sequence_features", {})}.items()
                if k not in (*labels, job.sample_weight)}
    listing = describe_features(spec, labels)
    if not model.built or not getattr(model, "inputs", None):
        raise ValidationError(f"--model {job.model}: the model has no defined inputs; start it with "
                              f"tf_keras.Input(shape, name=FEATURE); features: {listing}")
    outputs = list(getattr(model, "output_names", None) or [])
    if len(labels) > 1 and sorted(outputs) != sorted(labels):
        raise ValidationError(f"--model {job.model}: with several --label columns ({', '.join(labels)}) the model "
                              f"needs one output named after each; its outputs are: {', '.join(outputs)}")
    if len(labels) == 1 and len(outputs) > 1:
        raise ValidationError(f"--model {job.model} has {len(outputs)} outputs ({', '.join(outputs)}): give one "
                              f"--label column per output (comma-separated), each output named after its column")
    single = len(features) == 1 and len(model.inputs) == 1
    for inp in model.inputs:
        name = inp.name.split(":")[0]
        if single:
            name = next(iter(features))
        elif name not in features:
            raise ValidationError(f"--model {job.model}: model input {name!r} is not a feature of {job.data} "
                                  f"(name the inputs after features); features: {listing}")
        f = features[name]
        want = f.get("shape")
        have = [d for d in inp.shape[1:]]
        if f.get("type") == "FixedLenFeature" and want is not None and None not in have and list(want) != have:
            raise ValidationError(f"--model {job.model}: model input {inp.name.split(':')[0]!r} has shape {have} "
                                  f"but feature {name!r} is {f.get('dtype')} {list(want)}; features: {listing}")
        why = mismatch(name, inp, f)
        if why:
            raise ValidationError(f"--model {job.model}: model input {inp.name.split(':')[0]!r} {why}; "
                                  f"features: {listing}")
        if (f.get("dtype") == "string") != (inp.dtype == tf.string):
            raise ValidationError(f"--model {job.model}: model input {inp.name.split(':')[0]!r} is {inp.dtype.name} "
                                  f"but feature {name!r} is {f.get('dtype')}; features: {listing}")
    records = _first_batch(manifest, job.train_split, min(job.batch_size, 16))
    shard = manifest.split(job.train_split)[0].path
    try:
        compute_loss(model, *model_parse_fn(model, spec, job.label, job.sample_weight)(tf.constant(records)),
                     training=False)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValidationError(f"--model {job.model}: one forward pass and loss on {len(records)} records of "
                              f"{shard} failed: {type(exc).__name__}: {first}; features: {listing}") from exc


def validate_job(job: JobSettings, conf, model: bool = True, notice=print) -> tuple[JobSettings, object]:
    """All checks, in the order a user would fix them; returns the job as it is submitted (paths
    qualified, splits resolved) and the dataset's manifest."""
    from tfhadoop.trainer.mlflow_run import check_tracking

    check_tracking(job)  # seconds at most, and a mistake the user fixes first: before the dataset
    original = job.data
    job = qualify_paths(job, conf.default_fs)
    job, manifest = check_dataset(job, original, notice)
    check_outputs(job, notice)
    if model:
        check_model(job, manifest)
    return job, manifest
