"""The secure cluster of this package's tests: KDC + Kerberos HDFS and YARN in a state dir of its
own, started once for the package (scope="package": its modules share it, and it stops after the
last of them, so the rest of the session does not keep it up)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.yarn.secure.helpers import ROOT
from tfhadoop.yarn.embedded import ClusterOptions, EmbeddedCluster


@pytest.fixture(scope="package")
def secure_cluster():
    """A secure cluster in a fresh state dir (start-up time printed), stopped after the package."""
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
