package tfhadoop.tfrecord;

import java.util.zip.Checksum;

/**
 * CRC32C (Castagnoli) with slicing-by-8 tables, for Java 8 runtimes that lack
 * {@code java.util.zip.CRC32C}. {@link Crc32c#newChecksum()} prefers the JDK class (hardware
 * accelerated) whenever it exists, so this is only the fallback.
 */
final class PureJavaCrc32c implements Checksum {
  private static final int[] T = buildTables();
  private int crc = 0xffffffff;

  private static int[] buildTables() {
    int[] t = new int[8 * 256];
    for (int i = 0; i < 256; i++) {
      int c = i;
      for (int k = 0; k < 8; k++) {
        c = (c & 1) != 0 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
      }
      t[i] = c;
    }
    for (int i = 0; i < 256; i++) {
      for (int s = 1; s < 8; s++) {
        int prev = t[(s - 1) * 256 + i];
        t[s * 256 + i] = (prev >>> 8) ^ t[prev & 0xff];
      }
    }
    return t;
  }

  @Override
  public void update(int b) {
    crc = (crc >>> 8) ^ T[(crc ^ b) & 0xff];
  }

  @Override
  public void update(byte[] b, int off, int len) {
    int c = crc;
    int[] t = T;
    while (len >= 8) {
      int lo = c ^ ((b[off] & 0xff) | (b[off + 1] & 0xff) << 8 | (b[off + 2] & 0xff) << 16 | (b[off + 3] & 0xff) << 24);
      int hi = (b[off + 4] & 0xff) | (b[off + 5] & 0xff) << 8 | (b[off + 6] & 0xff) << 16 | (b[off + 7] & 0xff) << 24;
      c = t[7 * 256 + (lo & 0xff)] ^ t[6 * 256 + ((lo >>> 8) & 0xff)]
          ^ t[5 * 256 + ((lo >>> 16) & 0xff)] ^ t[4 * 256 + (lo >>> 24)]
          ^ t[3 * 256 + (hi & 0xff)] ^ t[2 * 256 + ((hi >>> 8) & 0xff)]
          ^ t[256 + ((hi >>> 16) & 0xff)] ^ t[hi >>> 24];
      off += 8;
      len -= 8;
    }
    while (len-- > 0) {
      c = (c >>> 8) ^ t[(c ^ b[off++]) & 0xff];
    }
    crc = c;
  }

  @Override
  public long getValue() {
    return (~crc) & 0xffffffffL;
  }

  @Override
  public void reset() {
    crc = 0xffffffff;
  }
}
