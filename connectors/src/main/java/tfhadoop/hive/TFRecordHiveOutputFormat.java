package tfhadoop.hive;

import java.io.IOException;
import java.util.Properties;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.ql.exec.FileSinkOperator;
import org.apache.hadoop.hive.ql.io.HiveOutputFormat;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.util.Progressable;
import tfhadoop.mapred.TFRecordOutputFormat;
import tfhadoop.tfrecord.Compression;
import tfhadoop.tfrecord.RecordBytes;
import tfhadoop.tfrecord.TFRecordFiles;
import tfhadoop.tfrecord.TFRecordWriter;

/**
 * Hive's output format for TFRecord tables: writes exactly the file Hive names (Hive moves files by
 * those names at commit), uncompressed. Hive's own compression flag is ignored so that a
 * cluster-wide {@code hive.exec.compress.output} never produces files TensorFlow cannot read, and
 * since Hive picks the file names, compressed output (whose extension would have to change) is not
 * offered here.
 */
public class TFRecordHiveOutputFormat extends TFRecordOutputFormat implements HiveOutputFormat<Writable, Writable> {
  @Override
  public FileSinkOperator.RecordWriter getHiveRecordWriter(JobConf jc, Path finalOutPath,
      Class<? extends Writable> valueClass, boolean isCompressed, Properties tableProperties, Progressable progress)
      throws IOException {
    final TFRecordWriter w = TFRecordFiles.create(finalOutPath, jc, Compression.NONE, true);
    return new FileSinkOperator.RecordWriter() {
      @Override
      public void write(Writable value) throws IOException {
        RecordBytes.write(w, null, value);
      }

      @Override
      public void close(boolean abort) throws IOException {
        w.close();
      }
    };
  }
}
