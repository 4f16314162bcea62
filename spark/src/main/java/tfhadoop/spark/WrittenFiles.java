package tfhadoop.spark;

import java.util.List;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** A committed task's output: files relative to the job's temporary dir, and the row count. */
final class WrittenFiles implements WriterCommitMessage {
  private static final long serialVersionUID = 1L;
  final List<String> relativePaths;
  final long rows;

  WrittenFiles(List<String> relativePaths, long rows) {
    this.relativePaths = relativePaths;
    this.rows = rows;
  }
}
