"""The trainer on the embedded YARN cluster, driven through `tfhadoop train` as a user runs it."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests import tensorboard_http
from tests.trainer import jobs
from tests.trainer import trainer_test_models as models
from tests.trainer.browser import chromium
from tests.trainer.preemption import hold_containers, preempt_a_worker, rejoined, start_preemptible_job

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def tensorboard_scalars(url, local) -> dict:
    """{run ("train"/"eval"): {tag: [(step, value), ...]}} from the event files under ``url``."""
    import tensorflow as tf

    from tfhadoop.connectors import hdfs

    hdfs.download_dir(url, str(local))
    out = {}
    for path in sorted(Path(local).rglob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                out.setdefault(path.parent.name, {}).setdefault(value.tag, []).append(
                    (event.step, float(tf.make_ndarray(value.tensor))))
    return out


def test_two_workers_one_ps_train_export_and_predict(hadoop_cluster, dataset, tmp_path):
    client_tmp = tmp_path / "client-tmp"
    client_tmp.mkdir()
    run, proc = jobs.train(hadoop_cluster, dataset, extra=["--workers", "2", "--epochs", "2", "--worker-gpus", "1"],
                           tmpdir=client_tmp)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    # The job's local files (spec, packed --python-path) are gone once YARN has its copies.
    assert not list(client_tmp.glob("tfhadoop-job-*")), sorted(p.name for p in client_tmp.iterdir())
    assert "application application_" in proc.stdout and "tracking URL" in proc.stdout
    assert "training SUCCEEDED" in proc.stdout
    # Quiet by default: the whole run fits on one screen; Java/Skein/TF logs went to the log file.
    print(proc.stdout)
    assert len(proc.stdout.splitlines()) <= 30, proc.stdout
    assert not proc.stderr.strip(), proc.stderr[-3000:]
    assert "client log: " in proc.stdout
    metrics = jobs.metrics(run)
    assert [e["examples"] for e in metrics["epochs"]] == [2400, 2400]
    # where each epoch's wall time went besides training (the coordinator's own account)
    timing = metrics["epoch_timing"]
    assert [t["epoch"] for t in timing] == [0, 1], timing
    for t in timing:
        assert 0 < t["end_checkpoint_s"] < t["seconds"] and 0 <= t["tail_s"] < t["seconds"], timing
    mse, constant = jobs.exported_model_mse(run, tmp_path)
    assert mse < 0.05 * constant, (mse, constant)
    assert metrics["eval"]["loss"] < 0.05 * constant
    assert metrics["eval"]["mae"] < metrics["eval"]["loss"] ** 0.5 * 1.5  # the compiled metric, on the eval split
    assert "mae" in proc.stdout  # `tfhadoop train` prints the final metrics
    # TensorBoard event files on HDFS: train loss per progress report (falling), eval metrics at the last step.
    scalars = tensorboard_scalars(f"{run}/ckpt/tensorboard", tmp_path / "tb")
    losses = scalars["train"]["loss"]
    assert len(losses) >= 2 and losses[-1][1] < losses[0][1], losses
    assert scalars["eval"]["mae"][0][0] == losses[-1][0] == metrics["steps"]
    # ... and `tfhadoop tensorboard APP` serves those very scalars (the job found from its id).
    app_id = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("application "))
    with tensorboard_http.serve(app_id, "--port", "0") as url:
        tensorboard_http.wait_loaded(url, {split: set(tags) for split, tags in scalars.items()})
        for split, tags in scalars.items():
            for tag, written in tags.items():
                assert tensorboard_http.scalars(url, split, tag) == written, (split, tag)
    events = [e["event"] for e in jobs.events(run)]
    assert events[:2] == ["cluster_up", "coordinator_started"] and events[-1] == "finished"
    # Each worker got one yarn.io/gpu; without a GPU plugin YARN sets no device list, so the role
    # exposes the first N devices.
    up = jobs.events(run)[0]
    assert up["cuda_visible_devices"] == {"0": "0", "1": "0"}


def test_model_function_that_raises_fails_fast(hadoop_cluster, dataset):
    t0 = time.monotonic()
    # --no-validate: the submit-time model check would catch this model before YARN does.
    run, proc = jobs.train(hadoop_cluster, dataset, model="trainer_test_models:broken", extra=["--workers", "1", "--no-validate"])
    assert proc.returncode == 1
    assert "training FAILED" in proc.stderr and "model bug: this model function always raises" in proc.stderr
    events = jobs.events(run)
    assert sum(e["event"] == "coordinator_started" for e in events) == 1  # no restart loop
    assert events[-1]["status"] == "FAILED"
    assert time.monotonic() - t0 < 300


def test_preempted_worker_is_replaced_and_rejoins_without_restart(hadoop_cluster, dataset):
    """The loss path alone: with --no-preemption-warnings YARN's warning is logged, not acted on
    (the baseline of test_train_preemption_warnings, which runs the same preemption with them)."""
    # 2 GB master + 1 GB PS + 2 x 5 GB workers in `train` leave 3 GB of 16 GB for `urgent`.
    run, proc = start_preemptible_job(hadoop_cluster, dataset, extra=["--no-preemption-warnings"])
    preempt_a_worker(hadoop_cluster, run, proc, back=rejoined)
    metrics = jobs.metrics(run)
    jobs.assert_stopped(metrics, 6)  # exactly once per epoch: 2 before the loss, 2 alone, 2 after the rejoin
    events = jobs.events(run)
    kinds = [e["event"] for e in events]
    assert kinds.count("coordinator_started") == 1  # no restart
    lost = [e for e in events if e["event"] == "container_lost"]
    assert lost and lost[0].get("exit_status") == -102, lost
    slot = lost[0]["slot"]
    assert any(e["event"] == "replacement_requested" and e["slot"] == slot for e in events)
    rejoins = [r for r in metrics["rejoins"] if r["slot"] == slot]
    assert rejoins, metrics["rejoins"]
    # YARN warned before the kill, named that container, and the master only logged it
    named = [e for e in events if e["event"] == "preemption_warned" and e["container"] == lost[0]["container"]]
    assert named and named[0]["time"] < lost[0]["time"] and named[0]["reaction"] == [], (named, lost)
    assert metrics["preemption"]["avoided"] == [] and "warned_s" not in lost[0], (metrics["preemption"], lost)
    print("worker lost -> rejoined:", round(rejoins[0]["time"] - lost[0]["time"], 1), "s;",
          f"warnings off: redone {metrics['redone_steps']} steps")


def test_killed_parameter_server_resumes_from_checkpoint(hadoop_cluster, dataset, tmp_path):
    from tfhadoop.yarn.client import skein_client

    run, proc = jobs.train(hadoop_cluster, dataset, background=True,
                           extra=[*jobs.FAULT_JOB, "--workers", "2", "--epochs", str(jobs.ENDLESS)])
    try:
        app_id = jobs.app_id(proc)
        jobs.wait_epochs(hadoop_cluster, run, proc, 2)
        with skein_client() as client:
            app = client.connect(app_id)
            ps = [c for c in app.get_containers(services=["ps"]) if str(c.state) == "RUNNING"]
            assert len(ps) == 1
            app.kill_container(ps[0].id)
        # ended once the new coordinator has trained two epochs on the replacement PS
        jobs.stop_when(hadoop_cluster, run, proc, app_id,
                       jobs.epochs_after(run, jobs.event_seen(run, "coordinator_started", 2)),
                       "two epochs after the coordinator's restart")
        out, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (out + err)[-4000:]
    events = jobs.events(run)
    kinds = [e["event"] for e in events]
    lost = [e for e in events if e["event"] == "container_lost"]
    assert [e["role"] for e in lost] == ["ps"], lost
    assert "replacement_up" in kinds and kinds.count("coordinator_started") >= 2
    metrics = jobs.metrics(run)
    jobs.assert_stopped(metrics, 4)
    restarted = [e for e in events if e["event"] == "coordinator_started"][-1]
    print("PS lost -> coordinator restarted:", round(restarted["time"] - lost[0]["time"], 1), "s")
    # TensorBoard across the restart (issue 31 §1): the new coordinator's scalars go on at the job's
    # global step, restored with the checkpoint, not from 0: each epoch's loss at that epoch's step
    # (one may be missing: written after a checkpoint by a coordinator that died before flushing it).
    scalars = tensorboard_scalars(f"{run}/ckpt/tensorboard", tmp_path / "tb")
    epoch_steps = [e["steps"] for e in metrics["epochs"]]
    logged = sorted({step for step, _ in scalars["train"]["epoch_loss"]})
    assert set(logged) <= set(epoch_steps) and len(logged) >= len(epoch_steps) - 1, (logged, epoch_steps)
    assert logged[-1] == metrics["steps"] and scalars["eval"]["loss"][-1][0] == metrics["steps"], scalars["eval"]


def test_starts_with_min_workers_then_scales_up(hadoop_cluster, dataset):
    from tfhadoop.yarn.client import skein_client

    # A filler holding 3 of the cluster's 4 GPUs (2 per NodeManager) leaves ONE GPU for the
    # workers (1 GPU each): the job starts with --min-workers 1 and takes the second worker when
    # the filler goes away. GPUs, not memory: the free GPU's node has memory for a worker wherever
    # the scheduler puts the master and the PS. The memory filler used before (2 x 4 GB) could
    # leave under 3 GB free on each node, depending on where the scheduler placed the filler's AM,
    # the master and the PS, so no 3 GB worker fit anywhere: a placement-dependent timeout.
    # Endless epochs, stopped two epochs after the rescale: a fixed count (30) once ended before
    # the added worker's rescale on a busy host (CI run B, 2026-11-29: workers_added, then succeeded).
    with skein_client() as client:
        filler = held = hold_containers(client, "filler", queue="default", instances=3, memory=512, gpus=1)
    try:
        jobs.wait(lambda: len(held.get_containers(states=["RUNNING"])) == 3, 120, "the filler's containers")
        run, proc = jobs.train(hadoop_cluster, dataset, background=True,
                               extra=["--workers", "2", "--min-workers", "1", "--worker-gpus", "1",
                                      "--startup-wait", "20", "--epochs", str(jobs.ENDLESS)])
        try:
            app_id = jobs.app_id(proc)
            jobs.wait_epochs(hadoop_cluster, run, proc, 2)
            filler.shutdown()
            filler = None
            jobs.stop_when(hadoop_cluster, run, proc, app_id, jobs.epochs_after(run, jobs.event_seen(run, "rescaled")),
                           "two epochs after the rescale to 2 workers")
            out, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
    finally:
        if filler is not None:
            filler.shutdown()
    assert proc.returncode == 0, (out + err)[-4000:]
    events = jobs.events(run)
    up = next(e for e in events if e["event"] == "cluster_up")
    assert up["workers"] == 1
    rescaled = [e for e in events if e["event"] == "rescaled"]
    assert rescaled and rescaled[0]["workers"] == 2, [e["event"] for e in events]
    metrics = jobs.metrics(run)
    jobs.assert_stopped(metrics, 4)  # exactly once per epoch, before and after the rescale
    assert {e["examples"] for e in metrics["epochs"]} == {2400}, metrics["epochs"]


def test_unsplit_dataset_status_follow_kill_and_jobs(hadoop_cluster, tmp_path):
    """A dataset exported without --split, named in the README's hdfs:///path form: the job trains
    on every record (one notice says there is no eval split); status/follow/kill/jobs of the
    running, then the killed job, the finished one read from its job directory."""
    from tfhadoop.connectors import hdfs

    path = f"/tmp/trainer-tests/unsplit-{uuid.uuid4().hex[:8]}"
    models.write_dataset(hadoop_cluster.hdfs_url(path), split=False)
    run, proc = jobs.train(hadoop_cluster, f"hdfs://{path}", extra=["--workers", "1", "--epochs", str(jobs.ENDLESS), "--detach"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "has no splits: training on all 2400 records, no eval split" in proc.stdout, proc.stdout
    app_id = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("application "))
    tfh = [sys.executable, "-m", "tfhadoop"]
    jobs.wait(lambda: (jobs.state_epoch(run) or 0) >= 1, 300, "one epoch")
    state = json.loads(hdfs.read_bytes(f"{run}/ckpt/latest/state.json"))
    assert state["history"][0]["examples"] == 2400  # every record of the unsplit dataset
    status = subprocess.run([*tfh, "status", app_id], capture_output=True, text=True, timeout=120)
    assert status.returncode == 0 and f"{app_id} tfhadoop-train RUNNING" in status.stdout, status.stderr[-2000:]
    assert "progress: epoch" in status.stdout and "coordinator_started" in status.stdout, status.stdout
    assert "worker " in status.stdout and " RUNNING " in status.stdout  # the containers
    assert f"TensorBoard: tfhadoop tensorboard {app_id}\n" in status.stdout, status.stdout
    # The live job page, through the ResourceManager's proxy, in a real browser.
    page = next(line.split()[2] for line in status.stdout.splitlines() if line.startswith("job page "))
    assert "/proxy/" + app_id in page, page
    jobs.wait(lambda: len(jobs.samples(run)) >= 2, 120, "two progress samples")
    dom = chromium(page, tmp_path, "live-job-page")
    assert app_id in dom and "RUNNING" in dom and "cluster_up" in dom, dom[-3000:]
    assert 'class="loss"' in dom and 'class="workers_alive"' in dom and "<polyline" in dom, dom[-3000:]
    assert 'data-label="worker/0"' in dom, dom[-3000:]  # the throughput of each worker, as the coordinator saw it
    listed = subprocess.run([*tfh, "jobs"], capture_output=True, text=True, timeout=120)
    assert any(line.startswith(app_id) and "RUNNING" in line for line in listed.stdout.splitlines()), listed.stdout
    killed = subprocess.run([*tfh, "kill", app_id], capture_output=True, text=True, timeout=120)
    assert killed.returncode == 0 and f"killed {app_id}" in killed.stdout
    again = subprocess.run([*tfh, "kill", app_id], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and f"{app_id} had already finished: KILLED" in again.stdout, again.stdout
    late = subprocess.run([*tfh, "stop", app_id], capture_output=True, text=True, timeout=120)
    assert late.returncode == 1 and late.stderr.strip().splitlines() == [
        f"tfhadoop stop: error: {app_id} has already finished: KILLED, final status KILLED"], late.stderr
    status = subprocess.run([*tfh, "status", app_id, "--html", str(tmp_path / "report.html")],
                            capture_output=True, text=True, timeout=120)
    assert status.returncode == 0 and "KILLED" in status.stdout, status.stderr[-2000:]
    assert "progress: last checkpoint at epoch" in status.stdout and "cluster_up" in status.stdout, status.stdout
    # What each container used (issue 31 §2), after the job: memory peak against what it asked
    assert "resources (latest sample):" in status.stdout, status.stdout
    assert re.search(r"worker:0: memory peak \d+ MB of \d+ MB asked \(\d+ %\)", status.stdout), status.stdout
    assert re.search(r"ps:0: memory peak \d+ MB of \d+ MB asked", status.stdout), status.stdout
    html = (tmp_path / "report.html").read_text()
    assert app_id in html and "cluster_up" in html and "<svg" in html
    assert '<div id="resources"><table>' in html and "peak memory" in html, html[-3000:]
    dom = chromium(f"file://{tmp_path / 'report.html'}", tmp_path, "report")
    assert "KILLED" in dom and "<polyline" in dom and "container" in dom
    # The history (issue 31 §3): a finished job is no longer among the running ones, and --all
    # shows its outcome, duration and checkpointed epochs, in the terminal and on a page.
    running = subprocess.run([*tfh, "jobs"], capture_output=True, text=True, timeout=120)
    assert running.returncode == 0 and not any(line.startswith(app_id) for line in running.stdout.splitlines()), \
        running.stdout
    listed = subprocess.run([*tfh, "jobs", "--all", "--html", str(tmp_path / "jobs.html")], capture_output=True,
                            text=True, timeout=120)
    row = next((line.split() for line in listed.stdout.splitlines() if line.startswith(app_id)), None)
    assert listed.returncode == 0 and row and row[1] == "KILLED" and int(row[5]) >= 1, listed.stdout
    dom = chromium(f"file://{tmp_path / 'jobs.html'}", tmp_path, "jobs")
    assert app_id in dom and "KILLED" in dom and f"tfhadoop logs {app_id}" in dom, dom[-3000:]
    follow = subprocess.run([*tfh, "follow", app_id], capture_output=True, text=True, timeout=120)
    assert follow.returncode == 1 and "training KILLED" in follow.stderr, follow.stderr[-2000:]
    assert f"in {run}/ckpt" in follow.stdout, follow.stdout
