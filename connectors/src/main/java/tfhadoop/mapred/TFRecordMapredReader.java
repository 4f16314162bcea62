package tfhadoop.mapred;

import java.io.IOException;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tfhadoop.tfrecord.Configurations;
import tfhadoop.tfrecord.TFRecordCounters;
import tfhadoop.tfrecord.TFRecordFiles;
import tfhadoop.tfrecord.TFRecordReader;

/** Adapts {@link TFRecordReader} to a mapred RecordReader, reporting skips as counters. */
public class TFRecordMapredReader implements RecordReader<LongWritable, BytesWritable> {
  private static final Logger LOG = LoggerFactory.getLogger(TFRecordMapredReader.class);
  private final TFRecordReader reader;
  private final Reporter reporter;
  private final long start;
  private final long length;
  private boolean closed;

  public TFRecordMapredReader(FileSplit split, JobConf job, Reporter reporter) throws IOException {
    this.reporter = reporter == null ? Reporter.NULL : reporter;
    this.start = split.getStart();
    this.length = split.getLength();
    this.reader = TFRecordFiles.open(split.getPath(), job, start, length, Configurations.options(job));
  }

  @Override
  public boolean next(LongWritable key, BytesWritable value) throws IOException {
    if (!reader.next()) {
      return false;
    }
    key.set(reader.recordOffset());
    value.set(reader.buffer(), reader.recordStart(), reader.recordLength());
    return true;
  }

  @Override
  public LongWritable createKey() {
    return new LongWritable();
  }

  @Override
  public BytesWritable createValue() {
    return new BytesWritable();
  }

  @Override
  public long getPos() {
    return reader.position();
  }

  @Override
  public float getProgress() {
    return length <= 0 ? 0f : Math.min(1f, Math.max(0f, (reader.position() - start) / (float) length));
  }

  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    reporter.incrCounter(TFRecordCounters.RECORDS_READ, reader.records());
    reporter.incrCounter(TFRecordCounters.CORRUPT_RECORDS_SKIPPED, reader.corruptRecords());
    reporter.incrCounter(TFRecordCounters.CORRUPT_BYTES_SKIPPED, reader.skippedBytes());
    String summary = Configurations.skipSummary(reader);
    if (summary != null) {
      LOG.warn(summary);
    }
    reader.close();
  }
}
