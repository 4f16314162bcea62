package tfhadoop.tfrecord;

import org.apache.hadoop.conf.Configuration;

/** Parses {@link TFRecordOptions} from a Hadoop Configuration. */
public final class Configurations {
  private Configurations() {}

  public static TFRecordOptions options(final Configuration conf) {
    return TFRecordOptions.parse(new TFRecordOptions.Lookup() {
      @Override
      public String get(String key) {
        return key.startsWith("tfrecord.") ? conf.get(key) : null;
      }
    });
  }

  /** One log line for a reader that skipped corrupt data; null when it skipped nothing. */
  public static String skipSummary(TFRecordReader r) {
    if (r.corruptRecords() == 0) {
      return null;
    }
    return "TFRecord: skipped " + r.corruptRecords() + " corrupt record(s), " + r.skippedBytes()
        + " byte(s), in " + r.file() + "; read " + r.records() + " record(s)";
  }
}
