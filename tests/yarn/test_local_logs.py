"""The embedded cluster's local-log fallback (yarn/python/logs.py), on a fake state dir laid out as
the embedded NodeManagers lay theirs out (log dirs under target/ and an extra NM's logs/, and an
appcache working dir that must not be read as logs)."""
from __future__ import annotations

import json
import logging

from tfhadoop.yarn import logs

APP = "application_1700000000000_0007"


def _state(tmp_path):
    nm0 = tmp_path / "target" / "tfhadoop" / "tfhadoop-logDir-nm-0_0" / APP
    (nm0 / f"container_{APP[12:]}_01_000001").mkdir(parents=True)
    (nm0 / f"container_{APP[12:]}_01_000001" / "stdout").write_text("hello from YARN container c1\n")
    (nm0 / f"container_{APP[12:]}_01_000001" / "stderr").write_text("")
    extra = tmp_path / "nm-extra" / "logs" / APP / f"container_{APP[12:]}_01_000002"
    extra.mkdir(parents=True)
    (extra / "application.master.log").write_text("master says hi")
    work = tmp_path / "target" / "local" / "usercache" / "u" / "appcache" / APP / f"container_{APP[12:]}_01_000001"
    work.mkdir(parents=True)
    (work / "launch_container.sh").write_text("not a log")
    other = tmp_path / "target" / "tfhadoop" / "tfhadoop-logDir-nm-0_0" / "application_1700000000000_0008"
    (other / "container_x").mkdir(parents=True)
    (other / "container_x" / "stdout").write_text("another app")
    return tmp_path


def test_reads_every_container_of_the_app_in_yarn_logs_layout(tmp_path, caplog):
    state = _state(tmp_path)
    with caplog.at_level(logging.WARNING, logger="tfhadoop.yarn.logs"):
        text = logs.embedded_local_logs(APP, state)
    assert "hello from YARN container c1" in text and "master says hi" in text
    assert "LogType:stdout\nLogLength:29\nLogContents:\nhello from YARN container c1\nEnd of LogType:stdout" in text
    assert "LogType:application.master.log" in text and "LogType:stderr" in text
    assert "not a log" not in text and "another app" not in text
    assert text.count("Container: container_") == 2
    # One log line saying where the logs were read from.
    assert "tfhadoop-logDir-nm-0_0" in caplog.text and "nm-extra" in caplog.text, caplog.text


def test_one_container_and_none_found(tmp_path):
    state = _state(tmp_path)
    text = logs.embedded_local_logs(APP, state, f"container_{APP[12:]}_01_000002")
    assert "master says hi" in text and "hello from YARN" not in text
    assert logs.embedded_local_logs("application_1_0001", state) == ""


def test_fallback_only_on_the_embedded_secure_cluster(tmp_path):
    assert not logs._embedded_secure(tmp_path)
    (tmp_path / "cluster.json").write_text(json.dumps({"secure": True}))
    assert logs._embedded_secure(tmp_path)
