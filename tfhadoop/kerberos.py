"""Kerberos on the client: is the cluster secured, is there a usable ticket, log in from a keytab.

A command against a Kerberized cluster (``hadoop.security.authentication=kerberos`` in the
client configuration) checks for a ticket before it opens a connection, so that a missing or
expired ticket is one line naming the cluster and the principal, within a second, instead of a
Java stack trace or a client retrying for minutes. The checks use MIT's ``klist``/``kinit``, the
tools a Kerberos client machine has; where they are missing the check is skipped and the
connection's own failure is mapped (:func:`explain`).
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping

from tfhadoop.errors import ClusterError

HINT = "run kinit or pass --principal/--keytab"
_PRINCIPAL_ENV, _KEYTAB_ENV = "TFHADOOP_KRB_PRINCIPAL", "TFHADOOP_KRB_KEYTAB"
# What Kerberos failures look like in hdfs-native's (libgssapi) and Hadoop's (JDK) messages.
_KRB_FAILURE = re.compile(
    r"No Kerberos credentials|GSS(API)?[ _-]?(exception|error|failure)|Failed to find any Kerberos tgt|"
    r"Ticket expired|credentials? (has|have) expired|KrbException|Client not found in Kerberos database|"
    r"SIMPLE authentication is not enabled|No valid credentials provided", re.I)


class KerberosError(ClusterError):
    """No ticket, an expired one, or a keytab that does not log in."""


def security_enabled(conf=None) -> bool:
    """True when the client configuration says the cluster uses Kerberos."""
    if conf is None:
        try:
            from tfhadoop import hadoop

            conf = hadoop.load_conf()
        except Exception:  # noqa: BLE001 - no configuration at all: nothing to authenticate against
            return False
    return (conf.get("hadoop.security.authentication") or "simple").strip().lower() == "kerberos"


def _tool(name: str) -> str | None:
    return shutil.which(name)


def ticket_principal() -> tuple[str | None, bool]:
    """(default principal of the ticket cache or None, whether it holds a valid, unexpired TGT)."""
    klist = _tool("klist")
    if klist is None:
        return None, True  # cannot tell: let the connection decide, and explain() its failure
    out = subprocess.run([klist], capture_output=True, text=True, timeout=10)
    m = re.search(r"Default principal:\s*(\S+)", out.stdout)
    principal = m.group(1) if m else None
    if principal is None:
        return None, False
    valid = subprocess.run([klist, "-s"], capture_output=True, timeout=10).returncode == 0
    return principal, valid


def require_ticket(target: str) -> str | None:
    """Raise :class:`KerberosError` unless the ticket cache holds a valid ticket; ``target`` is what
    the command was about to reach (``hdfs://host:port``, ``YARN at host:port``). Returns the
    principal (None when it cannot be told)."""
    principal, valid = ticket_principal()
    if principal is None and not valid:
        raise KerberosError(f"no Kerberos ticket for {target}: {HINT}")
    if not valid:
        raise KerberosError(f"the Kerberos ticket of {principal} has expired (for {target}): "
                            f"run kinit {principal} or pass --principal/--keytab")
    return principal


def login_from_keytab(principal: str, keytab: str) -> str:
    """kinit ``principal`` from ``keytab`` into a ticket cache private to this process (removed at
    exit) and point KRB5CCNAME at it, so hdfs-native, Skein's driver and Spark use that login."""
    if not os.path.isfile(keytab):
        raise KerberosError(f"keytab {keytab} (for {principal}) does not exist")
    kinit = _tool("kinit")
    if kinit is None:
        raise KerberosError("--keytab needs MIT Kerberos' kinit on this machine (Debian: apt-get install krb5-user)")
    fd, cache = tempfile.mkstemp(prefix="tfhadoop-krb5cc-")
    os.close(fd)
    atexit.register(lambda: os.path.exists(cache) and os.unlink(cache))
    res = subprocess.run([kinit, "-k", "-t", keytab, "-c", f"FILE:{cache}", principal],
                         capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        reason = (res.stderr or res.stdout).strip().splitlines()
        reason = reason[-1] if reason else f"kinit exited {res.returncode}"
        reason = re.sub(r"^kinit:\s*", "", reason)
        raise KerberosError(f"cannot log in as {principal} with keytab {keytab}: {reason}")
    os.environ["KRB5CCNAME"] = f"FILE:{cache}"
    os.environ[_PRINCIPAL_ENV], os.environ[_KEYTAB_ENV] = principal, os.path.abspath(keytab)
    return cache


def keytab_login() -> tuple[str | None, str | None]:
    """(principal, keytab) of this command's --principal/--keytab login, for clients that log in
    by themselves from a keytab (Spark: spark.kerberos.principal/keytab)."""
    return os.environ.get(_PRINCIPAL_ENV), os.environ.get(_KEYTAB_ENV)


def explain(exc: BaseException | str, target: str) -> KerberosError | None:
    """A :class:`KerberosError` for a connection failure that is a Kerberos one, else None."""
    text = str(exc)
    if not _KRB_FAILURE.search(text):
        return None
    principal, valid = ticket_principal()
    if principal and valid:
        return KerberosError(f"Kerberos authentication of {principal} to {target} failed: "
                             f"{text.strip().splitlines()[0][:200]}")
    if principal:
        return KerberosError(f"the Kerberos ticket of {principal} has expired (for {target}): "
                             f"run kinit {principal} or pass --principal/--keytab")
    return KerberosError(f"no Kerberos ticket for {target}: {HINT}")


def java_options(env: Mapping[str, str] | None = None) -> list[str]:
    """JVM flags that make a Java client read the same krb5.conf as MIT tools ($KRB5_CONFIG):
    the JDK ignores that variable."""
    conf = (os.environ if env is None else env).get("KRB5_CONFIG")
    return [f"-Djava.security.krb5.conf={conf}"] if conf else []


def prepare_skein_env() -> None:
    """Skein's driver is a JVM: hand it KRB5_CONFIG's file through SKEIN_DRIVER_JAVA_OPTIONS."""
    opts = java_options()
    current = os.environ.get("SKEIN_DRIVER_JAVA_OPTIONS", "")
    if opts and "java.security.krb5.conf" not in current:
        os.environ["SKEIN_DRIVER_JAVA_OPTIONS"] = " ".join([current, *opts]).strip()
