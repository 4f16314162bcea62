"""tfhadoop: Hadoop-resident data (Hive, HDFS, Spark) into TensorFlow models on the same cluster."""

__version__ = "0.1.0"

__all__ = ["Model", "Trainer"]


def __getattr__(name):
    """``from tfhadoop import Trainer, Model`` without importing Spark or TensorFlow on ``import tfhadoop``."""
    if name in ("Trainer", "Model"):
        from tfhadoop.trainer import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'tfhadoop' has no attribute {name!r}")
