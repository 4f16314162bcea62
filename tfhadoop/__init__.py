"""tfhadoop: Hadoop-resident data (Hive, HDFS, Spark) into TensorFlow models on the same cluster."""

__version__ = "0.1.0"
