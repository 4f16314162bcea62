package tfhadoop.example;

import java.io.IOException;

/**
 * Decodes tf.train.Example and tf.train.SequenceExample protobuf wire format directly (no
 * protobuf-java): features are handed to a {@link Sink} that decides, by name, where (or whether)
 * to decode them, so column pruning skips unwanted features without decoding their values.
 * Accepts packed and unpacked numeric lists; unknown fields are skipped; a repeated key's last
 * occurrence wins, as in protobuf map merging.
 */
public final class ExampleDecoder {
  /** Receives features by name. */
  public interface Sink {
    /** Feature to decode {@code name} into (cleared by the decoder), or null to skip it. */
    Feature feature(String name);

    /** FeatureList to decode SequenceExample list {@code name} into, or null to skip it. */
    FeatureList featureList(String name);

    /**
     * Same as {@link #feature(String)} with the name as UTF-8 bytes; sinks that look names up by
     * bytes override this to avoid a String per feature per record.
     */
    default Feature feature(byte[] buf, int off, int len) {
      return feature(new String(buf, off, len, java.nio.charset.StandardCharsets.UTF_8));
    }
  }

  private byte[] b;
  private int p;

  /** Decodes a serialized tf.train.Example. */
  public void decodeExample(byte[] buf, int off, int len, Sink sink) throws IOException {
    b = buf;
    p = off;
    int end = off + len;
    while (p < end) {
      int tag = varint32();
      if (tag == (1 << 3 | 2)) {
        int n = len();
        features(p + n, sink);
      } else {
        skip(tag);
      }
    }
    check(end);
  }

  /** Decodes a serialized tf.train.SequenceExample (context and feature_lists). */
  public void decodeSequenceExample(byte[] buf, int off, int len, Sink sink) throws IOException {
    b = buf;
    p = off;
    int end = off + len;
    while (p < end) {
      int tag = varint32();
      if (tag == (1 << 3 | 2)) {
        int n = len();
        features(p + n, sink);
      } else if (tag == (2 << 3 | 2)) {
        int n = len();
        featureLists(p + n, sink);
      } else {
        skip(tag);
      }
    }
    check(end);
  }

  private void features(int end, Sink sink) throws IOException {
    while (p < end) {
      int tag = varint32();
      if (tag != (1 << 3 | 2)) {
        skip(tag);
        continue;
      }
      int entryEnd = len();
      entryEnd += p;
      int nameStart = p;
      int nameLen = 0;
      int valueStart = -1;
      int valueEnd = -1;
      while (p < entryEnd) {
        int t = varint32();
        if (t == (1 << 3 | 2)) {
          int n = len();
          nameStart = p;
          nameLen = n;
          p += n;
        } else if (t == (2 << 3 | 2)) {
          int n = len();
          valueStart = p;
          valueEnd = p + n;
          p += n;
        } else {
          skip(t);
        }
      }
      check(entryEnd);
      Feature f = sink.feature(b, nameStart, nameLen);
      if (f != null) {
        f.clear(Feature.NONE);
        if (valueStart >= 0) {
          int save = p;
          p = valueStart;
          feature(valueEnd, f);
          p = save;
        }
      }
    }
    check(end);
  }

  private void featureLists(int end, Sink sink) throws IOException {
    while (p < end) {
      int tag = varint32();
      if (tag != (1 << 3 | 2)) {
        skip(tag);
        continue;
      }
      int entryEnd = len();
      entryEnd += p;
      String name = "";
      int valueStart = -1;
      int valueEnd = -1;
      while (p < entryEnd) {
        int t = varint32();
        if (t == (1 << 3 | 2)) {
          int n = len();
          name = new String(b, p, n, java.nio.charset.StandardCharsets.UTF_8);
          p += n;
        } else if (t == (2 << 3 | 2)) {
          int n = len();
          valueStart = p;
          valueEnd = p + n;
          p += n;
        } else {
          skip(t);
        }
      }
      check(entryEnd);
      FeatureList list = sink.featureList(name);
      if (list != null) {
        list.clear();
        if (valueStart >= 0) {
          int save = p;
          p = valueStart;
          while (p < valueEnd) {
            int t = varint32();
            if (t == (1 << 3 | 2)) {
              int fe = len();
      fe += p;
              feature(fe, list.add(Feature.NONE));
            } else {
              skip(t);
            }
          }
          check(valueEnd);
          p = save;
        }
      }
    }
    check(end);
  }

  /** Decodes a Feature message ending at {@code end} into {@code f} (last oneof field wins). */
  private void feature(int end, Feature f) throws IOException {
    while (p < end) {
      int tag = varint32();
      int field = tag >>> 3;
      if ((tag & 7) == 2 && field >= 1 && field <= 3) {
        int listEnd = len();
      listEnd += p;
        f.clear(field);
        list(listEnd, f);
      } else {
        skip(tag);
      }
    }
    check(end);
  }

  private void list(int end, Feature f) throws IOException {
    while (p < end) {
      int tag = varint32();
      if ((tag >>> 3) != 1) {
        skip(tag);
        continue;
      }
      int wire = tag & 7;
      switch (f.kind) {
        case Feature.BYTES:
          if (wire != 2) {
            throw bad("bytes_list value with wire type " + wire);
          }
          int n = len();
          f.addBytes(b, p, n);
          p += n;
          break;
        case Feature.FLOAT:
          if (wire == 2) {
            int pe = len();
      pe += p;
            if (((pe - p) & 3) != 0) {
              throw bad("packed float_list of " + (pe - p) + " bytes");
            }
            f.addFloats(b, p, (pe - p) >>> 2);
            p = pe;
          } else if (wire == 5) {
            f.addFloat(Float.intBitsToFloat(fixed32()));
          } else {
            throw bad("float_list value with wire type " + wire);
          }
          break;
        default:
          if (wire == 2) {
            int pe = len();
      pe += p;
            while (p < pe) {
              f.addLong(varint64());
            }
            check(pe);
          } else if (wire == 0) {
            f.addLong(varint64());
          } else {
            throw bad("int64_list value with wire type " + wire);
          }
      }
    }
    check(end);
  }

  private int fixed32() throws IOException {
    if (p + 4 > b.length) {
      throw bad("truncated fixed32");
    }
    int v = (b[p] & 0xff) | (b[p + 1] & 0xff) << 8 | (b[p + 2] & 0xff) << 16 | (b[p + 3] & 0xff) << 24;
    p += 4;
    return v;
  }

  /** A length prefix, checked to lie within the buffer. */
  private int len() throws IOException {
    int n = varint32();
    if (n < 0 || p + n > b.length || p + n < 0) {
      throw bad("length " + n + " out of range");
    }
    return n;
  }

  private int varint32() throws IOException {
    return (int) varint64();
  }

  private long varint64() throws IOException {
    long result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= b.length) {
        throw bad("truncated varint");
      }
      byte x = b[p++];
      result |= (long) (x & 0x7f) << shift;
      if (x >= 0) {
        return result;
      }
    }
    throw bad("malformed varint");
  }

  private void skip(int tag) throws IOException {
    switch (tag & 7) {
      case 0:
        varint64();
        break;
      case 1:
        p += 8;
        break;
      case 2:
        p += len();
        break;
      case 5:
        p += 4;
        break;
      default:
        throw bad("unsupported wire type " + (tag & 7));
    }
  }

  private void check(int end) throws IOException {
    if (p != end) {
      throw bad("field overruns its message (at " + p + ", message ends at " + end + ")");
    }
  }

  private IOException bad(String why) {
    return new IOException("malformed tf.train.Example/SequenceExample: " + why);
  }
}
