"""``Model.transform`` on a real PySpark 3.5 (the ``mapInArrow`` fallback). The project's .venv35
(`make setup`: PySpark 3.5 for the jar's Spark 3.5 tests) has no TensorFlow, so its ``pyspark`` and
``py4j`` packages alone are put first on the path of a child process of this venv, shadowing
PySpark 4 (not its numpy: TensorFlow keeps this venv's)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _pyspark35(tmp_path: Path) -> Path:
    """A folder holding only .venv35's pyspark and py4j (symlinks)."""
    site = ROOT / ".venv35" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    assert (site / "pyspark").is_dir(), f"no PySpark 3.5 in {site}: run `make setup`"
    only = tmp_path / "pyspark35"
    only.mkdir()
    for name in ("pyspark", "py4j"):
        (only / name).symlink_to(site / name)
    return only


def test_transform_on_pyspark_35(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_HOME", "HADOOP_CONF"))}
    env["PYTHONPATH"] = os.pathsep.join([str(_pyspark35(tmp_path))] + [p for p in sys.path if p])
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("spark35_transform.py"))],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "pyspark 3.5." in proc.stdout and "500 rows scored once each" in proc.stdout
