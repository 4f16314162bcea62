"""Without a `yarn` command on PATH (an edge node whose $HADOOP_HOME/bin is not on it), every
YARN client says so in one line at the start instead of Skein's AttributeError traceback."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tfhadoop.errors import CommandError


@pytest.fixture()
def edge_node(tmp_path):
    """A client environment: HADOOP_CONF_DIR of a (real-looking) cluster, PATH without `yarn`."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://127.0.0.1:1</value>"
        "</property></configuration>")
    env = {k: v for k, v in os.environ.items() if k not in ("TFHADOOP_STATE_DIR",)}
    env.update(HADOOP_CONF_DIR=str(conf), PATH=os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"]))
    return env


@pytest.mark.parametrize("argv", [
    ["status", "application_1_0001"],
    ["kill", "application_1_0001"],
    ["logs", "application_1_0001"],
    ["jobs"],
    ["train", "--model", "m:build", "--data", "hdfs:///d", "--checkpoint-dir", "hdfs:///c",
     "--export-dir", "hdfs:///e", "--no-validate"],
])
def test_yarn_commands_name_the_missing_command(edge_node, argv):
    assert not any(os.path.exists(os.path.join(d, "yarn")) for d in edge_node["PATH"].split(os.pathsep))
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", *argv], env=edge_node, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "no `yarn` command on PATH" in lines[0] and "HADOOP_HOME/bin" in lines[0], lines[0]


def test_pipeline_api_names_the_missing_command(edge_node, monkeypatch):
    from tfhadoop.trainer import Trainer

    for key in ("TFHADOOP_STATE_DIR",):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HADOOP_CONF_DIR", edge_node["HADOOP_CONF_DIR"])
    monkeypatch.setenv("PATH", edge_node["PATH"])
    trainer = Trainer(model="m:build", checkpoint_dir="hdfs:///c", export_dir="hdfs:///e")
    with pytest.raises(CommandError, match="no `yarn` command on PATH"):
        trainer.fit("hdfs:///d", validate_model=False)


@pytest.mark.parametrize("pointed", [False, True], ids=["before-use_cluster", "after-use_cluster"])
def test_embedded_cluster_without_its_commands_says_how_to_restore_them(tmp_path, monkeypatch, pointed):
    """The embedded cluster's state dir lacks bin/yarn (an `up` from before they were written first)."""
    from tfhadoop.yarn.client import require_yarn_command

    (tmp_path / "conf").mkdir()
    (tmp_path / "cluster.json").write_text("{}")
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.setenv("TFHADOOP_STATE_DIR", str(tmp_path))
    if pointed:  # hadoop.use_cluster() points HADOOP_CONF_DIR at the state dir's conf/
        monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path / "conf"))
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    with pytest.raises(CommandError, match=f"{tmp_path}/bin/yarn.*tfhadoop cluster up"):
        require_yarn_command()
