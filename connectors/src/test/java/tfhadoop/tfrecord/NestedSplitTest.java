package tfhadoop.tfrecord;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Test;

/**
 * Issue 20's two failing cases, without any index: records that are themselves TFRecord streams
 * ("bundles") must read exactly, at every split size, through the split reader.
 */
public class NestedSplitTest {
  private final Configuration conf = TestFiles.conf();

  static void assertSame(List<byte[]> want, List<byte[]> got, String what) {
    assertEquals(what + ": record count", want.size(), got.size());
    for (int i = 0; i < want.size(); i++) {
      assertArrayEquals(what + ": record " + i, want.get(i), got.get(i));
    }
  }

  static long[] cuts(long len, long size) {
    int n = (int) ((len + size - 1) / size);
    long[] c = new long[Math.max(0, n - 1)];
    for (int i = 0; i < c.length; i++) {
      c[i] = (i + 1) * size;
    }
    return c;
  }

  /** Records each of which is the bytes of a TFRecord file of 1..4 records of up to maxInner bytes. */
  static List<byte[]> bundles(Random rnd, int n, int maxInner) throws Exception {
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      List<byte[]> inner = new ArrayList<>();
      int k = 1 + rnd.nextInt(4);
      for (int j = 0; j < k; j++) {
        byte[] x = new byte[rnd.nextInt(maxInner + 1)];
        rnd.nextBytes(x);
        inner.add(x);
      }
      out.add(TestFiles.frame(inner));
    }
    return out;
  }

  @Test
  public void smallBundlesAtManySplitSizes() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    List<byte[]> records = bundles(new Random(20), 4000, 200);
    byte[] bytes = TestFiles.frame(records);
    Path p = TestFiles.write(dir, "bundles.tfrecord", bytes);
    for (long size : new long[] {4 << 10, 64 << 10, 1 << 20}) {
      assertSame(records, TestFiles.readSplits(p, conf, cuts(bytes.length, size), bytes.length,
          TFRecordOptions.defaults()), "split size " + size);
    }
  }

  @Test
  public void largeBundlesInTwoSplits() throws Exception {
    File dir = Files.createTempDirectory("tfr").toFile();
    List<byte[]> records = bundles(new Random(21), 60, 100 << 10);
    byte[] bytes = TestFiles.frame(records);
    Path p = TestFiles.write(dir, "big.tfrecord", bytes);
    assertSame(records, TestFiles.readSplits(p, conf, new long[] {bytes.length / 2}, bytes.length,
        TFRecordOptions.defaults()), "two splits");
    assertSame(records, TestFiles.readSplits(p, conf, cuts(bytes.length, 64 << 10), bytes.length,
        TFRecordOptions.defaults()), "64 KB splits");
  }
}
