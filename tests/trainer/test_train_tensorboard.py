"""`tfhadoop train --tensorboard` on the embedded cluster (issue 31 §1): TensorBoard runs as a
container of the job, `status` prints its URL, its HTTP API serves the job's train loss (the very
values the coordinator wrote to HDFS), the live job page links it, and its container publishes
what it uses like a role."""
from __future__ import annotations

import math
import subprocess
import sys
import urllib.request

import pytest

from tests import tensorboard_http
from tests.trainer import jobs
from tests.trainer.test_train_yarn import tensorboard_scalars
from tests.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
URL_LINE = "TensorBoard of the job (its container): "


def status(app_id: str) -> str:
    done = subprocess.run([sys.executable, "-m", "tfhadoop", "status", app_id], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_tensorboard_container_serves_the_job_s_train_loss(hadoop_cluster, dataset, tmp_path):
    run, proc = jobs.train(hadoop_cluster, dataset, background=True,
                           extra=["--workers", "1", "--epochs", str(jobs.ENDLESS), "--tensorboard",
                                  "--tensorboard-memory", "1g"])
    try:
        app_id = jobs.app_id(proc)
        seen = {"status": ""}

        def url():
            seen["status"] = status(app_id)
            line = next((x for x in seen["status"].splitlines() if x.startswith(URL_LINE)), None)
            return line[len(URL_LINE):].strip() if line else None

        board = wait_for(url, 300, "the TensorBoard URL in `tfhadoop status`", interval=2,
                         diagnose=lambda: seen["status"] + "\n" + jobs.diagnosis(hadoop_cluster, run))
        assert board.startswith("http://") and not board.startswith("http://0.0.0.0"), board
        # The train loss, once a checkpoint made the first event files readable.
        tensorboard_http.wait_loaded(board, {"train": {"loss"}}, timeout=300)
        served = tensorboard_http.scalars(board, "train", "loss")
        assert served and all(math.isfinite(v) for _, v in served), served
        assert [s for s, _ in served] == sorted({s for s, _ in served}), served  # one value per step, in order
        # The live job page (through the ResourceManager's proxy) links it.
        page = next(x.split()[2] for x in seen["status"].splitlines() if x.startswith("job page "))
        with urllib.request.urlopen(page, timeout=60) as response:
            html = response.read().decode()
        assert f'<p id="tensorboard">TensorBoard: <a href="{board}">' in html, html[-3000:]
        # Its container is no training role: not among the workers, but its memory is sampled.
        text = wait_for(lambda: (lambda s: s if "tensorboard:0: memory peak" in s else None)(status(app_id)), 120,
                        "the TensorBoard container's resources in status", interval=3)
        assert "tensorboard:0: memory peak" in text and "of 1024 MB asked" in text, text
        jobs.stop(app_id)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (out + err)[-4000:]
    events = jobs.events(run)
    up = [e for e in events if e["event"] == "tensorboard_up"]
    assert len(up) == 1 and up[0]["url"] == board, up
    assert not [e for e in events if e["event"] in ("tensorboard_lost", "container_lost")], events
    # What TensorBoard served is what the coordinator wrote (read back from the closed event files).
    written = dict(tensorboard_scalars(f"{run}/ckpt/tensorboard", tmp_path / "tb")["train"]["loss"])
    assert all(written.get(step) == value for step, value in served), (served, written)
