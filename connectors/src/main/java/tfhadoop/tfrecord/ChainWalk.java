package tfhadoop.tfrecord;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.Checksum;

/**
 * Follows the chain of record headers (length + length CRC, payload skipped) from a boundary, the
 * cheap way a split reader establishes or checks where records really start.
 */
final class ChainWalk {
  /** The chain broke: a length CRC mismatch, or a record running past the end of the file. */
  static final long BROKEN = -1;
  /** A record's payload starts with a valid-looking frame header (a nested TFRecord stream). */
  static final long NESTED = -2;

  private ChainWalk() {}

  /**
   * Walks from boundary {@code from} (the stream is positioned there) to the first boundary at or
   * after {@code until} (or the file's end, which counts as a boundary); returns it, or
   * {@link #BROKEN}, or {@link #NESTED} when {@code stopOnNested} and a payload looks like framing.
   */
  static long walk(InputStream in, long from, long until, long fileLength, boolean stopOnNested) throws IOException {
    Checksum crc = Crc32c.newChecksum();
    byte[] h = new byte[24];
    long p = from;
    while (p < until && p < fileLength) {
      if (fileLength - p < 16) {
        return BROKEN;
      }
      readFully(in, h, 12);
      if (Crc32c.maskedCrc(crc, h, 0, 8) != TFRecordReader.readIntLE(h, 8)) {
        return BROKEN;
      }
      long len = TFRecordReader.readLongLE(h, 0);
      if (len < 0 || len > fileLength - p - 16) {
        return BROKEN;
      }
      long skip = len + 4;
      if (stopOnNested && len >= 16) {
        readFully(in, h, 12, 12);
        skip -= 12;
        if (Crc32c.maskedCrc(crc, h, 12, 8) == TFRecordReader.readIntLE(h, 20)
            && Long.compareUnsigned(TFRecordReader.readLongLE(h, 12), len - 16) <= 0) {
          return NESTED;
        }
      }
      skipFully(in, skip);
      p += 16 + len;
    }
    return p;
  }

  private static void readFully(InputStream in, byte[] b, int n) throws IOException {
    readFully(in, b, 0, n);
  }

  private static void readFully(InputStream in, byte[] b, int off, int n) throws IOException {
    while (n > 0) {
      int r = in.read(b, off, n);
      if (r < 0) {
        throw new EOFException();
      }
      off += r;
      n -= r;
    }
  }

  private static void skipFully(InputStream in, long n) throws IOException {
    while (n > 0) {
      long s = in.skip(n);
      if (s <= 0) {
        if (in.read() < 0) {
          throw new EOFException();
        }
        s = 1;
      }
      n -= s;
    }
  }
}
