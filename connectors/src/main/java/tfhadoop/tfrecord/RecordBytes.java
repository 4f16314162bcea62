package tfhadoop.tfrecord;

import java.io.IOException;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.Writable;

/** Picks the record bytes out of an output (key, value) pair for the Hadoop output formats. */
public final class RecordBytes {
  private RecordBytes() {}

  public static void write(TFRecordWriter w, Writable key, Writable value) throws IOException {
    if (!writeOne(w, value) && !writeOne(w, key)) {
      throw new IOException("TFRecord output needs a BytesWritable (or Text) key or value, got "
          + name(key) + " / " + name(value));
    }
  }

  private static boolean writeOne(TFRecordWriter w, Writable x) throws IOException {
    if (x instanceof BytesWritable) {
      BytesWritable b = (BytesWritable) x;
      w.write(b.getBytes(), 0, b.getLength());
      return true;
    }
    if (x instanceof Text) {
      Text t = (Text) x;
      w.write(t.getBytes(), 0, t.getLength());
      return true;
    }
    return false;
  }

  private static String name(Object o) {
    return o == null ? "null" : o.getClass().getName();
  }
}
