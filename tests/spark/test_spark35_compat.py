"""The same tfhadoop jar on Spark 3.5: runs spark35_check.py under the pyspark 3.5 venv
(``.venv35`` next to the project venv, or ``TFHADOOP_SPARK35_PYTHON``), then reads what Spark 3.5
wrote with Spark 4 and TensorFlow."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tfhadoop.spark.session import tfhadoop_jar

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PY35 = os.environ.get("TFHADOOP_SPARK35_PYTHON") or str(ROOT / ".venv35" / "bin" / "python")


def test_same_jar_on_spark_35(tmp_path):
    # Not a skip: Spark 3.5 support is a feature, and `make setup` builds .venv35.
    assert os.path.exists(PY35), f"no pyspark 3.5 interpreter at {PY35}: run `make setup` (builds .venv35)"
    jar = tfhadoop_jar()
    assert jar, "build the jar first (tools/sbt tfhadoop/copyJar)"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_HOME", "HADOOP_CONF"))}
    env["PYSPARK_PYTHON"] = PY35
    proc = subprocess.run([PY35, str(Path(__file__).with_name("spark35_check.py")), jar, str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "SPARK35 OK 3.5" in proc.stdout

    tf = pytest.importorskip("tensorflow")
    files = sorted(str(p) for p in (tmp_path / "out" / "typed").glob("part-*.tfrecord.gz"))
    ids = sorted(tf.train.Example.FromString(r.numpy()).features.feature["id"].int64_list.value[0]
                 for r in tf.data.TFRecordDataset(files, compression_type="GZIP"))
    assert ids == list(range(30)) + [99]
