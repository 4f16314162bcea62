"""The trainer's task function and closure sizing (step.py, closures.ClosureSize).

The task function runs in a child process (task_fn_child.py) under a real
ParameterServerStrategy: one traced graph serves closures of any group size, offsets and counts;
every task trains exactly its records; TensorFlow logs no per-closure error line (the
``for batch in dataset`` loop it replaced logged "Failed to clear function handle cache" and
leaked worker memory per closure)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tfhadoop.errors import CommandError
from tfhadoop.trainer.closures import AUTO_CLOSURE_S, AUTO_MAX_STEPS, ClosureSize
from tfhadoop.trainer.job import JobSpec

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def child(tmp_path_factory):
    proc = subprocess.run([sys.executable, str(HERE / "task_fn_child.py"), str(tmp_path_factory.mktemp("shard"))],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT "):]), proc.stderr


def test_task_function_traced_once_across_groups_offsets_and_counts(child):
    result, _ = child
    assert result["traces"] == {"one": 1, "many": 1}  # one-task closures ran without the loop over tasks


def test_each_task_of_a_closure_trains_its_records(child):
    result, _ = child
    assert result["closures"] == result["expected"]
    assert result["losses_finite"]


def test_a_shard_shorter_than_its_task_is_an_error_not_fewer_examples(child):
    result, _ = child
    assert result["short_error"] and "OutOfRange" in result["short_error"], result
    assert result["short_group_error"] and "OutOfRange" in result["short_group_error"], result


def test_no_per_closure_error_lines(child):
    _, stderr = child
    assert "Failed to clear function handle cache" not in stderr


def test_closure_size_fixed_and_auto():
    fixed = ClosureSize(16, workers=2)
    fixed.completed(100, 5.0)
    assert fixed.steps == 16
    auto = ClosureSize("auto", workers=2)
    assert auto.steps == 1  # until measured
    t = 0.0
    for _ in range(40):  # 2 workers, 10 ms per step, 16-step tasks: 0.16 s per task per worker
        t += 0.08
        auto.completed(16, t)
    assert auto.steps == round(AUTO_CLOSURE_S / 0.010)
    for _ in range(2000):  # a very fast step: capped
        t += 0.0001
        auto.completed(16, t)
    assert auto.steps == AUTO_MAX_STEPS


def _spec(**changes: Any) -> JobSpec:
    """A minimal spec with ``changes`` as a user's YAML may give them (any type: validate() checks)."""
    return JobSpec(model="m:f", data="d", checkpoint_dir="/c", export_dir="/e", **changes)


def test_steps_per_execution_setting():
    assert _spec().validate().steps_per_execution == "auto"
    assert _spec(steps_per_execution="8").validate().steps_per_execution == 8
    for bad in ("fast", 0, -1, 2.5):
        with pytest.raises(CommandError, match="--steps-per-execution"):
            _spec(steps_per_execution=bad).validate()
