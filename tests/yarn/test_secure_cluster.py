"""The Kerberized embedded cluster (`tfhadoop cluster up --secure`): a cluster of its own, started
once for this module (KDC + Kerberos HDFS and YARN), and what users see with and without a
ticket: one line naming the cluster or the principal, within seconds."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

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
        info = cluster.up(ClusterOptions(node_managers=1, secure=True, token_renew_seconds=60))
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
    assert seconds < 15, seconds


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
    for argv in (["jobs"], ["status", "application_1_0001"],
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


CONTAINER_CHECK = """
import os, sys
from tfhadoop.connectors import tfrecord
url, out = sys.argv[1], sys.argv[2]
assert os.environ.get("HADOOP_TOKEN_FILE_LOCATION"), "no delegation tokens in the container"
n = sum(1 for _ in tfrecord.read_records(url))
import tensorflow as tf
import tfhadoop.tfhdfs
m = sum(1 for _ in tf.data.TFRecordDataset(url))
with tf.io.gfile.GFile(out, "w") as f:
    f.write(f"{n} {m}")
"""


def test_container_uses_delegation_tokens_for_hdfs_and_the_tf_plugin(secure_cluster, tmp_path):
    """A YARN container has no ticket: hdfs-native and the TF hdfs:// plugin (read and write)
    authenticate with the application's HDFS delegation tokens (HADOOP_TOKEN_FILE_LOCATION)."""
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
    print(report.state, report.final_status, report.diagnostics)
"""
    proc = subprocess.run([sys.executable, "-c", submit], env=env, capture_output=True, text=True, timeout=300)
    assert "FINISHED SUCCEEDED" in proc.stdout, proc.stdout + proc.stderr[-3000:] + _container_logs(cluster)
    check = subprocess.run([sys.executable, "-m", "tfhadoop", "records", "count", data], env=env,
                           capture_output=True, text=True, timeout=60)
    assert check.stdout.split()[0] == "7"
    read = subprocess.run([sys.executable, "-c", "import hdfs_native, sys; c = hdfs_native.Client(); "
                           f"print(c.read({out.split(info['fs_default'])[1]!r}).read().decode())"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert read.stdout.strip() == "7 7", read.stdout + read.stderr[-2000:]
