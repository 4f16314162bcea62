"""`--tensorboard` without a cluster (issue 31 §1): the flag made from the spec, the Skein service
it adds (one instance, never restarted, its failure allowed), and the master's watch of it on a
fake application: its URL and its loss are events, never a state, a replacement or a failure."""
from __future__ import annotations

import argparse

import pytest

from tests.trainer.fakes import FakeApp, bring_up, event_kinds, fake_master
from tfhadoop.errors import CommandError
from tfhadoop.trainer import protocol, train_cli
from tfhadoop.trainer.spec import JobSpec

BASE = {"model": "m:build", "data": "hdfs:///d", "checkpoint_dir": "hdfs:///c", "export_dir": "hdfs:///e"}
URL = "http://node1.example.com:41234/"


def parse(*argv):
    parser = argparse.ArgumentParser()
    train_cli.register(parser.add_subparsers())
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in BASE.items()]
    return train_cli.job_from_args(parser.parse_args(["train", *flags, *argv]))


def test_flag_and_yaml_key_from_the_spec(tmp_path):
    assert parse().tensorboard is False and parse().tensorboard_memory == "1g"
    job = parse("--tensorboard", "--tensorboard-memory", "2g")
    assert job.tensorboard is True and job.tensorboard_memory == "2g"
    spec = tmp_path / "job.yaml"
    spec.write_text("".join(f"{k}: {v}\n" for k, v in BASE.items()) + "tensorboard: true\n")
    parser = argparse.ArgumentParser()
    train_cli.register(parser.add_subparsers())
    assert train_cli.job_from_args(parser.parse_args(["train", str(spec)])).tensorboard is True
    with pytest.raises(CommandError, match="tensorboard must be true or false"):
        JobSpec.from_dict({**BASE, "tensorboard": "yes"})


def test_the_service_is_one_container_never_restarted_whose_failure_is_allowed():
    from tfhadoop.connectors.dataset import Manifest
    from tfhadoop.trainer.submit import application_spec

    manifest = Manifest("hdfs:///d", "none", (), {}, {})
    plain = application_spec(JobSpec.from_dict(BASE), manifest, "/tmp/job.json")
    assert set(plain.services) == {"ps", "worker"}
    spec = application_spec(JobSpec.from_dict({**BASE, "tensorboard": True, "tensorboard_memory": "1536m",
                                               "python_archive": "hdfs:///envs/env.tar.gz"}),
                            manifest, "/tmp/job.json")
    board = spec.services[protocol.TENSORBOARD_SERVICE]
    assert (board.instances, board.max_restarts, board.allow_failures) == (1, 0, True)
    assert board.script == "./env/bin/python -m tfhadoop.trainer.tensorboard_service"
    assert board.resources.memory == 1536 and board.resources.gpus == 0
    assert board.files[protocol.JOB_FILE].source.endswith("/tmp/job.json") and "env" in board.files
    assert board.env == spec.services["ps"].env  # the roles' environment (HADOOP_CONF_DIR, PYTHONPATH, ...)


def tensorboard_container(app: FakeApp):
    """What Skein starts for the service at the application's start (the master never adds it)."""
    return app.add_container(protocol.TENSORBOARD_SERVICE)


def test_its_url_and_its_loss_are_events_only(tmp_path, monkeypatch):
    app = FakeApp()
    master = fake_master(tmp_path, monkeypatch, app=app, tensorboard=True)
    bring_up(master)
    board = tensorboard_container(app)
    state, containers = master.state, len(app.containers)
    master.app.kv[protocol.KV_TENSORBOARD] = URL.encode()
    assert master.step() is None
    up = [e for e in master.events.events if e["event"] == protocol.EventKind.TENSORBOARD_UP]
    assert [(e["role"], e["url"]) for e in up] == [("tensorboard", URL)]
    assert master.step() is None and event_kinds(master).count(protocol.EventKind.TENSORBOARD_UP) == 1  # once
    app.lose(board.id)
    assert master.step() is None and master.step() is None
    lost = [e for e in master.events.events if e["event"] == protocol.EventKind.TENSORBOARD_LOST]
    assert len(lost) == 1 and lost[0]["container"] == board.id, lost
    assert "not a training role: training goes on" in lost[0]["note"]
    assert protocol.KV_TENSORBOARD not in master.app.kv  # status and the page no longer show a dead link
    kinds = event_kinds(master)
    assert protocol.EventKind.CONTAINER_LOST not in kinds and protocol.EventKind.REPLACEMENT_REQUESTED not in kinds
    assert master.state == state and master.outcome is None and len(app.containers) == containers
    assert master.workers_alive() == 2


def test_without_the_flag_the_master_does_not_look(tmp_path, monkeypatch):
    master = fake_master(tmp_path, monkeypatch)
    bring_up(master)
    master.app.kv[protocol.KV_TENSORBOARD] = URL.encode()
    assert master.step() is None
    assert protocol.EventKind.TENSORBOARD_UP not in event_kinds(master)


def test_status_and_job_page_show_the_url(monkeypatch, capsys):
    from tfhadoop.trainer import jobs_cli
    from tfhadoop.trainer.report import render

    page = render({"app": "a1", "job": {}, "tensorboard": URL})
    assert f'<p id="tensorboard">TensorBoard: <a href="{URL}">{URL}</a> (a container of the job)</p>' in page
    assert 'id="tensorboard"' not in render({"app": "a1", "job": {}})
    st = {"app": "a1", "name": "n", "state": "RUNNING", "final_status": "UNDEFINED", "queue": "q", "diagnostics": "",
          "job": {}, "job_dir": None, "events": [], "metrics": None, "result": None, "progress": None,
          "containers": [], "tensorboard": URL}
    monkeypatch.setattr(jobs_cli, "job_status", lambda client, conf, app: st)
    monkeypatch.setattr(jobs_cli, "_client", lambda: Client())
    monkeypatch.setattr("tfhadoop.hadoop.load_conf", lambda: None)
    monkeypatch.setattr("tfhadoop.trainer.submit.tracking_url", lambda client, conf, app: "http://rm/app")
    assert jobs_cli.status(argparse.Namespace(app="a1", html=None)) == 0
    assert f"TensorBoard of the job (its container): {URL}\n" in capsys.readouterr().out


class Client:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_container_serves_the_job_s_event_files_and_publishes_its_url(tmp_path, monkeypatch):
    """What the container runs (``serve``), on a local job directory and a fake application:
    real TensorBoard, the URL named by the node (NM_HOST) in the key-value store, the train loss
    over HTTP, and its resources under res/tensorboard/0."""
    from tests import tensorboard_http as tb
    from tests.trainer.fakes import settings
    from tests.waiting import wait_for
    from tfhadoop.trainer import tensorboard_service
    from tfhadoop.trainer.summaries import Summaries

    job = settings({"checkpoint_dir": str(tmp_path / "job")})
    written = Summaries(str(tmp_path / "job" / protocol.TENSORBOARD_DIR))
    for step, loss in [(3, 0.5), (7, 0.25)]:
        written.scalars("train", step, {"loss": loss})
    written.close()
    monkeypatch.setenv("NM_HOST", "localhost")
    app = FakeApp()
    url = tensorboard_service.serve(app, job)
    assert app.kv[protocol.KV_TENSORBOARD] == url.encode() and url.startswith("http://localhost:"), url
    tb.wait_loaded(url, {"train": {"loss"}}, timeout=60)
    assert tb.scalars(url, "train", "loss") == [(3, 0.5), (7, 0.25)]
    res = wait_for(lambda: app.kv.get(protocol.kv_resources("tensorboard", 0)), 30, "res/tensorboard/0")
    assert b'"peak_rss_mb"' in res
