"""`tfhadoop status APP` of a finished job shows its training metrics from metrics.json: the loss
of every epoch, and the eval metrics when the dataset has an eval split."""
from __future__ import annotations

import argparse
import contextlib

import pytest

from tfhadoop.trainer import jobs_cli

APP = "application_1700000000000_0007"
EPOCHS = [{"epoch": 0, "examples": 2400, "expected": 2400, "mean_loss": 0.6931, "steps": 38},
          {"epoch": 1, "examples": 2400, "expected": 2400, "mean_loss": 0.4127, "steps": 76},
          {"epoch": 2, "examples": 2400, "expected": 2400, "mean_loss": 0.30126, "steps": 114}]


def _finished(metrics: dict) -> dict:
    """What job_status returns for a finished job whose job dir holds ``metrics``."""
    return {"app": APP, "name": "tfhadoop-train", "state": "FINISHED", "final_status": "SUCCEEDED",
            "queue": "default", "diagnostics": "", "job": {"model": "m:build", "data": "hdfs:///d", "workers": 2,
                                                            "ps": 1}, "job_dir": "hdfs:///ckpt", "events": [],
            "metrics": {"app": APP, "steps": 114, "train_seconds": 42.5, **metrics}, "result": None,
            "progress": {"epoch": 3, "steps": 114, "checkpoint": True}, "containers": []}


@pytest.fixture()
def status_of(monkeypatch, capsys):
    """Runs `tfhadoop status APP` against ``st`` (no cluster: the client and the job files faked)."""
    from tfhadoop import hadoop
    from tfhadoop.trainer import submit as job

    def run(st: dict) -> str:
        monkeypatch.setattr(jobs_cli, "_client", lambda: contextlib.nullcontext(object()))
        monkeypatch.setattr(jobs_cli, "job_status", lambda client, conf, app: st)
        monkeypatch.setattr(hadoop, "load_conf", lambda: None)
        monkeypatch.setattr(job, "tracking_url", lambda client, conf, app: f"http://rm/proxy/{app}/")
        assert jobs_cli.status(argparse.Namespace(app=APP, follow=False, html=None)) == 0
        return capsys.readouterr().out

    return run


def test_finished_job_without_eval_split_shows_the_loss_of_every_epoch(status_of):
    out = status_of(_finished({"epochs": EPOCHS}))
    lines = out.splitlines()
    assert "train loss per epoch: 1 0.6931, 2 0.4127, 3 0.3013 (no eval split)" in lines, out
    assert "eval metrics" not in out


def test_finished_job_with_eval_split_shows_loss_and_eval_metrics(status_of):
    out = status_of(_finished({"epochs": EPOCHS, "eval": {"loss": 0.3311, "auc": 0.91234}}))
    lines = out.splitlines()
    assert "train loss per epoch: 1 0.6931, 2 0.4127, 3 0.3013" in lines, out
    assert "eval metrics: loss 0.3311, auc 0.9123" in lines, out


def test_a_long_run_shows_its_first_and_last_epochs():
    from tfhadoop.trainer.console import metrics_lines

    epochs = [{"epoch": i, "mean_loss": 1.0 / (i + 1)} for i in range(50)]
    assert metrics_lines({"epochs": epochs}) == [
        "train loss per epoch: 1 1, 2 0.5, 3 0.3333, 4 0.25, 5 0.2, ..., 46 0.02174, 47 0.02128, 48 0.02083, "
        "49 0.02041, 50 0.02 (no eval split)"]
    assert metrics_lines(None) == [] and metrics_lines({"epochs": []}) == []
