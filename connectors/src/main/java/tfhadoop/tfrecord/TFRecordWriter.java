package tfhadoop.tfrecord;

import java.io.IOException;
import java.io.OutputStream;
import java.util.zip.Checksum;

/**
 * Writes TFRecord framing to a stream: length (u64 LE), masked CRC32C of the length, data, masked
 * CRC32C of the data. Compression, if any, is the caller's stream.
 */
public final class TFRecordWriter implements AutoCloseable {
  private final OutputStream out;
  private final Checksum crc = Crc32c.newChecksum();
  private final byte[] header = new byte[12];
  private final byte[] footer = new byte[4];
  private long records;
  private long bytes;
  private RecordIndex.Builder index;
  private IndexSink sink;

  /** Receives the finished record-boundary index once the data stream is closed. */
  public interface IndexSink {
    void write(RecordIndex index) throws IOException;
  }

  public TFRecordWriter(OutputStream out) {
    this.out = out;
  }

  /** Also builds a record-boundary index (an entry every ~interval bytes) handed to sink on close. */
  public TFRecordWriter(OutputStream out, long interval, IndexSink sink) {
    this.out = out;
    this.index = new RecordIndex.Builder(interval);
    this.sink = sink;
  }

  public void write(byte[] data) throws IOException {
    write(data, 0, data.length);
  }

  public void write(byte[] data, int off, int len) throws IOException {
    if (index != null) {
      index.beforeRecord(records, bytes);
    }
    long n = len;
    for (int i = 0; i < 8; i++) {
      header[i] = (byte) (n >>> (8 * i));
    }
    putIntLE(header, 8, Crc32c.maskedCrc(crc, header, 0, 8));
    putIntLE(footer, 0, Crc32c.maskedCrc(crc, data, off, len));
    out.write(header, 0, 12);
    out.write(data, off, len);
    out.write(footer, 0, 4);
    records++;
    bytes += 16L + len;
  }

  static void putIntLE(byte[] b, int off, int v) {
    b[off] = (byte) v;
    b[off + 1] = (byte) (v >>> 8);
    b[off + 2] = (byte) (v >>> 16);
    b[off + 3] = (byte) (v >>> 24);
  }

  public long records() {
    return records;
  }

  /** Framed bytes written (before any compression the stream applies). */
  public long bytes() {
    return bytes;
  }

  @Override
  public void close() throws IOException {
    out.close();
    IndexSink s = sink;
    sink = null;
    if (s != null) {
      s.write(index.build(bytes, bytes, records));
    }
  }
}
