package tfhadoop.tfrecord;

/** Hadoop counters the TFRecord input formats report (group = this enum's class name). */
public enum TFRecordCounters {
  RECORDS_READ,
  CORRUPT_RECORDS_SKIPPED,
  CORRUPT_BYTES_SKIPPED
}
