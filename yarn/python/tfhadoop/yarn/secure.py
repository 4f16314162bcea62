"""The Kerberized variant of the embedded cluster (`tfhadoop cluster up --secure`).

The JVM side (SecureSetup.java) starts a KDC and turns on Kerberos, block access tokens and SASL
data transfer protection; it writes ``krb5.conf`` and ``keytabs/`` into the state dir and the
principals into ``cluster.json``. This module holds the Python side: its own state dir (the secure
cluster runs beside the ordinary one), the launcher's flags, and the client exports.
"""
from __future__ import annotations

import getpass
import os
import shutil
import subprocess
from pathlib import Path

from tfhadoop.errors import CommandError
from tfhadoop.hadoop import default_state_dir, project_root

TOKEN_RENEW_SECONDS = 120  # delegation tokens must be renewed this often: renewal is exercised in minutes
# Installs MIT Kerberos' client tools where they are missing (Debian's krb5-user), as `make
# demo-secure` and the secure tests do; prints the directory that holds kinit.
INSTALLER = project_root() / "tools" / "ensure-krb5"


def secure_state_dir() -> Path:
    """Next to the ordinary cluster's state dir: ~/.tfhadoop/cluster-secure by default."""
    base = default_state_dir()
    return base.with_name(base.name + "-secure")


def jvm_args(token_renew_seconds: int) -> list[str]:
    return ["--secure", "true", "--user", getpass.getuser(), "--token-renew-seconds", str(token_renew_seconds)]


def ticket_cache(state_dir: Path) -> Path:
    return state_dir / "krb5cc"


def ensure_kerberos_tools() -> str:
    """The directory of ``kinit`` (and ``klist``), installed first where they are missing: the
    secure cluster's clients log in with them (`cluster env --secure`'s kinit line, the tfhadoop
    commands' ticket checks). Put on this process's PATH. A one-line CommandError when neither
    there nor installable."""
    found = shutil.which("kinit")
    if found and shutil.which("klist"):
        return os.path.dirname(found)
    hint = "install MIT Kerberos' client tools (Debian/Ubuntu: apt-get install krb5-user; RHEL: krb5-workstation)"
    if not INSTALLER.exists():  # an installed tfhadoop without its source tree's tools/
        raise CommandError(f"the secure cluster needs kinit and klist, which are not on PATH: {hint}")
    proc = subprocess.run([str(INSTALLER)], capture_output=True, text=True)
    folder = proc.stdout.strip().splitlines()[-1:] if proc.returncode == 0 else []
    if not folder or shutil.which("kinit", path=folder[0]) is None:
        said = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise CommandError(f"the secure cluster needs kinit and klist, and {INSTALLER} could not install them "
                           f"({said}): {hint}")
    if folder[0] not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = folder[0] + os.pathsep + os.environ.get("PATH", "")
    return folder[0]


def env_lines(state_dir: Path, info: dict) -> list[str]:
    """KRB5_CONFIG, a ticket cache of the state dir, the JVM flag for Java clients, and the kinit
    of the test user, run by `eval "$(tfhadoop cluster env --secure)"` (`cluster up --secure`
    made sure kinit is there)."""
    krb5 = info["krb5_conf"]
    return [f"export KRB5_CONFIG={krb5}", f"export KRB5CCNAME=FILE:{ticket_cache(state_dir)}",
            f"export SKEIN_DRIVER_JAVA_OPTIONS=-Djava.security.krb5.conf={krb5}",
            f"kinit -k -t {info['keytab']} {info['principal']}"]


def describe(info: dict) -> list[str]:
    """What `cluster up --secure` prints about the realm and the users."""
    return [f"  Kerberos:      realm {info['realm']}, KDC config {info['krb5_conf']}",
            f"  test user:     {info['principal']}  keytab {info['keytab']}",
            f"  second user:   {info['other_principal']}  keytab {info['other_keytab']}",
            f"  delegation tokens renew every {info['token_renew_seconds']} s"]
