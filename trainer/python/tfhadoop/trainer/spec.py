"""A training job's settings: ``JobSpec``, what a user gives (flags, YAML keys, ``Trainer(...)``
keywords, all generated from its fields), and ``JobSettings``, the checked spec every process of
the job reads (``job.json``). Each field's name, type, default and help are written once, here.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

from tfhadoop.errors import CommandError
from tfhadoop.trainer import protocol

# A checkpoint costs an upload of the model from the parameter servers to HDFS (seconds on a busy
# cluster): taking one every few tasks made the coordinator spend most of its time checkpointing
# (docs/benchmark-history.md); a time interval bounds the work redone after a PS loss instead.
DEFAULT_CHECKPOINT_SECS = 60
MAX_AM_ATTEMPTS = 2  # YARN caps it by yarn.resourcemanager.am.max-attempts (default 2)
STRATEGIES = ("ps", "allreduce")  # --strategy: docs/design/trainer.md
# The coordinator's watchdog: the longest time (s) in one phase without progress before the master
# kills and restarts it (protocol.PHASES; a phase not named here has no limit). "training" counts
# from the last completed closure, and not while no worker is alive (waiting for --min-workers).
# An evaluation or an HDFS outage waited out (hdfs.RETRY_BUDGET_S) is long, not hung.
DEFAULT_PHASE_TIMEOUTS = {protocol.PHASE_CONNECTING: 600, protocol.PHASE_TRAINING: 600,
                          protocol.PHASE_CHECKPOINTING: 600, protocol.PHASE_HDFS_RETRY: 600,
                          protocol.PHASE_EVALUATING: 7200, protocol.PHASE_EXPORTING: 1800}
# Settings that no longer exist: a spec that still names one is refused with the reason.
MLFLOW_URI_ENV = "MLFLOW_TRACKING_URI"  # MLflow's own: --mlflow-tracking-uri's default
REMOVED = {"checkpoint_tasks": "unused: the coordinator keeps 2 tasks per worker in flight and checkpoints by steps or seconds"}


def setting(default=MISSING, help: str = "", *, factory=None, flag_type=None) -> Any:
    """A JobSpec field: its default, its ``--help`` text (the default is appended) and, where the
    annotation does not say it, the type a command-line value is parsed with."""
    meta = {"help": help, "flag_type": flag_type}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class JobSpec:
    """A training job as a user writes it; ``validate()`` returns the checked ``JobSettings``."""

    model: str = setting(help="MODULE:FUNCTION returning a compiled tf-keras model")
    data: str = setting(help="dataset directory with a _tfhadoop.json manifest (hdfs://...)")
    checkpoint_dir: str = setting(help="hdfs:// directory for checkpoints, events.jsonl, metrics.json and "
                                       "tensorboard/")
    export_dir: str = setting(help="hdfs:// directory the SavedModel is published to (must not exist)")
    label: str | list = setting("label", "label column; several, comma-separated (a YAML list), for a model with one "
                                         "output per label column, named after it", flag_type=str)
    sample_weight: str | None = setting(None, "numeric column weighting each example's loss, as "
                                              "model.fit(sample_weight=...)")
    train_split: str | None = setting("train", "split to train on (a dataset without splits: all records)")
    eval_split: str | None = setting("eval", "split evaluated at the end (skipped with a notice if absent)")
    eval_every_epochs: int = setting(0, "also evaluate on the eval split after every N-th epoch: the eval loss "
                                        "per epoch in the history, TensorBoard and the job page's loss plot "
                                        "(0: only at the end)")
    workers: int = setting(2, "worker containers")
    min_workers: int = setting(1, "keep training while at least this many workers are alive")
    ps: int = setting(1, "parameter servers (not with --strategy allreduce)")
    worker_gpus: int = setting(0, "yarn.io/gpu per worker")
    worker_memory: str = setting("2g", "memory per worker, e.g. 4g")
    worker_vcores: int = setting(1, "vcores per worker")
    ps_memory: str = setting("1g", "memory per parameter server")
    master_memory: str = setting("2g", "memory of the job master (the YARN application master)")
    queue: str = setting("default", "YARN queue")
    epochs: int | None = setting(None, "epochs over the train split (default 1; exclusive with --steps)")
    steps: int | None = setting(None, "stop after this many steps (batches) in all, across epochs")
    batch_size: int = setting(64, "batch size per step")
    task_records: int = setting(1000, "records per scheduled task")
    steps_per_execution: int | str = setting(
        "auto", "steps one scheduled closure trains, in whole tasks, as Keras compile(steps_per_execution=...) "
                "(auto: closures of about 0.25 s, from the measured step time)", flag_type=str)
    checkpoint_steps: int | None = setting(None, "a checkpoint once this many steps passed since the last one")
    checkpoint_secs: float | None = setting(None, f"a checkpoint once this many seconds passed since the last one "
                                                  f"(default {DEFAULT_CHECKPOINT_SECS} unless --checkpoint-steps); "
                                                  f"always one at each epoch's end")
    keep_checkpoints: int = setting(5, "checkpoints kept on HDFS, latest included")
    max_worker_restarts: int = setting(5, "failed containers per worker slot before it stays empty; preemptions "
                                          "do not count")
    max_ps_restarts: int = setting(3, "failed containers per parameter server before the job fails")
    max_coordinator_restarts: int = setting(3, "coordinator (allreduce: ring) failures before the job fails")
    startup_timeout: int = setting(300, "seconds for the parameter servers and workers to come up")
    startup_wait: int = setting(60, "seconds to wait for all workers before starting with --min-workers "
                                    "(the rest join as they arrive)")
    hang_timeout: float = setting(120, "seconds without a heartbeat after which a worker, PS or the coordinator "
                                       "counts as hung: it is killed and replaced")
    phase_timeouts: dict | str = setting(
        help="PHASE=SECONDS,...: the coordinator in one phase without progress this long is killed and restarted "
             "from the checkpoint (defaults: connecting, training (since the last closure), checkpointing, "
             "hdfs_retry 600, evaluating 7200, exporting 1800)",
        factory=lambda: dict(DEFAULT_PHASE_TIMEOUTS), flag_type=str)
    name: str = setting("tfhadoop-train", "YARN application name")
    python: str | None = setting(None, "python interpreter in the containers (default: this one, or "
                                       "./env/bin/python with --python-archive)")
    python_archive: str | None = setting(None, "hdfs:// URL of a packed environment (venv-pack/conda-pack .tar.gz) "
                                               "that YARN unpacks into ./env of every container")
    python_path: list = setting(help="directory with the model's code, shipped to every container and put on "
                                     "PYTHONPATH (repeatable)", factory=list, flag_type=str)
    seed: int = setting(0, "seed of the task order (each epoch shuffles the tasks with it)")
    strategy: str = setting("ps", "ps (parameter servers) or allreduce (synchronous MultiWorkerMirroredStrategy "
                                  "ring, elastic through preemption)")
    gang_timeout: float = setting(300, "allreduce: seconds to get --min-workers workers before the job gives up "
                                       "and releases its containers")
    round_timeout: float = setting(300, "allreduce: seconds in which a training process must complete a round (or "
                                        "a start-up stage); one that does not (stopped, or stuck in a collective) is "
                                        "killed and the ring re-formed (0: off)")
    commit_every_steps: int = setting(20, "allreduce: each training process commits the model, optimizer and task "
                                          "ledger to its container (outside the process) once this many steps "
                                          "passed; a re-formed ring restores the newest commit when it is newer "
                                          "than the HDFS checkpoint (0: off)")
    preemption_warnings: bool = setting(True, "act on YARN's preemption warnings, which are always logged as "
                                              "preemption_warned events: keep new work off a warned worker and take "
                                              "a checkpoint due soon (a warned PS: at once) before the container "
                                              "goes; allreduce: shrink the ring at a round boundary")
    tensorboard: bool = setting(False, "also run TensorBoard on the job's event files as a container of the job, its URL "
                                       "on the job page and in tfhadoop status (not a training role: its loss is an "
                                       "event, never the job's failure)")
    tensorboard_memory: str = setting("1g", "memory of the --tensorboard container")
    mlflow_tracking_uri: str | None = setting(None, "http(s):// MLflow tracking server the job logs its settings, "
                                                    "per-epoch metrics and SavedModel to as a run (default: "
                                                    "$MLFLOW_TRACKING_URI; empty: off; needs tfhadoop[mlflow])")
    mlflow_experiment: str | None = setting(None, "MLflow experiment of the run, created if missing (default: "
                                                  "the server's Default)")

    def validate(self) -> JobSettings:
        """The checked spec, defaults resolved; ``self`` is not changed. Raises CommandError."""
        v = {f.name: getattr(self, f.name) for f in fields(self)}
        check_types(v)
        if v["epochs"] is not None and v["steps"] is not None:
            raise CommandError("--epochs and --steps are exclusive: give one")
        if v["epochs"] is None and v["steps"] is None:
            v["epochs"] = 1
        if v["checkpoint_steps"] is None and v["checkpoint_secs"] is None:
            v["checkpoint_secs"] = DEFAULT_CHECKPOINT_SECS
        for name in ("epochs", "steps", "checkpoint_steps", "checkpoint_secs", "batch_size", "task_records",
                     "keep_checkpoints", "hang_timeout"):
            if v[name] is not None and v[name] <= 0:
                raise CommandError(f"{flag(name)} must be positive, got {v[name]}")
        v["phase_timeouts"] = phase_timeouts(v["phase_timeouts"])
        spe = v["steps_per_execution"]
        if isinstance(spe, str) and spe.strip().isdigit():
            spe = v["steps_per_execution"] = int(spe)
        if spe != "auto" and (not isinstance(spe, int) or isinstance(spe, bool) or spe <= 0):
            raise CommandError(f"--steps-per-execution must be a positive number of steps or auto, got {spe!r}")
        if v["python"] is None:
            v["python"] = "./env/bin/python" if v["python_archive"] else sys.executable
        if v["python_archive"] and not str(v["python_archive"]).startswith(("hdfs:", "viewfs:", "s3a:", "/")):
            raise CommandError(f"--python-archive must be a URL on the cluster's file system (hdfs://...), "
                               f"got {v['python_archive']!r}")
        if not 1 <= v["min_workers"] <= v["workers"]:
            raise CommandError(f"--min-workers must be between 1 and --workers ({v['workers']})")
        if v["strategy"] not in STRATEGIES:
            raise CommandError(f"--strategy must be one of {', '.join(STRATEGIES)}, got {v['strategy']!r}")
        if v["strategy"] == "allreduce":
            v["ps"] = 0  # no parameter servers: every worker holds the model
        elif v["ps"] < 1:
            raise CommandError("--ps must be at least 1")
        if v["gang_timeout"] <= 0:
            raise CommandError(f"--gang-timeout must be positive, got {v['gang_timeout']}")
        if v["eval_every_epochs"] < 0:
            raise CommandError(f"--eval-every-epochs must be positive (or 0: off), got {v['eval_every_epochs']}")
        if v["commit_every_steps"] < 0:
            raise CommandError(f"--commit-every-steps must be positive (or 0: off), got {v['commit_every_steps']}")
        if v["round_timeout"] < 0:
            raise CommandError(f"--round-timeout must be positive (or 0: off), got {v['round_timeout']}")
        for name in ("checkpoint_dir", "export_dir"):  # hdfs:///x, /x and x are qualified at submit
            if re.match(r"[a-z][a-z0-9+.-]*:", str(v[name])) and not str(v[name]).startswith(("hdfs:", "viewfs:")):
                raise CommandError(f"{flag(name)} must be on HDFS (hdfs://..., /path or path), got {v[name]!r}")
        if ":" not in v["model"]:
            raise CommandError(f"--model must be MODULE:FUNCTION, got {v['model']!r}")
        v["python_path"] = list(v["python_path"])
        if v["mlflow_tracking_uri"] is None:  # resolved here, once: job.json holds the URI or "" (off)
            v["mlflow_tracking_uri"] = os.environ.get(MLFLOW_URI_ENV, "")
        if v["mlflow_tracking_uri"] and not re.match(r"https?://[^/]", v["mlflow_tracking_uri"]):
            raise CommandError(f"--mlflow-tracking-uri must be an http(s):// MLflow tracking server (the job's "
                               f"application master logs to it), got {v['mlflow_tracking_uri']!r}")
        return JobSettings(**v)

    @classmethod
    def from_dict(cls, data: dict) -> JobSettings:
        """A spec from YAML keys or keywords (``-`` or ``_``), defaults for the keys it lacks, checked."""
        data = {k.replace("-", "_"): v for k, v in data.items()}
        refuse_unknown(data, "job spec keys")
        if data.get("strategy") == "allreduce" and data.get("ps") not in (None, 0):
            raise CommandError("--ps is not allowed with --strategy allreduce (the workers hold the model; "
                               "no parameter servers)")
        missing = [f.name for f in fields(cls) if is_required(f) and f.name not in data]
        if missing:
            raise CommandError("missing " + ", ".join(flag(k) for k in missing))
        return cls(**data).validate()

    @classmethod
    def from_yaml(cls, path: str) -> JobSettings:
        import yaml

        with open(path) as f:
            return cls.from_dict(yaml.safe_load(f) or {})


@dataclass(frozen=True)
class JobSettings(JobSpec):
    """A checked JobSpec: what the master, coordinator and workers read (``job.json``), frozen."""

    @classmethod
    def from_dict(cls, data: dict) -> JobSettings:
        """``job.json`` as ``submit`` wrote it: every setting present, none unknown, checked again;
        anything else is one line naming the setting (a job.json of another tfhadoop version)."""
        refuse_unknown(data, "settings in job.json")
        missing = sorted({f.name for f in fields(JobSpec)} - set(data))
        if missing:
            raise CommandError(f"job.json lacks the settings {', '.join(missing)} (written by another tfhadoop "
                               f"version?)")
        return JobSpec(**data).validate()

    @property
    def phase_limits(self) -> dict[str, float]:
        """``phase_timeouts`` as ``validate()`` resolved it (a spec may give a string): seconds per phase."""
        assert isinstance(self.phase_timeouts, dict)
        return self.phase_timeouts

    @classmethod
    def load(cls, path: str = protocol.JOB_FILE) -> JobSettings:
        """The settings a container was started with (``job.json`` in its working directory)."""
        import json

        with open(path) as f:
            return cls.from_dict(json.load(f))


def is_required(f: Field) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def default_of(f: Field):
    return f.default_factory() if f.default_factory is not MISSING else f.default


def flag(name: str) -> str:
    """The command-line flag of a setting, the name its errors use."""
    return "--" + name.replace("_", "-")


def refuse_unknown(data: dict, what: str) -> None:
    known = {f.name for f in fields(JobSpec)}
    removed = sorted(set(data) & set(REMOVED))
    if removed:
        raise CommandError(f"{removed[0]} was removed ({REMOVED[removed[0]]}): delete it from the job spec")
    unknown = sorted(set(data) - known)
    if unknown:
        raise CommandError(f"unknown {what}: {', '.join(unknown)}")


_TYPES = {"str": str, "int": int, "float": (int, float), "bool": bool, "dict": dict, "list": list,
          "None": type(None)}


def check_types(values: dict) -> None:
    """Each value of the type its field is annotated with (an int is a float; a bool is no int)."""
    for f in fields(JobSpec):
        value = values[f.name]
        names = [t.strip() for t in str(f.type).split("|")]
        if isinstance(value, bool) and "bool" not in names:
            ok = False
        else:
            ok = any(isinstance(value, _TYPES[t]) for t in names)
        if ok:
            continue
        if names == ["bool"]:  # set in YAML or Python; a flag only turns it on (--x) or off (--no-x)
            raise CommandError(f"{f.name} must be true or false, got {value!r}")
        raise CommandError(f"{flag(f.name)} must be {' or '.join(names)}, got {value!r}")


def phase_timeouts(value) -> dict:
    """``--phase-timeouts`` (``"evaluating=7200,training=900"`` or a mapping) over the defaults."""
    from tfhadoop.trainer.protocol import PHASES

    if isinstance(value, str):
        pairs = [p.partition("=") for p in value.split(",") if p.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise CommandError(f"--phase-timeouts must be PHASE=SECONDS,..., got {value!r}")
        value = {k.strip(): v.strip() for k, _, v in pairs}
    out: dict[str, float] = dict(DEFAULT_PHASE_TIMEOUTS)
    for phase, seconds in (value or {}).items():
        if phase not in PHASES:
            raise CommandError(f"--phase-timeouts: unknown phase {phase!r} (phases: {', '.join(PHASES)})")
        try:
            seconds = float(seconds)
        except (TypeError, ValueError):
            raise CommandError(f"--phase-timeouts: {phase}={seconds!r} is not a number of seconds") from None
        if seconds <= 0:
            raise CommandError(f"--phase-timeouts: {phase} must be positive, got {seconds:g}")
        out[phase] = seconds
    return out


def label_columns(label) -> list[str]:
    """``--label y``, ``--label a,b`` or a YAML list -> the label columns, in order. Here, free of
    TensorFlow, so that a client submitting with ``--no-validate`` never imports it."""
    names = label if isinstance(label, (list, tuple)) else str(label).split(",")
    names = [str(n).strip() for n in names if str(n).strip()]
    if not names:
        raise ValueError(f"no label column in {label!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"a label column is named twice in {label!r}")
    return names


def mebibytes(value) -> int:
    """``4g``, ``512m``, ``2 GiB`` or a number of MiB -> MiB."""
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", str(value).lower())
    if not m:
        raise CommandError(f"bad memory size {value!r}: use e.g. 512m or 4g")
    scale = {"": 1, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[m.group(2)]
    return int(float(m.group(1)) * scale)
