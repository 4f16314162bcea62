package tfhadoop.spark;

import java.util.Locale;

/** What each TFRecord holds: the {@code recordType} option, spelled as both peer connectors spell it. */
public enum RecordType {
  EXAMPLE, SEQUENCE_EXAMPLE, BYTE_ARRAY;

  /** Column name of the single binary column in ByteArray mode (as the peers name it). */
  public static final String BYTE_ARRAY_COLUMN = "byteArray";

  public static RecordType parse(String s) {
    if (s == null) {
      return EXAMPLE;
    }
    switch (s.trim().toLowerCase(Locale.ROOT).replace("_", "")) {
      case "example":
        return EXAMPLE;
      case "sequenceexample":
        return SEQUENCE_EXAMPLE;
      case "bytearray":
      case "bytes":
        return BYTE_ARRAY;
      default:
        throw new IllegalArgumentException("option recordType must be Example, SequenceExample or ByteArray, got '" + s + "'");
    }
  }
}
