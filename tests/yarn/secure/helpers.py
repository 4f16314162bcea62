"""What the secure cluster's tests do as a user: a client shell with or without a ticket, kinit,
`tfhadoop` and Python child processes, HDFS reads as that user, and the one-line error check."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def client_env(cluster, info, cache: Path | None) -> dict:
    """A client shell of the secure cluster, as `tfhadoop cluster env --secure` sets it up, with
    its own ticket cache (empty unless a test kinits into it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KRB5", "HADOOP_TOKEN"))}
    env.update(HADOOP_CONF_DIR=str(cluster.conf_dir), KRB5_CONFIG=info["krb5_conf"],
               KRB5CCNAME=f"FILE:{cache or '/nonexistent/krb5cc'}", TFHADOOP_STATE_DIR=str(cluster.state_dir),
               PATH=f"{cluster.bin_dir}:{env['PATH']}", TFHADOOP_HDFS_CLIENT="native")
    return env


def kinit(env, principal, keytab, *extra) -> None:
    subprocess.run(["kinit", *extra, "-k", "-t", keytab, principal], env=env, check=True,
                   capture_output=True, timeout=30)


def tfh(env, *argv, timeout=60):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", *argv], env=env, capture_output=True,
                          text=True, timeout=timeout)
    return proc, time.monotonic() - t0


def container_logs(cluster) -> str:
    """The containers' stderr/stdout in the NodeManagers' log dirs: why a container failed."""
    out = []
    for f in sorted(p for p in cluster.state_dir.glob("target/**/container_*/*") if p.is_file()):
        out.append(f"--- {f.parent.name}/{f.name}\n" + f.read_text(errors="replace")[-3000:])
    return "\n".join(out)


def one_line_error(proc, seconds, *needles):
    """``proc`` failed within seconds, with one line on stderr holding every needle."""
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert seconds < 90, seconds  # no retry loop (their defaults take minutes); margin for a slow host


def importing_tests(env: dict) -> dict:
    """``env`` for a child script that imports test helpers by package (``tests.trainer...``)."""
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))}


def run_py(env, script, *args, timeout=300):
    """The stdout of Python ``script`` run with ``args`` in ``env``; fails the test if it fails."""
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


def hdfs_path(info, url: str) -> str:
    """``url``'s path on the secure cluster's HDFS."""
    return url[len(info["fs_default"]):]


def with_ticket(cluster, info, folder: Path) -> dict:
    """A client shell of the test user with a ticket (its cache in ``folder``)."""
    env = client_env(cluster, info, folder / "cc")
    kinit(env, info["principal"], info["keytab"])
    return env


READ_TEXT = """
import sys, hdfs_native
try:
    sys.stdout.write(hdfs_native.Client().read(sys.argv[1]).read().decode())
except FileNotFoundError:
    if sys.argv[2] != "missing-ok":
        raise
"""


def hdfs_text(env, info, url: str, missing_ok: bool = False) -> str:
    """The text of file ``url`` read as the user of ``env`` ("" for a missing file if ``missing_ok``)."""
    return run_py(env, READ_TEXT, hdfs_path(info, url), "missing-ok" if missing_ok else "-")
