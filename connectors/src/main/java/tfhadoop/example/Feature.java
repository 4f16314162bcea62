package tfhadoop.example;

/**
 * One tf.train.Feature: a kind (bytes, float or int64 list) and its values, in growable arrays that
 * are reused across records so decoding and encoding allocate nothing per value. Bytes values are
 * (array, offset, length) views; after decoding they point into the record buffer.
 */
public final class Feature {
  public static final int NONE = 0;
  public static final int BYTES = 1;
  public static final int FLOAT = 2;
  public static final int INT64 = 3;

  public int kind;
  public int count;
  public long[] longs = new long[4];
  public float[] floats = new float[4];
  public byte[][] bytes = new byte[4][];
  public int[] bytesOff = new int[4];
  public int[] bytesLen = new int[4];

  /** Encoded size of the list message (set by the encoder's sizing pass). */
  int listSize;

  public Feature clear(int newKind) {
    kind = newKind;
    count = 0;
    return this;
  }

  public void addLong(long v) {
    if (count == longs.length) {
      longs = java.util.Arrays.copyOf(longs, count * 2);
    }
    longs[count++] = v;
  }

  public void addFloat(float v) {
    if (count == floats.length) {
      floats = java.util.Arrays.copyOf(floats, count * 2);
    }
    floats[count++] = v;
  }

  /** Appends n little-endian floats from b[off..]: a packed float_list, sized once (no per-value growth check). */
  public void addFloats(byte[] b, int off, int n) {
    int need = count + n;
    if (need > floats.length) {
      floats = java.util.Arrays.copyOf(floats, Math.max(need, count * 2));
    }
    float[] out = floats;
    for (int i = count; i < need; i++, off += 4) {
      out[i] = Float.intBitsToFloat((b[off] & 0xff) | (b[off + 1] & 0xff) << 8 | (b[off + 2] & 0xff) << 16
          | (b[off + 3] & 0xff) << 24);
    }
    count = need;
  }

  public void addBytes(byte[] b) {
    addBytes(b, 0, b.length);
  }

  public void addBytes(byte[] b, int off, int len) {
    if (count == bytes.length) {
      int n = count * 2;
      bytes = java.util.Arrays.copyOf(bytes, n);
      bytesOff = java.util.Arrays.copyOf(bytesOff, n);
      bytesLen = java.util.Arrays.copyOf(bytesLen, n);
    }
    bytes[count] = b;
    bytesOff[count] = off;
    bytesLen[count] = len;
    count++;
  }

  /** A copy of bytes value {@code i}. */
  public byte[] bytesAt(int i) {
    byte[] r = new byte[bytesLen[i]];
    System.arraycopy(bytes[i], bytesOff[i], r, 0, bytesLen[i]);
    return r;
  }

  public String stringAt(int i) {
    return new String(bytes[i], bytesOff[i], bytesLen[i], java.nio.charset.StandardCharsets.UTF_8);
  }

  public long[] longArray() {
    return java.util.Arrays.copyOf(longs, count);
  }

  public float[] floatArray() {
    return java.util.Arrays.copyOf(floats, count);
  }

  public static String kindName(int kind) {
    switch (kind) {
      case BYTES:
        return "bytes_list";
      case FLOAT:
        return "float_list";
      case INT64:
        return "int64_list";
      default:
        return "no kind";
    }
  }
}
