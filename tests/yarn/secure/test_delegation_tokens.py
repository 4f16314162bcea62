"""Delegation tokens on the secure cluster: a YARN container has no ticket, and hdfs-native and
the TF hdfs:// plugin authenticate with the application's HDFS tokens, which Hadoop names by the
NameNode's IP."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.yarn.secure.helpers import client_env, container_logs, hdfs_path, kinit

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


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
    env = client_env(cluster, info, tmp_path / "cc")
    env["SKEIN_DRIVER_JAVA_OPTIONS"] = f"-Djava.security.krb5.conf={info['krb5_conf']}"
    kinit(env, info["principal"], info["keytab"])
    user = info["principal"].split("@")[0]
    data = info["fs_default"] + f"/user/{user}/tokens/part-0.tfrecord"
    out = info["fs_default"] + f"/user/{user}/tokens/out.txt"
    subprocess.run([sys.executable, "-c", "from tfhadoop.connectors import tfrecord_writer as t; "
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
    assert "FINISHED SUCCEEDED" in proc.stdout, proc.stdout + proc.stderr[-3000:] + container_logs(cluster)
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
    env = client_env(cluster, info, tmp_path / "cc")
    kinit(env, info["principal"], info["keytab"])
    user = info["principal"].split("@")[0]
    url = info["fs_default"] + f"/user/{user}/ip-token/part-0.tfrecord"
    subprocess.run([sys.executable, "-c", "from tfhadoop.connectors import tfrecord_writer as t; "
                    f"t.write_records({url!r}, [b'x'] * 5)"], env=env, check=True, timeout=120)
    tokens = tmp_path / "tokens"
    fetch = subprocess.run([java, f"-Djava.security.krb5.conf={info['krb5_conf']}", "-cp", f"{conf}:{tools}",
                            "org.apache.hadoop.hdfs.tools.DelegationTokenFetcher", "--renewer", "hadoop", str(tokens)],
                           env=env, capture_output=True, text=True, timeout=120)
    assert fetch.returncode == 0 and tokens.is_file(), fetch.stdout + fetch.stderr[-3000:]
    port = info["fs_default"].rsplit(":", 1)[1]
    assert f"127.0.0.1:{port}".encode() in tokens.read_bytes() and b"localhost" not in tokens.read_bytes()
    bare = client_env(cluster, info, None)  # no ticket: the token is all this process has
    bare["HADOOP_TOKEN_FILE_LOCATION"] = str(tokens)
    proc = subprocess.run([sys.executable, "-c", IP_TOKEN_CHECK, url, hdfs_path(info, url)], env=bare,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "raw-client-failed" in proc.stdout, proc.stdout  # hdfs-native alone looks for localhost:port
    assert "counts 5 5" in proc.stdout, proc.stdout
