package tfhadoop.spark;

import java.io.IOException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tfhadoop.tfrecord.Configurations;
import tfhadoop.tfrecord.TFRecordReader;

/** Rows of a task's slices, one after another; reports skipped corrupt records as metrics and logs. */
final class TFRecordPartitionReader implements PartitionReader<InternalRow> {
  private static final Logger LOG = LoggerFactory.getLogger(TFRecordPartitionReader.class);
  private final FileSlice[] slices;
  private final TFRecordReaderFactory factory;
  private int next;
  private TFRecordReader reader;
  private RowDecoder decoder;
  private InternalRow row;
  private long corruptRecords;
  private long corruptBytes;

  TFRecordPartitionReader(FileSlice[] slices, TFRecordReaderFactory factory) {
    this.slices = slices;
    this.factory = factory;
  }

  @Override
  public boolean next() throws IOException {
    while (true) {
      if (reader == null) {
        if (next >= slices.length) {
          return false;
        }
        FileSlice s = slices[next++];
        decoder = factory.decoder(s);
        reader = factory.open(s);
      }
      if (reader.next()) {
        row = decoder.decode(reader);
        return true;
      }
      finishSlice();
    }
  }

  private void finishSlice() throws IOException {
    corruptRecords += reader.corruptRecords();
    corruptBytes += reader.skippedBytes();
    String summary = Configurations.skipSummary(reader);
    if (summary != null) {
      LOG.warn(summary);
    }
    TFRecordReader r = reader;
    reader = null;
    r.close();
  }

  @Override
  public InternalRow get() {
    return row;
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    long records = corruptRecords + (reader == null ? 0 : reader.corruptRecords());
    long bytes = corruptBytes + (reader == null ? 0 : reader.skippedBytes());
    return ReadMetrics.values(records, bytes);
  }

  @Override
  public void close() throws IOException {
    if (reader != null) {
      finishSlice();
    }
  }
}
