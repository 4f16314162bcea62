"""TensorBoard event files for a training run, on HDFS.

The coordinator writes scalars (train loss and examples/s per wave, mean loss per epoch, workers
in the cluster, the final eval metrics) with ``tf.summary`` into its local work dir and mirrors
the event files to ``<checkpoint_dir>/tensorboard/{train,eval}`` at every checkpoint and at the
end. The step axis is the job's global step count, which survives coordinator restarts; a
restarted coordinator adds a new event file next to the old ones, as TensorBoard expects.
"""
from __future__ import annotations

import os

from tfhadoop.trainer import hdfs_io


class Summaries:
    def __init__(self, work: str, url: str):
        import tensorflow as tf
        from tensorflow.core.framework import summary_pb2

        self.tf, self.local, self.url, self.uploaded = tf, os.path.join(work, "tensorboard"), url, {}
        self.writers = {name: tf.summary.create_file_writer(os.path.join(self.local, name))
                        for name in ("train", "eval")}
        # What tf.summary.scalar writes, without needing the tensorboard package in the containers:
        # a float32 scalar tensor tagged for TensorBoard's scalars plugin.
        self.metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")).SerializeToString()

    def scalars(self, split: str, step: int, values: dict) -> None:
        with self.writers[split].as_default(step=step):
            for name, value in values.items():
                self.tf.summary.write(name, self.tf.constant(float(value), self.tf.float32), metadata=self.metadata)

    def sync(self) -> None:
        """Flush and copy what changed to HDFS."""
        for writer in self.writers.values():
            writer.flush()
        hdfs_io.mirror_dir(self.local, self.url, self.uploaded)
