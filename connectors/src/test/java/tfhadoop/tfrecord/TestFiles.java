package tfhadoop.tfrecord;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/** Helpers for the TFRecord tests: raw local FS (no .crc sidecars), framed byte streams. */
public final class TestFiles {
  private TestFiles() {}

  public static Configuration conf() {
    Configuration conf = new Configuration(false);
    conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
    conf.setBoolean("fs.file.impl.disable.cache", true);
    return conf;
  }

  public static byte[] frame(List<byte[]> records) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    TFRecordWriter w = new TFRecordWriter(out);
    for (byte[] r : records) {
      w.write(r);
    }
    w.close();
    return out.toByteArray();
  }

  public static Path write(File dir, String name, byte[] bytes) throws IOException {
    File f = new File(dir, name);
    Files.write(f.toPath(), bytes);
    return new Path(f.toURI());
  }

  /** Record boundaries (offsets of each header) of a framed stream of {@code records}. */
  public static long[] offsets(List<byte[]> records) {
    long[] o = new long[records.size()];
    long p = 0;
    for (int i = 0; i < o.length; i++) {
      o[i] = p;
      p += 16 + records.get(i).length;
    }
    return o;
  }

  /**
   * Random payloads, many of which contain byte sequences that look like TFRecord headers (valid
   * masked length CRC) with bogus or too-long lengths, so the split resync must rely on the data CRC.
   */
  public static List<byte[]> trickyRecords(Random rnd, int n, int maxLen) {
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int len = rnd.nextInt(5) == 0 ? 0 : rnd.nextInt(maxLen + 1);
      byte[] r = new byte[len];
      rnd.nextBytes(r);
      if (len >= 12 && rnd.nextBoolean()) {
        int at = rnd.nextInt(len - 11);
        long fakeLen = rnd.nextBoolean() ? rnd.nextInt(len + 1) : rnd.nextInt(1 << 20);
        for (int k = 0; k < 8; k++) {
          r[at + k] = (byte) (fakeLen >>> (8 * k));
        }
        TFRecordWriter.putIntLE(r, at + 8, Crc32c.maskedCrc(Crc32c.newChecksum(), r, at, 8));
      }
      out.add(r);
    }
    return out;
  }

  /**
   * Adversarial mix for split readers: records that are themselves TFRecord streams (nested, even
   * twice), payloads holding complete valid frames at random offsets, zero-length records, records
   * larger than {@code bigLen}, and plain random bytes.
   */
  public static List<byte[]> nestedRecords(Random rnd, int n, int maxLen, int bigLen) throws IOException {
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int kind = rnd.nextInt(6);
      byte[] r;
      if (kind == 0) {
        r = new byte[0];
      } else if (kind == 1 || kind == 2) {
        List<byte[]> inner = new ArrayList<>();
        int k = 1 + rnd.nextInt(4);
        for (int j = 0; j < k; j++) {
          byte[] x = new byte[rnd.nextInt(maxLen + 1)];
          rnd.nextBytes(x);
          inner.add(kind == 2 && j == 0 ? frame(java.util.Collections.singletonList(x)) : x);
        }
        r = frame(inner);
      } else if (kind == 3) {
        byte[] x = new byte[rnd.nextInt(maxLen + 1)];
        rnd.nextBytes(x);
        byte[] f = frame(java.util.Collections.singletonList(x));
        r = new byte[f.length + rnd.nextInt(maxLen + 1)];
        rnd.nextBytes(r);
        System.arraycopy(f, 0, r, rnd.nextInt(r.length - f.length + 1), f.length);
      } else if (kind == 4 && bigLen > 0) {
        List<byte[]> inner = new ArrayList<>();
        int total = 0;
        while (total < bigLen) {
          byte[] x = new byte[1 + rnd.nextInt(Math.max(1, bigLen / 3))];
          rnd.nextBytes(x);
          inner.add(x);
          total += x.length + 16;
        }
        r = frame(inner);
      } else {
        r = new byte[rnd.nextInt(maxLen + 1)];
        rnd.nextBytes(r);
      }
      out.add(r);
    }
    return out;
  }

  /** Reads a file as the given splits, concatenating what each split yields. */
  public static List<byte[]> readSplits(Path p, Configuration conf, long[] cuts, long fileLen, TFRecordOptions o)
      throws IOException {
    List<byte[]> got = new ArrayList<>();
    long prev = 0;
    for (int i = 0; i <= cuts.length; i++) {
      long s = prev;
      long e = i < cuts.length ? cuts[i] : fileLen;
      try (TFRecordReader r = TFRecordFiles.open(p, conf, s, e - s, o)) {
        while (r.next()) {
          got.add(r.copyRecord());
        }
      }
      prev = e;
    }
    return got;
  }

  /** The same, reading the splits last to first (so no split finds its predecessor's boundary). */
  public static List<byte[]> readSplitsReversed(Path p, Configuration conf, long[] cuts, long fileLen,
      TFRecordOptions o) throws IOException {
    List<List<byte[]>> parts = new ArrayList<>();
    for (int i = cuts.length; i >= 0; i--) {
      long s = i == 0 ? 0 : cuts[i - 1];
      long e = i < cuts.length ? cuts[i] : fileLen;
      List<byte[]> got = new ArrayList<>();
      try (TFRecordReader r = TFRecordFiles.open(p, conf, s, e - s, o)) {
        while (r.next()) {
          got.add(r.copyRecord());
        }
      }
      parts.add(0, got);
    }
    List<byte[]> all = new ArrayList<>();
    for (List<byte[]> g : parts) {
      all.addAll(g);
    }
    return all;
  }
}
