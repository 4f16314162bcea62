"""Job spec from flags and YAML, memory sizes, GPU assignment: the checks a user meets first."""
from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tfhadoop.errors import CommandError
from tfhadoop.trainer import role, train_cli
from tfhadoop.trainer.job import JobSpec, mebibytes

BASE = {"model": "m:build", "data": "hdfs:///d", "checkpoint_dir": "hdfs:///c", "export_dir": "hdfs:///e"}


@pytest.mark.parametrize("text, mib", [("4g", 4096), ("512m", 512), ("2 GiB", 2048), (300, 300), ("1.5g", 1536)])
def test_memory_sizes(text, mib):
    assert mebibytes(text) == mib


def test_bad_memory_size():
    with pytest.raises(CommandError, match="bad memory size"):
        mebibytes("lots")


@pytest.mark.parametrize("change, message", [
    ({"min_workers": 3, "workers": 2}, "--min-workers"),
    ({"ps": 0}, "--ps"),
    ({"export_dir": "file:///local"}, "--export-dir must be on HDFS"),
    ({"model": "nofunction"}, "MODULE:FUNCTION"),
    ({"wrokers": 2}, "unknown job spec keys: wrokers"),
    ({"epochs": 2, "steps": 100}, "--epochs and --steps are exclusive"),
    ({"steps": 0}, "--steps must be positive"),
    ({"checkpoint_secs": -1}, "--checkpoint-secs must be positive"),
    ({"hang_timeout": 0}, "--hang-timeout must be positive, got 0"),
    ({"python_archive": "file:///tmp/env.tar.gz"}, "--python-archive must be a URL"),
])
def test_spec_validation(change, message):
    with pytest.raises(CommandError, match=message):
        JobSpec.from_dict({**BASE, **change})


def _args(argv):
    parser = argparse.ArgumentParser()
    train_cli.register(parser.add_subparsers())
    return parser.parse_args(["train", *argv])


def test_yaml_spec_and_flags_override(tmp_path):
    spec = tmp_path / "job.yaml"
    spec.write_text("model: pkg.mod:build\ndata: hdfs:///data\ncheckpoint-dir: hdfs:///ckpt\n"
                    "export_dir: hdfs:///model\nworkers: 3\nworker-memory: 4g\nqueue: train\n")
    job = train_cli.job_from_args(_args([str(spec), "--workers", "4", "--min-workers", "2"]))
    assert (job.model, job.workers, job.min_workers, job.worker_memory, job.queue) == \
        ("pkg.mod:build", 4, 2, "4g", "train")


def test_missing_flags_are_named():
    with pytest.raises(CommandError, match="missing --data, --checkpoint-dir, --export-dir"):
        train_cli.job_from_args(_args(["--model", "m:f"]))


def test_gpu_devices_respect_yarn_assignment(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("NVIDIA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("TFH_GPUS", "2")
    assert role.gpu_devices() == "0,1"
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", "3")
    assert role.gpu_devices() == "3"
    monkeypatch.setenv("TFH_GPUS", "0")
    monkeypatch.delenv("NVIDIA_VISIBLE_DEVICES")
    assert role.gpu_devices() == ""


def test_epochs_default_to_one_unless_steps_are_given():
    assert (JobSpec.from_dict(BASE).epochs, JobSpec.from_dict(BASE).steps) == (1, None)
    assert (JobSpec.from_dict({**BASE, "steps": 50}).epochs, JobSpec.from_dict({**BASE, "steps": 50}).steps) == \
        (None, 50)


def test_packed_environment_reaches_every_container():
    from tfhadoop.connectors.dataset import Manifest
    from tfhadoop.trainer.job import application_spec

    job = JobSpec.from_dict({**BASE, "python_archive": "hdfs:///envs/env.tar.gz"})
    assert job.python == "./env/bin/python"
    manifest = Manifest("hdfs:///d", "none", (), {}, {})
    spec = application_spec(job, manifest, "/tmp/job.json")
    for files in (spec.master.files, spec.services["ps"].files, spec.services["worker"].files):
        assert files["env"].source == "hdfs:///envs/env.tar.gz" and str(files["env"].type) == "ARCHIVE"
    assert spec.master.script.startswith("./env/bin/python -m tfhadoop.trainer.master")
    assert spec.services["worker"].script.startswith("./env/bin/python -m tfhadoop.trainer.role")
    plain = application_spec(JobSpec.from_dict(BASE), manifest, "/tmp/job.json")
    assert "env" not in plain.services["worker"].files


def test_model_code_is_shipped_to_every_container(tmp_path):
    import tarfile

    from tfhadoop.connectors.dataset import Manifest
    from tfhadoop.trainer.job import application_spec, pack_python_path

    src = tmp_path / "code"
    (src / "mypkg" / "__pycache__").mkdir(parents=True)
    (src / "mypkg" / "__init__.py").write_text("")
    (src / "mypkg" / "model.py").write_text("def build(): pass\n")
    (src / "mypkg" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"x")
    code = pack_python_path([str(src)], str(tmp_path))
    with tarfile.open(code["pythonpath-0"]) as tar:
        names = sorted(n.lstrip("./") for n in tar.getnames() if n.endswith(".py") or n.endswith(".pyc"))
    assert names == ["mypkg/__init__.py", "mypkg/model.py"]
    spec = application_spec(JobSpec.from_dict(BASE), Manifest("hdfs:///d", "none", (), {}, {}), "/tmp/job.json", code)
    for service in (spec.master, spec.services["ps"], spec.services["worker"]):
        assert str(service.files["pythonpath-0"].type) == "ARCHIVE"
        assert service.env["PYTHONPATH"].split(":")[0] == "./pythonpath-0"
    with pytest.raises(CommandError, match="is not a directory"):
        pack_python_path([str(tmp_path / "nope")], str(tmp_path))


def test_no_dataset_shard_is_localized_into_any_container():
    from tfhadoop.connectors.dataset import Manifest, ShardFile
    from tfhadoop.trainer.job import application_spec

    shards = (ShardFile("part-0.tfrecord", 10, 100, "train"), ShardFile("eval/part-0.tfrecord", 5, 50, "eval"))
    spec = application_spec(JobSpec.from_dict(BASE), Manifest("hdfs://nn:8020/d", "none", shards, {}, {}),
                            "/tmp/job.json")
    sources = [f.source for svc in (spec.master, spec.services["ps"], spec.services["worker"])
               for f in svc.files.values()]
    assert not [src for src in sources if "/d/" in src or "tfrecord" in src], sources
    assert set(spec.master.files) - {"am-agent.jar"} == {"job.json"} and not spec.services["worker"].files


def test_the_checks_kept_by_no_validate_import_no_tensorflow():
    """`--no-validate` skips the model check to spare the client its seconds of TensorFlow import;
    the checks it keeps (here the label and sample-weight columns, which once imported TensorFlow
    through keras_step) must not import it themselves."""
    code = ("import sys, types\n"
            "from tfhadoop.trainer import validate\n"
            "job = types.SimpleNamespace(label='a,b', sample_weight='w', data='hdfs://nn/d')\n"
            "weight = {'type': 'FixedLenFeature', 'dtype': 'float32', 'shape': []}\n"
            "validate.check_columns(job, {'features': {'a': {}, 'b': {}, 'w': weight}})\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'tf_keras', 'keras')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout[:500]
