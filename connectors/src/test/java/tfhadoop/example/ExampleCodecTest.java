package tfhadoop.example;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.Test;

public class ExampleCodecTest {
  /** Collects every feature / feature list into fresh objects. */
  static final class Collect implements ExampleDecoder.Sink {
    final Map<String, Feature> features = new HashMap<>();
    final Map<String, FeatureList> lists = new HashMap<>();

    @Override
    public Feature feature(String name) {
      return features.computeIfAbsent(name, n -> new Feature());
    }

    @Override
    public FeatureList featureList(String name) {
      return lists.computeIfAbsent(name, n -> new FeatureList());
    }
  }

  static byte[] hex(String s) {
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return b;
  }

  /** tf.train.Example serialized by TensorFlow 2.21 (see the test for the values). */
  static final String TF_EXAMPLE = "0a4d0a070a016512021a000a050a016e12000a110a0166120c120a0a080000003f0000a0bf0a160a016912111a0f0a0d01feffffffffffffffff01ac020a100a0173120b0a090a01780a000a02c3a9";
  static final String TF_SEQUENCE_EXAMPLE = "0a0d0a0b0a02696412051a030a010712280a150a03746f6b120e0a080a060a01610a01620a020a000a0f0a0177120a0a0812060a040000c03f";

  @Test
  public void decodesTensorFlowExample() throws IOException {
    byte[] b = hex(TF_EXAMPLE);
    Collect c = new Collect();
    new ExampleDecoder().decodeExample(b, 0, b.length, c);
    assertEquals(5, c.features.size());
    Feature i = c.features.get("i");
    assertEquals(Feature.INT64, i.kind);
    assertArrayEquals(new long[] {1, -2, 300}, i.longArray());
    Feature f = c.features.get("f");
    assertEquals(Feature.FLOAT, f.kind);
    assertArrayEquals(new float[] {0.5f, -1.25f}, f.floatArray(), 0f);
    Feature s = c.features.get("s");
    assertEquals(Feature.BYTES, s.kind);
    assertEquals(3, s.count);
    assertEquals("x", s.stringAt(0));
    assertEquals("", s.stringAt(1));
    assertEquals("é", s.stringAt(2));
    assertEquals(Feature.INT64, c.features.get("e").kind);
    assertEquals(0, c.features.get("e").count);
    assertEquals(Feature.NONE, c.features.get("n").kind);
  }

  @Test
  public void decodesTensorFlowSequenceExample() throws IOException {
    byte[] b = hex(TF_SEQUENCE_EXAMPLE);
    Collect c = new Collect();
    new ExampleDecoder().decodeSequenceExample(b, 0, b.length, c);
    assertArrayEquals(new long[] {7}, c.features.get("id").longArray());
    FeatureList tok = c.lists.get("tok");
    assertEquals(2, tok.size());
    assertEquals("a", tok.get(0).stringAt(0));
    assertEquals("b", tok.get(0).stringAt(1));
    assertEquals(Feature.BYTES, tok.get(1).kind);
    assertEquals(0, tok.get(1).count);
    assertArrayEquals(new float[] {1.5f}, c.lists.get("w").get(0).floatArray(), 0f);
  }

  @Test
  public void unpackedListsDecode() throws IOException {
    // Feature map entry "u" -> Int64List unpacked [5, 6]; "v" -> FloatList unpacked [2.0]
    byte[] u = msg(0x0a, concat(str(0x0a, "u"), msg(0x12, msg(0x1a, hex("08050806")))));
    byte[] v = msg(0x0a, concat(str(0x0a, "v"), msg(0x12, msg(0x12, hex("0d00000040")))));
    byte[] b = msg(0x0a, concat(u, v));
    Collect c = new Collect();
    new ExampleDecoder().decodeExample(b, 0, b.length, c);
    assertArrayEquals(new long[] {5, 6}, c.features.get("u").longArray());
    assertArrayEquals(new float[] {2.0f}, c.features.get("v").floatArray(), 0f);
  }

  static byte[] msg(int tag, byte[] body) {
    byte[] r = new byte[2 + body.length];
    r[0] = (byte) tag;
    r[1] = (byte) body.length;
    System.arraycopy(body, 0, r, 2, body.length);
    return r;
  }

  static byte[] str(int tag, String s) {
    return msg(tag, s.getBytes(StandardCharsets.UTF_8));
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] r = new byte[a.length + b.length];
    System.arraycopy(a, 0, r, 0, a.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }

  @Test
  public void randomExampleRoundTrip() throws IOException {
    Random rnd = new Random(9);
    ExampleEncoder enc = new ExampleEncoder();
    ExampleDecoder dec = new ExampleDecoder();
    for (int trial = 0; trial < 300; trial++) {
      int n = rnd.nextInt(8);
      byte[][] names = new byte[n][];
      Feature[] fs = new Feature[n];
      for (int i = 0; i < n; i++) {
        names[i] = ("f" + i + (rnd.nextBoolean() ? "é" : "")).getBytes(StandardCharsets.UTF_8);
        fs[i] = randomFeature(rnd);
      }
      enc.encodeExample(names, fs, n);
      Collect c = new Collect();
      dec.decodeExample(enc.buffer(), 0, enc.length(), c);
      assertEquals(n, c.features.size());
      for (int i = 0; i < n; i++) {
        assertFeatureEquals(fs[i], c.features.get(new String(names[i], StandardCharsets.UTF_8)));
      }
    }
  }

  @Test
  public void randomSequenceExampleRoundTrip() throws IOException {
    Random rnd = new Random(10);
    ExampleEncoder enc = new ExampleEncoder();
    ExampleDecoder dec = new ExampleDecoder();
    for (int trial = 0; trial < 200; trial++) {
      int n = rnd.nextInt(4);
      int m = rnd.nextInt(4);
      byte[][] names = new byte[n][];
      Feature[] fs = new Feature[n];
      for (int i = 0; i < n; i++) {
        names[i] = ("c" + i).getBytes(StandardCharsets.UTF_8);
        fs[i] = randomFeature(rnd);
      }
      byte[][] listNames = new byte[m][];
      FeatureList[] lists = new FeatureList[m];
      List<List<Feature>> want = new ArrayList<>();
      for (int j = 0; j < m; j++) {
        listNames[j] = ("l" + j).getBytes(StandardCharsets.UTF_8);
        lists[j] = new FeatureList();
        List<Feature> w = new ArrayList<>();
        int steps = rnd.nextInt(5);
        for (int s = 0; s < steps; s++) {
          Feature src = randomFeature(rnd);
          Feature dst = lists[j].add(src.kind);
          copy(src, dst);
          w.add(src);
        }
        want.add(w);
      }
      enc.encodeSequenceExample(names, fs, n, listNames, lists, m);
      Collect c = new Collect();
      dec.decodeSequenceExample(enc.buffer(), 0, enc.length(), c);
      for (int i = 0; i < n; i++) {
        assertFeatureEquals(fs[i], c.features.get("c" + i));
      }
      assertEquals(m, c.lists.size());
      for (int j = 0; j < m; j++) {
        FeatureList got = c.lists.get("l" + j);
        assertEquals(want.get(j).size(), got.size());
        for (int s = 0; s < got.size(); s++) {
          assertFeatureEquals(want.get(j).get(s), got.get(s));
        }
      }
    }
  }

  @Test
  public void truncatedMessageIsAnError() {
    byte[] b = hex(TF_EXAMPLE);
    for (int cut : new int[] {1, 5, 20, b.length - 1}) {
      try {
        new ExampleDecoder().decodeExample(b, 0, cut, new Collect());
        fail("no error at cut " + cut);
      } catch (IOException e) {
        assertTrue(e.getMessage().startsWith("malformed"));
      }
    }
  }

  @Test
  public void skippedFeaturesAreNotDecoded() throws IOException {
    byte[] b = hex(TF_EXAMPLE);
    final List<String> seen = new ArrayList<>();
    final Feature only = new Feature();
    new ExampleDecoder().decodeExample(b, 0, b.length, new ExampleDecoder.Sink() {
      @Override
      public Feature feature(String name) {
        seen.add(name);
        return name.equals("f") ? only : null;
      }

      @Override
      public FeatureList featureList(String name) {
        return null;
      }
    });
    assertEquals(5, seen.size());
    assertArrayEquals(new float[] {0.5f, -1.25f}, only.floatArray(), 0f);
  }

  static void copy(Feature src, Feature dst) {
    dst.clear(src.kind);
    for (int i = 0; i < src.count; i++) {
      if (src.kind == Feature.INT64) {
        dst.addLong(src.longs[i]);
      } else if (src.kind == Feature.FLOAT) {
        dst.addFloat(src.floats[i]);
      } else {
        dst.addBytes(src.bytes[i], src.bytesOff[i], src.bytesLen[i]);
      }
    }
  }

  static Feature randomFeature(Random rnd) {
    Feature f = new Feature().clear(rnd.nextInt(4));
    int count = f.kind == Feature.NONE ? 0 : rnd.nextInt(6);
    for (int i = 0; i < count; i++) {
      switch (f.kind) {
        case Feature.INT64:
          f.addLong(rnd.nextBoolean() ? rnd.nextLong() : rnd.nextInt(300) - 150);
          break;
        case Feature.FLOAT:
          f.addFloat(rnd.nextFloat() * 1e6f - 5e5f);
          break;
        default:
          byte[] b = new byte[rnd.nextInt(200)];
          rnd.nextBytes(b);
          f.addBytes(b, 0, b.length);
      }
    }
    return f;
  }

  static void assertFeatureEquals(Feature want, Feature got) {
    assertEquals(want.kind, got.kind);
    assertEquals(want.count, got.count);
    for (int i = 0; i < want.count; i++) {
      if (want.kind == Feature.INT64) {
        assertEquals(want.longs[i], got.longs[i]);
      } else if (want.kind == Feature.FLOAT) {
        assertEquals(Float.floatToIntBits(want.floats[i]), Float.floatToIntBits(got.floats[i]));
      } else {
        assertArrayEquals(want.bytesAt(i), got.bytesAt(i));
      }
    }
  }
}
