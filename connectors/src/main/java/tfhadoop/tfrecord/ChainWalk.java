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

  /**
   * Walks from boundary {@code from} (the stream is positioned there) to the first boundary at or
   * after {@code until} (or the file's end, which counts as a boundary); returns it, or
   * {@link #BROKEN}, or {@link #NESTED} when {@code stopOnNested} and a payload looks like framing.
   */
  static long walk(InputStream in, long from, long until, long fileLength, boolean stopOnNested) throws IOException {
    return new ChainWalk(in, from).run(from, until, fileLength, stopOnNested);
  }

  private final InputStream in;
  private final byte[] buf = new byte[1 << 20];
  private final Checksum crc = Crc32c.newChecksum();
  private long bufStart;
  private int lim;

  private ChainWalk(InputStream in, long from) {
    this.in = in;
    this.bufStart = from;
  }

  /** Headers are parsed in a large buffer (one read call per MiB, not several per record). */
  private long run(long from, long until, long fileLength, boolean stopOnNested) throws IOException {
    long p = from;
    while (p < until && p < fileLength) {
      if (fileLength - p < 16) {
        return BROKEN;
      }
      int need = (int) Math.min(stopOnNested ? 24 : 12, fileLength - p);
      if (!ensure(p, need)) {
        return BROKEN;
      }
      int off = (int) (p - bufStart);
      if (Crc32c.maskedCrc(crc, buf, off, 8) != TFRecordReader.readIntLE(buf, off + 8)) {
        return BROKEN;
      }
      long len = TFRecordReader.readLongLE(buf, off);
      if (len < 0 || len > fileLength - p - 16) {
        return BROKEN;
      }
      if (stopOnNested && len >= 16 && Crc32c.maskedCrc(crc, buf, off + 12, 8) == TFRecordReader.readIntLE(buf, off + 20)
          && Long.compareUnsigned(TFRecordReader.readLongLE(buf, off + 12), len - 16) <= 0) {
        return NESTED;
      }
      p += 16 + len;
    }
    return p;
  }

  /** Makes [p, p+n) available in buf (p never moves backwards); false at end of stream. */
  private boolean ensure(long p, int n) throws IOException {
    long have = bufStart + lim;
    if (p >= bufStart && p + n <= have) {
      return true;
    }
    if (p >= have) {
      skipFully(in, p - have);
      bufStart = p;
      lim = 0;
    } else {
      int off = (int) (p - bufStart);
      System.arraycopy(buf, off, buf, 0, lim - off);
      lim -= off;
      bufStart = p;
    }
    while (lim < n) {
      int r = in.read(buf, lim, buf.length - lim);
      if (r < 0) {
        return false;
      }
      lim += r;
    }
    return true;
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
