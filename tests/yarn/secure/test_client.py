"""What a user of the secure cluster sees from its client side: the Kerberos client setup that
`cluster up --secure` writes, HDFS over Kerberos and SASL with a ticket or a keytab, home dirs
private to their user, TensorBoard with a ticket, and without a valid ticket or keytab one line
naming the cluster or the principal, within seconds."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import tensorboard_http
from tests.yarn.secure.helpers import client_env, kinit, one_line_error, run_py, tfh

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


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
    env = client_env(cluster, info, tmp_path / "cc")
    kinit(env, info["principal"], info["keytab"])
    url = info["fs_default"] + f"/user/{info['principal'].split('@')[0]}/records/part-0.tfrecord"
    script = ("from tfhadoop.connectors import tfrecord_writer as t; "
              f"t.write_records({url!r}, [b'a' * 100, b'b' * 200, b'c'])")
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    proc, _ = tfh(env, "records", "count", url)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[0] == "3", proc.stdout


def test_no_ticket_each_command_fails_in_one_line(secure_cluster):
    cluster, info = secure_cluster
    env = client_env(cluster, info, None)
    fs = info["fs_default"]
    proc, secs = tfh(env, "records", "count", f"{fs}/user/anything.tfrecord")
    one_line_error(proc, secs, f"no Kerberos ticket for {fs}: run kinit or pass --principal/--keytab")
    proc, secs = tfh(env, "export", "--table", "t", "--output", f"{fs}/user/out")
    one_line_error(proc, secs, f"no Kerberos ticket for {fs}: run kinit or pass --principal/--keytab")
    for argv in (["jobs"], ["status", "application_1_0001"],
                 ["export", "--master", "yarn", "--table", "t", "--output", f"{fs}/user/out"],
                 ["train", "--model", "m:f", "--data", f"{fs}/user/x", "--label", "y",
                  "--checkpoint-dir", f"{fs}/user/ck"]):
        proc, secs = tfh(env, *argv)
        one_line_error(proc, secs, "no Kerberos ticket for YARN at ", "run kinit or pass --principal/--keytab")


def test_stale_keytab_names_the_principal(secure_cluster):
    cluster, info = secure_cluster
    env = client_env(cluster, info, None)
    stale = info["keytab"].replace(".keytab", ".stale.keytab")
    for argv in (["records", "count", info["fs_default"] + "/user/x"], ["jobs"]):
        proc, secs = tfh(env, *argv, "--principal", info["principal"], "--keytab", stale)
        one_line_error(proc, secs, f"cannot log in as {info['principal']} with keytab {stale}: ")
    proc, secs = tfh(env, "jobs", "--principal", info["principal"], "--keytab", "/nonexistent.keytab")
    one_line_error(proc, secs, f"keytab /nonexistent.keytab (for {info['principal']}) does not exist")


def test_expired_ticket_names_the_principal(secure_cluster, tmp_path):
    cluster, info = secure_cluster
    env = client_env(cluster, info, tmp_path / "cc")
    kinit(env, info["principal"], info["keytab"], "-l", "5s")
    time.sleep(6)
    proc, secs = tfh(env, "records", "count", info["fs_default"] + "/user/x")
    one_line_error(proc, secs, f"the Kerberos ticket of {info['principal']} has expired",
                    f"run kinit {info['principal']}")


def test_keytab_login_and_a_second_user_cannot_read_the_first_users_files(secure_cluster, tmp_path):
    """--principal/--keytab without any ticket cache; home dirs are private to their user."""
    cluster, info = secure_cluster
    env = client_env(cluster, info, None)
    user = info["principal"].split("@")[0]
    url = info["fs_default"] + f"/user/{user}/private.tfrecord"
    mine = client_env(cluster, info, tmp_path / "cc")
    kinit(mine, info["principal"], info["keytab"])
    subprocess.run([sys.executable, "-c", "from tfhadoop.connectors import tfrecord_writer as t; "
                    f"t.write_records({url!r}, [b'secret'])"], env=mine, check=True, timeout=120)
    proc, _ = tfh(env, "records", "count", url, "--principal", info["principal"], "--keytab", info["keytab"])
    assert proc.returncode == 0 and proc.stdout.split()[0] == "1", proc.stderr[-2000:]
    proc, secs = tfh(env, "records", "count", url, "--principal", info["other_principal"],
                      "--keytab", info["other_keytab"])
    one_line_error(proc, secs, "Permission denied: user=intruder", f'inode="/user/{user}"')


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
    env = client_env(cluster, info, tmp_path / "cc")
    kinit(env, info["principal"], info["keytab"])
    logdir = f"hdfs:///user/{info['principal'].split('@')[0]}/job/tensorboard"
    run_py(env, WRITE_SCALARS, logdir)
    proc, secs = tfh(client_env(cluster, info, None), "tensorboard", "--logdir", logdir, "--port", "0")
    one_line_error(proc, secs, f"no Kerberos ticket for {info['fs_default']}")
    with tensorboard_http.serve("--logdir", logdir, "--port", "0", env=env) as url:
        tensorboard_http.wait_loaded(url, {"train": {"loss"}})
        assert tensorboard_http.scalars(url, "train", "loss") == [(3, 0.5)]
