"""Issue 31 §3: the job history's rows from the registry, the job directory and YARN's report,
against fakes of both (the real cluster: test_train_yarn.py's status/kill test)."""
from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

import pytest

from tfhadoop.trainer import history, jobdir

NOW = 1_800_000_000.0


@pytest.fixture
def files(monkeypatch):
    """The job directories' files, by job directory: {"result": ..., "metrics": ..., "state": ...}."""
    held: dict = {}
    monkeypatch.setattr(jobdir, "result", lambda d, app=None: (r := held.get(d, {}).get("result")) and
                        (r if app is None or r.get("app") == app else None))
    monkeypatch.setattr(jobdir, "metrics", lambda d: held.get(d, {}).get("metrics"))
    monkeypatch.setattr(jobdir, "latest_state", lambda d: held.get(d, {}).get("state"))
    return held


def _entry(app: str, submitted: float = NOW - 600):
    return {"app": app, "job_dir": f"hdfs:///runs/{app}", "submitted": submitted,
            "job": {"name": "clicks", "data": "hdfs:///datasets/clicks", "model": "m:build"}}


def _report(state: str, final: str = "UNDEFINED", finished: float | None = None):
    return SimpleNamespace(state=state, final_status=final, tracking_url="http://rm:8088/proxy/x/",
                           finish_time=datetime.fromtimestamp(finished) if finished else None)


def test_the_master_s_result_decides_over_yarn_s_state(files):
    """YARN still reports RUNNING while the master shuts down after writing its outcome."""
    files["hdfs:///runs/a1"] = {"result": {"app": "a1", "status": "SUCCEEDED", "time": NOW - 60},
                                "metrics": {"app": "a1", "epochs": [{"mean_loss": 0.5}, {"mean_loss": 0.25}],
                                            "eval": {"loss": 0.3}}}
    row = history.job_row(_entry("a1"), _report("RUNNING"), now=NOW)
    assert (row.status, row.duration_s, row.epochs, row.loss, row.eval) == ("SUCCEEDED", 540.0, 2, 0.25, {"loss": 0.3})
    assert history.finished(row)


def test_a_job_yarn_forgot_without_a_result_is_unknown_never_running(files):
    files["hdfs:///runs/a2"] = {"state": {"history": [{"mean_loss": 1.5}]}}
    row = history.job_row(_entry("a2"), None, now=NOW)
    assert (row.status, row.duration_s, row.epochs, row.loss) == ("UNKNOWN", None, 1, 1.5)
    assert history.finished(row) and history.duration(row.duration_s) == "?"


def test_a_running_job_counts_its_checkpointed_epochs_and_runs_until_now(files):
    files["hdfs:///runs/a3"] = {"state": {"history": [{"mean_loss": 2.0}, {"mean_loss": 1.0}, {"mean_loss": 0.5}]},
                                "metrics": {"app": "an-earlier-run", "epochs": [], "eval": {"loss": 9.0}}}
    row = history.job_row(_entry("a3"), _report("RUNNING"), now=NOW)
    assert (row.status, row.duration_s, row.epochs, row.loss, row.eval) == ("RUNNING", 600.0, 3, 0.5, None)
    assert not history.finished(row)


def test_yarn_s_outcome_when_the_master_wrote_none(files):
    row = history.job_row(_entry("a4"), _report("KILLED", "KILLED", finished=NOW - 100), now=NOW)
    assert (row.status, row.duration_s, row.epochs) == ("KILLED", 500.0, None)
    row = history.job_row(_entry("a5"), _report("FINISHED", "FAILED", finished=NOW - 300), now=NOW)
    assert (row.status, row.duration_s) == ("FAILED", 300.0)


def test_the_table_and_the_page_show_every_row(files):
    files["hdfs:///runs/a1"] = {"result": {"app": "a1", "status": "SUCCEEDED", "time": NOW},
                                "metrics": {"app": "a1", "epochs": [{"mean_loss": 0.125}], "eval": {"mae": 0.2}}}
    rows = [history.job_row(_entry("a1"), _report("FINISHED", "SUCCEEDED"), now=NOW),
            history.job_row({**_entry("a<2>"), "job": {"name": "<b>x</b>"}}, None, now=NOW)]
    text = history.text_table(rows).splitlines()
    assert text[0].startswith("APPLICATION") and len(text) == 3
    assert text[1].split()[:2] == ["a1", "SUCCEEDED"] and "10m00s" in text[1] and "mae 0.2" in text[1]
    page = history.html_page(rows)
    assert page.count('<tr class="job') == 2 and '<a href="http://rm:8088/proxy/x/">a1</a>' in page
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page  # escaped
    assert "tfhadoop logs a1" in page
