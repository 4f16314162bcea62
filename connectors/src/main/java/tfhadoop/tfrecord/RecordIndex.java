package tfhadoop.tfrecord;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The coarse record-boundary index: a hidden sidecar {@code .<file>.tfrindex} next to a data file
 * holding (record ordinal, record offset, member offset) every ~interval bytes, so a split or a
 * task starts on a real record boundary with no scan. Layout (little-endian; docs/tfrecord-jvm.md
 * "Record-boundary index" is the one description, connectors/python/tfhadoop/connectors/splits.py the Python
 * side):
 *
 * <pre>
 *  0  8  magic "TFRIDX\0\1"
 *  8  4  u32 version (1)
 * 12  4  u32 compression of the data file: 0 none, 1 gzip, 2 zlib (then one member per entry)
 * 16  8  u64 length of the data file as stored
 * 24  8  u64 length of the (uncompressed) record stream
 * 32  8  u64 number of records
 * 40  8  u64 interval the writer aimed at
 * 48  8  u64 n, the number of entries
 * 56 24n entries: u64 ordinal of the record, u64 its offset in the record stream, u64 offset of
 *        the compressed member starting with it in the stored file (= offset when uncompressed)
 *  .  4  u32 masked CRC32C of all the bytes before it
 * </pre>
 *
 * Entry 0 is always (0, 0, 0); entries are strictly increasing in all three fields.
 */
public final class RecordIndex {
  private static final Logger LOG = LoggerFactory.getLogger(RecordIndex.class);
  public static final String SUFFIX = ".tfrindex";
  public static final long DEFAULT_INTERVAL = 1L << 20;
  static final byte[] MAGIC = {'T', 'F', 'R', 'I', 'D', 'X', 0, 1};
  static final int HEADER = 56;
  static final int ENTRY = 24;

  public final int compression;
  public final long dataLength;
  public final long streamLength;
  public final long records;
  public final long interval;
  final long[] ordinals;
  final long[] offsets;
  final long[] members;

  RecordIndex(int compression, long dataLength, long streamLength, long records, long interval,
      long[] ordinals, long[] offsets, long[] members) {
    this.compression = compression;
    this.dataLength = dataLength;
    this.streamLength = streamLength;
    this.records = records;
    this.interval = interval;
    this.ordinals = ordinals;
    this.offsets = offsets;
    this.members = members;
  }

  /** The sidecar's path for a data file: a hidden name, so Hadoop, Spark and the peers skip it. */
  public static Path sidecar(Path data) {
    return new Path(data.getParent(), sidecarName(data.getName()));
  }

  public static String sidecarName(String dataName) {
    return "." + dataName + SUFFIX;
  }

  public int size() {
    return offsets.length;
  }

  public long offset(int i) {
    return offsets[i];
  }

  public long ordinal(int i) {
    return ordinals[i];
  }

  /** First indexed boundary at or after {@code pos}; the stream length when there is none. */
  public long boundaryAtOrAfter(long pos) {
    int i = Arrays.binarySearch(offsets, pos);
    if (i < 0) {
      i = -i - 1;
    }
    return i < offsets.length ? offsets[i] : streamLength;
  }

  /** Last indexed boundary at or before {@code pos} (0 at worst). */
  public long boundaryAtOrBefore(long pos) {
    int i = Arrays.binarySearch(offsets, pos);
    if (i < 0) {
      i = -i - 2;
    }
    return i < 0 ? 0 : offsets[i];
  }

  /** Accumulates entries while a writer frames records; {@link #build} seals them. */
  public static final class Builder {
    private final long interval;
    private long[] ordinals = new long[16];
    private long[] offsets = new long[16];
    private int n;

    public Builder(long interval) {
      this.interval = Math.max(1, interval);
      add(0, 0);
    }

    /** Called before a record is framed at stream offset {@code pos}. */
    public void beforeRecord(long ordinal, long pos) {
      if (pos - offsets[n - 1] >= interval) {
        add(ordinal, pos);
      }
    }

    private void add(long ordinal, long pos) {
      if (n == offsets.length) {
        ordinals = Arrays.copyOf(ordinals, n * 2);
        offsets = Arrays.copyOf(offsets, n * 2);
      }
      ordinals[n] = ordinal;
      offsets[n] = pos;
      n++;
    }

    public RecordIndex build(long dataLength, long streamLength, long records) {
      long[] off = Arrays.copyOf(offsets, n);
      return new RecordIndex(0, dataLength, streamLength, records, interval, Arrays.copyOf(ordinals, n), off, off);
    }
  }

  public byte[] toBytes() {
    byte[] b = new byte[HEADER + ENTRY * offsets.length + 4];
    System.arraycopy(MAGIC, 0, b, 0, 8);
    TFRecordWriter.putIntLE(b, 8, 1);
    TFRecordWriter.putIntLE(b, 12, compression);
    putLong(b, 16, dataLength);
    putLong(b, 24, streamLength);
    putLong(b, 32, records);
    putLong(b, 40, interval);
    putLong(b, 48, offsets.length);
    for (int i = 0; i < offsets.length; i++) {
      int at = HEADER + ENTRY * i;
      putLong(b, at, ordinals[i]);
      putLong(b, at + 8, offsets[i]);
      putLong(b, at + 16, members[i]);
    }
    int end = b.length - 4;
    TFRecordWriter.putIntLE(b, end, Crc32c.maskedCrc(Crc32c.newChecksum(), b, 0, end));
    return b;
  }

  /** Parses a sidecar; throws IOException naming {@code where} when it is not a valid index. */
  public static RecordIndex parse(byte[] b, String where) throws IOException {
    if (b.length < HEADER + 4 || !Arrays.equals(Arrays.copyOf(b, 8), MAGIC)) {
      throw new IOException(where + " is not a tfrecord index (bad magic)");
    }
    int end = b.length - 4;
    if (Crc32c.maskedCrc(Crc32c.newChecksum(), b, 0, end) != TFRecordReader.readIntLE(b, end)) {
      throw new IOException(where + ": index checksum mismatch");
    }
    int version = TFRecordReader.readIntLE(b, 8);
    if (version != 1) {
      throw new IOException(where + ": index version " + version + " is not supported (1 is)");
    }
    long n = TFRecordReader.readLongLE(b, 48);
    if (n < 1 || HEADER + ENTRY * n + 4 != b.length) {
      throw new IOException(where + ": index holds " + n + " entries but is " + b.length + " bytes");
    }
    long[] ord = new long[(int) n];
    long[] off = new long[(int) n];
    long[] mem = new long[(int) n];
    for (int i = 0; i < n; i++) {
      int at = HEADER + ENTRY * i;
      ord[i] = TFRecordReader.readLongLE(b, at);
      off[i] = TFRecordReader.readLongLE(b, at + 8);
      mem[i] = TFRecordReader.readLongLE(b, at + 16);
      boolean ok = i == 0 ? ord[0] == 0 && off[0] == 0 && mem[0] == 0
          : ord[i] > ord[i - 1] && off[i] > off[i - 1] && mem[i] > mem[i - 1];
      if (!ok) {
        throw new IOException(where + ": index entry " + i + " is out of order");
      }
    }
    return new RecordIndex(TFRecordReader.readIntLE(b, 12), TFRecordReader.readLongLE(b, 16),
        TFRecordReader.readLongLE(b, 24), TFRecordReader.readLongLE(b, 32), TFRecordReader.readLongLE(b, 40),
        ord, off, mem);
  }

  /** Writes the sidecar of {@code data} (replacing an older one). */
  public void write(FileSystem fs, Path data) throws IOException {
    try (OutputStream out = fs.create(sidecar(data), true)) {
      out.write(toBytes());
    }
  }

  /**
   * The index of an uncompressed data file, or null when there is none or it does not describe the
   * file as it is now (other length, older than the data, unreadable): those are logged and ignored.
   */
  public static RecordIndex load(FileSystem fs, FileStatus data) {
    Path side = sidecar(data.getPath());
    FileStatus st;
    try {
      st = fs.getFileStatus(side);
    } catch (IOException e) {
      return null;
    }
    try {
      if (st.getLen() > (1L << 30)) {
        throw new IOException(side + " is too large for an index");
      }
      byte[] b = new byte[(int) st.getLen()];
      try (InputStream in = fs.open(side)) {
        org.apache.hadoop.io.IOUtils.readFully(in, b, 0, b.length);
      }
      RecordIndex idx = parse(b, side.toString());
      if (idx.compression != 0 || idx.dataLength != data.getLen() || idx.streamLength != data.getLen()) {
        LOG.warn("ignoring stale index " + side + ": it describes a file of " + idx.dataLength
            + " bytes, " + data.getPath() + " has " + data.getLen());
        return null;
      }
      if (st.getModificationTime() + 2000 < data.getModificationTime()) {
        LOG.warn("ignoring stale index " + side + ": it is older than " + data.getPath());
        return null;
      }
      return idx;
    } catch (IOException e) {
      LOG.warn("ignoring index " + side + ": " + e.getMessage());
      return null;
    }
  }

  /** Builds the index of an uncompressed record stream by walking its headers (for files made elsewhere). */
  public static RecordIndex scan(InputStream in, String file, long interval) throws IOException {
    Builder b = new Builder(interval);
    TFRecordReader r = new TFRecordReader(in, file);
    long n = 0;
    long end = 0;
    while (r.next()) {
      b.beforeRecord(n, r.recordOffset());
      n++;
      end = r.recordOffset() + 16 + r.recordLength();
    }
    return b.build(end, end, n);
  }

  static void putLong(byte[] b, int off, long v) {
    TFRecordWriter.putIntLE(b, off, (int) v);
    TFRecordWriter.putIntLE(b, off + 4, (int) (v >>> 32));
  }
}
