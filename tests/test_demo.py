"""`make demo` end to end: `tfhadoop demo` on a cluster of its own (up, Skein app, Hive table,
export, TensorFlow parse, training on YARN, down)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    env_state = tmp_path / "state"
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", "demo", "--state-dir", str(env_state), "--rows", "3000"],
                          capture_output=True, text=True, timeout=900,
                          env={k: v for k, v in __import__("os").environ.items()
                               if k not in ("HADOOP_CONF_DIR", "TFHADOOP_STATE_DIR", "TFHADOOP_METASTORE_DIR")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "FINISHED / SUCCEEDED" in out
    assert "hello from YARN container container_" in out
    assert "3000 rows" in out and "3000 Examples" in out
    # A model trained on the exported shards on YARN beats the constant predictor (4/7 of the
    # labels are 0) on the eval split.
    found = re.search(r"eval split: .*accuracy ([0-9.]+)", out)
    assert found, out[-3000:]
    accuracy = float(found.group(1))
    assert accuracy > 0.8, out[-3000:]
    assert "epoch 3/3, step" in out and "SavedModel at hdfs://" in out
    assert "embedded Hadoop cluster down" in out
    assert not (env_state / "cluster.json").exists()
    # Quiet by default (issue 10): the steps and their results only; Java, Spark, Skein and
    # TensorFlow logs go to the log file named at the end.
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) <= 40, out
    noise = [line for line in lines if re.search(r" (INFO|WARN|ERROR) |^\s+at [\w$.]+\(|Exception|oneDNN|^[IWEF]\d{4} |cuInit|cuda drivers", line)]
    assert not noise, noise
    assert not proc.stderr.strip(), proc.stderr[-3000:]
    found = re.search(r"Java, Spark, Skein and TensorFlow logs: (\S+)", out)
    assert found, out[-3000:]
    log = found.group(1)
    logged = open(log).read()
    # Every step's logs, none wiped by a later one (Skein opens a log path with mode "w"); the
    # Skein driver the demo's steps share keeps its own log, which the log names.
    assert "log4j" in logged, logged[-2000:]
    found = re.search(r"Skein: the embedded cluster's shared driver at \S+; its log: (\S+)", logged)
    assert found, logged[-2000:]
    driver_log = open(found.group(1)).read()
    assert driver_log.count("Submitted application") >= 2, driver_log[-2000:]  # the hello app and the training job
