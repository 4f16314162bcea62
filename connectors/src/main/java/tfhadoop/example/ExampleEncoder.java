package tfhadoop.example;

import java.util.Arrays;

/**
 * Encodes tf.train.Example / SequenceExample wire format directly into a reusable buffer. Sizes of
 * nested messages are computed first (one pass over the values), then bytes are written once, so
 * nothing is copied or shifted. Numeric lists are written packed, as TensorFlow does.
 */
public final class ExampleEncoder {
  private byte[] out = new byte[1024];
  private int pos;

  /** Encoded bytes of the last message: {@code buffer()[0, length())}. */
  public byte[] buffer() {
    return out;
  }

  public int length() {
    return pos;
  }

  public byte[] toByteArray() {
    return Arrays.copyOf(out, pos);
  }

  /** Encodes an Example of {@code n} features (names as UTF-8). */
  public void encodeExample(byte[][] names, Feature[] features, int n) {
    pos = 0;
    int featuresSize = featuresSize(names, features, n);
    reserve(featuresSize + 16);
    tag(1, 2);
    varint(featuresSize);
    writeFeatures(names, features, n);
  }

  /** Encodes a SequenceExample: context features and feature lists. */
  public void encodeSequenceExample(byte[][] names, Feature[] features, int n,
      byte[][] listNames, FeatureList[] lists, int m) {
    pos = 0;
    int contextSize = featuresSize(names, features, n);
    int listsSize = 0;
    int[] entrySizes = new int[m];
    for (int i = 0; i < m; i++) {
      int fl = featureListSize(lists[i]);
      int entry = 1 + varintSize(listNames[i].length) + listNames[i].length + 1 + varintSize(fl) + fl;
      entrySizes[i] = entry;
      listsSize += 1 + varintSize(entry) + entry;
    }
    reserve(contextSize + listsSize + 32);
    if (n > 0) {
      tag(1, 2);
      varint(contextSize);
      writeFeatures(names, features, n);
    }
    if (m > 0) {
      tag(2, 2);
      varint(listsSize);
      for (int i = 0; i < m; i++) {
        tag(1, 2);
        varint(entrySizes[i]);
        tag(1, 2);
        varint(listNames[i].length);
        bytes(listNames[i], 0, listNames[i].length);
        FeatureList l = lists[i];
        tag(2, 2);
        varint(featureListSize(l));
        for (int j = 0; j < l.size(); j++) {
          Feature f = l.get(j);
          tag(1, 2);
          varint(featureSize(f));
          writeFeature(f);
        }
      }
    }
  }

  private int featuresSize(byte[][] names, Feature[] features, int n) {
    int size = 0;
    for (int i = 0; i < n; i++) {
      int e = entrySize(names[i], features[i]);
      size += 1 + varintSize(e) + e;
    }
    return size;
  }

  private void writeFeatures(byte[][] names, Feature[] features, int n) {
    for (int i = 0; i < n; i++) {
      Feature f = features[i];
      tag(1, 2);
      varint(entrySize(names[i], f));
      tag(1, 2);
      varint(names[i].length);
      bytes(names[i], 0, names[i].length);
      tag(2, 2);
      varint(featureSize(f));
      writeFeature(f);
    }
  }

  private int entrySize(byte[] name, Feature f) {
    int fs = featureSizeComputing(f);
    return 1 + varintSize(name.length) + name.length + 1 + varintSize(fs) + fs;
  }

  private int featureListSize(FeatureList l) {
    int size = 0;
    for (int j = 0; j < l.size(); j++) {
      int fs = featureSizeComputing(l.get(j));
      size += 1 + varintSize(fs) + fs;
    }
    return size;
  }

  /** Feature message size; computes and caches the list size. */
  private static int featureSizeComputing(Feature f) {
    if (f.kind == Feature.NONE) {
      f.listSize = 0;
      return 0;
    }
    f.listSize = listSize(f);
    return 1 + varintSize(f.listSize) + f.listSize;
  }

  private static int featureSize(Feature f) {
    return f.kind == Feature.NONE ? 0 : 1 + varintSize(f.listSize) + f.listSize;
  }

  private static int listSize(Feature f) {
    if (f.count == 0) {
      return 0;
    }
    switch (f.kind) {
      case Feature.INT64: {
        int p = packedLongSize(f);
        return 1 + varintSize(p) + p;
      }
      case Feature.FLOAT: {
        int p = 4 * f.count;
        return 1 + varintSize(p) + p;
      }
      default: {
        int s = 0;
        for (int i = 0; i < f.count; i++) {
          s += 1 + varintSize(f.bytesLen[i]) + f.bytesLen[i];
        }
        return s;
      }
    }
  }

  private static int packedLongSize(Feature f) {
    int s = 0;
    for (int i = 0; i < f.count; i++) {
      s += varintSize(f.longs[i]);
    }
    return s;
  }

  private void writeFeature(Feature f) {
    if (f.kind == Feature.NONE) {
      return;
    }
    tag(f.kind, 2);
    varint(f.listSize);
    if (f.count == 0) {
      return;
    }
    switch (f.kind) {
      case Feature.INT64:
        tag(1, 2);
        varint(packedLongSize(f));
        reserve(10 * f.count);
        for (int i = 0; i < f.count; i++) {
          varint(f.longs[i]);
        }
        break;
      case Feature.FLOAT:
        tag(1, 2);
        varint(4 * f.count);
        reserve(4 * f.count);
        for (int i = 0; i < f.count; i++) {
          int v = Float.floatToRawIntBits(f.floats[i]);
          out[pos] = (byte) v;
          out[pos + 1] = (byte) (v >>> 8);
          out[pos + 2] = (byte) (v >>> 16);
          out[pos + 3] = (byte) (v >>> 24);
          pos += 4;
        }
        break;
      default:
        for (int i = 0; i < f.count; i++) {
          tag(1, 2);
          varint(f.bytesLen[i]);
          bytes(f.bytes[i], f.bytesOff[i], f.bytesLen[i]);
        }
    }
  }

  private void tag(int field, int wire) {
    reserve(1);
    out[pos++] = (byte) (field << 3 | wire);
  }

  private void varint(long v) {
    reserve(10);
    while ((v & ~0x7fL) != 0) {
      out[pos++] = (byte) ((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out[pos++] = (byte) v;
  }

  private void bytes(byte[] b, int off, int len) {
    reserve(len);
    System.arraycopy(b, off, out, pos, len);
    pos += len;
  }

  private void reserve(int n) {
    if (pos + n > out.length) {
      out = Arrays.copyOf(out, Math.max(pos + n, out.length * 2));
    }
  }

  static int varintSize(long v) {
    if (v < 0) {
      return 10;
    }
    int n = 1;
    while (v >= 0x80) {
      v >>>= 7;
      n++;
    }
    return n;
  }
}
