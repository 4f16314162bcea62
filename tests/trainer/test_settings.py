"""The job's settings have one source, JobSpec's fields: the train flags, YAML keys and Trainer
keywords are made from them and cannot drift; validate() returns a frozen JobSettings and leaves
the spec alone; job.json is loaded back with one clear line for a missing or unknown key."""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
from typing import Any

import pytest

from tfhadoop.cli import COMMANDS
from tfhadoop.errors import CommandError
from tfhadoop.trainer import train_cli
from tfhadoop.trainer.spec import REMOVED, JobSettings, JobSpec, default_of, flag

BASE: dict[str, Any] = {"model": "m:build", "data": "hdfs:///d", "checkpoint_dir": "hdfs:///c", "export_dir": "hdfs:///e"}
FIELDS = dataclasses.fields(JobSpec)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfhadoop")
    train_cli.register(parser.add_subparsers())
    return parser


def _train_parser() -> argparse.ArgumentParser:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["train"]


def test_every_field_has_help_and_exactly_one_flag():
    by_dest = {a.dest: a for a in _train_parser()._actions if a.option_strings}
    for f in FIELDS:
        assert f.metadata.get("help"), f"JobSpec.{f.name} has no help"
        action = by_dest.pop(f.name)
        want = flag(("no_" if default_of(f) is True else "") + f.name)  # on by default: --no-x; off: --x
        assert action.option_strings == [want]
        assert f.metadata["help"] in action.help
    leftover = {d for d, a in by_dest.items() if a.help != argparse.SUPPRESS}
    assert leftover == {"help", "detach", "no_validate"}  # how the command runs, not the job
    assert {d for d, a in by_dest.items() if a.help == argparse.SUPPRESS} == set(REMOVED)


def test_help_lists_every_flag_with_its_default():
    text = _train_parser().format_help()
    for f in FIELDS:
        assert flag(f.name) in text or flag("no_" + f.name) in text
    assert "worker containers (default 2)" in text and "YARN queue (default default)" in text


def test_flags_parse_to_the_field_types_and_defaults_stay_unset():
    args = _parser().parse_args(["train", *(f"{flag(k)}={v}" for k, v in BASE.items()), "--workers", "3",
                                 "--hang-timeout", "1.5", "--python-path", "a", "--python-path", "b"])
    job = train_cli.job_from_args(args)
    assert (job.workers, job.hang_timeout, job.python_path) == (3, 1.5, ["a", "b"])
    assert (job.min_workers, job.preemption_warnings) == (1, True)  # defaults from JobSpec, not argparse


@pytest.mark.parametrize("spelling", ["_", "-"])
def test_every_field_is_a_yaml_key(tmp_path, spelling):
    keys = {f.name.replace("_", spelling): default_of(f) for f in FIELDS if f.name not in BASE}
    spec = tmp_path / "job.yaml"
    import yaml

    spec.write_text(yaml.safe_dump({**BASE, **keys}))
    assert JobSpec.from_yaml(str(spec)) == JobSpec.from_dict(BASE)


def test_trainer_keywords_are_the_fields():
    from tfhadoop.trainer.pipeline import KEYWORDS, Trainer

    assert KEYWORDS == tuple(f.name for f in FIELDS)
    Trainer(**{f.name: default_of(f) for f in FIELDS if f.name not in BASE}, **BASE)
    with pytest.raises(CommandError, match="Trainer got unknown keywords wrokers"):
        Trainer(**BASE, wrokers=2)


def test_validate_returns_frozen_settings_and_leaves_the_spec_alone():
    spec = JobSpec(**BASE, phase_timeouts="training=30", steps_per_execution="8")
    before = dataclasses.asdict(spec)
    settings = spec.validate()
    assert dataclasses.asdict(spec) == before
    assert isinstance(settings, JobSettings) and settings is not spec
    assert (settings.epochs, settings.checkpoint_secs, settings.steps_per_execution) == (1, 60, 8)
    assert isinstance(settings.phase_timeouts, dict) and settings.phase_timeouts["training"] == 30.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.workers = 3  # type: ignore[misc]


def test_job_json_round_trips():
    settings = JobSpec.from_dict({**BASE, "strategy": "allreduce", "label": ["a", "b"]})
    assert JobSettings.from_dict(json.loads(json.dumps(dataclasses.asdict(settings)))) == settings


@pytest.mark.parametrize("change, message", [
    ({"wrokers": 2}, "unknown settings in job.json: wrokers"),
    ({"workers": "two"}, "--workers must be int, got 'two'"),
    ({"workers": True}, "--workers must be int, got True"),
    ({"preemption_warnings": "no"}, "preemption_warnings must be true or false"),
    ({"checkpoint_tasks": 8}, "checkpoint_tasks was removed .unused"),
])
def test_settings_loader_names_the_bad_key(change, message):
    job = {**dataclasses.asdict(JobSpec.from_dict(BASE)), **change}
    with pytest.raises(CommandError, match=message):
        JobSettings.from_dict(job)


def test_settings_loader_names_a_missing_key():
    job = dataclasses.asdict(JobSpec.from_dict(BASE))
    del job["hang_timeout"], job["seed"]
    with pytest.raises(CommandError, match="job.json lacks the settings hang_timeout, seed"):
        JobSettings.from_dict(job)


def test_a_removed_setting_is_refused_with_its_reason():
    with pytest.raises(CommandError, match="checkpoint_tasks was removed"):
        JobSpec.from_dict({**BASE, "checkpoint-tasks": 8})
    args = _parser().parse_args(["train", *(f"{flag(k)}={v}" for k, v in BASE.items()), "--checkpoint-tasks", "1"])
    with pytest.raises(CommandError, match="checkpoint_tasks was removed"):
        train_cli.job_from_args(args)


def test_every_command_names_a_register_function():
    for name, (target, _) in COMMANDS.items():
        module, sep, function = target.partition(":")
        assert sep, f"{name}: {target} is not module:function"
        assert callable(getattr(importlib.import_module(module), function))
