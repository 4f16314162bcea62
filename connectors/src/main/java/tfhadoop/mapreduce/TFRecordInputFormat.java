package tfhadoop.mapreduce;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import tfhadoop.tfrecord.Configurations;
import tfhadoop.tfrecord.TFRecordFiles;

/**
 * TFRecord files for the {@code org.apache.hadoop.mapreduce} API. Key: byte offset of the record
 * (in the uncompressed stream); value: the record's bytes. Uncompressed files are split (see
 * {@link tfhadoop.tfrecord.TFRecordReader} for the rule); compressed ones are read whole.
 */
public class TFRecordInputFormat extends FileInputFormat<LongWritable, BytesWritable> {
  @Override
  protected boolean isSplitable(JobContext context, Path file) {
    return Configurations.options(context.getConfiguration()).splittable
        && TFRecordFiles.isUncompressed(file, context.getConfiguration());
  }

  @Override
  public RecordReader<LongWritable, BytesWritable> createRecordReader(InputSplit split, TaskAttemptContext context) {
    return new TFRecordRecordReader();
  }
}
