"""`tfhadoop train` options on the embedded YARN cluster: a step budget, checkpoints by steps,
a packed Python environment shipped as a YARN archive, and `tfhadoop logs --role`."""
from __future__ import annotations

import subprocess
import sys
import tarfile
import uuid

import pytest

from tests.trainer import jobs

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

MARK = "tfhadoop-test packed env"


def packed_env(tmp_path, hadoop_cluster) -> str:
    """A stand-in for a venv-pack archive: ``bin/python`` says it ran, then runs this venv's
    interpreter (containers share this host). Uploaded to HDFS like a real packed env."""
    from tfhadoop.connectors import hdfs

    script = tmp_path / "python"
    script.write_text(f'#!/bin/sh\necho "{MARK}: $0" >&2\nexec {sys.executable} "$@"\n')
    script.chmod(0o755)
    archive = tmp_path / "env.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(script, arcname="bin/python")
    url = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/env-{uuid.uuid4().hex[:8]}.tar.gz")
    hdfs.write_bytes(url, archive.read_bytes())
    return url


def test_step_budget_checkpoint_steps_packed_env_and_role_logs(hadoop_cluster, dataset, tmp_path):
    from tfhadoop.connectors import hdfs

    # Tasks of 300 records at batch 32 are 10 steps: 47 steps = 4 whole tasks + 7 batches of the
    # 5th; checkpoints every 20 steps with 1 task per closure: at steps 20 and 40, and at the end.
    run, proc = jobs.train(hadoop_cluster, dataset, extra=[
        "--workers", "1", "--steps", "47", "--checkpoint-tasks", "1", "--checkpoint-steps", "20",
        "--checkpoint-secs", "3600", "--python-archive", packed_env(tmp_path, hadoop_cluster)])
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    metrics = jobs.metrics(run)
    assert metrics["steps"] == 47
    assert [e["examples"] for e in metrics["epochs"]] == [4 * 300 + 7 * 32]
    names = hdfs.list_names(f"{run}/ckpt")
    assert "latest" in names
    assert sum(n.startswith("ckpt-") for n in names) == 2, names  # three saves: latest + two before it
    assert jobs.events(run)[-1]["status"] == "SUCCEEDED"

    app_id = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("application "))
    url = next(line.split()[2] for line in proc.stdout.splitlines() if line.startswith("tracking URL"))
    assert url.endswith(f"/cluster/app/{app_id}") and not url.startswith("http://localhost:0")
    tfh = [sys.executable, "-m", "tfhadoop", "logs", app_id, "--role"]
    worker = subprocess.run([*tfh, "worker:0"], capture_output=True, text=True, timeout=180)
    assert worker.returncode == 0, worker.stderr[-2000:]
    assert "worker:0 serving at" in worker.stdout and "ps:0 serving at" not in worker.stdout
    assert f"{MARK}: ./env/bin/python" in worker.stdout  # the container ran the packed env's python
    chief = subprocess.run([*tfh, "chief"], capture_output=True, text=True, timeout=180)
    assert chief.returncode == 0 and '"event": "finished"' in chief.stdout, chief.stderr[-2000:]
    assert f"{MARK}: ./env/bin/python" in chief.stdout
    missing = subprocess.run([*tfh, "worker:7"], capture_output=True, text=True, timeout=180)
    assert missing.returncode != 0 and "no logs of worker:7" in missing.stderr
