"""The pieces of the trainer's user surface that need no cluster: path qualification, the
progress line and ETA, the event lines and the job page's HTML."""
from __future__ import annotations

import io

import pytest

from tfhadoop.errors import ValidationError
from tfhadoop.trainer import console, report
from tfhadoop.trainer.validate import qualify

FS = "hdfs://nn:8020"


@pytest.mark.parametrize("path, url", [
    ("hdfs:///data/x", "hdfs://nn:8020/data/x"),
    ("/data/x", "hdfs://nn:8020/data/x"),
    ("data/x", "hdfs://nn:8020/user/alice/data/x"),
    ("hdfs://other:9000/x", "hdfs://other:9000/x"),
])
def test_paths_are_qualified_like_hadoop(path, url, monkeypatch):
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    assert qualify(path, FS, "--data") == url


def test_local_and_foreign_paths_are_refused_where_not_allowed():
    with pytest.raises(ValidationError, match="--export-dir file:///m: must be on the cluster's file system"):
        qualify("file:///m", FS, "--export-dir")
    with pytest.raises(ValidationError, match="unsupported scheme 's4'"):
        qualify("s4://b/x", FS, "--data")
    assert qualify("file:///d", FS, "--data", local_ok=True) == "file:///d"


JOB = {"epochs": 2, "workers": 2, "batch_size": 32}
P = {"epoch": 0, "examples": 1200, "expected": 2400, "steps": 38, "examples_per_s": 600.0}


def test_progress_line_and_eta():
    assert console.eta_seconds(P, JOB) == pytest.approx((2 * 2400 - 1200) / 600)
    assert console.progress_text(P, 2, JOB) == "epoch 1/2, step 38, 600 examples/s, workers 2/2, ETA 0:06"
    steps_job = {"steps": 100, "batch_size": 32, "workers": 1}
    assert console.eta_seconds(P, steps_job) == pytest.approx(62 * 32 / 600)
    assert "step 38/100" in console.progress_text(P, 1, steps_job)


def test_display_without_terminal_prints_a_line_per_epoch_or_interval():
    out = io.StringIO()
    d = console.Display(JOB, out, tty=False)
    d.progress(P, 2)
    d.progress({**P, "examples": 1300}, 2)  # same epoch, within the interval: no new line
    d.progress({**P, "epoch": 1, "examples": 100}, 1)
    d.event({"time": 0, "event": "container_lost", "role": "worker", "slot": 1, "preempted": True,
             "diagnostics": "Container preempted by scheduler"})
    d.event({"time": 0, "event": "first_progress", "role": "chief"})  # a timing detail: not on the console
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert lines[1].startswith("epoch 2/2") and "workers 1/2" in lines[1]
    assert "container_lost: role=worker, slot=1, preempted=True (Container preempted by scheduler)" in lines[2]


def test_job_page_has_plots_marks_containers_and_events():
    samples = [{"time": 100 + i, "loss": 1.0 / (i + 1), "examples_per_s": 500 + i, "workers_alive": 2 - (i == 2)}
               for i in range(5)]
    events = [{"time": 102, "event": "container_lost", "role": "worker", "slot": 1},
              {"time": 103.5, "event": "replacement_up", "role": "worker", "slot": 1}]
    page = report.render({"app": "application_1_0001", "name": "t", "state": "RUNNING", "samples": samples,
                          "events": events, "containers": [{"service": "worker", "id": "worker_0", "state": "RUNNING",
                                                            "yarn": "container_1", "host": "h:1"}],
                          "job": {"model": "m:f"}, "progress": P}, live=True)
    assert page.count("<polyline") == 3 and 'class="workers_alive"' in page
    assert page.count('stroke="#d62728"') == 3 and page.count('stroke="#2ca02c"') == 3  # a mark on each plot
    assert "container_1" in page and "replacement_up" in page and 'http-equiv="refresh"' in page


def test_plots_have_axes_ticks_units_epochs_and_the_eval_point():
    """Issue 31 §4: what a person needs to read a chart: ticks on both axes with round values, the
    unit, time as m:ss, the epoch boundaries, and a finished job's eval loss as a point."""
    from tfhadoop.trainer import plots

    assert plots.nice_ticks(0.013, 0.94) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert plots.nice_ticks(0, 95, 6) == [0, 20, 40, 60, 80, 100]
    assert plots.nice_ticks(1, 2, integer=True) == [1, 2] and plots.number(10000) == "10,000"
    assert plots.clock(75) == "1:15" and plots.clock(3725) == "1:02:05"
    samples = [{"time": 1000 + 10 * i, "loss": 2.0 / (i + 1), "epoch": i // 3} for i in range(9)]
    svg = plots.line_chart(samples, "loss", "training loss", "loss", {"container_lost": "#d62728"},
                           [{"time": 1035, "event": "container_lost", "role": "worker", "slot": 0}], 0.3, "eval loss")
    ticks = [t.split(">")[1].split("<")[0] for t in svg.split('class="ytick"')[1:]]
    assert ticks == ["0", "0.5", "1", "1.5", "2"], ticks  # 0.22..2.0 and the eval point 0.3
    assert [t.split(">")[1].split("<")[0] for t in svg.split('class="xtick"')[1:]] == ["0:00", "0:20", "0:40", "1:00", "1:20"]
    assert svg.count('class="epoch"') == 2 and "epoch 1" in svg and "epoch 2" in svg
    assert svg.count('class="mark container_lost"') == 1 and 'class="final"' in svg and "eval loss 0.3" in svg
    assert ">loss</text>" in svg and "time since the first sample (m:ss)" in svg


def test_event_details_read_as_words():
    from tfhadoop.trainer import report

    assert report.details({"time": 1, "event": "container_lost", "role": "worker", "slot": 1, "preempted": True,
                           "exit_status": -102, "warned_s": 9.0}) == "preempted True; exit status -102; warned s 9.0"
