package tfhadoop.tfrecord;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import java.io.File;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Test;

/** Property tests: every record is read exactly once for any set of split points. */
public class SplitReaderTest {
  private final Configuration conf = TestFiles.conf();

  private static void assertSame(List<byte[]> want, List<byte[]> got, String what) {
    assertEquals(what + ": record count", want.size(), got.size());
    for (int i = 0; i < want.size(); i++) {
      assertArrayEquals(what + ": record " + i, want.get(i), got.get(i));
    }
  }

  @Test
  public void fixedSplitSizesIncludingOneByte() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    Random rnd = new Random(7);
    List<byte[]> records = TestFiles.trickyRecords(rnd, 60, 120);
    byte[] bytes = TestFiles.frame(records);
    Path p = TestFiles.write(dir, "a.tfrecord", bytes);
    for (int size : new int[] {1, 2, 3, 5, 11, 12, 16, 17, 64, 200, bytes.length - 1, bytes.length, bytes.length + 10}) {
      int n = (bytes.length + size - 1) / size;
      long[] cuts = new long[Math.max(0, n - 1)];
      for (int i = 0; i < cuts.length; i++) {
        cuts[i] = (long) (i + 1) * size;
      }
      assertSame(records, TestFiles.readSplits(p, conf, cuts, bytes.length, TFRecordOptions.defaults()), "split size " + size);
    }
  }

  @Test
  public void randomSplitPoints() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    Random rnd = new Random(11);
    for (int trial = 0; trial < 40; trial++) {
      List<byte[]> records = TestFiles.trickyRecords(rnd, 1 + rnd.nextInt(40), 1 + rnd.nextInt(400));
      byte[] bytes = TestFiles.frame(records);
      Path p = TestFiles.write(dir, "t" + trial + ".tfrecord", bytes);
      TreeSet<Long> cutSet = new TreeSet<>();
      int k = rnd.nextInt(Math.min(bytes.length, 50));
      for (int i = 0; i < k; i++) {
        cutSet.add(1L + rnd.nextInt(bytes.length - 1));
      }
      long[] cuts = new long[cutSet.size()];
      int i = 0;
      for (long c : cutSet) {
        cuts[i++] = c;
      }
      assertSame(records, TestFiles.readSplits(p, conf, cuts, bytes.length, TFRecordOptions.defaults()),
          "trial " + trial + " cuts " + Arrays.toString(cuts));
    }
  }

  @Test
  public void emptyFileHasNoRecords() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    Path p = TestFiles.write(dir, "empty.tfrecord", new byte[0]);
    assertEquals(0, TestFiles.readSplits(p, conf, new long[0], 0, TFRecordOptions.defaults()).size());
  }

  @Test
  public void largeRecordAcrossManySplits() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    Random rnd = new Random(3);
    byte[] big = new byte[5 * 1024 * 1024];
    rnd.nextBytes(big);
    List<byte[]> records = Arrays.asList("a".getBytes(), big, new byte[0], "z".getBytes());
    byte[] bytes = TestFiles.frame(records);
    Path p = TestFiles.write(dir, "big.tfrecord", bytes);
    long[] cuts = new long[] {5, 1 << 20, 3 << 20, bytes.length - 20, bytes.length - 3};
    assertSame(records, TestFiles.readSplits(p, conf, cuts, bytes.length, TFRecordOptions.defaults()), "5 MB record");
  }
}
