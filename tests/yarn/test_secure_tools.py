"""`cluster up --secure` installs or checks MIT Kerberos' client tools first (as `make
demo-secure` does, through tools/ensure-krb5), so the README's two lines work as written:
`cluster up --secure`, then `eval "$(tfhadoop cluster env --secure)"`, whose kinit line is a
command, not a comment. No KDC or JVM here: the installer is a stand-in."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tfhadoop.cli import main
from tfhadoop.yarn import secure
from tfhadoop.yarn.embedded import EmbeddedCluster

INFO = {"krb5_conf": "/s/krb5.conf", "keytab": "/s/keytabs/me.keytab", "principal": "me@TFHADOOP.TEST"}


def _installer(folder: Path, script: str) -> Path:
    path = folder / "ensure-krb5"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


@pytest.fixture()
def no_kinit(monkeypatch):
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))  # python, no kinit
    assert secure.shutil.which("kinit") is None


def test_env_runs_kinit_even_where_it_is_missing(no_kinit, tmp_path):
    lines = secure.env_lines(tmp_path, INFO)
    assert f"kinit -k -t {INFO['keytab']} {INFO['principal']}" in lines, lines
    assert not any(line.startswith("#") for line in lines), lines


def test_up_secure_installs_kinit_first(no_kinit, tmp_path, monkeypatch):
    tools = tmp_path / "krb5-bin"
    tools.mkdir()
    installer = _installer(tmp_path, f"for t in kinit klist; do printf '#!/bin/sh\\n' > {tools}/$t; "
                                     f"/bin/chmod +x {tools}/$t; done\necho {tools}\n")
    monkeypatch.setattr(secure, "INSTALLER", installer)
    assert secure.ensure_kerberos_tools() == str(tools)
    assert secure.shutil.which("kinit") == str(tools / "kinit")  # on this process's PATH from now on


def test_up_secure_without_kinit_and_no_way_to_install_it_is_one_line(no_kinit, tmp_path, monkeypatch, capsys):
    installer = _installer(tmp_path, "echo 'E: Unable to locate package krb5-user' >&2; exit 100\n")
    monkeypatch.setattr(secure, "INSTALLER", installer)
    state = tmp_path / "state"
    try:
        assert main(["cluster", "up", "--secure", "--state-dir", str(state)]) == 1
    finally:
        EmbeddedCluster(state).down()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "kinit" in err[0] and "krb5-user" in err[0] and "Unable to locate package krb5-user" in err[0], err
    assert not (state / "cluster.pid").exists()  # checked before the cluster JVM starts
