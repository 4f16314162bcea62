package tfhadoop.tfrecord;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.Checksum;

/**
 * Reads TFRecord framing from a stream, optionally as one split of an uncompressed file.
 *
 * <p>Split rule: a record belongs to the split in which its first byte lies. A split that does not
 * start at 0 (and is not told its start is a boundary, as with a record-boundary index) first
 * finds a resync candidate: the first offset {@code >= start} whose length and data CRCs both
 * match. A payload can hold a valid frame (a record that is itself a TFRecord stream), so the
 * candidate is not trusted blindly: the reader walks the header chain from it through the split
 * (and {@link #LOOKAHEAD} beyond); if that chain breaks, or a payload on it starts with a frame
 * header (nested framing), or {@code verifyAlways}, the candidate is set aside and the first
 * boundary is established by walking the true chain from the file start. When a split stops
 * because the next record starts at or past its end, it still validates that record, so
 * corruption at a split boundary is reported once, by the split that read up to it.
 * docs/tfrecord-jvm.md "Exact splits" states the guarantee and its cost.
 *
 * <p>Corrupt input raises {@link CorruptRecordException} ("truncated record at N" / "corrupted
 * record at N") unless {@code skipCorrupt}, in which case the reader resyncs after the bad record
 * and counts the skipped records and bytes.
 *
 * <p>The current record is a view into an internal buffer, valid until the next {@link #next()}.
 */
public final class TFRecordReader implements Closeable {
  private enum State { OK, EOF, TRUNCATED, CORRUPT }

  private final InputStream in;
  private final String file;
  private final long start;
  private final long end;
  private final long fileLength;
  private final boolean skipCorrupt;
  private final long maxRecordBytes;
  private final Checksum crc = Crc32c.newChecksum();
  private final boolean exactStart;
  private final Opener opener;
  private final boolean verifyAlways;
  private boolean verifiedFromStart;

  /** How far past its end a split checks the chain it resynced on (when no index is present). */
  public static final long LOOKAHEAD = 1L << 20;

  /** Opens the same file positioned at an offset, for the verification walks. */
  public interface Opener {
    InputStream open(long offset) throws IOException;
  }

  private byte[] buf;
  private int lim;
  private long bufStart;
  private boolean eof;

  private boolean started;
  private boolean done;
  private long position;
  private String problem;

  private int recStart;
  private int recLength;
  private long recOffset;

  private long records;
  private long corruptRecords;
  private long skippedBytes;

  /**
   * @param in stream positioned at {@code start}
   * @param file name used in error messages
   * @param start offset of the split (0 for a whole file or stream; no resync at 0)
   * @param end records starting at or past this offset belong to the next split
   *     ({@code Long.MAX_VALUE} for a whole stream)
   * @param fileLength total length, or -1 if unknown (compressed stream)
   */
  public TFRecordReader(InputStream in, String file, long start, long end, long fileLength,
      boolean skipCorrupt, long maxRecordBytes) {
    this(in, file, start, end, fileLength, skipCorrupt, maxRecordBytes, false, null, false);
  }

  /**
   * @param exactStart {@code start} is known to be a record boundary (an indexed one): no resync
   * @param opener reopens the file for verifying a resync candidate; null trusts the candidate
   * @param verifyAlways establish the first boundary from the file start in every split
   */
  public TFRecordReader(InputStream in, String file, long start, long end, long fileLength,
      boolean skipCorrupt, long maxRecordBytes, boolean exactStart, Opener opener, boolean verifyAlways) {
    this.exactStart = exactStart;
    this.opener = opener;
    this.verifyAlways = verifyAlways;
    this.in = in;
    this.file = file;
    this.start = start;
    this.end = end;
    this.fileLength = fileLength;
    this.skipCorrupt = skipCorrupt;
    this.maxRecordBytes = Math.min(maxRecordBytes, Integer.MAX_VALUE - 64);
    this.buf = new byte[64 * 1024];
    this.bufStart = start;
    this.position = start;
  }

  /** A reader over a whole stream (no split, strict). */
  public TFRecordReader(InputStream in, String file) {
    this(in, file, 0, Long.MAX_VALUE, -1, false, Integer.MAX_VALUE);
  }

  /** Advances to the next record of this split; false at the end. */
  public boolean next() throws IOException {
    if (done) {
      return false;
    }
    if (!started) {
      started = true;
      if (start > 0 && !exactStart) {
        long p = findValid(start, end);
        if (p < 0 || p >= end) {
          done = true;
          return false;
        }
        if (opener != null && (verifyAlways || !chainHolds(p))) {
          long t = trueBoundary();
          if (t >= 0) {
            p = t;
            if (p >= end) {
              done = true;
              return false;
            }
          }
        }
        position = p;
      }
    }
    while (true) {
      boolean boundary = position >= end;
      State s = check(position);
      if (s == State.OK && !boundary) {
        int off = (int) (position - bufStart);
        recStart = off + 12;
        recLength = (int) readLongLE(buf, off);
        recOffset = position;
        position += 16L + recLength;
        records++;
        return true;
      }
      if (s == State.OK || s == State.EOF) {
        done = true;
        return false;
      }
      if (!skipCorrupt) {
        done = true;
        throw new CorruptRecordException(s == State.TRUNCATED ? "truncated" : "corrupted", file, position, problem);
      }
      long bad = position;
      long next = findValid(bad + 1, Long.MAX_VALUE);
      long resumeAt = next >= 0 ? next : streamEnd();
      corruptRecords++;
      skippedBytes += resumeAt - bad;
      if (boundary || next < 0 || next >= end) {
        done = true;
        return false;
      }
      position = next;
    }
  }

  /**
   * Whether the header chain from candidate {@code c} holds through the split and LOOKAHEAD past
   * it, with no payload that starts like a frame (the sign of records holding TFRecord streams).
   */
  private boolean chainHolds(long c) throws IOException {
    long until = end == Long.MAX_VALUE ? fileLength : Math.min(fileLength, end + LOOKAHEAD);
    try (InputStream s = opener.open(c)) {
      return ChainWalk.walk(s, c, until, fileLength, true) >= 0;
    } catch (java.io.EOFException e) {
      return false;
    }
  }

  /**
   * The first real record boundary at or after {@code start}, found by walking the header chain
   * from the file start; -1 when that chain breaks before it (the corruption is the earlier
   * split's to report; this split then keeps its candidate, as whole-file reading would fail anyway).
   */
  private long trueBoundary() throws IOException {
    verifiedFromStart = true;
    try (InputStream s = opener.open(0)) {
      return ChainWalk.walk(s, 0, start, fileLength, false);
    } catch (java.io.EOFException e) {
      return -1;
    }
  }

  /** True when this split established its first boundary by walking the chain from the file start. */
  public boolean verifiedFromStart() {
    return verifiedFromStart;
  }

  /** Buffer holding the current record's data. */
  public byte[] buffer() {
    return buf;
  }

  public int recordStart() {
    return recStart;
  }

  public int recordLength() {
    return recLength;
  }

  /** Byte offset (in the uncompressed stream) where the current record's header starts. */
  public long recordOffset() {
    return recOffset;
  }

  /** A copy of the current record's data. */
  public byte[] copyRecord() {
    byte[] r = new byte[recLength];
    System.arraycopy(buf, recStart, r, 0, recLength);
    return r;
  }

  public long records() {
    return records;
  }

  public long corruptRecords() {
    return corruptRecords;
  }

  public long skippedBytes() {
    return skippedBytes;
  }

  /** Offset of the next record to read, for progress reporting. */
  public long position() {
    return position;
  }

  public String file() {
    return file;
  }

  /** Validates the record at {@code p}; leaves it buffered when OK. */
  private State check(long p) throws IOException {
    long avail = fill(p, 12);
    if (avail == 0) {
      return State.EOF;
    }
    if (avail < 12) {
      problem = "partial header of " + avail + " bytes at end of file";
      return State.TRUNCATED;
    }
    int off = (int) (p - bufStart);
    if (Crc32c.maskedCrc(crc, buf, off, 8) != readIntLE(buf, off + 8)) {
      problem = "length CRC mismatch";
      return State.CORRUPT;
    }
    long len = readLongLE(buf, off);
    if (len < 0 || len > maxRecordBytes) {
      problem = "record length " + Long.toUnsignedString(len) + " exceeds limit " + maxRecordBytes;
      return State.CORRUPT;
    }
    if (fileLength >= 0 && p + 16 + len > fileLength) {
      problem = "record of " + len + " bytes runs past end of file at " + fileLength;
      return State.TRUNCATED;
    }
    long need = 16 + len;
    if (fill(p, need) < need) {
      problem = "record of " + len + " bytes runs past end of stream";
      return State.TRUNCATED;
    }
    off = (int) (p - bufStart);
    if (Crc32c.maskedCrc(crc, buf, off + 12, (int) len) != readIntLE(buf, off + 12 + (int) len)) {
      problem = "data CRC mismatch";
      return State.CORRUPT;
    }
    return State.OK;
  }

  /** First offset in [from, limit) holding a valid record; limit if none before it; -1 at EOF. */
  private long findValid(long from, long limit) throws IOException {
    String saved = problem;
    for (long c = from; c < limit; c++) {
      if (fill(c, 12) < 12) {
        problem = saved;
        return -1;
      }
      int off = (int) (c - bufStart);
      if (Crc32c.maskedCrc(crc, buf, off, 8) != readIntLE(buf, off + 8)) {
        continue;
      }
      if (check(c) == State.OK) {
        problem = saved;
        return c;
      }
    }
    problem = saved;
    return limit;
  }

  /** Absolute offset of the end of the stream (reads to EOF). */
  private long streamEnd() throws IOException {
    if (fileLength >= 0) {
      return fileLength;
    }
    long p = bufStart + lim;
    while (fill(p, 1) > 0) {
      p = bufStart + lim;
    }
    return bufStart + lim;
  }

  /**
   * Makes [p, p+n) available in the buffer if the stream has it; returns how many of those bytes
   * are available (fewer only at end of stream). Offsets only move forward.
   */
  private long fill(long p, long n) throws IOException {
    long off = p - bufStart;
    if (off <= lim && lim - off >= n) {
      return n;
    }
    if (off > lim) {
      // skip forward in the stream (only when asked past what is buffered)
      long skip = off - lim;
      bufStart += lim;
      lim = 0;
      while (skip > 0 && !eof) {
        int r = in.read(buf, 0, (int) Math.min(buf.length, skip));
        if (r < 0) {
          eof = true;
        } else {
          skip -= r;
          bufStart += r;
        }
      }
      if (skip > 0) {
        return 0;
      }
      off = 0;
    }
    if (eof) {
      return Math.min(n, lim - off);
    }
    int keep = (int) (lim - off);
    if (off > 0) {
      System.arraycopy(buf, (int) off, buf, 0, keep);
      bufStart += off;
      lim = keep;
    }
    while (lim < n) {
      if (lim == buf.length) {
        // grow by doubling as data arrives, so a bogus length never allocates more than ~2x the data
        long size = Math.min(n, Math.min((long) buf.length * 2, Integer.MAX_VALUE - 16));
        buf = java.util.Arrays.copyOf(buf, (int) size);
      }
      int r = in.read(buf, lim, buf.length - lim);
      if (r < 0) {
        eof = true;
        break;
      }
      lim += r;
    }
    return Math.min(n, lim);
  }

  static long readLongLE(byte[] b, int off) {
    return (readIntLE(b, off) & 0xffffffffL) | ((long) readIntLE(b, off + 4) << 32);
  }

  static int readIntLE(byte[] b, int off) {
    return (b[off] & 0xff) | (b[off + 1] & 0xff) << 8 | (b[off + 2] & 0xff) << 16 | (b[off + 3] & 0xff) << 24;
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
