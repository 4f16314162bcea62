"""The Kerberized embedded cluster's logs read from its NodeManagers' log dirs (no aggregation
there without libhadoop): the layout ``yarn logs`` prints, one application, one container."""
from __future__ import annotations

import json

import pytest

from tfhadoop import hadoop
from tfhadoop.errors import CommandError
from tfhadoop.yarn.logs import application_logs, local_container_logs

APP = "application_1_0001"


def _cluster(tmp_path, secure: bool):
    (tmp_path / "conf").mkdir()
    (tmp_path / "cluster.json").write_text(json.dumps({"secure": secure}))
    for nm, container, name, text in [(0, "container_1_0001_01_000001", "application.master.log", "am up"),
                                      (1, "container_1_0001_01_000002", "hello.log", "hello from YARN"),
                                      (1, "container_1_0002_01_000002", "other.log", "another app")]:
        app = "application_1_" + container.split("_")[2]
        d = tmp_path / "target" / "test" / f"tfhadoop-logDir-nm-{nm}_0" / app / container
        d.mkdir(parents=True)
        (d / name).write_text(text)
    return tmp_path


def test_logs_of_one_application_in_yarn_logs_layout(tmp_path):
    state = _cluster(tmp_path, secure=True)
    text = local_container_logs(state, APP)
    assert text.count("Container: ") == 2 and "another app" not in text
    assert "LogType:hello.log\nLogLength:15\nLogContents:\nhello from YARN\n" in text
    assert "hello from YARN" in local_container_logs(state, APP, "container_1_0001_01_000002")
    assert "am up" not in local_container_logs(state, APP, "container_1_0001_01_000002")
    with pytest.raises(CommandError, match="no logs of application_1_0003"):
        local_container_logs(state, "application_1_0003")


def test_only_the_secure_embedded_cluster_is_read_locally(tmp_path, monkeypatch, capsys):
    state = _cluster(tmp_path, secure=True)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(state / "conf"))
    assert "hello from YARN" in application_logs(APP)
    assert "NodeManagers' log dirs" in capsys.readouterr().err
    (state / "cluster.json").write_text(json.dumps({"secure": False}))  # aggregated logs: `yarn logs`
    monkeypatch.setattr(hadoop, "client_env", lambda: {"PATH": ""})
    with pytest.raises(CommandError, match="no `yarn` command"):
        application_logs(APP)
