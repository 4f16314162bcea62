"""``--mlflow-tracking-uri``: the submit-time checks (no cluster), and a job on the embedded
cluster logged as a run to a real MLflow tracking server this module starts (``mlflow server``
from .venv-mlflow, which ``make setup`` creates: sqlite store, local artifacts, a free port)."""
from __future__ import annotations

import http.server
import socket
import subprocess
import threading
import uuid
from pathlib import Path

import pytest

from tests.trainer import jobs
from tests.waiting import wait_for
from tfhadoop.errors import ValidationError
from tfhadoop.trainer import mlflow_run, protocol
from tfhadoop.trainer.spec import JobSpec

SERVER = Path(__file__).resolve().parents[2] / ".venv-mlflow" / "bin" / "mlflow"
SERVER_START_S = 300  # a cold start imports the whole server: ~2 min seen on a 2-core host at load 13


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def settings(uri: str, **more):
    return JobSpec(model="m:f", data="d", checkpoint_dir="c", export_dir="e", mlflow_tracking_uri=uri,
                   **more).validate()


def test_missing_extra_is_one_line_naming_it(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a))
    with pytest.raises(ValidationError, match=r"pip install 'tfhadoop\[mlflow\]'") as err:
        mlflow_run.check_tracking(settings("http://127.0.0.1:1"))
    assert "\n" not in str(err.value)


def test_unreachable_or_foreign_server_is_refused_at_submit():
    with pytest.raises(ValidationError, match="no MLflow tracking server answers") as err:
        mlflow_run.check_tracking(settings(f"http://127.0.0.1:{free_port()}"))
    assert "\n" not in str(err.value)
    # a web server that is not MLflow's: its 404 is said as such
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(ValidationError, match="answered HTTP 404"):
            mlflow_run.check_tracking(settings(f"http://127.0.0.1:{server.server_port}"))
    finally:
        server.shutdown()


def test_uri_from_the_environment_and_its_scheme(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    assert JobSpec(model="m:f", data="d", checkpoint_dir="c", export_dir="e").validate().mlflow_tracking_uri \
        == "http://tracking:5000"
    assert settings("").mlflow_tracking_uri == ""  # given empty: off, whatever the environment says
    with pytest.raises(Exception, match="must be an http"):
        settings("file:///tmp/mlruns")


def test_metrics_are_logged_at_the_step_each_epoch_ended():
    metrics = {"epochs": [{"epoch": 0, "mean_loss": 2.0, "steps": 10}, {"epoch": 1, "mean_loss": 1.0, "steps": 20}],
               "epoch_timing": [{"epoch": 0, "seconds": 3.0}, {"epoch": 1, "seconds": 2.5}],
               "eval": {"loss": 0.9}, "steps": 20, "train_seconds": 7.0}
    got = mlflow_run.metrics_of(metrics)
    assert [(v, s) for k, v, s in got if k == "loss"] == [(2.0, 10), (1.0, 20)]
    assert [(v, s) for k, v, s in got if k == "epoch_seconds"] == [(3.0, 10), (2.5, 20)]
    assert ("eval_loss", 0.9, 20) in got and ("steps", 20.0, 20) in got
    assert mlflow_run.metrics_of({}) == []  # a job that failed before metrics.json


@pytest.fixture(scope="module")
def tracking_server(tmp_path_factory):
    """``mlflow server`` on a free port; its URI. Skipped where .venv-mlflow is missing."""
    if not SERVER.exists():
        pytest.skip(f"{SERVER} missing: make setup creates .venv-mlflow (the test MLflow server)")
    import urllib.request

    root = tmp_path_factory.mktemp("mlflow")
    uri = f"http://127.0.0.1:{free_port()}"
    log = open(root / "server.log", "w")
    proc = subprocess.Popen([str(SERVER), "server", "--backend-store-uri", f"sqlite:///{root}/mlflow.db",
                             "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1",
                             "--port", uri.rsplit(":", 1)[1], "--workers", "1"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def up():
        assert proc.poll() is None, "mlflow server exited: " + (root / "server.log").read_text()[-3000:]
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_for(up, SERVER_START_S, f"mlflow server at {uri}", interval=1,
                 diagnose=lambda: (root / "server.log").read_text()[-3000:])
        yield uri
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_log_job_once_per_application_and_failed_jobs(tracking_server, monkeypatch, tmp_path):
    """The master's logging against the real server, HDFS stood in for: a second call for the
    same application (an AM attempt 2) finds the run and logs nothing twice."""
    from mlflow.tracking import MlflowClient

    from tfhadoop.connectors import hdfs

    epochs = [{"epoch": 0, "mean_loss": 2.0, "steps": 10}, {"epoch": 1, "mean_loss": 1.0, "steps": 20}]
    monkeypatch.setattr(mlflow_run, "read_metrics", lambda job: {"epochs": epochs, "steps": 20, "eval": {"mse": .5}})
    monkeypatch.setattr(hdfs, "download_dir", lambda url, folder: (Path(folder) / "saved_model.pb").write_text(url))
    experiment = f"unit-{uuid.uuid4().hex[:8]}"
    job = settings(tracking_server, mlflow_experiment=experiment)
    first = mlflow_run.log_job(job, "application_1_0001", "SUCCEEDED", "training finished")
    assert mlflow_run.log_job(job, "application_1_0001", "SUCCEEDED", "training finished") == first
    ok, failed = mlflow_run.log_job_bounded(job, "application_1_0002", "FAILED", "PS lost 4 times")
    assert ok, failed
    client = MlflowClient(tracking_uri=tracking_server)
    run = client.get_run(first["run_id"])
    assert run.info.status == "FINISHED" and run.data.params["mlflow_experiment"] == experiment
    assert [(m.step, m.value) for m in client.get_metric_history(first["run_id"], "loss")] == [(10, 2.0), (20, 1.0)]
    assert run.data.metrics["eval_mse"] == .5
    assert [f.path for f in client.list_artifacts(first["run_id"], "model")] == ["model/saved_model.pb"]
    lost = client.get_run(failed["run_id"])
    assert lost.info.status == "FAILED" and lost.data.tags["tfhadoop.diagnostics"] == "PS lost 4 times"
    assert client.list_artifacts(failed["run_id"], "model") == []
    down, why = mlflow_run.log_job_bounded(settings(f"http://127.0.0.1:{free_port()}"), "app", "FAILED", "", 5)
    assert not down and why["error"], why


@pytest.mark.cluster
def test_a_job_is_logged_as_a_run(hadoop_cluster, dataset, tracking_server):
    from mlflow.tracking import MlflowClient

    experiment = f"tfhadoop-test-{uuid.uuid4().hex[:8]}"
    run, proc = jobs.train(hadoop_cluster, dataset, extra=[
        "--workers", "1", "--epochs", "2", "--mlflow-tracking-uri", tracking_server,
        "--mlflow-experiment", experiment])
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    app_id = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("application "))
    metrics = jobs.metrics(run)
    logged = [e for e in jobs.events(run) if e["event"] == protocol.EventKind.MLFLOW_LOGGED]
    assert len(logged) == 1, jobs.events(run)[-3:]
    assert f"MLflow run {logged[0]['url']}" in proc.stdout

    client = MlflowClient(tracking_uri=tracking_server)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    runs = client.search_runs([exp.experiment_id])
    assert [r.info.run_id for r in runs] == [logged[0]["run_id"]]
    r = runs[0]
    assert r.info.status == "FINISHED" and r.info.run_name == app_id
    assert r.data.params["epochs"] == "2" and r.data.params["model"] == "trainer_test_models:linear"
    assert r.data.tags["tfhadoop.export_dir"] == f"{run}/model"
    history = client.get_metric_history(r.info.run_id, "loss")
    assert [(m.step, m.value) for m in history] == [(e["steps"], pytest.approx(e["mean_loss"]))
                                                     for e in metrics["epochs"]]
    assert len(history) == 2
    assert r.data.metrics["eval_loss"] == pytest.approx(metrics["eval"]["loss"])
    files = {f.path for f in client.list_artifacts(r.info.run_id, "model")}
    assert "model/saved_model.pb" in files and "model/variables" in files, files
