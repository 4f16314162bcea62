"""Fixtures the trainer tests share (pytest finds them here without an import)."""
from __future__ import annotations

import uuid

import pytest

from tests.trainer import trainer_test_models as models
from tests.trainer.fakes import fake_master
from tfhadoop.trainer import protocol

# The tests that run TensorFlow in this process need what a role container's process has (the
# trainer's modules no longer set it when imported).
protocol.tf_environment()


@pytest.fixture(scope="module")
def dataset(hadoop_cluster):
    """The trainer tests' dataset on HDFS, one per test module."""
    url = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/ds-{uuid.uuid4().hex[:8]}")
    # Uncompressed with an index entry every 2 kB (~14 per shard): tasks start at byte offsets
    # read from hdfs:// (the gzip path: test_unsplit_dataset_status_follow_kill_and_jobs).
    models.write_dataset(url, compression="none", index_interval=2048)
    return url


@pytest.fixture
def master(tmp_path, monkeypatch):
    """A PS-mode master on a fake Skein application (tests.trainer.fakes), not yet started."""
    return fake_master(tmp_path, monkeypatch)
