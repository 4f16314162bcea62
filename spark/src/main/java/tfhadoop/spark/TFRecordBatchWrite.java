package tfhadoop.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Job-level commit protocol. Tasks write under {@code <root>/_temporary/tfrecord-<job>}; only the
 * files of committed task attempts (Spark's commit coordinator admits one per partition) are moved
 * into place at job commit, after the overwrite (truncate: everything; dynamic: the partitions this
 * job wrote) has removed old data. Aborting deletes the temporary dir, leaving the output untouched.
 */
final class TFRecordBatchWrite implements BatchWrite {
  enum Mode { APPEND, TRUNCATE, DYNAMIC }

  private static final Logger LOG = LoggerFactory.getLogger(TFRecordBatchWrite.class);
  private final WriteJob job;
  private final Mode mode;
  private final Configuration conf;

  TFRecordBatchWrite(WriteJob job, Mode mode, Configuration conf) {
    this.job = job;
    this.mode = mode;
    this.conf = conf;
  }

  @Override
  public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    return new TFRecordWriterFactory(job, new SerializableConf(conf));
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    try {
      Path root = new Path(job.root);
      FileSystem fs = root.getFileSystem(conf);
      long rows = 0;
      Set<String> files = new LinkedHashSet<>();
      Set<String> partitionDirs = new LinkedHashSet<>();
      for (WriterCommitMessage m : messages) {
        if (m == null) {
          continue;
        }
        WrittenFiles w = (WrittenFiles) m;
        rows += w.rows;
        for (String rel : w.relativePaths) {
          files.add(rel);
          int slash = rel.lastIndexOf('/');
          if (slash > 0) {
            partitionDirs.add(rel.substring(0, slash));
          }
        }
      }
      fs.mkdirs(root);
      if (mode == Mode.TRUNCATE) {
        for (FileStatus st : fs.listStatus(root)) {
          if (!st.getPath().getName().equals("_temporary")) {
            fs.delete(st.getPath(), true);
          }
        }
      } else if (mode == Mode.DYNAMIC) {
        for (String dir : partitionDirs) {
          fs.delete(new Path(root, dir), true);
        }
      }
      for (String rel : files) {
        Path dst = new Path(root, rel);
        fs.mkdirs(dst.getParent());
        if (!fs.rename(new Path(job.tempDir + "/" + rel), dst)) {
          throw new IOException("could not move " + job.tempDir + "/" + rel + " to " + dst);
        }
      }
      cleanTemp(fs);
      fs.create(new Path(root, "_SUCCESS"), true).close();
      if (rows == 0) {
        LOG.warn("tfrecord write to " + root + " produced no data: 0 rows, no files written");
      } else {
        LOG.info("tfrecord write to " + root + ": " + rows + " rows in " + files.size() + " files");
      }
    } catch (IOException e) {
      throw new UncheckedIOException("tfrecord job commit to " + job.root + " failed", e);
    }
  }

  @Override
  public void abort(WriterCommitMessage[] messages) {
    try {
      cleanTemp(new Path(job.root).getFileSystem(conf));
    } catch (IOException e) {
      LOG.warn("could not delete " + job.tempDir, e);
    }
  }

  private void cleanTemp(FileSystem fs) throws IOException {
    Path temp = new Path(job.tempDir);
    fs.delete(temp, true);
    Path parent = temp.getParent();
    FileStatus[] left = fs.exists(parent) ? fs.listStatus(parent) : null;
    if (left != null && left.length == 0) {
      fs.delete(parent, false);
    }
  }
}
