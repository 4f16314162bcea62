package tfhadoop.spark;

import java.util.ArrayList;
import java.util.List;

/** Parses the JSON string arrays Spark uses in options ({@code paths}, {@code __partition_columns}). */
final class JsonStrings {
  private JsonStrings() {}

  static List<String> parseArray(String json) {
    List<String> out = new ArrayList<>();
    String s = json.trim();
    if (!s.startsWith("[") || !s.endsWith("]")) {
      throw new IllegalArgumentException("expected a JSON array of strings, got " + json);
    }
    int i = 1;
    int n = s.length() - 1;
    while (i < n) {
      char c = s.charAt(i);
      if (c == '"') {
        StringBuilder b = new StringBuilder();
        i++;
        while (i < n && s.charAt(i) != '"') {
          char x = s.charAt(i);
          if (x == '\\') {
            char e = s.charAt(++i);
            switch (e) {
              case 'n':
                b.append('\n');
                break;
              case 't':
                b.append('\t');
                break;
              case 'u':
                b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
                i += 4;
                break;
              default:
                b.append(e);
            }
          } else {
            b.append(x);
          }
          i++;
        }
        out.add(b.toString());
      }
      i++;
    }
    return out;
  }

  static String toArray(List<String> items) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < items.size(); i++) {
      if (i > 0) {
        b.append(',');
      }
      b.append('"').append(items.get(i).replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
    }
    return b.append(']').toString();
  }
}
