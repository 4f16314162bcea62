"""tfhadoop.kerberos without a KDC: the ticket check and the error mapping, driven by stand-in
klist/kinit scripts on PATH (the secure cluster tests run the real ones)."""
from __future__ import annotations

import pytest

from tfhadoop import kerberos
from tfhadoop.cli import main

NO_CACHE = "klist: No credentials cache found (filename: /tmp/krb5cc_0)"
VALID = "Ticket cache: FILE:/tmp/cc\nDefault principal: alice@EX.COM\n\nValid starting ...\n"


@pytest.fixture
def fake_klist(tmp_path, monkeypatch):
    """Install a klist that prints ``out`` and whose -s exits ``valid_rc``."""
    def install(out: str, rc: int = 0, valid_rc: int = 0):
        script = tmp_path / "klist"
        script.write_text(f"#!/bin/sh\nif [ \"$1\" = -s ]; then exit {valid_rc}; fi\necho '{out}'\nexit {rc}\n")
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{tmp_path}")
    return install


def test_no_ticket_cache_is_one_line_naming_the_target(fake_klist):
    fake_klist(NO_CACHE, rc=1, valid_rc=1)
    with pytest.raises(kerberos.KerberosError) as exc:
        kerberos.require_ticket("hdfs://nn:8020")
    assert str(exc.value) == "no Kerberos ticket for hdfs://nn:8020: run kinit or pass --principal/--keytab"


def test_expired_ticket_names_the_principal(fake_klist):
    fake_klist(VALID, valid_rc=1)
    with pytest.raises(kerberos.KerberosError, match=r"the Kerberos ticket of alice@EX.COM has expired \(for YARN at rm:8032\): run kinit alice@EX.COM"):
        kerberos.require_ticket("YARN at rm:8032")


def test_valid_ticket_passes_and_without_klist_the_check_is_skipped(fake_klist, monkeypatch, tmp_path):
    fake_klist(VALID)
    assert kerberos.require_ticket("hdfs://nn:8020") == "alice@EX.COM"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert kerberos.require_ticket("hdfs://nn:8020") is None


def test_connection_failures_are_explained_only_when_they_are_kerberos_ones(fake_klist):
    fake_klist(NO_CACHE, rc=1, valid_rc=1)
    gss = ('GSSAPIError(..., "No credentials were supplied, or the credentials were unavailable or '
           'inaccessible: No Kerberos credentials available (default cache: FILE:/tmp/cc)")')
    err = kerberos.explain(RuntimeError(gss), "hdfs://nn:8020")
    assert str(err) == "no Kerberos ticket for hdfs://nn:8020: run kinit or pass --principal/--keytab"
    assert kerberos.explain(ConnectionRefusedError("Connection refused"), "hdfs://nn:8020") is None


def test_security_enabled_reads_the_client_conf():
    class Conf(dict):
        def get(self, key, default=None):
            return super().get(key, default)

    assert kerberos.security_enabled(Conf({"hadoop.security.authentication": "Kerberos"}))
    assert not kerberos.security_enabled(Conf({"hadoop.security.authentication": "simple"}))
    assert not kerberos.security_enabled(Conf())


def test_java_options_follow_krb5_config():
    assert kerberos.java_options({"KRB5_CONFIG": "/etc/x.conf"}) == ["-Djava.security.krb5.conf=/etc/x.conf"]
    assert kerberos.java_options({}) == []


def test_principal_without_keytab_is_a_usage_error(capsys):
    assert main(["jobs", "--principal", "alice@EX.COM"]) == 1
    assert "--principal and --keytab go together" in capsys.readouterr().err
