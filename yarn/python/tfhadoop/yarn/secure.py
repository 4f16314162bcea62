"""The Kerberized variant of the embedded cluster (`tfhadoop cluster up --secure`).

The JVM side (SecureSetup.java) starts a KDC and turns on Kerberos, block access tokens and SASL
data transfer protection; it writes ``krb5.conf`` and ``keytabs/`` into the state dir and the
principals into ``cluster.json``. This module holds the Python side: its own state dir (the secure
cluster runs beside the ordinary one), the launcher's flags, and the client exports.
"""
from __future__ import annotations

import getpass
import shutil
from pathlib import Path

from tfhadoop.hadoop import default_state_dir

TOKEN_RENEW_SECONDS = 120  # delegation tokens must be renewed this often: renewal is exercised in minutes


def secure_state_dir() -> Path:
    """Next to the ordinary cluster's state dir: ~/.tfhadoop/cluster-secure by default."""
    base = default_state_dir()
    return base.with_name(base.name + "-secure")


def jvm_args(token_renew_seconds: int) -> list[str]:
    return ["--secure", "true", "--user", getpass.getuser(), "--token-renew-seconds", str(token_renew_seconds)]


def ticket_cache(state_dir: Path) -> Path:
    return state_dir / "krb5cc"


def env_lines(state_dir: Path, info: dict) -> list[str]:
    """KRB5_CONFIG, a ticket cache of the state dir, the JVM flag for Java clients, and the kinit
    of the test user (run by `eval "$(tfhadoop cluster env --secure)"` where kinit exists)."""
    krb5 = info["krb5_conf"]
    lines = [f"export KRB5_CONFIG={krb5}", f"export KRB5CCNAME=FILE:{ticket_cache(state_dir)}",
             f"export SKEIN_DRIVER_JAVA_OPTIONS=-Djava.security.krb5.conf={krb5}"]
    kinit = f"kinit -k -t {info['keytab']} {info['principal']}"
    lines.append(kinit if shutil.which("kinit") else f"# then: {kinit}  (kinit: Debian package krb5-user)")
    return lines


def describe(info: dict) -> list[str]:
    """What `cluster up --secure` prints about the realm and the users."""
    return [f"  Kerberos:      realm {info['realm']}, KDC config {info['krb5_conf']}",
            f"  test user:     {info['principal']}  keytab {info['keytab']}",
            f"  second user:   {info['other_principal']}  keytab {info['other_keytab']}",
            f"  delegation tokens renew every {info['token_renew_seconds']} s"]
