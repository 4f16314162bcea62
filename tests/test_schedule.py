"""How `make test` hands the suite to its xdist workers (tests/schedule.py)."""
from __future__ import annotations

import json
from types import SimpleNamespace

from tests import schedule


def test_a_module_is_a_group_and_the_secure_package_is_one():
    assert schedule.group_of("tests/trainer/test_train_yarn.py::test_x[ps]") == "tests/trainer/test_train_yarn.py"
    assert schedule.group_of("tests/yarn/secure/test_jobs.py::test_y") == "tests/yarn/secure"
    assert schedule.group_of("tests/yarn/secure/test_client.py::test_z") == "tests/yarn/secure"
    assert schedule.group_of("tests/yarn/test_secure_tools.py::test_w") == "tests/yarn/test_secure_tools.py"


def test_groups_go_longest_first_and_stay_whole(tmp_path, monkeypatch):
    durations = tmp_path / "durations.json"
    durations.write_text(json.dumps({"tests/b.py": 50.0, "tests/yarn/secure": 300.0, "tests/c.py": 5.0}))
    monkeypatch.setattr(schedule, "DURATIONS", durations)
    ids = ["tests/a.py::t1", "tests/b.py::t1", "tests/a.py::t2", "tests/c.py::t1", "tests/b.py::t2",
           "tests/yarn/secure/test_client.py::t1", "tests/yarn/secure/test_jobs.py::t1"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    schedule.longest_groups_first(items)
    # Known groups by their seconds, then the unknown one (tests/a.py) in collection order; the
    # tests of a group keep their collected order.
    assert [i.nodeid for i in items] == [
        "tests/yarn/secure/test_client.py::t1", "tests/yarn/secure/test_jobs.py::t1",
        "tests/b.py::t1", "tests/b.py::t2", "tests/c.py::t1", "tests/a.py::t1", "tests/a.py::t2"]


def test_durations_are_summed_per_group_from_junit_xml(tmp_path, monkeypatch):
    monkeypatch.setattr(schedule, "DURATIONS", tmp_path / "durations.json")
    xml = tmp_path / "pytest.xml"
    xml.write_text('<testsuites><testsuite>'
                   '<testcase classname="tests.trainer.test_a" name="t1" time="1.5"/>'
                   '<testcase classname="tests.trainer.test_a.TestThing" name="t2" time="2.0"/>'
                   '<testcase classname="tests.yarn.secure.test_jobs" name="t3" time="10"/>'
                   '<testcase classname="tests.yarn.secure.test_client" name="t4" time="5"/>'
                   '</testsuite></testsuites>')
    assert schedule.write_durations(xml) == {"tests/yarn/secure": 15.0, "tests/trainer/test_a.py": 3.5}
    assert json.loads((tmp_path / "durations.json").read_text()) == {"tests/yarn/secure": 15.0,
                                                                     "tests/trainer/test_a.py": 3.5}
