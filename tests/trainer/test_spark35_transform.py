"""``Model.transform`` on a real PySpark 3.5 (the ``mapInArrow`` fallback), when a PySpark 3.5 is
installed as a separate folder shadowing the project's PySpark 4 (the project's .venv35 has no
TensorFlow). Create it once (~335 MB, ~30 s from a warm network):

    .tools/bin/uv pip install --python .venv/bin/python --no-deps \\
        --target /tmp/pyspark35 pyspark==3.5.7 py4j==0.10.9.7

and point ``TFHADOOP_PYSPARK35_PATH`` at it (default /tmp/pyspark35)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]

PATH35 = os.environ.get("TFHADOOP_PYSPARK35_PATH", "/tmp/pyspark35")


@pytest.mark.skipif(not os.path.isdir(os.path.join(PATH35, "pyspark")), reason=f"no PySpark 3.5 at {PATH35}")
def test_transform_on_pyspark_35():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_HOME", "HADOOP_CONF"))}
    env["PYTHONPATH"] = os.pathsep.join([PATH35] + [p for p in sys.path if p])
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("spark35_transform.py"))],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "pyspark 3.5." in proc.stdout and "500 rows scored once each" in proc.stdout
