package tfhadoop.tfrecord;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.Checksum;

/**
 * Reads TFRecord framing from a stream, optionally as one split of an uncompressed file.
 *
 * <p>Split rule: a record belongs to the split in which its first byte lies. A split that does not
 * start at 0 and is not told its start is a boundary (as with a record-boundary index) never
 * guesses: a payload can hold valid frames (a record that is itself a TFRecord stream), so no
 * offset whose checksums match is trusted. Instead the reader walks the header chain (lengths and
 * length CRCs, payloads skipped) from the nearest proven boundary, the file start or one this JVM
 * already proved for the same file version ({@link KnownBoundaries}), to its first record at or
 * after {@code start}. Only if that chain breaks before the split (the file is corrupt there,
 * and the split holding the break reports it) does the reader fall back to resyncing on the first
 * offset whose length and data CRCs match. A split that started on a proven boundary stops at the
 * first record at or past its end without reading it (the next split starts exactly there and
 * reports it if it is corrupt); one that resynced after corruption still validates that record, so
 * corruption at a split boundary is reported once. docs/tfrecord-jvm.md "Exact splits" states
 * the guarantee and its cost.
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
  private final String boundaryKey;
  private long walkedBytes = -1;
  private boolean proven;
  private long lastMark;

  /** Opens the same file positioned at an offset, for the header walk. */
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
    this(in, file, start, end, fileLength, skipCorrupt, maxRecordBytes, false, null, null);
  }

  /**
   * @param exactStart {@code start} is known to be a record boundary (an indexed one): no walk
   * @param opener reopens the file for the header walk that finds the first boundary; null falls
   *     back to trusting the resync candidate (a raw stream that cannot be reopened)
   * @param boundaryKey the file version in {@link KnownBoundaries} (proven boundaries are reused
   *     and left there); null walks from the file start and remembers nothing
   */
  public TFRecordReader(InputStream in, String file, long start, long end, long fileLength,
      boolean skipCorrupt, long maxRecordBytes, boolean exactStart, Opener opener, String boundaryKey) {
    this.exactStart = exactStart;
    this.opener = opener;
    this.boundaryKey = boundaryKey;
    this.proven = start == 0 || exactStart;
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
        long p = opener != null ? walkToStart() : -1;
        if (p < 0) {
          p = findValid(start, end);
          if (p < 0 || p >= end) {
            done = true;
            return false;
          }
        } else if (p >= end || p >= fileLength) {
          done = true;
          return false;
        }
        position = p;
        lastMark = p;
      }
    }
    while (true) {
      boolean boundary = position >= end;
      if (boundary && proven && (exactStart || opener != null)) {
        // the next split reaches this very boundary (by the index or its walk) and owns the record
        if (boundaryKey != null && records > 0) {
          KnownBoundaries.add(boundaryKey, recOffset); // its walk is one header from here
        }
        done = true;
        return false;
      }
      State s = check(position);
      if (s == State.OK && !boundary) {
        if (proven && boundaryKey != null && position - lastMark >= KnownBoundaries.MARK_INTERVAL) {
          KnownBoundaries.add(boundaryKey, position);
          lastMark = position;
        }
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
      proven = false; // after a resync the chain is a guess again: leave no boundaries behind
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
   * The first record boundary at or after {@code start}, found by walking the header chain from
   * the nearest proven boundary before it; -1 when that chain breaks first (the file is corrupt
   * before this split: the split holding the break reports it, as a whole-file read would).
   */
  private long walkToStart() throws IOException {
    long from = boundaryKey == null ? 0 : KnownBoundaries.floor(boundaryKey, start);
    long t = walk(from);
    if (t < 0 && from > 0) {
      from = 0; // a remembered boundary that does not hold: walk the whole chain before giving up
      t = walk(0);
    }
    walkedBytes = t < 0 ? -1 : t - from;
    proven = t >= 0;
    return t;
  }

  private long walk(long from) throws IOException {
    try (InputStream s = opener.open(from)) {
      return ChainWalk.walk(s, from, start, fileLength, boundaryKey);
    } catch (java.io.EOFException e) {
      return ChainWalk.BROKEN;
    }
  }

  /**
   * Bytes of file this split's header walk covered to reach its first record (0 when it started on
   * a proven boundary), or -1 when it did not walk (a split at 0, an indexed split) or the walk broke.
   */
  public long walkedBytes() {
    return walkedBytes;
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
