package tfhadoop.spark;

import static org.junit.Assert.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.Test;

public class NameTableTest {
  @Test
  public void findsEveryNameAndMissesOthers() {
    Random rnd = new Random(4);
    for (int trial = 0; trial < 50; trial++) {
      Map<String, Integer> m = new HashMap<>();
      int n = 1 + rnd.nextInt(40);
      for (int i = 0; i < n; i++) {
        m.put("f" + rnd.nextInt(1000) + (rnd.nextBoolean() ? "é.x" : ""), i);
      }
      NameTable t = new NameTable(m);
      for (Map.Entry<String, Integer> e : m.entrySet()) {
        byte[] k = ("??" + e.getKey() + "!").getBytes(StandardCharsets.UTF_8);
        assertEquals(e.getKey(), (int) e.getValue(), t.get(k, 2, k.length - 3));
      }
      byte[] miss = "nope".getBytes(StandardCharsets.UTF_8);
      assertEquals(-1, t.get(miss, 0, miss.length));
      assertEquals(-1, t.get(miss, 0, 0));
    }
  }
}
