package tfhadoop.spark;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/** Spark SQL metrics of the scan: corrupt records and bytes skipped (with skipCorrupt). */
final class ReadMetrics {
  static final String RECORDS = "corruptRecordsSkipped";
  static final String BYTES = "corruptBytesSkipped";

  private ReadMetrics() {}

  /** Sum metric with a no-arg constructor, as Spark instantiates metric classes reflectively. */
  public static final class CorruptRecords extends CustomSumMetric {
    @Override
    public String name() {
      return RECORDS;
    }

    @Override
    public String description() {
      return "corrupt TFRecords skipped";
    }
  }

  public static final class CorruptBytes extends CustomSumMetric {
    @Override
    public String name() {
      return BYTES;
    }

    @Override
    public String description() {
      return "corrupt TFRecord bytes skipped";
    }
  }

  static CustomMetric[] supported() {
    return new CustomMetric[] {new CorruptRecords(), new CorruptBytes()};
  }

  static CustomTaskMetric[] values(long records, long bytes) {
    return new CustomTaskMetric[] {task(RECORDS, records), task(BYTES, bytes)};
  }

  private static CustomTaskMetric task(final String name, final long value) {
    return new CustomTaskMetric() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public long value() {
        return value;
      }
    };
  }
}
