"""TensorBoard event files for a training run, on HDFS.

The coordinator writes scalars (train loss and examples/s about every second, mean loss per
epoch, workers in the cluster, the final eval metrics) with ``tf.summary`` straight into
``<checkpoint_dir>/tensorboard/{train,eval}`` over ``hdfs://`` (the tfhdfs plugin); ``sync``
flushes, which hsyncs the event file so TensorBoard sees it while the job runs. The step axis is
the job's global step count, which survives coordinator restarts; a restarted coordinator adds a
new event file next to the old ones, as TensorBoard expects.
"""
from __future__ import annotations


class Summaries:
    def __init__(self, url: str):
        import tensorflow as tf
        from tensorflow.core.framework import summary_pb2

        self.tf, self.url = tf, url.rstrip("/")
        self.writers = {name: tf.summary.create_file_writer(f"{self.url}/{name}") for name in ("train", "eval")}
        # What tf.summary.scalar writes, without needing the tensorboard package in the containers:
        # a float32 scalar tensor tagged for TensorBoard's scalars plugin.
        self.metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")).SerializeToString()

    def scalars(self, split: str, step: int, values: dict) -> None:
        with self.writers[split].as_default(step=step):
            for name, value in values.items():
                self.tf.summary.write(name, self.tf.constant(float(value), self.tf.float32), metadata=self.metadata)

    def sync(self) -> None:
        """Flush (and hsync) what was written."""
        for writer in self.writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()
