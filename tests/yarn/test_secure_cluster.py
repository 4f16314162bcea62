"""The Kerberized embedded cluster (`tfhadoop cluster up --secure`): a cluster of its own, started
once for this module (KDC + Kerberos HDFS and YARN), and what users see with and without a
ticket: one line naming the cluster or the principal, within seconds."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests import tensorboard_http
from tfhadoop.yarn.embedded import ClusterOptions, EmbeddedCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def secure_cluster():
    """A secure cluster in a fresh state dir (start-up time printed), stopped after the module."""
    subprocess.run([str(ROOT / "tools" / "ensure-krb5")], check=True, capture_output=True, timeout=600)
    state = Path(tempfile.mkdtemp(prefix="tfhadoop-test-secure-"))
    cluster = EmbeddedCluster(state)
    t0 = time.monotonic()
    try:
        info = cluster.up(ClusterOptions(node_managers=1, secure=True, token_renew_seconds=40))
        print(f"secure cluster up in {time.monotonic() - t0:.1f} s (daemons {info['start_seconds']:.1f} s)")
        yield cluster, info
    finally:
        cluster.down()
        shutil.rmtree(state, ignore_errors=True)


def _env(cluster, info, cache: Path | None) -> dict:
    """A client shell of the secure cluster, as `tfhadoop cluster env --secure` sets it up, with
    its own ticket cache (empty unless a test kinits into it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KRB5", "HADOOP_TOKEN"))}
    env.update(HADOOP_CONF_DIR=str(cluster.conf_dir), KRB5_CONFIG=info["krb5_conf"],
               KRB5CCNAME=f"FILE:{cache or '/nonexistent/krb5cc'}", TFHADOOP_STATE_DIR=str(cluster.state_dir),
               PATH=f"{cluster.bin_dir}:{env['PATH']}", TFHADOOP_HDFS_CLIENT="native")
    return env


def _kinit(env, principal, keytab, *extra) -> None:
    subprocess.run(["kinit", *extra, "-k", "-t", keytab, principal], env=env, check=True,
                   capture_output=True, timeout=30)


def _tfh(env, *argv, timeout=60):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", *argv], env=env, capture_output=True,
                          text=True, timeout=timeout)
    return proc, time.monotonic() - t0


def _container_logs(cluster) -> str:
    """The containers' stderr/stdout in the NodeManagers' log dirs: why a container failed."""
    out = []
    for f in sorted(p for p in cluster.state_dir.glob("target/**/container_*/*") if p.is_file()):
        out.append(f"--- {f.parent.name}/{f.name}\n" + f.read_text(errors="replace")[-3000:])
    return "\n".join(out)


def _one_line_error(proc, seconds, *needles):
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert seconds < 90, seconds  # no retry loop (their defaults take minutes); margin for a slow host


def test_cluster_up_secure_writes_kerberos_client_setup(secure_cluster):
    cluster, info = secure_cluster
    assert info["secure"] and info["realm"] == "TFHADOOP.TEST"
    core = (cluster.conf_dir / "core-site.xml").read_text()
    assert "<name>hadoop.security.authentication</name><value>kerberos</value>" in core
    hdfs = (cluster.conf_dir / "hdfs-site.xml").read_text()
    assert "<name>dfs.data.transfer.protection</name><value>authentication</value>" in hdfs
    assert "<name>dfs.block.access.token.enable</name><value>true</value>" in hdfs
    for key in ("krb5_conf", "keytab", "other_keytab"):
        assert Path(info[key]).is_file()
    assert oct(Path(info["keytab"]).stat().st_mode & 0o777) == "0o600"
    env_out = subprocess.run([sys.executable, "-m", "tfhadoop", "cluster", "env", "--state-dir", str(cluster.state_dir)],
                             capture_output=True, text=True, timeout=60).stdout
    assert f"export KRB5_CONFIG={info['krb5_conf']}" in env_out
    assert f"kinit -k -t {info['keytab']} {info['principal']}" in env_out
    status = json.loads(subprocess.run([sys.executable, "-m", "tfhadoop", "cluster", "status", "--json", "--state-dir",
                                        str(cluster.state_dir)], capture_output=True, text=True, timeout=60).stdout)
    assert status["namenode"]["state"] == "Operational" and status["resourcemanager"]["state"] == "STARTED"
    assert {q["name"] for q in status["queues"]} == {"default", "train", "urgent"}


def test_with_a_ticket_records_round_trip_over_kerberos_and_sasl(secure_cluster, tmp_path):
    """hdfs-native logs in with the ticket (GSSAPI), writes and reads blocks over SASL data transfer."""
    cluster, info = secure_cluster
    env = _env(cluster, info, tmp_path / "cc")
    _kinit(env, info["principal"], info["keytab"])
    url = info["fs_default"] + f"/user/{info['principal'].split('@')[0]}/records/part-0.tfrecord"
    script = ("from tfhadoop.connectors import tfrecord as t; "
              f"t.write_records({url!r}, [b'a' * 100, b'b' * 200, b'c'])")
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    proc, _ = _tfh(env, "records", "count", url)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[0] == "3", proc.stdout


def test_no_ticket_each_command_fails_in_one_line(secure_cluster):
    cluster, info = secure_cluster
    env = _env(cluster, info, None)
    fs = info["fs_default"]
    proc, secs = _tfh(env, "records", "count", f"{fs}/user/anything.tfrecord")
    _one_line_error(proc, secs, f"no Kerberos ticket for {fs}: run kinit or pass --principal/--keytab")
    proc, secs = _tfh(env, "export", "--table", "t", "--output", f"{fs}/user/out")
    _one_line_error(proc, secs, f"no Kerberos ticket for {fs}: run kinit or pass --principal/--keytab")
    for argv in (["jobs"], ["status", "application_1_0001"],
                 ["export", "--master", "yarn", "--table", "t", "--output", f"{fs}/user/out"],
                 ["train", "--model", "m:f", "--data", f"{fs}/user/x", "--label", "y",
                  "--checkpoint-dir", f"{fs}/user/ck"]):
        proc, secs = _tfh(env, *argv)
        _one_line_error(proc, secs, "no Kerberos ticket for YARN at ", "run kinit or pass --principal/--keytab")


def test_stale_keytab_names_the_principal(secure_cluster):
    cluster, info = secure_cluster
    env = _env(cluster, info, None)
    stale = info["keytab"].replace(".keytab", ".stale.keytab")
    for argv in (["records", "count", info["fs_default"] + "/user/x"], ["jobs"]):
        proc, secs = _tfh(env, *argv, "--principal", info["principal"], "--keytab", stale)
        _one_line_error(proc, secs, f"cannot log in as {info['principal']} with keytab {stale}: ")
    proc, secs = _tfh(env, "jobs", "--principal", info["principal"], "--keytab", "/nonexistent.keytab")
    _one_line_error(proc, secs, f"keytab /nonexistent.keytab (for {info['principal']}) does not exist")


def test_expired_ticket_names_the_principal(secure_cluster, tmp_path):
    cluster, info = secure_cluster
    env = _env(cluster, info, tmp_path / "cc")
    _kinit(env, info["principal"], info["keytab"], "-l", "5s")
    time.sleep(6)
    proc, secs = _tfh(env, "records", "count", info["fs_default"] + "/user/x")
    _one_line_error(proc, secs, f"the Kerberos ticket of {info['principal']} has expired",
                    f"run kinit {info['principal']}")


def test_keytab_login_and_a_second_user_cannot_read_the_first_users_files(secure_cluster, tmp_path):
    """--principal/--keytab without any ticket cache; home dirs are private to their user."""
    cluster, info = secure_cluster
    env = _env(cluster, info, None)
    user = info["principal"].split("@")[0]
    url = info["fs_default"] + f"/user/{user}/private.tfrecord"
    mine = _env(cluster, info, tmp_path / "cc")
    _kinit(mine, info["principal"], info["keytab"])
    subprocess.run([sys.executable, "-c", "from tfhadoop.connectors import tfrecord as t; "
                    f"t.write_records({url!r}, [b'secret'])"], env=mine, check=True, timeout=120)
    proc, _ = _tfh(env, "records", "count", url, "--principal", info["principal"], "--keytab", info["keytab"])
    assert proc.returncode == 0 and proc.stdout.split()[0] == "1", proc.stderr[-2000:]
    proc, secs = _tfh(env, "records", "count", url, "--principal", info["other_principal"],
                      "--keytab", info["other_keytab"])
    _one_line_error(proc, secs, "Permission denied: user=intruder", f'inode="/user/{user}"')


WRITE_SCALARS = """
import sys
import tfhadoop.tfhdfs
from tfhadoop.trainer.summaries import Summaries
summaries = Summaries(sys.argv[1])
summaries.scalars("train", 3, {"loss": 0.5})
summaries.close()
"""


def test_tensorboard_reads_the_event_files_with_a_ticket(secure_cluster, tmp_path):
    """`tfhadoop tensorboard --logdir` on the Kerberized HDFS: one line without a ticket; with one,
    TensorBoard reads the event files through the tfhdfs plugin (GSSAPI) and serves their scalars."""
    cluster, info = secure_cluster
    env = _env(cluster, info, tmp_path / "cc")
    _kinit(env, info["principal"], info["keytab"])
    logdir = f"hdfs:///user/{info['principal'].split('@')[0]}/job/tensorboard"
    _py(env, WRITE_SCALARS, logdir)
    proc, secs = _tfh(_env(cluster, info, None), "tensorboard", "--logdir", logdir, "--port", "0")
    _one_line_error(proc, secs, f"no Kerberos ticket for {info['fs_default']}")
    with tensorboard_http.serve("--logdir", logdir, "--port", "0", env=env) as url:
        tensorboard_http.wait_loaded(url, {"train": {"loss"}})
        assert tensorboard_http.scalars(url, "train", "loss") == [(3, 0.5)]


CONTAINER_CHECK = """
import os, sys
from tfhadoop.connectors import tfrecord
url, out = sys.argv[1], sys.argv[2]
assert os.environ.get("HADOOP_TOKEN_FILE_LOCATION"), "no delegation tokens in the container"
with open(os.environ["HADOOP_TOKEN_FILE_LOCATION"], "rb") as f:  # use_ip=true: named 127.0.0.1:port
    assert ("127.0.0.1:" + url.split("/")[2].rsplit(":", 1)[1]).encode() in f.read(), "no IP-named HDFS token"
n = sum(1 for _ in tfrecord.read_records(url))
import tensorflow as tf
import tfhadoop.tfhdfs
m = sum(1 for _ in tf.data.TFRecordDataset(url))
with tf.io.gfile.GFile(out, "w") as f:
    f.write(f"{n} {m}")
print(f"counted {n} {m}")
"""


def test_container_uses_delegation_tokens_for_hdfs_and_the_tf_plugin(secure_cluster, tmp_path):
    """A YARN container has no ticket: hdfs-native and the TF hdfs:// plugin (read and write)
    authenticate with the application's HDFS delegation tokens (HADOOP_TOKEN_FILE_LOCATION), which
    the secure cluster names by the NameNode's IP (use_ip=true, Hadoop's default)."""
    cluster, info = secure_cluster
    env = _env(cluster, info, tmp_path / "cc")
    env["SKEIN_DRIVER_JAVA_OPTIONS"] = f"-Djava.security.krb5.conf={info['krb5_conf']}"
    _kinit(env, info["principal"], info["keytab"])
    user = info["principal"].split("@")[0]
    data = info["fs_default"] + f"/user/{user}/tokens/part-0.tfrecord"
    out = info["fs_default"] + f"/user/{user}/tokens/out.txt"
    subprocess.run([sys.executable, "-c", "from tfhadoop.connectors import tfrecord as t; "
                    f"t.write_records({data!r}, [b'x'] * 7)"], env=env, check=True, timeout=120)
    (tmp_path / "check.py").write_text(CONTAINER_CHECK)
    submit = f"""
import skein, time
spec = skein.ApplicationSpec(name="tfhadoop-token-check", queue="default", master=skein.Master(
    resources=skein.Resources(memory=1024, vcores=1), env={{"HADOOP_CONF_DIR": "{cluster.conf_dir}", "HOME": "{os.environ['HOME']}", "PATH": "{os.environ['PATH']}"}},
    script="{sys.executable} {tmp_path / 'check.py'} {data} {out}"))
with skein.Client(log=False) as client:
    app = client.submit(spec)
    deadline = time.time() + 240
    while time.time() < deadline:
        report = client.application_report(app)
        if report.state in ("FINISHED", "FAILED", "KILLED"):
            break
        time.sleep(1)
    print(app, report.state, report.final_status, report.diagnostics)
"""
    proc = subprocess.run([sys.executable, "-c", submit], env=env, capture_output=True, text=True, timeout=300)
    assert "FINISHED SUCCEEDED" in proc.stdout, proc.stdout + proc.stderr[-3000:] + _container_logs(cluster)
    # No aggregated logs on the Kerberized embedded cluster (no libhadoop): `tfhadoop logs` reads
    # the NodeManagers' log dirs and says so.
    app_id = proc.stdout.split()[0]
    logs = subprocess.run([sys.executable, "-m", "tfhadoop", "logs", app_id], env=env, capture_output=True,
                          text=True, timeout=60)
    assert "counted 7 7" in logs.stdout and "NodeManagers' log dirs" in logs.stderr, logs.stdout + logs.stderr
    check = subprocess.run([sys.executable, "-m", "tfhadoop", "records", "count", data], env=env,
                           capture_output=True, text=True, timeout=60)
    assert check.stdout.split()[0] == "7"
    read = subprocess.run([sys.executable, "-c", "import hdfs_native, sys; c = hdfs_native.Client(); "
                           f"print(c.read({out.split(info['fs_default'])[1]!r}).read().decode())"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert read.stdout.strip() == "7 7", read.stdout + read.stderr[-2000:]


IP_TOKEN_CHECK = """
import sys
import hdfs_native
from tfhadoop.connectors import tfrecord
url, path = sys.argv[1], sys.argv[2]
try:
    hdfs_native.Client(url.split(path)[0]).get_file_info(path)
    print("raw-client-ok")
except Exception as exc:
    print("raw-client-failed", type(exc).__name__)
n = sum(1 for _ in tfrecord.read_records(url))
import tensorflow as tf
import tfhadoop.tfhdfs
m = sum(1 for _ in tf.data.TFRecordDataset(url))
print("counts", n, m)
"""


def test_ip_named_delegation_token_is_found_by_python_and_the_tf_plugin(secure_cluster, tmp_path):
    """Hadoop names tokens by the NameNode's IP by default (hadoop.security.token.service.use_ip=true,
    as on the secure cluster); a process holding only such a token and no ticket still reaches
    hdfs://localhost:port from Python and through the TF plugin (both dial the IP the token names),
    where hdfs-native on its own finds no token."""
    cluster, info = secure_cluster
    conf = cluster.conf_dir
    assert "<name>hadoop.security.token.service.use_ip</name><value>true</value>" in \
        (conf / "core-site.xml").read_text()
    launcher = (cluster.bin_dir / "hdfs").read_text()
    found = re.search(r"dfs\) exec '([^']*)' \$LOG -cp '[^:']*:([^']*)'", launcher)
    assert found, launcher
    java, tools = found.groups()
    env = _env(cluster, info, tmp_path / "cc")
    _kinit(env, info["principal"], info["keytab"])
    user = info["principal"].split("@")[0]
    url = info["fs_default"] + f"/user/{user}/ip-token/part-0.tfrecord"
    subprocess.run([sys.executable, "-c", "from tfhadoop.connectors import tfrecord as t; "
                    f"t.write_records({url!r}, [b'x'] * 5)"], env=env, check=True, timeout=120)
    tokens = tmp_path / "tokens"
    fetch = subprocess.run([java, f"-Djava.security.krb5.conf={info['krb5_conf']}", "-cp", f"{conf}:{tools}",
                            "org.apache.hadoop.hdfs.tools.DelegationTokenFetcher", "--renewer", "hadoop", str(tokens)],
                           env=env, capture_output=True, text=True, timeout=120)
    assert fetch.returncode == 0 and tokens.is_file(), fetch.stdout + fetch.stderr[-3000:]
    port = info["fs_default"].rsplit(":", 1)[1]
    assert f"127.0.0.1:{port}".encode() in tokens.read_bytes() and b"localhost" not in tokens.read_bytes()
    bare = _env(cluster, info, None)  # no ticket: the token is all this process has
    bare["HADOOP_TOKEN_FILE_LOCATION"] = str(tokens)
    proc = subprocess.run([sys.executable, "-c", IP_TOKEN_CHECK, url, _path(info, url)], env=bare,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "raw-client-failed" in proc.stdout, proc.stdout  # hdfs-native alone looks for localhost:port
    assert "counts 5 5" in proc.stdout, proc.stdout


# --- The product on the secure cluster: a Hive table exported by Spark, trained on YARN ---------

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


def _importing_tests(env: dict) -> dict:
    """``env`` for a child script that imports test helpers by package (``tests.trainer...``)."""
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))}


def _py(env, script, *args, timeout=300):
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


@pytest.fixture(scope="module")
def exported_dataset(secure_cluster, tmp_path_factory):
    """A Hive table on the secure warehouse (written with a kinit ticket), exported to TFRecords by
    `tfhadoop export --master yarn --principal/--keytab` with no ticket cache at all: Spark logs in
    from the keytab and its executors on the secure YARN read the table's files and write the shards
    with the delegation tokens Spark obtained (no credentials: test_no_ticket_each_command_...)."""
    cluster, info = secure_cluster
    mine = _env(cluster, info, tmp_path_factory.mktemp("cc") / "cc")
    _kinit(mine, info["principal"], info["keytab"])
    assert _py(_importing_tests(mine), HIVE_TABLE, timeout=400).split()[-1] == "3000"
    user = info["principal"].split("@")[0]
    url = info["fs_default"] + f"/user/{user}/datasets/points"
    env = _env(cluster, info, None)
    t0 = time.monotonic()
    proc, _ = _tfh(env, "export", "--master", "yarn", "--table", "secure_points", "--output", url, "--split", "train=0.8,eval=0.2",
                   "--label", "y", "--shards", "4", "--principal", info["principal"], "--keytab", info["keytab"],
                   timeout=400)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    print(f"secure export (Spark on YARN) in {time.monotonic() - t0:.1f} s")
    return url


def test_export_of_a_hive_table_with_a_keytab(secure_cluster, exported_dataset, tmp_path):
    cluster, info = secure_cluster
    env = _env(cluster, info, None)
    proc, _ = _tfh(env, "records", "count", exported_dataset, "--principal", info["principal"],
                   "--keytab", info["keytab"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[0] == "3000", proc.stdout
    manifest = json.loads(_hdfs_text(_with_ticket(cluster, info, tmp_path), info, f"{exported_dataset}/_tfhadoop.json"))
    assert set(manifest["splits"]) == {"train", "eval"}
    assert sum(s["records"] for s in manifest["splits"].values()) == 3000
    executors = [f for f in cluster.state_dir.glob("target/**/launch_container.sh")
                 if "YarnCoarseGrainedExecutorBackend" in f.read_text(errors="replace")]
    assert executors, "no Spark executor of the export ran in a YARN container"
    # The second user can read neither the table's files nor the dataset.
    proc, secs = _tfh(env, "records", "count", exported_dataset, "--principal", info["other_principal"],
                      "--keytab", info["other_keytab"])
    _one_line_error(proc, secs, "Permission denied: user=intruder")


def _path(info, url: str) -> str:
    return url[len(info["fs_default"]):]


def _with_ticket(cluster, info, folder: Path) -> dict:
    """A client shell of the test user with a ticket (its cache in ``folder``)."""
    env = _env(cluster, info, folder / "cc")
    _kinit(env, info["principal"], info["keytab"])
    return env


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


READ_TEXT = """
import sys, hdfs_native
try:
    sys.stdout.write(hdfs_native.Client().read(sys.argv[1]).read().decode())
except FileNotFoundError:
    if sys.argv[2] != "missing-ok":
        raise
"""


def _hdfs_text(env, info, url: str, missing_ok: bool = False) -> str:
    """The text of file ``url`` read as the user of ``env`` ("" for a missing file if ``missing_ok``)."""
    return _py(env, READ_TEXT, _path(info, url), "missing-ok" if missing_ok else "-")


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
    env = _env(cluster, info, None)
    mine = _with_ticket(cluster, info, tmp_path)
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
                              env={**_importing_tests(mine), "SKEIN_DRIVER_JAVA_OPTIONS": f"-Djava.security.krb5.conf={info['krb5_conf']}"},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert urgent.stdin and urgent.stdout and proc.stdout and proc.stderr  # PIPEs
        assert urgent.stdout.readline().strip() == "ready", urgent.communicate()[1][-3000:]
        app = next((line.split()[1] for line in proc.stdout if line.startswith("application ")), None)
        assert app, proc.stderr.read()[-3000:]
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            pid = _role_pid(app, "worker_0")
            events = _hdfs_text(mine, info, f"{run}/ckpt/events.jsonl", missing_ok=True) if pid else ""
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
            if '"container_lost"' in _hdfs_text(mine, info, f"{run}/ckpt/events.jsonl"):
                break
            time.sleep(2)
        assert urgent.poll() is None, urgent.communicate()[1][-3000:]
        assert proc.poll() is None, "the job ended before `urgent` took its worker"
        _, urgent_err = urgent.communicate("\n", timeout=120)  # `urgent` ends: the replacement gets its resources
        assert urgent.returncode == 0, urgent_err[-3000:]
        at_up, deadline = None, time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            state = json.loads(_hdfs_text(mine, info, f"{run}/ckpt/latest/state.json", missing_ok=True) or "{}")
            if at_up is None and '"replacement_up"' in _hdfs_text(mine, info, f"{run}/ckpt/events.jsonl"):
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
    assert proc.returncode == 0, (out + err)[-4000:] + _container_logs(cluster)[-6000:]
    assert "training SUCCEEDED" in out, (out + err)[-3000:]
    events = [json.loads(line) for line in _hdfs_text(mine, info, f"{run}/ckpt/events.jsonl").splitlines()]
    assert events[-1]["event"] == "finished" and events[-1]["status"] == "SUCCEEDED", events[-1]
    lost = [e for e in events if e["event"] == "container_lost"]
    assert [(e["role"], e["preempted"]) for e in lost] == [("worker", True)], lost
    assert lost[0]["diagnostics"] == "Container preempted by scheduler", lost
    # The replacement started after the tokens' first renewal interval had passed, and trained.
    up_again = [e for e in events if e["event"] == "replacement_up"]
    assert up_again and up_again[0]["time"] > events[0]["time"] + renew, (up_again, events[0])
    train = json.loads(_hdfs_text(mine, info, f"{exported_dataset}/_tfhadoop.json"))["splits"]["train"]["records"]
    metrics = json.loads(_hdfs_text(mine, info, f"{run}/ckpt/metrics.json"))
    assert [e["examples"] for e in metrics["epochs"]] == [train] * len(metrics["epochs"])  # exactly once per epoch
    assert metrics["stopped"]["after_epoch"] == len(metrics["epochs"]) - 1 >= at_up + 1, metrics["stopped"]
    print(f"secure train in {secs:.1f} s; `urgent` submitted {t_urgent - events[0]['time']:.0f} s after cluster_up, "
          f"worker preempted {lost[0]['time'] - t_urgent:.1f} s later, replacement up "
          f"{up_again[0]['time'] - lost[0]['time']:.1f} s after that; tokens renew every {renew} s")
    listing = _py(mine, "import hdfs_native; c = hdfs_native.Client(); "
                        f"print('\\n'.join(s.path for s in c.list_status({_path(info, run)!r} + '/ckpt', True)))"
                        "; print('\\n'.join(s.path for s in c.list_status("
                        f"{_path(info, run)!r} + '/model', True)))")
    assert "saved_model.pb" in listing and "metrics.json" in listing, listing
    assert any("ckpt" in line and ".index" in line for line in listing.splitlines()), listing
    mse, constant = map(float, _py(_importing_tests(mine), LOAD_AND_PREDICT.format(url=f"{run}/model",
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
    """`tfhadoop demo --secure` on this module's secure cluster (its state dir, so no second
    cluster and it stays up): keytab login, a Skein app whose log is read from the NodeManager's
    local log dir (no aggregation without libhadoop), Hive table -> export -> train -> SavedModel."""
    cluster, info = secure_cluster
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KRB5", "HADOOP_")) and k not in ("TFHADOOP_STATE_DIR", "TFHADOOP_METASTORE_DIR")}
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", "demo", "--secure", "--state-dir", str(cluster.state_dir),
                           "--rows", "2000", "--workers", "1"], env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:] + _container_logs(cluster)[-3000:]
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
    env = _env(cluster, info, None)
    env.update(PYSPARK_PYTHON=sys.executable, PATH=str(Path(sys.executable).parent) + os.pathsep + env["PATH"])
    csv = tmp_path / "in.csv"
    csv.write_text("id,score\n" + "".join(f"{i},{i / 7}\n" for i in range(600)))
    user = info["principal"].split("@")[0]
    out = info["fs_default"] + f"/user/{user}/datasets/submitted"
    krb = f"-Djava.security.krb5.conf={info['krb5_conf']}"
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    job = Path(__file__).resolve().parents[2] / "spark" / "python" / "tfhadoop" / "spark" / "export.py"
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
    counted, _ = _tfh(env, "records", "count", out, "--principal", info["principal"], "--keytab", info["keytab"])
    assert counted.stdout.split()[0] == "600", counted.stdout + counted.stderr[-2000:]
    executors = [f for f in cluster.state_dir.glob("target/**/launch_container.sh")
                 if f.stat().st_mtime >= started and "YarnCoarseGrainedExecutorBackend" in f.read_text(errors="replace")]
    assert executors, "no executor of the spark-submit job ran in a YARN container"
