package tfhadoop.tfrecord;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.Checksum;

/**
 * Follows the chain of record headers (length + length CRC, payload skipped) from a proven
 * boundary: how a split reader without an index establishes where its first record really starts.
 * Payloads within the 1 MiB buffer are stepped over in memory; longer ones are skipped with
 * {@link InputStream#skip} (a seek on Hadoop streams), so large records cost one small read each.
 */
final class ChainWalk {
  /** The chain broke: a length CRC mismatch, or a record running past the end of the file. */
  static final long BROKEN = -1;

  /**
   * Walks from proven boundary {@code from} (the stream is positioned there) to the first boundary
   * at or after {@code until} (or the file's end, which counts as a boundary); returns it, or
   * {@link #BROKEN}. With a {@code key}, leaves a checkpoint in {@link KnownBoundaries} every
   * {@link KnownBoundaries#MARK_INTERVAL} bytes and at the boundary it returns.
   */
  static long walk(InputStream in, long from, long until, long fileLength, String key) throws IOException {
    return new ChainWalk(in, from).run(from, until, fileLength, key);
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

  private long run(long from, long until, long fileLength, String key) throws IOException {
    long p = from;
    long mark = from;
    long last = from;
    while (p < until && p < fileLength) {
      if (fileLength - p < 16 || !ensure(p, 12)) {
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
      if (key != null && p - mark >= KnownBoundaries.MARK_INTERVAL) {
        KnownBoundaries.add(key, p);
        mark = p;
      }
      last = p;
      p += 16 + len;
    }
    if (key != null) {
      KnownBoundaries.add(key, last); // the last boundary before until: one step from the answer
    }
    return p;
  }

  /** Makes [p, p+n) available in buf (p never moves backwards); false at end of stream. */
  private boolean ensure(long p, int n) throws IOException {
    long have = bufStart + lim;
    if (p >= bufStart && p + n <= have) {
      return true;
    }
    int want = buf.length;
    if (p >= have) {
      skipFully(in, p - have);
      bufStart = p;
      lim = 0;
      want = 64 * 1024; // past a long payload: a small read, the next header may be as far again
    } else {
      int off = (int) (p - bufStart);
      System.arraycopy(buf, off, buf, 0, lim - off);
      lim -= off;
      bufStart = p;
    }
    while (lim < n) {
      int r = in.read(buf, lim, Math.max(n, want) - lim);
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
