"""The trainer's training step computes what tf-keras ``model.fit`` computes: regularization
losses, several outputs with dict/list losses and loss_weights, sample weights (keras_step.py).

The parity cases run in one child process (keras_parity.py): a real ParameterServerStrategy
over an in-process PS and worker, the trainer's parser and step in a scheduled closure, against
``model.fit`` on the same records and initial weights. The rest are the column rules and the
submit-time model check, on a local dataset.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.trainer import trainer_test_models as models
from tfhadoop.errors import ValidationError
from tfhadoop.trainer.keras_step import split_batch
from tfhadoop.trainer.spec import label_columns
from tfhadoop.trainer.validate import check_columns

HERE = Path(__file__).resolve().parent

CASES = ["l2_kernel", "activity_regularizer", "two_outputs_dict_losses", "two_outputs_list_losses", "sample_weights",
         "logistic_int_label_weights_l2", "everything"]  # keras_parity.CASES (not imported: it imports TF)
REGULARIZED = {"l2_kernel", "activity_regularizer", "logistic_int_label_weights_l2", "everything"}


@pytest.fixture(scope="module")
def parity():
    proc = subprocess.run([sys.executable, str(HERE / "keras_parity.py")], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    results = json.loads(lines[-1][len("RESULT "):])
    assert sorted(results) == sorted(CASES)
    return results


@pytest.mark.parametrize("case", CASES)
def test_step_matches_model_fit(parity, case):
    r = parity[case]
    print(case, r)
    assert r["examples"] == 40  # keras_parity.N, batches of 16, 16 and 8
    assert r["trainer_loss"] == pytest.approx(r["fit_loss"], rel=1e-5), r
    assert r["weights_moved"] > 1e-3, r  # the epoch trained ...
    assert r["max_weight_diff"] < 1e-5, r  # ... to the weights model.fit reaches
    if case in REGULARIZED:  # the regularization term is far above the tolerance: dropping it would fail
        assert r["regularization_at_start"] > 1e-3 * r["fit_loss"], r


def test_label_columns():
    assert label_columns("y") == ["y"]
    assert label_columns("a, b") == ["a", "b"]
    assert label_columns(["b", "a"]) == ["b", "a"]
    with pytest.raises(ValueError, match="named twice"):
        label_columns("a,a")
    with pytest.raises(ValueError, match="no label column"):
        label_columns(" , ")


def test_split_batch_gives_fit_tuples():
    parsed = {"x": 1, "a": 2, "b": 3, "w": 4}
    assert split_batch(parsed, "a") == ({"x": 1, "b": 3, "w": 4}, 2)
    assert split_batch(parsed, "a,b", "w") == ({"x": 1}, {"a": 2, "b": 3}, 4)
    assert parsed == {"x": 1, "a": 2, "b": 3, "w": 4}  # not consumed


def _job(**kw):
    return SimpleNamespace(**{"label": "y", "sample_weight": None, "data": "hdfs://nn/ds", **kw})


SPEC = {"features": {**models.WEIGHTED_SPEC["features"],
                     "name": {"type": "FixedLenFeature", "shape": [], "dtype": "string"},
                     "pair": {"type": "FixedLenFeature", "shape": [2], "dtype": "float32"},
                     "tags": {"type": "VarLenFeature", "dtype": "int64"}}}


def test_sample_weight_column_rules():
    check_columns(_job(sample_weight="w"), SPEC)
    check_columns(_job(label="y,x", sample_weight="w"), SPEC)
    with pytest.raises(ValidationError, match=r"--sample-weight 'weight' is not a column of hdfs://nn/ds; features: "):
        check_columns(_job(sample_weight="weight"), SPEC)
    with pytest.raises(ValidationError, match="--sample-weight 'y' is also a --label column"):
        check_columns(_job(sample_weight="y"), SPEC)
    for column, kind in (("name", r"string fixed \[\]"), ("pair", r"float32 fixed \[2\]"), ("tags", "int64 var-len")):
        with pytest.raises(ValidationError, match=rf"--sample-weight '{column}' must be a numeric column with one "
                                                  rf"value per example .*it is {column} \({kind}\)"):
            check_columns(_job(sample_weight=column), SPEC)
    with pytest.raises(ValidationError, match="--label 'z' is not a column"):
        check_columns(_job(label="y,z"), SPEC)


@pytest.fixture(scope="module")
def local_dataset(tmp_path_factory):
    url = str(tmp_path_factory.mktemp("keras-step") / "ds")
    models.write_dataset(url, train_shards=(40,), eval_records=8, compression="none", weights=True)
    return url


def _check(dataset, model, **kw):
    from tfhadoop.connectors.dataset import load
    from tfhadoop.trainer.validate import check_model

    job = SimpleNamespace(**{"model": f"trainer_test_models:{model}", "python_path": [str(HERE)], "label": "y",
                             "sample_weight": None, "data": dataset, "train_split": "train", "batch_size": 16, **kw})
    check_model(job, load(dataset))


def test_submit_check_runs_the_keras_loss(local_dataset):
    _check(local_dataset, "frozen_regularized", sample_weight="w")
    with pytest.raises(ValidationError, match=r"has 2 outputs \(y, w\): give one --label column per output"):
        _check(local_dataset, "two_outputs_y_w")
    with pytest.raises(ValidationError, match=r"with several --label columns \(y, x\) the model needs one output "
                                              r"named after each; its outputs are: y, w"):
        _check(local_dataset, "two_outputs_y_w", label="y,x")
    _check(local_dataset, "two_outputs_y_w", label="w,y")  # order free: matched by name


def test_sample_weight_and_labels_from_flags_and_yaml(tmp_path):
    import argparse

    from tfhadoop.trainer import train_cli

    parser = argparse.ArgumentParser()
    train_cli.register(parser.add_subparsers())
    spec = tmp_path / "job.yaml"
    spec.write_text("model: m:f\ndata: hdfs:///d\ncheckpoint-dir: hdfs:///c\nexport-dir: hdfs:///e\n"
                    "label: [a, b]\nsample_weight: w\n")
    job = train_cli.job_from_args(parser.parse_args(["train", str(spec)]))
    assert (label_columns(job.label), job.sample_weight) == (["a", "b"], "w")
    job = train_cli.job_from_args(parser.parse_args(["train", str(spec), "--label", "y", "--sample-weight", "v"]))
    assert (job.label, job.sample_weight) == ("y", "v")
