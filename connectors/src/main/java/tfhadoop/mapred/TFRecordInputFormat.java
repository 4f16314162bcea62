package tfhadoop.mapred;

import java.io.IOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.JobConfigurable;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;
import tfhadoop.tfrecord.Configurations;
import tfhadoop.tfrecord.TFRecordFiles;

/**
 * TFRecord files for the old {@code org.apache.hadoop.mapred} API (what Hive's STORED AS
 * INPUTFORMAT needs). Same keys, values and split rule as {@link tfhadoop.mapreduce.TFRecordInputFormat}.
 */
public class TFRecordInputFormat extends FileInputFormat<LongWritable, BytesWritable> implements JobConfigurable {
  private JobConf job;

  @Override
  public void configure(JobConf job) {
    this.job = job;
  }

  @Override
  protected boolean isSplitable(FileSystem fs, Path file) {
    JobConf conf = job != null ? job : new JobConf(fs.getConf());
    return Configurations.options(conf).splittable && TFRecordFiles.isUncompressed(file, conf);
  }

  @Override
  public RecordReader<LongWritable, BytesWritable> getRecordReader(InputSplit split, JobConf job, Reporter reporter)
      throws IOException {
    reporter.setStatus(split.toString());
    return new TFRecordMapredReader((FileSplit) split, job, reporter);
  }
}
