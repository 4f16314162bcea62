"""Issue 31 §4, the plots' inputs and the shared epoch-end evaluation without a cluster: the eval
curve drawn against the train loss, the per-worker throughput curves, the losses, replacements and
restarts as vertical marks named in the legend; what a trainer records at an epoch's end."""
from __future__ import annotations

import types

import pytest

from tfhadoop.trainer import plots, report

EVENTS = [{"time": 1025, "event": "container_lost", "role": "worker", "slot": 1},
          {"time": 1045, "event": "replacement_up", "role": "worker", "slot": 1},
          {"time": 1055, "event": "coordinator_started"},
          {"time": 1057, "event": "container_lost", "role": "ps", "slot": 0},
          {"time": 5000, "event": "container_lost", "role": "worker", "slot": 0}]  # after the plot: not drawn


def _samples():
    return [{"time": 1000 + 10 * i, "loss": 2.0 / (i + 1), "epoch": i // 3, "examples_per_s": 900 + i,
             "examples_per_s_by": {"worker/0": 500 + i, "worker/1": 400} if i != 3 else {"worker/0": 900 + i},
             **({"eval": {"epoch": 0, "loss": 1.1, "time": 1029}} if i >= 3 else {})} for i in range(9)]


def test_eval_curve_drawn_with_the_train_loss_and_marks_in_the_legend():
    st = {"samples": _samples(), "history": [{"epoch": 0, "time": 1029, "eval": {"loss": 1.1}},
                                             {"epoch": 1, "time": 1059, "eval": {"loss": 0.7}},
                                             {"epoch": 2, "time": 1089}]}  # not evaluated
    assert report.eval_curve(st) == [(1029, 1.1), (1059, 0.7)]
    svg = plots.line_chart(st["samples"], "loss", "train and eval loss", "loss", report.MARKED, EVENTS,
                           extra={"eval loss (per epoch)": report.eval_curve(st)}, main_label="train loss")
    (group,) = [g.split("</g>")[0] for g in svg.split("<g ")[1:] if 'data-label="eval loss (per epoch)"' in g]
    assert group.count("<circle") == 2 and "<polyline" in group and "eval loss (per epoch) 0.7" in group
    assert "&#9473; train loss" in svg and "&#9473; eval loss (per epoch)" in svg
    assert svg.count('class="mark container_lost"') == 2 and svg.count('class="mark replacement_up"') == 1
    assert svg.count('class="mark coordinator_started"') == 1
    legend = svg.split('class="legend"')[1]
    assert "container lost &times;2" in legend and "replacement up" in legend and "coordinator started" in legend
    assert "rescaled" not in legend  # kinds with no mark on this plot are not listed
    assert "<title>container lost ps 0</title>" in svg


def test_per_worker_throughput_curves():
    samples = _samples()
    by = plots.series_of(samples, "examples_per_s_by")
    assert list(by) == ["worker/0", "worker/1"] and len(by["worker/0"]) == 9 and len(by["worker/1"]) == 8
    svg = plots.line_chart(samples, "examples_per_s", "throughput", "examples/s", {}, [], extra=by,
                           main_label="all workers")
    assert svg.count('<g class="series"') == 2 and 'data-label="worker/1"' in svg
    assert "&#9473; all workers" in svg and "&#9473; worker/0" in svg
    ticks = [t.split(">")[1].split("<")[0] for t in svg.split('class="ytick"')[1:]]
    assert float(ticks[0]) <= 400 and float(ticks[-1].replace(",", "")) >= 908  # every curve within the axis


def test_job_page_draws_eval_and_per_worker_curves():
    st = {"app": "application_1_0002", "name": "t", "state": "FINISHED", "samples": _samples(), "events": EVENTS,
          "history": [{"epoch": 1, "time": 1095, "eval": {"loss": 0.7}}], "metrics": {"eval": {"loss": 0.5}},
          "job": {"model": "m:f"}, "containers": []}
    page = report.render(st)
    assert 'data-label="eval loss (per epoch)"' in page and 'data-label="worker/0"' in page
    assert 'class="final"' in page and "train and eval loss" in page and "all and per worker" in page
    final_x = float(page.split('class="final" cx="')[1].split('"')[0])
    last_dot = max(float(c.split('"')[0]) for c in page.split('data-label="eval loss (per epoch)"')[1]
                   .split("</g>")[0].split('cx="')[1:])
    assert final_x >= last_dot  # the final eval drawn after the last epoch's, not before it


class _Summaries:
    def __init__(self):
        self.written = []

    def scalars(self, split, step, values):
        self.written.append((split, step, dict(values)))


def test_epoch_end_records_the_eval_in_the_checkpointed_history_and_tensorboard():
    from tfhadoop.trainer.training_common import epoch_end, eval_due, last_eval, per_second

    job = types.SimpleNamespace(eval_every_epochs=2, eval_split="eval")
    manifest = types.SimpleNamespace(split=lambda name: ["shard"] if name == "eval" else [])
    assert [e for e in range(6) if eval_due(job, manifest, e, done=e == 5)] == [1, 3]  # not the last: the final eval
    off = types.SimpleNamespace(eval_every_epochs=0, eval_split="eval")
    assert not any(eval_due(off, manifest, e, False) for e in range(4))
    assert not eval_due(types.SimpleNamespace(eval_every_epochs=1, eval_split="test"), manifest, 0, False)
    state, tb = {"history": []}, _Summaries()
    assert last_eval(state) == {}
    epoch_end(state, {"epoch": 0, "mean_loss": 0.9, "steps": 10}, tb)
    epoch_end(state, {"epoch": 1, "mean_loss": 0.8, "steps": 20}, tb, {"loss": 0.75, "auc": 0.6})
    assert "eval" not in state["history"][0] and state["history"][1]["eval"] == {"loss": 0.75, "auc": 0.6}
    assert all(isinstance(h["time"], float) for h in state["history"])
    assert tb.written[-2:] == [("train", 20, {"epoch_loss": 0.8}), ("eval", 20, {"loss": 0.75, "auc": 0.6})]
    assert last_eval(state)["eval"]["epoch"] == 1 and last_eval(state)["eval"]["loss"] == 0.75
    assert per_second({"worker/1": 50, "worker/0": 300}, 2.0) == {"worker/0": 150.0, "worker/1": 25.0}


def test_eval_every_epochs_is_a_checked_setting():
    from tfhadoop.errors import CommandError
    from tfhadoop.trainer.spec import JobSpec

    base = {"model": "m:f", "data": "/d", "checkpoint_dir": "/c", "export_dir": "/e"}
    assert JobSpec.from_dict(base).eval_every_epochs == 0  # off by default
    assert JobSpec.from_dict({**base, "eval-every-epochs": 3}).eval_every_epochs == 3
    with pytest.raises(CommandError, match="--eval-every-epochs must be positive"):
        JobSpec.from_dict({**base, "eval_every_epochs": -1})
