"""A job as an MLflow run (``--mlflow-tracking-uri``, ``tfhadoop[mlflow]``): its settings as
params, its per-epoch loss and final eval metrics, its SavedModel as the run's ``model/`` artifacts.

Who logs: the job master (master.py, in the application master container), once the job has
ended, not the client and not the coordinator. The master runs once per job for both strategies
and across coordinator restarts and re-formed rings (a coordinator or allreduce chief logging at
its end would log again after a restart late in the export), and it knows the outcome, so a
failed job is a FAILED run too. The run is logged whether a client waits or not (``--detach``,
Ctrl-C on ``tfhadoop train``, ``Trainer.fit``), and the upload runs in no phase the coordinator's
watchdog times. The price: the application master's container must reach the tracking server
(checked from the client at submit; on a real cluster the NodeManagers' network must reach it
too) and the job's Python (a ``--python-archive`` included) needs the ``mlflow`` extra.

Metrics come from ``metrics.json`` at the end, not as they happen: each epoch of its history
carries the step it ended at, the step each value is logged at. The SavedModel is copied from
``--export-dir`` on HDFS (the published model) to the run's artifacts, and the export URL is a tag.
"""
from __future__ import annotations

import json
import tempfile
import threading
import time
from dataclasses import asdict
from typing import TYPE_CHECKING

from tfhadoop.errors import ValidationError
from tfhadoop.trainer import protocol

if TYPE_CHECKING:
    from tfhadoop.trainer.spec import JobSettings

EXTRA = "mlflow"  # setup.py's extras_require key: pip install 'tfhadoop[mlflow]'
PROBE_TIMEOUT_S = 10  # the submit-time check of the server
LOG_DEADLINE_S = 600  # the master waits this long for the logging (the model's upload included)
TAG_APP = "tfhadoop.app"  # a second application attempt finds the first one's run by it
PARAM_CHARS = 500  # the most an old tracking server keeps of a param's value
# a YARN application's final status -> an MLflow run's
RUN_STATUS = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "KILLED": "KILLED"}


def check_tracking(job: JobSettings) -> None:
    """At submit, from the client: the MLflow client is installed and the tracking server
    answers its REST API. Raises ValidationError in one line."""
    import importlib.util
    import urllib.error
    import urllib.request

    uri = job.mlflow_tracking_uri
    if not uri:
        return
    if importlib.util.find_spec("mlflow") is None:
        raise ValidationError(f"--mlflow-tracking-uri needs the MLflow client: pip install 'tfhadoop[{EXTRA}]'")
    probe = f"{uri.rstrip('/')}/api/2.0/mlflow/experiments/search?max_results=1"
    try:
        with urllib.request.urlopen(probe, timeout=PROBE_TIMEOUT_S) as answer:
            json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        raise ValidationError(f"--mlflow-tracking-uri {uri}: the server answered HTTP {exc.code} to the MLflow "
                              f"REST API (is it an MLflow tracking server?)") from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ValidationError(f"--mlflow-tracking-uri {uri}: no MLflow tracking server answers ({reason})") from None


def params_of(job: JobSettings) -> dict[str, str]:
    """The job's settings as MLflow params (strings, lists comma-joined, mappings as k=v)."""
    out = {}
    for name, value in asdict(job).items():
        if isinstance(value, dict):
            value = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ",".join(map(str, value))
        out[name] = str(value)[:PARAM_CHARS]
    return out


def metrics_of(metrics: dict) -> list[tuple[str, float, int]]:
    """(key, value, step) from ``metrics.json``: per epoch its mean loss, its number and (PS) its
    seconds at the step it ended; at the last step the eval metrics (``eval_<name>``), the
    training time and the steps."""
    out: list[tuple[str, float, int]] = []
    step_of = {}
    for e in metrics.get("epochs") or []:
        step_of[e["epoch"]] = e["steps"]
        out += [("loss", float(e["mean_loss"]), e["steps"]), ("epoch", float(e["epoch"] + 1), e["steps"])]
    for t in metrics.get("epoch_timing") or []:
        if t["epoch"] in step_of:
            out.append(("epoch_seconds", float(t["seconds"]), step_of[t["epoch"]]))
    last = int(metrics.get("steps") or 0)
    out += [(f"eval_{k}", float(v), last) for k, v in (metrics.get("eval") or {}).items()]
    for key in ("train_seconds", "steps"):
        if metrics.get(key) is not None:
            out.append((key, float(metrics[key]), last))
    return out


def read_metrics(job: JobSettings) -> dict:
    """The job's ``metrics.json`` ({} when it ended before writing one)."""
    from tfhadoop.connectors import hdfs

    url = protocol.job_file(job.checkpoint_dir, protocol.METRICS_FILE)
    return json.loads(hdfs.read_bytes(url)) if hdfs.exists(url) else {}


def find_or_create_run(client, job: JobSettings, app_id: str):
    """The run of ``app_id`` (one an earlier application attempt began), else a new one."""
    name = job.mlflow_experiment
    experiment = client.get_experiment_by_name(name) if name else None
    if name and experiment is None:
        experiment_id = client.create_experiment(name)
    else:
        experiment_id = experiment.experiment_id if experiment else "0"  # "0": the server's Default
    found = client.search_runs([experiment_id], f"tags.`{TAG_APP}` = '{app_id}'", max_results=1)
    if found:
        return found[0]
    return client.create_run(experiment_id, run_name=app_id, tags={TAG_APP: app_id})


def log_job(job: JobSettings, app_id: str, status: str, diagnostics: str) -> dict:
    """Log the ended job as a run; returns what the ``mlflow_logged`` event says of it."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    uri = str(job.mlflow_tracking_uri)
    client = MlflowClient(tracking_uri=uri)
    run = find_or_create_run(client, job, app_id)
    run_id = run.info.run_id
    if not run.data.metrics and not run.data.params:  # logged once, should an AM attempt 2 come back here
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, step) for k, v, step in metrics_of(read_metrics(job))]
        params = [Param(k, v) for k, v in params_of(job).items()]
        tags = [RunTag(k, v) for k, v in {"tfhadoop.export_dir": job.export_dir,
                                          "tfhadoop.checkpoint_dir": job.checkpoint_dir,
                                          "tfhadoop.strategy": job.strategy, "tfhadoop.status": status,
                                          "tfhadoop.diagnostics": diagnostics[:4000],
                                          "mlflow.user": protocol.user()}.items()]
        client.log_batch(run_id, params=params, tags=tags)
        for i in range(0, len(metrics), 1000):  # the REST API's limit per batch
            client.log_batch(run_id, metrics=metrics[i:i + 1000])
    if status == "SUCCEEDED":
        from tfhadoop.connectors import hdfs

        with tempfile.TemporaryDirectory(prefix="tfhadoop-mlflow-") as folder:
            hdfs.download_dir(job.export_dir, folder)
            client.log_artifacts(run_id, folder, "model")
    client.set_terminated(run_id, RUN_STATUS.get(status, "FAILED"))
    experiment = run.info.experiment_id
    return {"run_id": run_id, "experiment_id": experiment,
            "url": f"{uri.rstrip('/')}/#/experiments/{experiment}/runs/{run_id}"}


def log_job_bounded(job: JobSettings, app_id: str, status: str, diagnostics: str,
                    deadline_s: float = LOG_DEADLINE_S) -> tuple[bool, dict]:
    """``log_job`` within ``deadline_s``: (True, the run) or (False, {"error": ...}); never raises,
    so a tracking server down at the job's end delays the outcome by at most ``deadline_s``."""
    out: dict = {}

    def work():
        try:
            out["run"] = log_job(job, app_id, status, diagnostics)
        except Exception as exc:  # noqa: BLE001 - said in the mlflow_failed event; the job's outcome stands
            out["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"

    thread = threading.Thread(target=work, name="mlflow", daemon=True)
    thread.start()
    thread.join(deadline_s)
    if "run" in out:
        return True, out["run"]
    return False, {"error": out.get("error") or f"not done after {deadline_s:g} s", "uri": job.mlflow_tracking_uri}
