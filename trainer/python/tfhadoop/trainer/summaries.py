"""TensorBoard event files for a training run, on HDFS.

The coordinator writes scalars (train loss and examples/s about every second, mean loss per
epoch, workers in the cluster, the final eval metrics) with ``tf.summary`` straight into
``<checkpoint_dir>/tensorboard/{train,eval}`` over ``hdfs://`` (the tfhdfs plugin). ``sync`` (at
every checkpoint) closes the event files and the next scalar opens new ones: a file HDFS still
has open shows readers only its completed blocks (hsync does not update the length the NameNode
reports), so closing is what makes the scalars visible to TensorBoard while the job runs. The step
axis is the job's global step count, which survives coordinator restarts; TensorBoard reads the
event files of a run folder in order, so a new file per checkpoint (or per restart) is what it expects.
"""
from __future__ import annotations

import threading

SPLITS = ("train", "eval")  # the run folders under <checkpoint_dir>/tensorboard


class Summaries:
    def __init__(self, url: str):
        import tensorflow as tf
        from tensorflow.core.framework.summary_pb2 import SummaryMetadata

        self.tf, self.url, self.writers, self.closing = tf, url.rstrip("/"), {}, []
        self.recover_left_open()
        # What tf.summary.scalar writes, without needing the tensorboard package in the containers:
        # a float32 scalar tensor tagged for TensorBoard's scalars plugin.
        self.metadata = SummaryMetadata(
            plugin_data=SummaryMetadata.PluginData(plugin_name="scalars")).SerializeToString()

    def recover_left_open(self) -> None:
        """Close the event files a previous coordinator of the job left open: one killed during a
        close (its PS lost, a restart) leaves a file whose flushed bytes the NameNode lists and no
        reader may read until HDFS recovers its lease (an hour on a default NameNode). Only one
        coordinator runs at a time, so no live writer holds them; a closed file is left as it is."""
        from tfhadoop.connectors import hdfs

        if not self.url.startswith("hdfs://"):  # a local folder (tests, a laptop run) has no leases
            return
        for split in SPLITS:
            folder = f"{self.url}/{split}"
            try:
                for name in hdfs.list_names(folder):
                    hdfs.recover_lease(f"{folder}/{name}")
            except OSError as exc:  # costs TensorBoard a file, not the job
                print(f"cannot close the event files left open under {folder}: {exc}", flush=True)

    def scalars(self, split: str, step: int, values: dict) -> None:
        """Write ``values`` at ``step``. HDFS refusing writes (safe mode, a NameNode restart) costs
        these scalars, logged, not the job: TensorBoard's plots are not worth a failed training."""
        try:
            if split not in self.writers:
                self.writers[split] = self.tf.summary.create_file_writer(f"{self.url}/{split}")
            with self.writers[split].as_default(step=step):
                for name, value in values.items():
                    self.tf.summary.write(name, self.tf.constant(float(value), self.tf.float32),
                                          metadata=self.metadata)
        except Exception as exc:  # noqa: BLE001 - see above
            print(f"cannot write TensorBoard scalars to {self.url}/{split}: {exc}", flush=True)

    def sync(self) -> None:
        """Close the event files written so far (complete and visible on HDFS), in the background:
        an HDFS close takes about 0.5 s (the NameNode's `complete` waits for the DataNode's block
        report) and the checkpoint that calls this need not wait for TensorBoard. The writers are
        dropped even when a close fails (logged): the next scalars open new files."""
        writers, self.writers = list(self.writers.values()), {}
        if writers:
            closing = threading.Thread(target=self._close, args=(writers,), name="tensorboard-close", daemon=True)
            closing.start()
            self.closing = [t for t in self.closing if t.is_alive()] + [closing]

    def wait(self) -> None:
        """Wait for the closes :meth:`sync` started."""
        while self.closing:
            self.closing.pop().join()

    def close(self) -> None:
        """Close every event file and wait for all closes (the end of the job, or before an exit)."""
        self.sync()
        self.wait()

    def _close(self, writers: list) -> None:
        for writer in writers:
            try:
                writer.close()
            except Exception as exc:  # noqa: BLE001 - as in scalars
                print(f"cannot close a TensorBoard event file under {self.url}: {exc}", flush=True)
