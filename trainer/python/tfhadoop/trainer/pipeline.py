"""``Trainer(...).fit(source)`` and the ``Model`` it returns: export (or reuse) + YARN training +
progress in one call, then ``model.transform(df)`` scores on the Spark executors.

``Trainer`` takes the fields of :class:`~tfhadoop.trainer.spec.JobSpec` as keywords (the
``tfhadoop train`` flags and YAML keys, with ``_`` for ``-``): one spec, its defaults and checks,
under all three.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field, fields, replace

from tfhadoop.errors import CommandError, TrainingFailed
from tfhadoop.trainer.spec import REMOVED, JobSettings, JobSpec

_PLACEHOLDER = "fit:source"  # JobSpec.data until fit names the dataset
KEYWORDS = tuple(f.name for f in fields(JobSpec))  # Trainer(...)'s keywords: JobSpec's fields


class Trainer:
    """A training job waiting for its data: ``Trainer(model=..., checkpoint_dir=..., export_dir=...,
    label=..., workers=..., ...)`` with the names of ``tfhadoop train``'s flags."""

    def __init__(self, **spec):
        unknown = sorted(set(spec) - set(KEYWORDS) - set(REMOVED))  # a removed one: JobSpec says why
        if unknown:
            raise CommandError(f"Trainer got unknown keywords {', '.join(unknown)} (they are JobSpec's fields, "
                               f"as the tfhadoop train flags with _ for -)")
        data = spec.pop("data", None)
        missing = [k for k in ("model", "checkpoint_dir", "export_dir") if not spec.get(k)]
        if missing:
            raise CommandError("Trainer needs " + ", ".join(missing))
        self.spec = JobSpec.from_dict({**spec, "data": data or _PLACEHOLDER})  # unknown keys, bad values: now

    @classmethod
    def from_yaml(cls, path: str, **overrides) -> Trainer:
        """The YAML job spec of ``tfhadoop train job.yaml``, keyword arguments overriding its keys."""
        import yaml

        with open(path) as f:
            data = {k.replace("-", "_"): v for k, v in (yaml.safe_load(f) or {}).items()}
        return cls(**{**data, **overrides})

    def fit(self, source=None, *, dataset: str | None = None, validate_model: bool = True, out=None,
            **export) -> Model:
        """Train on ``source`` and return the :class:`Model`. ``source``: a Spark DataFrame, a Hive
        table name, or a dataset directory (with a ``_tfhadoop.json`` manifest; trained on as is);
        None: the spec's ``data``. A DataFrame or table is exported first (to ``dataset``, default
        a directory per source fingerprint under ``/user/<you>/.tfhadoop/fit-datasets``) unless an
        unchanged source was exported with the same options before. ``export``: ``split``,
        ``split_key``, ``shards``, ``records_per_shard``, ``compression``, ``exact_columns``, ``pad``
        ({column: value}) as in ``tfhadoop export``. Raises :class:`TrainingFailed` when the job fails."""
        from tfhadoop import hadoop

        out = out or sys.stdout

        def notice(text):
            print(text, file=out, flush=True)

        source = self.spec.data if source is None else source
        if source is None or source == _PLACEHOLDER:
            raise CommandError("fit needs a source: a DataFrame, a Hive table name or a dataset path")
        conf = hadoop.use_cluster()
        reused = None
        if _is_dataframe(source) or (isinstance(source, str) and not _looks_like_path(source)):
            data, reused = self._export(source, dataset, export, conf, notice)
        else:
            if export or dataset:
                raise CommandError("dataset= and export options apply to a DataFrame or table, not to a dataset path")
            data = source
        job = replace(self.spec, data=data).validate()
        model = _train(job, validate_model, notice, out)
        model.dataset, model.reused_export = job.data, reused
        return model

    def _export(self, source, dataset, export, conf, notice):
        from pyspark.sql import SparkSession

        from tfhadoop.spark.reuse import export_or_reuse
        from tfhadoop.trainer import protocol

        spark = source.sparkSession if _is_dataframe(source) else SparkSession.getActiveSession()
        if spark is None:
            from tfhadoop.spark.session import hive_session

            spark = hive_session("tfhadoop-fit")
        label = self.spec.label if isinstance(self.spec.label, str) else ",".join(self.spec.label)  # the export's form
        url, _, reused = export_or_reuse(spark, source, label, export, dataset, conf.default_fs,
                                         protocol.user(), notice)
        return url, reused


def _is_dataframe(obj) -> bool:
    return hasattr(obj, "sparkSession") and hasattr(obj, "mapInArrow")


def _looks_like_path(text: str) -> bool:
    return "/" in text or ":" in text


def _train(job: JobSettings, validate_model: bool, notice, out) -> Model:
    """Submit ``job``, show its progress on ``out`` until it ends; the Model, or TrainingFailed."""
    from tfhadoop import hadoop
    from tfhadoop.trainer import console
    from tfhadoop.trainer.follow import follow
    from tfhadoop.trainer.submit import submit
    from tfhadoop.trainer.validate import validate_job
    from tfhadoop.yarn.client import require_yarn_command

    log = console.log_path("fit")
    conf = hadoop.use_cluster()
    require_yarn_command()  # the submit needs it: said before the checks, which take a while
    with console.stderr_to(log):  # TensorFlow's and Java's start-up lines go to the log file
        job, manifest = validate_job(job, conf, model=validate_model, notice=notice)
        client = console.skein_client(False, log)
    with client:
        with console.stderr_to(log):
            app_id = submit(job, client=client, manifest=manifest, notice=notice)
        notice(f"application {app_id} (client log: {log})")
        state = follow(app_id, job.checkpoint_dir, client=client, display=console.Display(asdict(job), out))
    model = Model(path=job.export_dir, app_id=app_id, metrics=state.get("metrics") or {},
                  checkpoint_dir=job.checkpoint_dir, events=state.get("events") or [], log=log)
    if state["final_status"] != "SUCCEEDED":
        diag = (state.get("result") or {}).get("diagnostics") or state.get("diagnostics")
        raise TrainingFailed(app_id, state["final_status"], diag, job.checkpoint_dir, log)
    notice(f"training SUCCEEDED: SavedModel at {job.export_dir}")
    return model


@dataclass
class Model:
    """A trained SavedModel: where it is, how it was trained, and scoring on Spark.
    ``Model(path)`` alone is enough to score (``tfhadoop predict`` does that)."""

    path: str
    app_id: str | None = None
    metrics: dict = field(default_factory=dict)
    checkpoint_dir: str | None = None
    events: list = field(default_factory=list)
    log: str | None = None
    dataset: str | None = None
    reused_export: bool | None = None
    _scorers: dict = field(default_factory=dict, repr=False)

    @property
    def event_log(self) -> str | None:
        """The job's ``events.jsonl`` on HDFS (every failure and recovery, with YARN exit statuses)."""
        from tfhadoop.trainer import protocol

        return protocol.job_file(self.checkpoint_dir, protocol.EVENTS_FILE) if self.checkpoint_dir else None

    def transform(self, df, prediction_col: str = "prediction"):
        """``df`` with one column per model output (a single output: ``prediction_col``), scored
        on the executors; the SavedModel is loaded once per executor process. Inputs are matched
        to columns by the model's input names; a missing or mistyped column raises CommandError
        here, before any task runs."""
        from tfhadoop.spark.scorer import Scorer

        spark = df.sparkSession
        key = id(spark)
        if key not in self._scorers:
            self._scorers[key] = Scorer(spark, self.path)
        return self._scorers[key].transform(df, prediction_col)

    @property
    def model_loads(self) -> int:
        """How many times executors loaded the SavedModel for this model's transforms so far."""
        return sum(s.model_loads.value for s in self._scorers.values())

    def to_json(self) -> str:
        """Where the model and its job's records are, for a scheduler's logs."""
        keep = [f.name for f in fields(self) if not f.name.startswith("_") and f.name != "events"]
        return json.dumps({**{k: getattr(self, k) for k in keep}, "event_log": self.event_log})
