package tfhadoop.spark;

import java.io.IOException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tfhadoop.tfrecord.Configurations;
import tfhadoop.tfrecord.TFRecordReader;

/** Rows of one slice; reports skipped corrupt records as task metrics and a log line. */
final class TFRecordPartitionReader implements PartitionReader<InternalRow> {
  private static final Logger LOG = LoggerFactory.getLogger(TFRecordPartitionReader.class);
  private final TFRecordReader reader;
  private final RowDecoder decoder;
  private InternalRow row;

  TFRecordPartitionReader(TFRecordReader reader, RowDecoder decoder) {
    this.reader = reader;
    this.decoder = decoder;
  }

  @Override
  public boolean next() throws IOException {
    if (!reader.next()) {
      return false;
    }
    row = decoder.decode(reader);
    return true;
  }

  @Override
  public InternalRow get() {
    return row;
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    return ReadMetrics.values(reader);
  }

  @Override
  public void close() throws IOException {
    String summary = Configurations.skipSummary(reader);
    if (summary != null) {
      LOG.warn(summary);
    }
    reader.close();
  }
}
