package tfhadoop.mapred;

import java.io.IOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapred.FileOutputFormat;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordWriter;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.util.Progressable;
import tfhadoop.tfrecord.Compression;
import tfhadoop.tfrecord.Configurations;
import tfhadoop.tfrecord.RecordBytes;
import tfhadoop.tfrecord.TFRecordFiles;
import tfhadoop.tfrecord.TFRecordWriter;

/**
 * TFRecord output for the old mapred API; same record and compression rules as
 * {@link tfhadoop.mapreduce.TFRecordOutputFormat}.
 */
public class TFRecordOutputFormat extends FileOutputFormat<Writable, Writable> {
  @Override
  public RecordWriter<Writable, Writable> getRecordWriter(FileSystem ignored, JobConf job, String name,
      Progressable progress) throws IOException {
    Compression c = Configurations.options(job).compression;
    Path file = FileOutputFormat.getTaskOutputPath(job, name + c.extension(job));
    return writer(TFRecordFiles.create(file, job, c, false));
  }

  static RecordWriter<Writable, Writable> writer(final TFRecordWriter w) {
    return new RecordWriter<Writable, Writable>() {
      @Override
      public void write(Writable key, Writable value) throws IOException {
        RecordBytes.write(w, key, value);
      }

      @Override
      public void close(Reporter reporter) throws IOException {
        w.close();
      }
    };
  }
}
