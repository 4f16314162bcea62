"""What `make setup` leaves in the venv, and tools/cpu-by-process's grouping of processes."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_setup_compiled_the_venv_and_the_project():
    """tools/bootstrap-python writes the .pyc files uv does not: without them, on a host with
    PYTHONDONTWRITEBYTECODE, every process compiles TensorFlow's Python source again."""
    import tensorflow

    import tfhadoop.trainer.role

    for module in (tensorflow, tfhadoop.trainer.role):
        assert module.__file__ is not None
        cached = importlib.util.cache_from_source(module.__file__)
        assert os.path.exists(cached), f"{module.__name__}: no {cached}: run make setup"


def _cpu_by_process():
    loader = importlib.machinery.SourceFileLoader("cpu_by_process", str(ROOT / "tools" / "cpu-by-process"))
    spec = importlib.util.spec_from_loader("cpu_by_process", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_cpu_by_process_groups_processes_by_what_they_run():
    kind = _cpu_by_process().kind
    assert kind("python", "/x/.venv/bin/python -m tfhadoop.trainer.role worker") == "python -m tfhadoop.trainer.role"
    assert kind("python", "/x/.venv/bin/python -m tfhadoop train --model m:f") == "python -m tfhadoop train"
    assert kind("java", "/usr/lib/jvm/bin/java -cp a.jar org.apache.spark.deploy.SparkSubmit x") == "java SparkSubmit"
    assert kind("java", "java -Xmx1g -cp skein.jar com.anaconda.skein.Driver") == "java Driver"
    assert kind("sleep", None) == "sleep (command line not seen)"
    assert kind("bash", "/bin/bash -c run.sh") == "bash -c"


def test_cpu_by_process_without_accounting_says_what_it_needs(tmp_path):
    """No accton on PATH: one line naming the fix, no traceback."""
    (tmp_path / "python3").symlink_to(sys.executable)
    proc = subprocess.run([str(ROOT / "tools" / "cpu-by-process"), "true"], capture_output=True, text=True,
                          env={**os.environ, "PATH": str(tmp_path)}, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr
    assert "apt-get install acct" in proc.stderr and "Traceback" not in proc.stderr
