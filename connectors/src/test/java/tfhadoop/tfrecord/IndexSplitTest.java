package tfhadoop.tfrecord;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.io.FileInputStream;
import java.nio.file.Files;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.Test;

/**
 * Property tests for exact splits: random files mixing nested TFRecord streams, payloads holding
 * valid frames, empty records and records larger than the split, read at random split sizes with
 * the record-boundary index, without it (header walk from the boundaries this JVM proved, and from
 * the file start): the splits' union is the file.
 */
public class IndexSplitTest {
  private final Configuration conf = TestFiles.conf();

  private static Path writeWithIndex(File dir, String name, List<byte[]> records, Configuration conf, long interval)
      throws Exception {
    Path p = new Path(new File(dir, name).toURI());
    try (TFRecordWriter w = TFRecordFiles.create(p, conf, Compression.NONE, true, interval)) {
      for (byte[] r : records) {
        w.write(r);
      }
    }
    return p;
  }

  @Test
  public void randomFilesAllSplitSizesWithAndWithoutIndex() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    Random rnd = new Random(2020);
    TFRecordOptions auto = TFRecordOptions.defaults();
    TFRecordOptions noIndex = auto.withIndex(RecordIndex.DEFAULT_INTERVAL, false, true);
    TFRecordOptions always = auto.withIndex(RecordIndex.DEFAULT_INTERVAL, false, false);
    for (int trial = 0; trial < 12; trial++) {
      int bigLen = trial % 3 == 0 ? 0 : 1 + rnd.nextInt(300 << 10);
      List<byte[]> records = TestFiles.nestedRecords(rnd, 20 + rnd.nextInt(300), 1 + rnd.nextInt(3000), bigLen);
      long interval = 1L << (8 + rnd.nextInt(13));
      Path p = writeWithIndex(dir, "t" + trial + ".tfrecord", records, conf, interval);
      long len = new File(p.toUri()).length();
      assertTrue("index written", new File(dir, ".t" + trial + ".tfrecord" + RecordIndex.SUFFIX).isFile());
      // The smallest splits are 1 KB, or as many as ~2,000 per file: a 20 MB file in 1 KB splits
      // (20,000, each walked from the file start in one mode) took 12 s and proved nothing more.
      long smallest = Math.max(1 << 10, Long.highestOneBit(Math.max(1, len / 2048)) << 1);
      for (long size : new long[] {smallest, 1L << (10 + rnd.nextInt(10)), 64L << 20}) {
        long[] cuts = NestedSplitTest.cuts(len, size);
        String what = "trial " + trial + " split " + size + " interval " + interval;
        NestedSplitTest.assertSame(records, TestFiles.readSplits(p, conf, cuts, len, auto), what + " index");
        NestedSplitTest.assertSame(records, TestFiles.readSplits(p, conf, cuts, len, always), what + " walk from start");
        NestedSplitTest.assertSame(records, TestFiles.readSplits(p, conf, cuts, len, noIndex), what + " no index");
        if (size != smallest) {
          NestedSplitTest.assertSame(records, TestFiles.readSplitsReversed(p, conf, cuts, len, noIndex),
              what + " no index, splits in reverse");
        }
      }
    }
  }

  @Test
  public void indexRoundTripsAndMatchesAScan() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    List<byte[]> records = TestFiles.nestedRecords(new Random(5), 400, 2000, 0);
    Path p = writeWithIndex(dir, "a.tfrecord", records, conf, 4096);
    FileSystem fs = p.getFileSystem(conf);
    RecordIndex idx = RecordIndex.load(fs, fs.getFileStatus(p));
    assertNotNull(idx);
    assertEquals(records.size(), idx.records);
    long[] offsets = TestFiles.offsets(records);
    assertTrue(idx.size() > 1);
    for (int i = 0; i < idx.size(); i++) {
      assertEquals("entry " + i, offsets[(int) idx.ordinal(i)], idx.offset(i));
      if (i > 0) {
        assertTrue(idx.offset(i) - idx.offset(i - 1) >= 4096);
      }
    }
    try (FileInputStream in = new FileInputStream(new File(p.toUri()))) {
      RecordIndex scanned = RecordIndex.scan(in, p.toString(), 4096);
      assertEquals(java.util.Arrays.toString(idx.toBytes()), java.util.Arrays.toString(scanned.toBytes()));
    }
  }

  @Test
  public void staleOrDamagedIndexIsIgnored() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    List<byte[]> records = TestFiles.nestedRecords(new Random(6), 300, 2000, 0);
    Path p = writeWithIndex(dir, "a.tfrecord", records, conf, 2048);
    FileSystem fs = p.getFileSystem(conf);
    File side = new File(dir, ".a.tfrecord" + RecordIndex.SUFFIX);
    byte[] good = Files.readAllBytes(side.toPath());
    // the data file is replaced by a longer one: the old index no longer describes it
    List<byte[]> more = new java.util.ArrayList<>(records);
    more.add(new byte[] {1, 2, 3});
    byte[] bytes = TestFiles.frame(more);
    Files.write(new File(dir, "a.tfrecord").toPath(), bytes);
    Files.write(side.toPath(), good);
    assertNull(RecordIndex.load(fs, fs.getFileStatus(p)));
    NestedSplitTest.assertSame(more, TestFiles.readSplits(p, conf, NestedSplitTest.cuts(bytes.length, 1000),
        bytes.length, TFRecordOptions.defaults()), "stale index");
    byte[] bad = good.clone();
    bad[60] ^= 1;
    Files.write(side.toPath(), bad);
    assertNull(RecordIndex.load(fs, fs.getFileStatus(p)));
  }

  @Test
  public void realCorruptionStillFailsWithFileAndOffset() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    List<byte[]> records = TestFiles.nestedRecords(new Random(8), 300, 2000, 0);
    long[] offsets = TestFiles.offsets(records);
    byte[] bytes = TestFiles.frame(records);
    int victim = 200;
    bytes[(int) offsets[victim] + 13] ^= 0x40; // first data byte of record 200
    for (boolean index : new boolean[] {false, true}) {
      Path p = TestFiles.write(dir, "bad" + index + ".tfrecord", bytes);
      if (index) {
        RecordIndex.Builder b = new RecordIndex.Builder(4096);
        for (int i = 0; i < offsets.length; i++) {
          b.beforeRecord(i, offsets[i]);
        }
        b.build(bytes.length, bytes.length, offsets.length).write(p.getFileSystem(conf), p);
      }
      for (long size : new long[] {1000, 7777, 1 << 20}) {
        try {
          TestFiles.readSplits(p, conf, NestedSplitTest.cuts(bytes.length, size), bytes.length, TFRecordOptions.defaults());
          fail("corruption not reported, index " + index + " split " + size);
        } catch (CorruptRecordException e) {
          assertTrue(e.getMessage(), e.getMessage().contains("at " + offsets[victim] + " "));
          assertTrue(e.getMessage(), e.getMessage().contains(p.toString()));
        }
      }
    }
  }

  @Test
  public void indexedSplitsNeverWalkAndOthersWalkFromTheNearestProvenBoundary() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    List<byte[]> records = NestedSplitTest.bundles(new Random(9), 2000, 300);
    Path p = writeWithIndex(dir, "b.tfrecord", records, conf, 8192);
    long len = new File(p.toUri()).length();
    KnownBoundaries.clear();
    for (TFRecordOptions o : new TFRecordOptions[] {TFRecordOptions.defaults(),
        TFRecordOptions.defaults().withIndex(8192, false, true), TFRecordOptions.defaults().withIndex(8192, false, false)}) {
      for (long s = 0; s < len; s += 5000) {
        try (TFRecordReader r = TFRecordFiles.open(p, conf, s, 5000, o)) {
          while (r.next()) {
            continue;
          }
          if (o.useIndex) {
            assertEquals("an indexed split does not walk", -1, r.walkedBytes());
          } else if (s == 0) {
            assertEquals("the first split starts at the file start", -1, r.walkedBytes());
          } else if (o.walkCache) {
            // the previous split left its last record's boundary behind: one header from here
            assertTrue("split at " + s + " walks from the boundary the previous split proved: " + r.walkedBytes(),
                r.walkedBytes() >= 0 && r.walkedBytes() < 5000);
          } else {
            assertTrue("split at " + s + " walks from the file start: " + r.walkedBytes(), r.walkedBytes() >= s);
          }
        }
      }
    }
  }

  /**
   * The case a checked resync cannot decide: a record far longer than the split (and than any
   * look-ahead) whose payload is a valid TFRecord stream of records that do not themselves look
   * nested. Every split inside it sees a perfect chain; only the walk from a proven boundary knows
   * the splits hold no record start.
   */
  @Test
  public void splitsInsideAHugeRecordHoldingAStreamReturnNothing() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    Random rnd = new Random(77);
    List<byte[]> inner = new java.util.ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      byte[] x = new byte[1000];
      rnd.nextBytes(x);
      inner.add(x);
    }
    List<byte[]> records = java.util.Arrays.asList(new byte[] {1, 2}, TestFiles.frame(inner), new byte[0], new byte[] {3});
    byte[] bytes = TestFiles.frame(records);
    Path p = TestFiles.write(dir, "huge.tfrecord", bytes);
    for (boolean cache : new boolean[] {false, true}) {
      TFRecordOptions o = TFRecordOptions.defaults().withIndex(8192, false, cache);
      KnownBoundaries.clear();
      NestedSplitTest.assertSame(records, TestFiles.readSplitsReversed(p, conf, NestedSplitTest.cuts(bytes.length, 64 << 10),
          bytes.length, o), "64 KB splits in reverse, cache " + cache);
      NestedSplitTest.assertSame(records, TestFiles.readSplits(p, conf, NestedSplitTest.cuts(bytes.length, 1 << 10),
          bytes.length, o), "1 KB splits, cache " + cache);
      try (TFRecordReader r = TFRecordFiles.open(p, conf, 1 << 20, 1 << 10, o)) {
        assertFalse("a split inside the record returns none of its inner records", r.next());
      }
    }
  }
}
