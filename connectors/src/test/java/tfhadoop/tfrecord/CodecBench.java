package tfhadoop.tfrecord;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.zip.Checksum;
import tfhadoop.example.ExampleDecoder;
import tfhadoop.example.ExampleEncoder;
import tfhadoop.example.Feature;
import tfhadoop.example.FeatureList;

/**
 * Throughput of the pieces on this machine (not a test): CRC32C (JDK intrinsic vs. slicing-by-8),
 * Example encode and decode for the benchmark's row shape. Run with
 * {@code tools/sbt "tfhadoop/Test/runMain tfhadoop.tfrecord.CodecBench"}.
 */
public final class CodecBench {
  public static void main(String[] args) throws Exception {
    byte[] data = new byte[64 << 20];
    new Random(1).nextBytes(data);
    for (int round = 0; round < 3; round++) {
      crc("jdk  ", Crc32c.newChecksum(), data);
      crc("pure ", Crc32c.newPureJava(), data);
    }
    Feature[] fs = new Feature[5];
    byte[][] names = new byte[5][];
    String[] n = {"i", "f", "s", "fa", "sa"};
    for (int i = 0; i < 5; i++) {
      fs[i] = new Feature();
      names[i] = n[i].getBytes(StandardCharsets.UTF_8);
    }
    ExampleEncoder enc = new ExampleEncoder();
    ExampleDecoder dec = new ExampleDecoder();
    final Feature sink = new Feature();
    ExampleDecoder.Sink all = new ExampleDecoder.Sink() {
      @Override
      public Feature feature(String name) {
        return sink;
      }

      @Override
      public FeatureList featureList(String name) {
        return null;
      }
    };
    byte[] str = "some string value".getBytes(StandardCharsets.UTF_8);
    for (int round = 0; round < 3; round++) {
      int rows = 1_000_000;
      long bytes = 0;
      long t0 = System.nanoTime();
      for (int r = 0; r < rows; r++) {
        fs[0].clear(Feature.INT64).addLong(r);
        fs[1].clear(Feature.FLOAT).addFloat(r * 0.5f);
        fs[2].clear(Feature.BYTES).addBytes(str);
        fs[3].clear(Feature.FLOAT);
        for (int k = 0; k < 32; k++) {
          fs[3].addFloat(k * 0.25f);
        }
        fs[4].clear(Feature.BYTES);
        for (int k = 0; k < 3; k++) {
          fs[4].addBytes(str);
        }
        enc.encodeExample(names, fs, 5);
        bytes += enc.length();
      }
      long t1 = System.nanoTime();
      byte[] one = enc.toByteArray();
      for (int r = 0; r < rows; r++) {
        dec.decodeExample(one, 0, one.length, all);
      }
      long t2 = System.nanoTime();
      System.out.printf("example encode %.0f rows/s (%.0f MB/s), decode %.0f rows/s, %d bytes/row%n",
          rows / ((t1 - t0) / 1e9), bytes / ((t1 - t0) / 1e3), rows / ((t2 - t1) / 1e9), one.length);
    }
  }

  private static void crc(String name, Checksum c, byte[] data) {
    long t0 = System.nanoTime();
    int x = 0;
    for (int i = 0; i < 4; i++) {
      x ^= Crc32c.maskedCrc(c, data, 0, data.length);
    }
    double s = (System.nanoTime() - t0) / 1e9;
    System.out.printf("crc32c %s %s: %.0f MB/s (%d)%n", name, c.getClass().getSimpleName(), 4 * data.length / s / 1e6, x);
  }
}
