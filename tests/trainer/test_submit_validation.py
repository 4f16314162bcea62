"""Each mistake users made with `tfhadoop train`, caught at submit through the real CLI on the
embedded cluster (no YARN job needed), with the time from the command's start to its error.
The times are printed (`-s`) and recorded in docs/design/trainer.md."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.trainer import trainer_test_models as models

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.cluster
TIMES: dict = {}  # row -> seconds from the command's start to its error: printed, not asserted (host speed)


@pytest.fixture(scope="module", autouse=True)
def _print_times(request):
    """Every row's submit->error time together, once the module's tests have run."""
    yield
    if TIMES:
        with request.config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
            print("\nsubmit->error times (s):", json.dumps(TIMES, indent=1))


@pytest.fixture(scope="module")
def small(hadoop_cluster):
    """A split dataset (train + eval) and one exported without --split, on HDFS."""
    root = f"/tmp/validate-tests/{uuid.uuid4().hex[:8]}"
    models.write_dataset(hadoop_cluster.hdfs_url(f"{root}/split"), train_shards=(64, 64), eval_records=32)
    models.write_dataset(hadoop_cluster.hdfs_url(f"{root}/nosplit"), train_shards=(64, 64), split=False)
    models.write_dataset(hadoop_cluster.hdfs_url(f"{root}/history"), train_shards=(64, 64), eval_records=32,
                         history=True)
    longest = {"type": "VarLenFeature", "dtype": "int64", "max_length": models.MAX_HISTORY}  # as the export records it
    models.write_dataset(hadoop_cluster.hdfs_url(f"{root}/exported_history"), train_shards=(64, 64), eval_records=32,
                         history=True, parse_spec={"features": {**models.HISTORY_SPEC["features"], "hist": longest}})
    return root


def tfh_train(hadoop_cluster, row: str, *args, cwd=None, expect_error=True):
    run = f"/tmp/validate-tests/run-{uuid.uuid4().hex[:8]}"
    base = {"--model": "trainer_test_models:linear", "--label": "y", "--checkpoint-dir": f"{run}/ckpt",
            "--export-dir": f"{run}/model", "--python-path": str(HERE), "--workers": "1", "--detach": None}
    given = dict(zip(args[::2], args[1::2]))
    flags = [x for k, v in {**base, **given}.items() for x in ((k,) if v is None else (k, v))]
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", "train", *flags], capture_output=True, text=True,
                          timeout=300, cwd=cwd)
    TIMES[row] = round(time.monotonic() - t0, 1)
    print(f"submit->{'error' if proc.returncode else 'exit'} {row}: {TIMES[row]} s")
    if expect_error:
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2, proc.stderr
        # Refused at submit: with --detach a submitted job prints "application <id>" and exits 0.
        assert not any(line.startswith("application ") for line in proc.stdout.splitlines()), proc.stdout
    return proc, run


def test_scheme_and_host_less_paths_are_qualified(hadoop_cluster, small):
    # hdfs:///x and /x find the dataset (the error is the next check: the export dir exists).
    exists = f"{small}/split"
    for form in (f"hdfs://{small}/split", f"{small}/split"):
        proc, _ = tfh_train(hadoop_cluster, "hdfs:///x path", "--data", form,
                            "--export-dir", f"hdfs://{exists}")
        assert f"--export-dir {hadoop_cluster.hdfs_url(exists)} exists already" in proc.stderr, proc.stderr


def test_relative_local_folder_gets_file_hint(hadoop_cluster, small, tmp_path):
    models.write_dataset(str(tmp_path / "dataset"), train_shards=(8,), eval_records=0)
    proc, _ = tfh_train(hadoop_cluster, "./dataset local", "--data", "./dataset", cwd=tmp_path)
    assert "no dataset manifest at hdfs://" in proc.stderr and "/user/" in proc.stderr
    assert f"did you mean file://{tmp_path}/dataset" in proc.stderr, proc.stderr


def test_named_split_missing(hadoop_cluster, small):
    proc, _ = tfh_train(hadoop_cluster, "missing split", "--data", f"{small}/split", "--eval-split", "test")
    assert "has no split 'test' (splits: train, eval)" in proc.stderr, proc.stderr


def test_label_not_a_column(hadoop_cluster, small):
    proc, _ = tfh_train(hadoop_cluster, "bad --label", "--data", f"{small}/split", "--label", "target")
    assert "--label 'target' is not a column" in proc.stderr
    assert "x (float32 fixed [4])" in proc.stderr and "y (float32 fixed [])" in proc.stderr, proc.stderr


def test_sample_weight_not_a_numeric_scalar(hadoop_cluster, small):
    proc, _ = tfh_train(hadoop_cluster, "bad --sample-weight", "--data", f"{small}/split", "--sample-weight", "x")
    assert "--sample-weight 'x' must be a numeric column with one value per example" in proc.stderr, proc.stderr
    assert "it is x (float32 fixed [4])" in proc.stderr, proc.stderr


def test_existing_export_dir(hadoop_cluster, small):
    proc, _ = tfh_train(hadoop_cluster, "existing --export-dir", "--data", f"{small}/split",
                        "--export-dir", f"{small}/nosplit")
    assert f"--export-dir {hadoop_cluster.hdfs_url(small)}/nosplit exists already" in proc.stderr, proc.stderr


def _checkpoint_dir(hadoop_cluster, model: str, data: str) -> str:
    from tfhadoop.connectors import hdfs

    ckpt = hadoop_cluster.hdfs_url(f"/tmp/validate-tests/ckpt-{uuid.uuid4().hex[:8]}")
    hdfs.write_bytes(f"{ckpt}/job.json", json.dumps({"model": model, "data": hadoop_cluster.hdfs_url(data),
                                                         "label": "y", "app": "application_1_0001"}).encode())
    hdfs.write_bytes(f"{ckpt}/latest/state.json", json.dumps({"epoch": 1, "steps": 30}).encode())
    return ckpt


def test_checkpoint_dir_of_another_job(hadoop_cluster, small):
    ckpt = _checkpoint_dir(hadoop_cluster, "other_models:build", f"{small}/split")
    proc, _ = tfh_train(hadoop_cluster, "another job's --checkpoint-dir", "--data", f"{small}/split",
                        "--checkpoint-dir", ckpt)
    assert f"--checkpoint-dir {ckpt} holds another job's checkpoints (model other_models:build)" in proc.stderr
    assert f"give a new --checkpoint-dir to start fresh, or delete it: hdfs dfs -rm -r {ckpt}" in proc.stderr


def test_compatible_checkpoint_dir_says_resuming(hadoop_cluster, small):
    ckpt = _checkpoint_dir(hadoop_cluster, "trainer_test_models:nosuch", f"{small}/split")
    # Same job (its model has a typo, so the run stops at the model check after the notice).
    proc, _ = tfh_train(hadoop_cluster, "bad --model function", "--data", f"{small}/split",
                        "--checkpoint-dir", ckpt, "--model", "trainer_test_models:nosuch")
    assert "resuming from step 30 (epoch 1) of application_1_0001" in proc.stdout, proc.stdout
    assert "trainer_test_models" in proc.stderr and "has no function 'nosuch'" in proc.stderr
    assert "it defines: " in proc.stderr and "linear" in proc.stderr, proc.stderr


def test_model_module_not_found(hadoop_cluster, small):
    proc, _ = tfh_train(hadoop_cluster, "bad --model module", "--data", f"{small}/split", "--model", "nosuchmod:build")
    assert f"no module 'nosuchmod' on the python path ({HERE}" in proc.stderr, proc.stderr


@pytest.mark.parametrize("data, model, message", [
    ("split", "unnamed_sequential", "the model has no defined inputs; start it with tf_keras.Input(shape, name=FEATURE); "
                                    "features: x (float32 fixed [4]), y (float32 fixed [], the label)"),
    ("split", "wrong_shape", "model input 'x' has shape [3] but feature 'x' is float32 [4]"),
    ("split", "wrong_name", "model input 'z' is not a feature of"),
    ("split", "broken", "calling it raised ValueError: model bug: this model function always raises"),
    # issue 30 §3: a variable-length feature the model cannot take
    ("history", "ragged_nested_history",
     "model input 'hist' is ragged with 2 dimensions per example but feature 'hist' has 1"),
    ("history", "history_padded_to_5", "feature 'hist' has a list longer than the model's input width 5"),
    # the manifest knows the longest list: refused by shape, before any record is read
    ("exported_history", "history_padded_to_5",
     "model input 'hist' is dense of width 5 but feature 'hist' holds lists of up to 12 values"),
])
def test_model_does_not_fit_the_dataset(hadoop_cluster, small, data, model, message):
    proc, _ = tfh_train(hadoop_cluster, f"model {model}", "--data", f"{small}/{data}",
                        "--model", f"trainer_test_models:{model}")
    assert message in proc.stderr, proc.stderr


def test_no_validate_skips_the_model_check(hadoop_cluster, small):
    # --no-validate with a model that does not exist: nothing imports it, so the job is submitted.
    proc, run = tfh_train(hadoop_cluster, "--no-validate submit", "--data", f"{small}/split", "--no-validate", None,
                          "--model", "trainer_test_models:nosuch", expect_error=False)
    assert proc.returncode == 0, proc.stderr
    app = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("application "))
    killed = subprocess.run([sys.executable, "-m", "tfhadoop", "kill", app], capture_output=True, text=True,
                            timeout=120)
    assert killed.returncode == 0, killed.stderr


def test_verbose_shows_the_traceback(hadoop_cluster, small):
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", "-v", "train", "--model", "nosuchmod:build",
                           "--python-path", str(HERE), "--data", f"{small}/split", "--label", "y",
                           "--checkpoint-dir", "/tmp/validate-tests/v/ckpt", "--export-dir", "/tmp/validate-tests/v/m"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "ValidationError" in proc.stderr
    assert proc.stderr.rstrip().endswith("on the python path (" + str(HERE) + ", then this environment's site-packages)")
