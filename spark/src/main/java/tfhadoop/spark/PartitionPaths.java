package tfhadoop.spark;

import java.nio.charset.StandardCharsets;
import java.util.BitSet;

/**
 * {@code key=value} directory names: escaping as Spark/Hive do (percent-encoding of path-unsafe
 * characters) and Hive's marker for null values.
 */
final class PartitionPaths {
  static final String NULL_VALUE = "__HIVE_DEFAULT_PARTITION__";
  private static final BitSet UNSAFE = new BitSet(128);

  static {
    for (char c = 0; c < ' '; c++) {
      UNSAFE.set(c);
    }
    for (char c : "\"#%'*/:=?\\\u007F{[]^".toCharArray()) {
      UNSAFE.set(c);
    }
  }

  private PartitionPaths() {}

  static String escape(String s) {
    if (s == null) {
      return NULL_VALUE;
    }
    if (s.isEmpty()) {
      return NULL_VALUE;
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 128 && UNSAFE.get(c)) {
        b.append('%').append(String.format("%02X", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  static String unescape(String s) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%' && isHex(s, i + 1) && isHex(s, i + 2)) {
        b.append((char) Integer.parseInt(s.substring(i + 1, i + 3), 16));
        i += 2;
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  private static boolean isHex(String s, int i) {
    return i < s.length() && Character.digit(s.charAt(i), 16) >= 0;
  }

  /** Value of a partition directory segment, null for Hive's null marker. */
  static String value(String segmentValue) {
    return NULL_VALUE.equals(segmentValue) ? null : unescape(segmentValue);
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
