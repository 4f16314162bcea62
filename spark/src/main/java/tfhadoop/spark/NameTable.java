package tfhadoop.spark;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Feature name → slot, looked up by the UTF-8 bytes straight from the record (open addressing), so
 * decoding does not build a String per feature per record.
 */
final class NameTable {
  private final byte[][] keys;
  private final int[] values;
  private final int mask;

  NameTable(java.util.Map<String, Integer> names) {
    int cap = Integer.highestOneBit(Math.max(4, names.size() * 4) - 1) << 1;
    keys = new byte[cap][];
    values = new int[cap];
    mask = cap - 1;
    for (java.util.Map.Entry<String, Integer> e : names.entrySet()) {
      byte[] k = e.getKey().getBytes(StandardCharsets.UTF_8);
      int i = hash(k, 0, k.length) & mask;
      while (keys[i] != null) {
        i = (i + 1) & mask;
      }
      keys[i] = k;
      values[i] = e.getValue();
    }
  }

  /** Slot of the name in {@code b[off, off+len)}, or -1. */
  int get(byte[] b, int off, int len) {
    int i = hash(b, off, len) & mask;
    while (true) {
      byte[] k = keys[i];
      if (k == null) {
        return -1;
      }
      if (k.length == len && equal(k, b, off, len)) {
        return values[i];
      }
      i = (i + 1) & mask;
    }
  }

  private static boolean equal(byte[] k, byte[] b, int off, int len) {
    for (int j = 0; j < len; j++) {
      if (k[j] != b[off + j]) {
        return false;
      }
    }
    return true;
  }

  private static int hash(byte[] b, int off, int len) {
    int h = 0x9747b28c;
    for (int j = 0; j < len; j++) {
      h = (h ^ b[off + j]) * 0x01000193;
    }
    return h ^ (h >>> 16);
  }

  @Override
  public String toString() {
    return "NameTable" + Arrays.toString(values);
  }
}
