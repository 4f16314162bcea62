"""Issue 12, row 6: YARN's preemption warnings (the PreemptionMessage that Skein's application
master receives, recorded by the agent in yarn/am-agent). The masters' reaction against fake Skein
clients: a warned worker gets no new work and a checkpoint due soon is taken now (PS mode), a
warned ring member leaves the ring at a round boundary (allreduce); the coordinator's side against
a fake closure queue and against TensorFlow's own ClusterCoordinator (in-process servers)."""
from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.trainer.fakes import RING_JOB, FakeApp, bring_up, event_kinds, manual_clock, settings, with_settings
from tfhadoop.trainer import protocol


def _warn(master, yarn_container: str, contract: str = "negotiable", t_ms: int = 1700000000000, newline=True):
    """What the agent appends in the AM container's working directory."""
    with open(os.path.join(master.work, protocol.PREEMPTION_WARNINGS_FILE), "a") as f:
        f.write(json.dumps({"time": t_ms, "container": yarn_container, "contract": contract}) + ("\n" if newline else ""))


def _file(master, name) -> Any:
    """The JSON document ``name`` in the master's work directory (None while there is none)."""
    path = os.path.join(master.work, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _event(master, kind):
    return [e for e in master.events.events if e["event"] == kind]


def test_a_warned_worker_gets_no_new_work_and_a_checkpoint_due_soon_is_asked_for(master):
    now = manual_clock(master)
    bring_up(master)
    assert _file(master, protocol.AVOID_WORKERS_FILE) == []
    _warn(master, "y-worker_1")
    master.step()
    (warned,) = _event(master, "preemption_warned")
    assert (warned["role"], warned["slot"], warned["container"], warned["yarn_container"], warned["contract"]) == \
        ("worker", 1, "worker_1", "y-worker_1", "negotiable")
    assert warned["task"] == 1 and warned["warned_at"] == 1700000000.0
    assert warned["reaction"] == ["avoid", "checkpoint_if_due_within_15s"]
    assert _file(master, protocol.AVOID_WORKERS_FILE) == [1]  # its task index in the spec
    assert _file(master, protocol.CHECKPOINT_SOON_FILE) == {"reason": "worker", "within_s": 15.0, "id": 1}
    master.step()  # the same line is not read twice
    assert len(_event(master, "preemption_warned")) == 1
    now[0] += 9  # YARN kills it (max_wait_before_kill)
    c = next(c for c in master.app.containers if c.id == "worker_1")
    c.exit_message = "Container preempted by scheduler"
    master.app.lose("worker_1")
    master.step()
    lost = _event(master, "container_lost")[-1]
    assert lost["preempted"] and lost["warned_s"] == 9.0
    assert event_kinds(master)[-2:] == ["container_lost", "replacement_requested"]
    assert "coordinator_failed" not in event_kinds(master) and master.state.value == "training"
    assert _file(master, protocol.AVOID_WORKERS_FILE) == []  # TensorFlow waits for its replacement as before


@pytest.mark.parametrize("until", ["old_process_ends", "replacement_serves"])
def test_a_lost_warned_worker_stays_avoided_while_its_old_process_answers(master, until):
    """YARN reports a preempted container lost before its NodeManager has killed the process: its
    task stays avoided while the old address still answers, so no closure starts on the old
    process meanwhile (to be cut off mid-way, its steps redone), and no longer than its
    replacement takes to serve."""
    answering = {"h:11"}
    master.answers = lambda address: address in answering
    bring_up(master)
    _warn(master, "y-worker_1")
    master.step()
    master.app.lose("worker_1")
    master.step()
    assert event_kinds(master)[-2:] == ["container_lost", "replacement_requested"]
    for _ in range(2):
        assert _file(master, protocol.AVOID_WORKERS_FILE) == [1]
        master.step()
    if until == "old_process_ends":
        answering.clear()
    else:
        master.app.serve("worker", 1, "h:11")  # the replacement, where the spec has it
        master.step()
        assert "replacement_up" in event_kinds(master)
    master.step()
    assert _file(master, protocol.AVOID_WORKERS_FILE) == []


def test_when_every_live_worker_is_warned_none_is_avoided(master):
    """Avoiding them all would stop training until YARN's kill (or its sparing, 60 s later)."""
    bring_up(master)
    _warn(master, "y-worker_0")
    master.step()
    assert _file(master, protocol.AVOID_WORKERS_FILE) == [0]
    _warn(master, "y-worker_1")
    master.step()
    assert [e["reaction"][0] for e in _event(master, "preemption_warned")] == ["avoid", "avoid"]
    assert _file(master, protocol.AVOID_WORKERS_FILE) == []


def test_when_every_worker_is_lost_at_once_none_stays_avoided(master):
    """No other worker to steer the work to: TensorFlow sees the failures and waits for the
    replacements, as without warnings (holding its threads back instead hung the coordinator)."""
    probed = []
    master.answers = lambda address: probed.append(address) or True  # both old processes still there
    bring_up(master)
    _warn(master, "y-worker_0")
    _warn(master, "y-worker_1")
    master.step()
    master.app.lose("worker_0")
    master.app.lose("worker_1")
    master.step()
    assert event_kinds(master).count("container_lost") == 2
    for c in master.app.containers[-2:]:  # the replacements wait for resources
        c.state = "REQUESTED"
    master.step()
    assert master.workers_alive() == 0 and _file(master, protocol.AVOID_WORKERS_FILE) == []
    assert probed == []  # nobody to steer the work to: no connect on the master's round either


def test_the_task_index_follows_the_spec_not_the_slot(master):
    bring_up(master, workers=(1,))  # worker 1 came first: task 0
    master.app.serve("worker", 0, "h:10")
    _warn(master, "y-worker_1")
    master.step()
    assert _event(master, "preemption_warned")[0]["task"] == 0
    assert _file(master, protocol.AVOID_WORKERS_FILE) == [0]


def test_a_warned_parameter_server_asks_for_a_checkpoint_now(master):
    bring_up(master)
    _warn(master, "y-ps_0", contract="strict")
    master.step()
    (warned,) = _event(master, "preemption_warned")
    assert (warned["role"], warned["slot"], warned["contract"], warned["reaction"]) == ("ps", 0, "strict",
                                                                                        ["checkpoint_now"])
    assert _file(master, protocol.CHECKPOINT_SOON_FILE)["reason"] == "ps"
    assert _file(master, protocol.AVOID_WORKERS_FILE) == []


def test_without_preemption_warnings_the_warning_is_only_logged(master):
    master = with_settings(master, preemption_warnings=False)
    bring_up(master)
    _warn(master, "y-worker_0")
    master.step()
    (warned,) = _event(master, "preemption_warned")
    assert warned["slot"] == 0 and warned["reaction"] == []
    assert _file(master, protocol.AVOID_WORKERS_FILE) == [] and _file(master, protocol.CHECKPOINT_SOON_FILE) is None


def test_a_spared_worker_gets_work_again(master):
    from tfhadoop.trainer.watchdogs import PREEMPTION_WITHDRAWN_S

    now = manual_clock(master)
    bring_up(master)
    _warn(master, "y-worker_0")
    master.step()
    assert _file(master, protocol.AVOID_WORKERS_FILE) == [0]
    now[0] += PREEMPTION_WITHDRAWN_S - 1
    master.step()
    assert _file(master, protocol.AVOID_WORKERS_FILE) == [0]
    now[0] += 2
    master.step()
    (spared,) = _event(master, "preemption_withdrawn")
    assert (spared["slot"], spared["container"]) == (0, "worker_0")
    assert _file(master, protocol.AVOID_WORKERS_FILE) == []


def test_a_line_still_being_written_waits_and_unknown_containers_are_named_only(master):
    bring_up(master)
    _warn(master, "y-worker_0", newline=False)
    master.step()
    assert not _event(master, "preemption_warned")
    with open(os.path.join(master.work, protocol.PREEMPTION_WARNINGS_FILE), "a") as f:
        f.write("\n" + json.dumps({"time": 1, "container": "container_gone_01_000009", "contract": "strict"}) + "\n")
    master.step()
    first, second = _event(master, "preemption_warned")
    assert first["slot"] == 0 and first["reaction"]
    assert (second["role"], second["container"], second["reaction"]) == (None, None, [])
    assert _file(master, protocol.AVOID_WORKERS_FILE) == [0]


def test_the_am_agent_goes_to_the_application_master_only(tmp_path, monkeypatch):
    from tfhadoop.connectors.dataset import Manifest
    from tfhadoop.trainer.job import JobSpec, application_spec

    base = {"model": "m:build", "data": "hdfs:///d", "checkpoint_dir": "hdfs:///c", "export_dir": "hdfs:///e"}
    manifest = Manifest("hdfs:///d", "none", (), {}, {})
    monkeypatch.setenv("TFHADOOP_JARS", str(tmp_path))
    without = application_spec(JobSpec.from_dict(base), manifest, "/tmp/job.json")
    assert protocol.AM_AGENT_JAR not in without.master.files and "JAVA_TOOL_OPTIONS" not in without.master.env
    (tmp_path / protocol.AM_AGENT_JAR).write_bytes(b"PK")
    spec = application_spec(JobSpec.from_dict(base), manifest, "/tmp/job.json")
    assert spec.master.files[protocol.AM_AGENT_JAR].source.endswith(f"{tmp_path}/{protocol.AM_AGENT_JAR}")
    # a lean JVM, and the agent last (a Kerberized NodeManager glues its options onto it)
    assert spec.master.env["JAVA_TOOL_OPTIONS"] == \
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -javaagent:./am-agent.jar=preemption_warnings.jsonl"
    for service in spec.services.values():  # the roles' JVMs (libhdfs) never load it
        assert "JAVA_TOOL_OPTIONS" not in service.env and protocol.AM_AGENT_JAR not in service.files


def test_preemption_warnings_flag_and_yaml(tmp_path):
    import argparse

    from tfhadoop.errors import CommandError
    from tfhadoop.trainer import train_cli
    from tfhadoop.trainer.job import JobSpec

    base = {"model": "m:build", "data": "hdfs:///d", "checkpoint_dir": "hdfs:///c", "export_dir": "hdfs:///e"}
    assert JobSpec.from_dict(base).preemption_warnings is True
    spec = tmp_path / "job.yaml"
    spec.write_text("".join(f"{k}: {v}\n" for k, v in base.items()) + "preemption_warnings: false\n")
    parser = argparse.ArgumentParser()
    train_cli.register(parser.add_subparsers())
    assert train_cli.job_from_args(parser.parse_args(["train", str(spec)])).preemption_warnings is False
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in base.items()]
    assert train_cli.job_from_args(parser.parse_args(["train", *flags])).preemption_warnings is True
    assert train_cli.job_from_args(parser.parse_args(["train", *flags, "--no-preemption-warnings"])) \
        .preemption_warnings is False
    with pytest.raises(CommandError, match="preemption_warnings must be true or false"):
        JobSpec.from_dict({**base, "preemption_warnings": "no"})


def test_the_design_table_names_the_event():
    from tfhadoop.trainer import design_doc

    assert "| preemption_warned |" in design_doc.sections()["ps-transitions"]


# -- allreduce: a planned shrink ------------------------------------------------------------------
@pytest.fixture
def make_ring(tmp_path, monkeypatch):
    """A ring master of three workers, formed, with settings changes."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import ring_master as am

    monkeypatch.setattr(hdfs, "write_bytes", lambda *a, **k: None)
    monkeypatch.setattr(hdfs, "append_bytes", lambda *a, **k: None)

    def make(**changes):
        job = settings(RING_JOB, **{"workers": 3, "startup_wait": 30, "gang_timeout": 100, "hang_timeout": 10**9,
                                    **changes})
        app = FakeApp()
        master = am.RingMaster(app, job, str(tmp_path), clock=lambda: 0.0)
        for slot in range(3):
            master.start(slot)
        for slot in range(3):
            app.serve("worker", slot, f"h:{slot + 1}")
        master.step()
        return master

    return make


@pytest.fixture
def ring(make_ring):
    return make_ring()


def _ring(master):
    return json.loads(master.app.kv["ring"].decode())


def test_a_warned_ring_member_leaves_at_a_round_boundary(ring):
    from tfhadoop.trainer.protocol import STOP_EXIT

    assert _ring(ring)["slots"] == [0, 1, 2]
    _warn(ring, "y-worker_1")
    ring.step()
    assert ring.state.value == "stopping" and ring.app.kv["ring_stop"] == b"1"
    assert _event(ring, "preemption_warned")[0]["reaction"] == ["shrink"]
    for slot in range(3):  # the ring checkpointed after its round and exited 75
        ring.app.kv[f"ring_exit/{slot}"] = json.dumps({"gen": 1, "rc": STOP_EXIT, "error": None}).encode()
    ring.step()
    assert _ring(ring) == {"gen": 2, "slots": [0, 2], "worker": ["h:1", "h:3"]}
    assert event_kinds(ring)[-1] == "ring_shrunk"
    ring.step()  # the warned worker is not taken back in while it lives
    assert ring.state.value == "training" and _ring(ring)["gen"] == 2
    c = ring.app.containers[1]
    c.exit_message = "Container preempted by scheduler"
    ring.app.lose(c.id)
    ring.step()  # not a member: no re-forming; replaced
    assert ring.state.value == "training" and _ring(ring)["gen"] == 2
    assert _event(ring, "container_lost")[0]["warned_s"] == 0.0
    ring.app.serve("worker", 1, "h:9")  # the replacement arrives: growth, as for any worker
    ring.step()
    assert ring.state.value == "stopping" and ring.app.kv["ring_stop"] == b"2"


def test_a_warning_leaving_fewer_than_min_workers_does_not_shrink(make_ring):
    ring = make_ring(min_workers=3)
    _warn(ring, "y-worker_2")
    ring.step()
    assert ring.state.value == "training" and _event(ring, "preemption_warned")[0]["reaction"] == []


def test_ring_without_preemption_warnings_only_logs(make_ring):
    ring = make_ring(preemption_warnings=False)
    _warn(ring, "y-worker_0")
    ring.step()
    assert ring.state.value == "training" and _event(ring, "preemption_warned")[0]["reaction"] == []


def test_the_nodemanagers_java_tool_options_survive_the_agents():
    """A Kerberized NodeManager appends its admin JAVA_TOOL_OPTIONS after a ':' (seen in CI: the
    AM then lost -Djava.security.krb5.conf); the master keeps that part for its own JVMs."""
    from tfhadoop.trainer import protocol

    merged = protocol.AM_AGENT_OPTION + ":-Djava.security.krb5.conf=/x/krb5.conf"
    assert protocol.without_am_agent(merged) == "-Djava.security.krb5.conf=/x/krb5.conf"
    assert protocol.without_am_agent(protocol.AM_AGENT_OPTION) == ""
    ours = protocol.am_java_tool_options()  # what submit sets: the JVM flags, then the agent
    assert ours.endswith(protocol.AM_AGENT_OPTION) and protocol.without_am_agent(ours) == ""
    assert protocol.without_am_agent(ours + ":-Djava.security.krb5.conf=/x/krb5.conf") == "-Djava.security.krb5.conf=/x/krb5.conf"
