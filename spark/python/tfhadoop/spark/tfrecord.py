"""Read and write TFRecord files from PySpark with the tfhadoop JVM data source (short name
``tfrecord``, alias ``tfrecords``). The jar must be on the session's classpath
(:func:`tfhadoop.spark.session.get_session` puts it there).

Options are passed through unchanged; the common ones are keyword arguments here:
``record_type`` (Example | SequenceExample | ByteArray), ``compression`` (gzip | zlib | none),
``skip_corrupt``, ``sampling_ratio`` (schema inference over a share of the files).
"""
from __future__ import annotations

FORMAT = "tfrecord"


def _options(record_type=None, compression=None, skip_corrupt=None, sampling_ratio=None, **extra):
    opts = {}
    if record_type is not None:
        opts["recordType"] = record_type
    if compression is not None:
        opts["compression"] = compression
    if skip_corrupt is not None:
        opts["skipCorrupt"] = "true" if skip_corrupt else "false"
    if sampling_ratio is not None:
        opts["samplingRatio"] = str(sampling_ratio)
    opts.update({k: str(v) for k, v in extra.items()})
    return opts


def read_tfrecord(spark, path, schema=None, **options):
    """A DataFrame over TFRecord files under ``path`` (a file, dir, glob or list of them)."""
    reader = spark.read.format(FORMAT).options(**_options(**options))
    if schema is not None:
        reader = reader.schema(schema)
    return reader.load(path)


def write_tfrecord(df, path, mode="errorifexists", partition_by=None, **options):
    """Writes ``df`` as TFRecord files under ``path`` (every Spark save mode is supported)."""
    writer = df.write.format(FORMAT).mode(mode).options(**_options(**options))
    if partition_by:
        writer = writer.partitionBy(*([partition_by] if isinstance(partition_by, str) else partition_by))
    writer.save(path)
