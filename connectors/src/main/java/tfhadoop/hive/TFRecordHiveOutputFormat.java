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
import tfhadoop.tfrecord.TFRecordOptions;
import tfhadoop.tfrecord.TFRecordWriter;

/**
 * Hive's output format for TFRecord tables: writes exactly the file Hive names (Hive moves files by
 * those names at commit). Hive's own compression flag is ignored, so a cluster-wide
 * {@code hive.exec.compress.output} never produces files TensorFlow cannot read. Compression comes
 * from the table property (or job setting) {@code tfrecord.compression}; since readers recognize
 * compression by extension and Hive picks the names, it also needs
 * {@code hive.output.file.extension} set to the matching {@code .tfrecord.gz} /
 * {@code .tfrecord.deflate}, and the write fails with that advice otherwise.
 */
public class TFRecordHiveOutputFormat extends TFRecordOutputFormat implements HiveOutputFormat<Writable, Writable> {
  @Override
  public FileSinkOperator.RecordWriter getHiveRecordWriter(JobConf jc, Path finalOutPath,
      Class<? extends Writable> valueClass, boolean isCompressed, Properties tableProperties, Progressable progress)
      throws IOException {
    Compression c = compression(jc, tableProperties);
    String ext = c.extension(jc);
    if (c.kind != Compression.Kind.NONE && !finalOutPath.getName().endsWith(ext)) {
      throw new IOException("tfrecord.compression=" + c + " needs Hive output files named *" + ext
          + " so that readers recognize the compression; set hive.output.file.extension=" + ext
          + " (Hive would write " + finalOutPath.getName() + ")");
    }
    final TFRecordWriter w = TFRecordFiles.create(finalOutPath, jc, c, true);
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

  /** Table properties first, then the job's configuration (never Hive's compression flags). */
  static Compression compression(final JobConf jc, final Properties table) {
    return TFRecordOptions.parse(new TFRecordOptions.Lookup() {
      @Override
      public String get(String key) {
        if (!key.startsWith("tfrecord.")) {
          return null;
        }
        String v = table == null ? null : table.getProperty(key);
        return v != null ? v : jc.get(key);
      }
    }).compression;
  }
}
