package tfhadoop.tfrecord;

import java.io.IOException;

/**
 * A TFRecord that cannot be read: "truncated record at N" or "corrupted record at N" with the file
 * and the byte offset where the record starts, the wording TensorFlow's DataLoss errors use.
 */
public class CorruptRecordException extends IOException {
  private final String file;
  private final long offset;

  public CorruptRecordException(String kind, String file, long offset, String detail) {
    super(kind + " record at " + offset + " in " + file + (detail == null ? "" : " (" + detail + ")"));
    this.file = file;
    this.offset = offset;
  }

  public String file() {
    return file;
  }

  public long offset() {
    return offset;
  }
}
