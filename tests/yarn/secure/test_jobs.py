"""The product on the secure cluster: a Hive table exported by Spark on YARN and trained on YARN
with a keytab (preempted and renewed tokens included), `tfhadoop demo --secure`, and a plain
spark-submit job with the tfrecord data source."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.yarn.secure.helpers import (
    ROOT,
    client_env,
    container_logs,
    hdfs_path,
    hdfs_text,
    importing_tests,
    kinit,
    one_line_error,
    run_py,
    tfh,
    with_ticket,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TRAINER_TESTS = ROOT / "tests" / "trainer"
HIVE_TABLE = """
from tests.trainer import trainer_test_models as m
from tfhadoop.spark.session import hive_session
spark = hive_session("secure-hive-table")
x, y = m.make_examples(3000, seed=0)
rows = [([float(v) for v in xi], float(yi)) for xi, yi in zip(x, y)]
spark.createDataFrame(rows, "x array<float>, y float").write.mode("overwrite").saveAsTable("secure_points")
print(spark.table("secure_points").count())
spark.stop()
"""


@pytest.fixture(scope="module")
def exported_dataset(secure_cluster, tmp_path_factory):
    """A Hive table on the secure warehouse (written with a kinit ticket), exported to TFRecords by
    `tfhadoop export --master yarn --principal/--keytab` with no ticket cache at all: Spark logs in
    from the keytab and its executors on the secure YARN read the table's files and write the shards
    with the delegation tokens Spark obtained (no credentials: test_no_ticket_each_command_...)."""
    cluster, info = secure_cluster
    mine = client_env(cluster, info, tmp_path_factory.mktemp("cc") / "cc")
    kinit(mine, info["principal"], info["keytab"])
    assert run_py(importing_tests(mine), HIVE_TABLE, timeout=400).split()[-1] == "3000"
    user = info["principal"].split("@")[0]
    url = info["fs_default"] + f"/user/{user}/datasets/points"
    env = client_env(cluster, info, None)
    t0 = time.monotonic()
    proc, _ = tfh(env, "export", "--master", "yarn", "--table", "secure_points", "--output", url, "--split", "train=0.8,eval=0.2",
                   "--label", "y", "--shards", "4", "--principal", info["principal"], "--keytab", info["keytab"],
                   timeout=400)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    print(f"secure export (Spark on YARN) in {time.monotonic() - t0:.1f} s")
    return url


def test_export_of_a_hive_table_with_a_keytab(secure_cluster, exported_dataset, tmp_path):
    cluster, info = secure_cluster
    env = client_env(cluster, info, None)
    proc, _ = tfh(env, "records", "count", exported_dataset, "--principal", info["principal"],
                   "--keytab", info["keytab"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[0] == "3000", proc.stdout
    manifest = json.loads(hdfs_text(with_ticket(cluster, info, tmp_path), info, f"{exported_dataset}/_tfhadoop.json"))
    assert set(manifest["splits"]) == {"train", "eval"}
    assert sum(s["records"] for s in manifest["splits"].values()) == 3000
    executors = [f for f in cluster.state_dir.glob("target/**/launch_container.sh")
                 if "YarnCoarseGrainedExecutorBackend" in f.read_text(errors="replace")]
    assert executors, "no Spark executor of the export ran in a YARN container"
    # The second user can read neither the table's files nor the dataset.
    proc, secs = tfh(env, "records", "count", exported_dataset, "--principal", info["other_principal"],
                      "--keytab", info["other_keytab"])
    one_line_error(proc, secs, "Permission denied: user=intruder")


LOAD_AND_PREDICT = """
import os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import numpy as np
import tf_keras
from tests.trainer import trainer_test_models as m
from tfhadoop.connectors import hdfs
local = {local!r}
hdfs.download_dir({url!r}, local)
model = tf_keras.models.load_model(local)
x, y = m.make_examples(400, seed=7)
mse = float(np.mean((model.predict(x, verbose=0)[:, 0] - y) ** 2))
print(mse, float(np.mean((y - y.mean()) ** 2)))
"""


def _role_pid(app: str, role: str) -> int | None:
    """The process of ``role`` (``worker_0``, Skein's container name) in ``app``'s containers."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if b"tfhadoop.trainer.role" in cmd and f"SKEIN_APPLICATION_ID={app}".encode() in environ \
                and f"SKEIN_CONTAINER_ID={role}".encode() in environ:
            return int(pid)
    return None


URGENT = """
import sys
import skein
from tests.trainer.preemption import hold_containers
with skein.Client(log=False) as client:
    print("ready", flush=True)
    sys.stdin.readline()  # when the tokens are old enough
    app = hold_containers(client, "urgent", queue="urgent", instances=1, memory=2560)
    print(app.id, flush=True)
    sys.stdin.readline()  # until the test has seen the preemption
    app.shutdown()
"""


def test_train_on_the_secure_cluster_with_a_keytab(secure_cluster, exported_dataset, tmp_path):
    """`tfhadoop train --principal/--keytab` (no ticket cache): 1 PS + 1 worker in queue `train`
    on YARN with the application's delegation tokens only (IP-named). Once the tokens are older
    than their renewal interval, an application in `urgent` takes back the worker (preemption,
    tests.trainer.preemption's helper): its replacement, a new process started when `urgent` is done, logs
    in to HDFS with the same tokens (the ResourceManager renewed them) and the job SUCCEEDS with
    every epoch counted once. Checkpoints and the SavedModel land on hdfs://; the keytab never
    leaves the client."""
    cluster, info = secure_cluster
    user = info["principal"].split("@")[0]
    run = info["fs_default"] + f"/user/{user}/runs/r1"
    env = client_env(cluster, info, None)
    mine = with_ticket(cluster, info, tmp_path)
    # Endless epochs (30, then 80 once ended before the kill on faster hosts): still training when the
    # tokens are renew + 5 s old and through YARN's 10 s from warning to kill; `tfhadoop stop` ends it
    # once the replacement has trained two epochs.
    renew, epochs = info["token_renew_seconds"], 100_000
    # 8 GB node: 2 GB master + 1 GB PS + 4 GB worker in `train` (guaranteed 4 GB) leave 1 GB;
    # `urgent` (guaranteed 3.2 GB) asks for 0.25 + 2.5 GB, more than the PS holds: the worker goes.
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfhadoop", "train", "--model", "trainer_test_models:linear",
         "--python-path", str(TRAINER_TESTS), "--data", exported_dataset, "--label", "y", "--workers", "1",
         "--ps", "1", "--epochs", str(epochs), "--task-records", "300", "--batch-size", "32", "--worker-memory", "4g",
         "--ps-memory", "1g", "--queue", "train", "--checkpoint-dir", f"{run}/ckpt", "--export-dir", f"{run}/model",
         "--principal", info["principal"], "--keytab", info["keytab"]],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    urgent = subprocess.Popen([sys.executable, "-c", URGENT],
                              env={**importing_tests(mine), "SKEIN_DRIVER_JAVA_OPTIONS": f"-Djava.security.krb5.conf={info['krb5_conf']}"},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert urgent.stdin and urgent.stdout and proc.stdout and proc.stderr  # PIPEs
        assert urgent.stdout.readline().strip() == "ready", urgent.communicate()[1][-3000:]
        app = next((line.split()[1] for line in proc.stdout if line.startswith("application ")), None)
        assert app, proc.stderr.read()[-3000:]
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            pid = _role_pid(app, "worker_0")
            events = hdfs_text(mine, info, f"{run}/ckpt/events.jsonl", missing_ok=True) if pid else ""
            up = [json.loads(line) for line in events.splitlines() if '"cluster_up"' in line]
            if up and time.time() - up[0]["time"] > renew + 5:
                break
            time.sleep(3)
        assert proc.poll() is None and pid, "the job ended (or never started its worker) before its tokens " \
            "were older than their renewal interval"
        t_urgent = time.time()
        urgent.stdin.write("submit\n")
        urgent.stdin.flush()
        assert urgent.stdout.readline().startswith("application_"), urgent.communicate()[1][-3000:]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and urgent.poll() is None:
            if '"container_lost"' in hdfs_text(mine, info, f"{run}/ckpt/events.jsonl"):
                break
            time.sleep(2)
        assert urgent.poll() is None, urgent.communicate()[1][-3000:]
        assert proc.poll() is None, "the job ended before `urgent` took its worker"
        _, urgent_err = urgent.communicate("\n", timeout=120)  # `urgent` ends: the replacement gets its resources
        assert urgent.returncode == 0, urgent_err[-3000:]
        at_up, deadline = None, time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            state = json.loads(hdfs_text(mine, info, f"{run}/ckpt/latest/state.json", missing_ok=True) or "{}")
            if at_up is None and '"replacement_up"' in hdfs_text(mine, info, f"{run}/ckpt/events.jsonl"):
                at_up = state.get("epoch", 0)
            if at_up is not None and state.get("epoch", 0) >= at_up + 2:
                break
            time.sleep(2)
        assert proc.poll() is None and at_up is not None, "the job ended, or its replacement trained no two epochs"
        stop = subprocess.run([sys.executable, "-m", "tfhadoop", "stop", app, "--principal", info["principal"],
                               "--keytab", info["keytab"]], env=env, capture_output=True, text=True, timeout=120)
        assert stop.returncode == 0, (stop.stdout + stop.stderr)[-3000:]  # `stop` with a keytab, as `train`
        out, err = proc.communicate(timeout=600)
    finally:
        for p in (urgent, proc):
            if p.poll() is None:
                p.kill()
    secs = time.monotonic() - t0
    assert proc.returncode == 0, (out + err)[-4000:] + container_logs(cluster)[-6000:]
    assert "training SUCCEEDED" in out, (out + err)[-3000:]
    events = [json.loads(line) for line in hdfs_text(mine, info, f"{run}/ckpt/events.jsonl").splitlines()]
    assert events[-1]["event"] == "finished" and events[-1]["status"] == "SUCCEEDED", events[-1]
    lost = [e for e in events if e["event"] == "container_lost"]
    assert [(e["role"], e["preempted"]) for e in lost] == [("worker", True)], lost
    assert lost[0]["diagnostics"] == "Container preempted by scheduler", lost
    # The replacement started after the tokens' first renewal interval had passed, and trained.
    up_again = [e for e in events if e["event"] == "replacement_up"]
    assert up_again and up_again[0]["time"] > events[0]["time"] + renew, (up_again, events[0])
    train = json.loads(hdfs_text(mine, info, f"{exported_dataset}/_tfhadoop.json"))["splits"]["train"]["records"]
    metrics = json.loads(hdfs_text(mine, info, f"{run}/ckpt/metrics.json"))
    assert [e["examples"] for e in metrics["epochs"]] == [train] * len(metrics["epochs"])  # exactly once per epoch
    assert metrics["stopped"]["after_epoch"] == len(metrics["epochs"]) - 1 >= at_up + 1, metrics["stopped"]
    print(f"secure train in {secs:.1f} s; `urgent` submitted {t_urgent - events[0]['time']:.0f} s after cluster_up, "
          f"worker preempted {lost[0]['time'] - t_urgent:.1f} s later, replacement up "
          f"{up_again[0]['time'] - lost[0]['time']:.1f} s after that; tokens renew every {renew} s")
    listing = run_py(mine, "import hdfs_native; c = hdfs_native.Client(); "
                        f"print('\\n'.join(s.path for s in c.list_status({hdfs_path(info, run)!r} + '/ckpt', True)))"
                        "; print('\\n'.join(s.path for s in c.list_status("
                        f"{hdfs_path(info, run)!r} + '/model', True)))")
    assert "saved_model.pb" in listing and "metrics.json" in listing, listing
    assert any("ckpt" in line and ".index" in line for line in listing.splitlines()), listing
    mse, constant = map(float, run_py(importing_tests(mine), LOAD_AND_PREDICT.format(url=f"{run}/model",
                                                          local=str(tmp_path / "model")))
                        .split()[-2:])
    assert mse < 0.05 * constant, (mse, constant)
    # No keytab in any container of the application, nor named in their launch scripts.
    app_dirs = list(cluster.state_dir.glob(f"target/**/appcache/{app}"))
    assert app_dirs, f"no container dirs of {app} under {cluster.state_dir}"
    for d in app_dirs:
        for f in d.rglob("*"):
            assert not f.name.endswith(".keytab"), f
            if f.name == "launch_container.sh":
                text = f.read_text()
                assert "keytab" not in text.lower() and info["keytab"] not in text, f


def test_demo_on_the_secure_cluster(secure_cluster):
    """`tfhadoop demo --secure` on this package's secure cluster (its state dir, so no second
    cluster and it stays up): keytab login, a Skein app whose log is read from the NodeManager's
    local log dir (no aggregation without libhadoop), Hive table -> export -> train -> SavedModel."""
    cluster, info = secure_cluster
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KRB5", "HADOOP_")) and k not in ("TFHADOOP_STATE_DIR", "TFHADOOP_METASTORE_DIR")}
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", "demo", "--secure", "--state-dir", str(cluster.state_dir),
                           "--rows", "2000", "--workers", "1"], env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:] + container_logs(cluster)[-3000:]
    assert f"logged in as {info['principal']}" in out
    assert "its log says: hello from YARN container container_" in out, out
    assert "2000 rows" in out and "2000 Examples" in out
    assert "SavedModel at hdfs://" in out and "/user/" in out
    assert cluster.is_running()  # it was already up: the demo leaves it up


def test_spark_submit_with_the_data_source_on_the_secure_yarn(secure_cluster, tmp_path):
    """A plain `spark-submit --master yarn --principal/--keytab` job file using the `tfrecord` data
    source (the export job file with the jar), no ticket cache: Spark logs in from the keytab, its
    executors in the secure YARN's containers write the shards with the tokens Spark obtained."""
    import pyspark

    from tfhadoop.spark.session import tfhadoop_jar

    jar = tfhadoop_jar()
    assert jar, "no tfhadoop jar under jars/: build it (make jar)"
    cluster, info = secure_cluster
    env = client_env(cluster, info, None)
    env.update(PYSPARK_PYTHON=sys.executable, PATH=str(Path(sys.executable).parent) + os.pathsep + env["PATH"])
    csv = tmp_path / "in.csv"
    csv.write_text("id,score\n" + "".join(f"{i},{i / 7}\n" for i in range(600)))
    user = info["principal"].split("@")[0]
    out = info["fs_default"] + f"/user/{user}/datasets/submitted"
    krb = f"-Djava.security.krb5.conf={info['krb5_conf']}"
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    job = ROOT / "spark" / "python" / "tfhadoop" / "spark" / "export.py"
    started = time.time()
    proc = subprocess.run(
        [str(submit), "--master", "yarn", "--principal", info["principal"], "--keytab", info["keytab"],
         "--jars", jar, "--num-executors", "1", "--executor-memory", "1g",
         "--conf", f"spark.yarn.jars=local:{Path(pyspark.__file__).parent / 'jars'}/*",
         "--conf", f"spark.driver.extraJavaOptions={krb}", "--conf", f"spark.executor.extraJavaOptions={krb}",
         # Spark 4's driver attaches its UI handlers (SparkUI.attachAllHandlers, unsynchronized) right
         # as the AM's AmIpFilter arrives on an RPC thread; when the two overlap, jetty fails the
         # SparkContext (seen once in CI: the AM had not registered, uptime 8 s). Not what this test is
         # about: no UI, no filter, no race.
         "--conf", "spark.ui.enabled=false",
         str(job), "--input", f"file://{csv}", "--input-format", "csv", "--output", out, "--shards", "2"],
        env=env, capture_output=True, text=True, timeout=400)
    causes = [line for line in (proc.stdout + proc.stderr).splitlines() if "Exception" in line or "Caused by" in line]
    assert proc.returncode == 0, "\n".join(causes[:20]) + "\n...\n" + proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "exported 600 records" in proc.stdout, proc.stdout[-2000:]
    counted, _ = tfh(env, "records", "count", out, "--principal", info["principal"], "--keytab", info["keytab"])
    assert counted.stdout.split()[0] == "600", counted.stdout + counted.stderr[-2000:]
    executors = [f for f in cluster.state_dir.glob("target/**/launch_container.sh")
                 if f.stat().st_mtime >= started and "YarnCoarseGrainedExecutorBackend" in f.read_text(errors="replace")]
    assert executors, "no executor of the spark-submit job ran in a YARN container"
