package tfhadoop.mapreduce;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import tfhadoop.tfrecord.Compression;
import tfhadoop.tfrecord.Configurations;
import tfhadoop.tfrecord.RecordBytes;
import tfhadoop.tfrecord.TFRecordFiles;
import tfhadoop.tfrecord.TFRecordWriter;

/**
 * Writes TFRecord files for the mapreduce API. The record is whichever of key/value is a
 * BytesWritable (value first), so both (offset, bytes) and (bytes, NullWritable) jobs work.
 * Compression comes only from {@code tfrecord.compression}/{@code tfrecord.codec}, never from
 * Hadoop's output-compression settings.
 */
public class TFRecordOutputFormat extends FileOutputFormat<Writable, Writable> {
  @Override
  public RecordWriter<Writable, Writable> getRecordWriter(TaskAttemptContext context) throws IOException {
    Configuration conf = context.getConfiguration();
    Compression c = Configurations.options(conf).compression;
    Path file = getDefaultWorkFile(context, c.extension(conf));
    final TFRecordWriter w = TFRecordFiles.create(file, conf, c, false);
    return new RecordWriter<Writable, Writable>() {
      @Override
      public void write(Writable key, Writable value) throws IOException {
        RecordBytes.write(w, key, value);
      }

      @Override
      public void close(TaskAttemptContext ctx) throws IOException {
        w.close();
      }
    };
  }
}
