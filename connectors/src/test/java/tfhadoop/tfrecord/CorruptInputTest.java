package tfhadoop.tfrecord;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Before;
import org.junit.Test;

/** Corrupt files: TF-style errors naming file and offset, and the skip-corrupt mode's counts. */
public class CorruptInputTest {
  private final Configuration conf = TestFiles.conf();
  private final Random rnd = new Random(5);
  private File dir;
  private List<byte[]> records;
  private long[] offsets;
  private byte[] clean;
  private static final TFRecordOptions SKIP = TFRecordOptions.parse(java.util.Collections.singletonMap("skipCorrupt", "true"));

  @Before
  public void setUp() throws Exception {
    dir = Files.createTempDirectory("tfr").toFile();
    records = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      byte[] r = new byte[20 + rnd.nextInt(80)];
      rnd.nextBytes(r);
      records.add(r);
    }
    offsets = TestFiles.offsets(records);
    clean = TestFiles.frame(records);
  }

  private static final class Result {
    final List<byte[]> records = new ArrayList<>();
    long corrupt;
    long skipped;
  }

  private Result readAll(Path p, long[] cuts, long len, TFRecordOptions o) throws Exception {
    Result res = new Result();
    long prev = 0;
    for (int i = 0; i <= cuts.length; i++) {
      long e = i < cuts.length ? cuts[i] : len;
      try (TFRecordReader r = TFRecordFiles.open(p, conf, prev, e - prev, o)) {
        while (r.next()) {
          res.records.add(r.copyRecord());
        }
        res.corrupt += r.corruptRecords();
        res.skipped += r.skippedBytes();
      }
      prev = e;
    }
    return res;
  }

  private long[] randomCuts(int len) {
    TreeSet<Long> s = new TreeSet<>();
    for (int i = 0; i < 25; i++) {
      s.add(1L + rnd.nextInt(len - 1));
    }
    long[] c = new long[s.size()];
    int i = 0;
    for (long x : s) {
      c[i++] = x;
    }
    return c;
  }

  private void expectError(byte[] bytes, String kind, long offset) throws Exception {
    Path p = TestFiles.write(dir, "bad.tfrecord", bytes);
    for (int trial = 0; trial < 6; trial++) {
      long[] cuts = trial == 0 ? new long[0] : trial == 1 ? oneByteCuts(bytes.length) : randomCuts(bytes.length);
      try {
        readAll(p, cuts, bytes.length, TFRecordOptions.defaults());
        fail("no error for " + kind + " with cuts " + describe(cuts));
      } catch (CorruptRecordException e) {
        assertTrue(e.getMessage(), e.getMessage().startsWith(kind + " record at " + offset + " in "));
        assertTrue(e.getMessage(), e.getMessage().contains(p.toString()));
        assertEquals(offset, e.offset());
      }
    }
  }

  private static String describe(long[] cuts) {
    return cuts.length <= 30 ? Arrays.toString(cuts) : cuts.length + " cuts " + cuts[0] + ".." + cuts[cuts.length - 1];
  }

  private static long[] oneByteCuts(int len) {
    long[] c = new long[len - 1];
    for (int i = 0; i < c.length; i++) {
      c[i] = i + 1;
    }
    return c;
  }

  /** Skip mode: all records but {@code lost} come back, exactly once, for any splits. */
  private void expectSkipped(byte[] bytes, int lost, long skippedBytes) throws Exception {
    Path p = TestFiles.write(dir, "skip.tfrecord", bytes);
    List<byte[]> want = new ArrayList<>(records);
    if (lost >= 0) {
      want.remove(lost);
    }
    for (int trial = 0; trial < 6; trial++) {
      long[] cuts = trial == 0 ? new long[0] : trial == 1 ? oneByteCuts(bytes.length) : randomCuts(bytes.length);
      Result r = readAll(p, cuts, bytes.length, SKIP);
      assertEquals("cuts " + describe(cuts), want.size(), r.records.size());
      for (int i = 0; i < want.size(); i++) {
        assertArrayEquals(want.get(i), r.records.get(i));
      }
      assertEquals("corrupt count, cuts " + describe(cuts), 1, r.corrupt);
      assertEquals("skipped bytes, cuts " + describe(cuts), skippedBytes, r.skipped);
    }
  }

  @Test
  public void bitFlipInData() throws Exception {
    int k = 9;
    byte[] b = clean.clone();
    b[(int) offsets[k] + 12 + 5] ^= 0x10;
    expectError(b, "corrupted", offsets[k]);
    expectSkipped(b, k, 16 + records.get(k).length);
  }

  @Test
  public void bitFlipInLength() throws Exception {
    int k = 0;
    byte[] b = clean.clone();
    b[(int) offsets[k] + 1] ^= 0x01;
    expectError(b, "corrupted", offsets[k]);
    expectSkipped(b, k, 16 + records.get(k).length);
  }

  @Test
  public void badLengthCrc() throws Exception {
    int k = 17;
    byte[] b = clean.clone();
    b[(int) offsets[k] + 9] ^= (byte) 0xff;
    expectError(b, "corrupted", offsets[k]);
    expectSkipped(b, k, 16 + records.get(k).length);
  }

  @Test
  public void badDataCrc() throws Exception {
    int k = 29;
    byte[] b = clean.clone();
    b[b.length - 1] ^= 0x40;
    expectError(b, "corrupted", offsets[k]);
    expectSkipped(b, k, 16 + records.get(k).length);
  }

  @Test
  public void truncatedInData() throws Exception {
    int k = 29;
    byte[] b = Arrays.copyOf(clean, (int) offsets[k] + 12 + 3);
    expectError(b, "truncated", offsets[k]);
    expectSkipped(b, k, 15);
  }

  @Test
  public void truncatedInHeader() throws Exception {
    int k = 29;
    byte[] b = Arrays.copyOf(clean, (int) offsets[k] + 7);
    expectError(b, "truncated", offsets[k]);
    expectSkipped(b, k, 7);
  }

  @Test
  public void garbageInTheMiddle() throws Exception {
    int k = 12;
    byte[] junk = new byte[37];
    rnd.nextBytes(junk);
    byte[] b = new byte[clean.length + junk.length];
    System.arraycopy(clean, 0, b, 0, (int) offsets[k]);
    System.arraycopy(junk, 0, b, (int) offsets[k], junk.length);
    System.arraycopy(clean, (int) offsets[k], b, (int) offsets[k] + junk.length, clean.length - (int) offsets[k]);
    expectError(b, "corrupted", offsets[k]);
    expectSkipped(b, -1, junk.length);
  }

  @Test
  public void garbageAtTheEnd() throws Exception {
    byte[] junk = new byte[50];
    rnd.nextBytes(junk);
    byte[] b = Arrays.copyOf(clean, clean.length + junk.length);
    System.arraycopy(junk, 0, b, clean.length, junk.length);
    expectError(b, "corrupted", clean.length);
    expectSkipped(b, -1, junk.length);
  }

  @Test
  public void wholeGzipStreamReportsUncompressedOffset() throws Exception {
    int k = 4;
    byte[] b = clean.clone();
    b[(int) offsets[k] + 20] ^= 0x01;
    java.io.ByteArrayOutputStream bo = new java.io.ByteArrayOutputStream();
    try (java.util.zip.GZIPOutputStream gz = new java.util.zip.GZIPOutputStream(bo)) {
      gz.write(b);
    }
    Path p = TestFiles.write(dir, "bad.tfrecord.gz", bo.toByteArray());
    try (TFRecordReader r = TFRecordFiles.open(p, conf, TFRecordOptions.defaults())) {
      while (r.next()) {
        // read until the error
      }
      fail("no error");
    } catch (CorruptRecordException e) {
      assertEquals(offsets[k], e.offset());
    }
    try (TFRecordReader r = TFRecordFiles.open(p, conf, SKIP)) {
      int n = 0;
      while (r.next()) {
        n++;
      }
      assertEquals(records.size() - 1, n);
      assertEquals(1, r.corruptRecords());
    }
  }

  /** A header claiming a 1 GiB record in a short gzip stream: skipped without a 1 GiB buffer. */
  @Test
  public void hugeBogusLengthInCompressedStreamIsSkippedCheaply() throws Exception {
    byte[] fake = new byte[12];
    long len = 1L << 30;
    for (int k = 0; k < 8; k++) {
      fake[k] = (byte) (len >>> (8 * k));
    }
    TFRecordWriter.putIntLE(fake, 8, Crc32c.maskedCrc(Crc32c.newChecksum(), fake, 0, 8));
    byte[] b = new byte[fake.length + clean.length];
    System.arraycopy(fake, 0, b, 0, fake.length);
    System.arraycopy(clean, 0, b, fake.length, clean.length);
    java.io.ByteArrayOutputStream bo = new java.io.ByteArrayOutputStream();
    try (java.util.zip.GZIPOutputStream gz = new java.util.zip.GZIPOutputStream(bo)) {
      gz.write(b);
    }
    Path p = TestFiles.write(dir, "fake.tfrecord.gz", bo.toByteArray());
    try (TFRecordReader r = TFRecordFiles.open(p, conf, SKIP)) {
      int n = 0;
      while (r.next()) {
        assertArrayEquals(records.get(n++), r.copyRecord());
      }
      assertEquals(records.size(), n);
      assertEquals(1, r.corruptRecords());
      assertEquals(12, r.skippedBytes());
      assertTrue("buffer stayed small", r.buffer().length < 1 << 20);
    }
  }
}
