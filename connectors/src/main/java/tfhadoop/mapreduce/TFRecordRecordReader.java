package tfhadoop.mapreduce;

import java.io.IOException;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tfhadoop.tfrecord.Configurations;
import tfhadoop.tfrecord.TFRecordCounters;
import tfhadoop.tfrecord.TFRecordFiles;
import tfhadoop.tfrecord.TFRecordReader;

/** Adapts {@link TFRecordReader} to a mapreduce RecordReader, reporting skips as counters. */
public class TFRecordRecordReader extends RecordReader<LongWritable, BytesWritable> {
  private static final Logger LOG = LoggerFactory.getLogger(TFRecordRecordReader.class);
  private TFRecordReader reader;
  private TaskAttemptContext context;
  private long start;
  private long length;
  private final LongWritable key = new LongWritable();
  private final BytesWritable value = new BytesWritable();

  @Override
  public void initialize(InputSplit split, TaskAttemptContext context) throws IOException {
    FileSplit fs = (FileSplit) split;
    this.context = context;
    this.start = fs.getStart();
    this.length = fs.getLength();
    reader = TFRecordFiles.open(fs.getPath(), context.getConfiguration(), start, length,
        Configurations.options(context.getConfiguration()));
  }

  @Override
  public boolean nextKeyValue() throws IOException {
    if (!reader.next()) {
      return false;
    }
    key.set(reader.recordOffset());
    value.set(reader.buffer(), reader.recordStart(), reader.recordLength());
    return true;
  }

  @Override
  public LongWritable getCurrentKey() {
    return key;
  }

  @Override
  public BytesWritable getCurrentValue() {
    return value;
  }

  @Override
  public float getProgress() {
    if (reader == null || length <= 0) {
      return 0f;
    }
    return Math.min(1f, Math.max(0f, (reader.position() - start) / (float) length));
  }

  @Override
  public void close() throws IOException {
    if (reader == null) {
      return;
    }
    try {
      context.getCounter(TFRecordCounters.RECORDS_READ).increment(reader.records());
      context.getCounter(TFRecordCounters.CORRUPT_RECORDS_SKIPPED).increment(reader.corruptRecords());
      context.getCounter(TFRecordCounters.CORRUPT_BYTES_SKIPPED).increment(reader.skippedBytes());
    } catch (RuntimeException | LinkageError e) {
      LOG.debug("counters unavailable", e);
    }
    String summary = Configurations.skipSummary(reader);
    if (summary != null) {
      LOG.warn(summary);
    }
    reader.close();
    reader = null;
  }
}
