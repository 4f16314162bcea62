package tfhadoop.tfrecord;

import static org.junit.Assert.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.zip.Checksum;
import org.junit.Test;

public class Crc32cTest {
  @Test
  public void knownVector() {
    byte[] b = "123456789".getBytes(StandardCharsets.US_ASCII);
    for (Checksum c : new Checksum[] {Crc32c.newChecksum(), Crc32c.newPureJava()}) {
      c.update(b, 0, b.length);
      assertEquals(c.getClass().getName(), 0xE3069283L, c.getValue());
    }
  }

  @Test
  public void pureJavaMatchesJdkOnRandomData() {
    Random rnd = new Random(1);
    Checksum a = Crc32c.newChecksum();
    Checksum b = Crc32c.newPureJava();
    for (int i = 0; i < 500; i++) {
      byte[] d = new byte[rnd.nextInt(300)];
      rnd.nextBytes(d);
      int off = d.length == 0 ? 0 : rnd.nextInt(d.length);
      int len = d.length - off;
      assertEquals(Crc32c.maskedCrc(a, d, off, len), Crc32c.maskedCrc(b, d, off, len));
    }
  }

  @Test
  public void maskRoundTrip() {
    Random rnd = new Random(2);
    for (int i = 0; i < 1000; i++) {
      int v = rnd.nextInt();
      assertEquals(v, Crc32c.unmask(Crc32c.mask(v)));
    }
  }

  /** Same bytes as tf.io.TFRecordWriter wrote for records b"" and b"hello". */
  @Test
  public void framingMatchesTensorFlow() throws Exception {
    byte[] expected = hex("000000000000000029039807d8ea82a20500000000000000eab2043e68656c6c6fbb1f1c19");
    byte[] got = TestFiles.frame(java.util.Arrays.asList(new byte[0], "hello".getBytes(StandardCharsets.US_ASCII)));
    assertEquals(java.util.Arrays.toString(expected), java.util.Arrays.toString(got));
  }

  static byte[] hex(String s) {
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return b;
  }
}
