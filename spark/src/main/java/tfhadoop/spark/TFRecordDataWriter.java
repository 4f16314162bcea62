package tfhadoop.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.DataType;
import tfhadoop.tfrecord.RecordIndex;
import tfhadoop.tfrecord.TFRecordFiles;
import tfhadoop.tfrecord.TFRecordOptions;
import tfhadoop.tfrecord.TFRecordWriter;

/**
 * One task attempt's writer: one file open at a time (rows arrive sorted by partition), under the job's temporary dir, named
 * with the partition, task attempt and job ids so attempts never collide. Nothing is visible in the
 * output until the driver's job commit moves committed files.
 */
final class TFRecordDataWriter implements DataWriter<InternalRow> {
  private final WriteJob job;
  private final Configuration conf;
  private final String fileName;
  private final RowEncoder encoder;
  private final Map<String, Integer> filesPerDir = new HashMap<>();
  private String currentDir;
  private TFRecordWriter current;
  private final List<String> written = new ArrayList<>();
  private final DataType[] partitionTypes;
  private long rows;

  TFRecordDataWriter(WriteJob job, Configuration conf, int partitionId, long taskId) {
    this.job = job;
    this.conf = conf;
    this.fileName = String.format("part-%05d-%s-%d%s", partitionId, job.jobId, taskId,
        job.options.tfrecord.compression.extension(conf));
    this.encoder = new RowEncoder(job.options.recordType, job.schema, job.dataOrdinals, job.options.exactColumns);
    this.partitionTypes = new DataType[job.partitionOrdinals.length];
    for (int i = 0; i < partitionTypes.length; i++) {
      partitionTypes[i] = job.schema.fields()[job.partitionOrdinals[i]].dataType();
    }
  }

  @Override
  public void write(InternalRow row) throws IOException {
    String dir = partitionDir(row);
    if (current == null || !dir.equals(currentDir)) {
      closeAll();
      // rows come sorted by partition (requiredOrdering); should a directory recur anyway, it gets
      // another file rather than a second open writer
      Integer n = filesPerDir.get(dir);
      filesPerDir.put(dir, n == null ? 1 : n + 1);
      String name = n == null ? fileName : fileName.replaceFirst("^part-", "part-c" + n + "-");
      String rel = dir.isEmpty() ? name : dir + "/" + name;
      TFRecordOptions o = job.options.tfrecord;
      current = TFRecordFiles.create(new Path(job.tempDir + "/" + rel), conf, o.compression, false, o.indexInterval);
      currentDir = dir;
      written.add(rel);
      if (TFRecordFiles.writesIndex(o.compression, o.indexInterval)) {
        // the record-boundary index, written when the file closes, is committed (moved) with it
        String side = RecordIndex.sidecarName(name);
        written.add(dir.isEmpty() ? side : dir + "/" + side);
      }
    }
    encoder.encode(row);
    current.write(encoder.buffer(), 0, encoder.length());
    rows++;
  }

  private String partitionDir(InternalRow row) {
    if (job.partitionOrdinals.length == 0) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < job.partitionOrdinals.length; i++) {
      int o = job.partitionOrdinals[i];
      if (i > 0) {
        b.append('/');
      }
      String v = row.isNullAt(o) ? null : String.valueOf(row.get(o, partitionTypes[i]));
      b.append(PartitionPaths.escape(job.schema.fields()[o].name())).append('=').append(PartitionPaths.escape(v));
    }
    return b.toString();
  }

  @Override
  public WriterCommitMessage commit() throws IOException {
    closeAll();
    return new WrittenFiles(new ArrayList<>(written), rows);
  }

  @Override
  public void abort() throws IOException {
    try {
      closeAll();
    } finally {
      for (String rel : written) {
        Path p = new Path(job.tempDir + "/" + rel);
        p.getFileSystem(conf).delete(p, false);
      }
    }
  }

  private void closeAll() throws IOException {
    TFRecordWriter w = current;
    current = null;
    if (w != null) {
      w.close();
    }
  }

  @Override
  public void close() throws IOException {
    closeAll();
  }
}
