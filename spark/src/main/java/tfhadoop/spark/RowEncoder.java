package tfhadoop.spark;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import tfhadoop.example.ExampleEncoder;
import tfhadoop.example.Feature;
import tfhadoop.example.FeatureList;

/**
 * Serializes the data columns of a row as a tf.Example, a SequenceExample (array-of-array columns
 * become feature lists, the rest context) or raw bytes (ByteArray: the one binary/string column).
 * Built once per task from the schema; all buffers are reused across rows.
 */
final class RowEncoder {
  private final RecordType recordType;
  private final int[] ordinals;
  private final byte[][] names;
  private final ColumnEncoder[] encoders;
  private final Feature[] features;
  private final FeatureList[] lists;
  private final byte[][] outNames;
  private final Feature[] outFeatures;
  private final byte[][] outListNames;
  private final FeatureList[] outLists;
  private final ExampleEncoder encoder = new ExampleEncoder();
  private final boolean rawIsString;
  private byte[] raw;
  private int rawLength;

  /** @param ordinals positions in the input row of the data columns (schema order) */
  RowEncoder(RecordType recordType, StructType schema, int[] ordinals) {
    this.recordType = recordType;
    this.ordinals = ordinals;
    StructField[] fields = schema.fields();
    int n = ordinals.length;
    names = new byte[n][];
    encoders = new ColumnEncoder[n];
    features = new Feature[n];
    lists = new FeatureList[n];
    rawIsString = n == 1 && fields[ordinals[0]].dataType() instanceof StringType;
    if (recordType == RecordType.BYTE_ARRAY) {
      DataType t = n == 1 ? fields[ordinals[0]].dataType() : null;
      if (!(t instanceof BinaryType || t instanceof StringType)) {
        throw new IllegalArgumentException("recordType=ByteArray writes exactly one binary (or string) column, got "
            + schema.simpleString());
      }
    } else {
      for (int i = 0; i < n; i++) {
        StructField f = fields[ordinals[i]];
        names[i] = f.name().getBytes(StandardCharsets.UTF_8);
        if (ColumnEncoder.isNested(f.dataType())) {
          if (recordType != RecordType.SEQUENCE_EXAMPLE) {
            throw new IllegalArgumentException("column " + f.name() + " is " + f.dataType().simpleString()
                + ": arrays of arrays need recordType=SequenceExample");
          }
          encoders[i] = new ColumnEncoder.Nested(f.name(), f.dataType());
          lists[i] = new FeatureList();
        } else {
          encoders[i] = new ColumnEncoder.Single(f.name(), f.dataType());
          features[i] = new Feature();
        }
      }
    }
    outNames = new byte[n][];
    outFeatures = new Feature[n];
    outListNames = new byte[n][];
    outLists = new FeatureList[n];
  }

  /** Encodes a row; the bytes are {@link #buffer()}[0, {@link #length()}). */
  void encode(InternalRow row) {
    if (recordType == RecordType.BYTE_ARRAY) {
      int o = ordinals[0];
      raw = row.isNullAt(o) ? new byte[0] : rawIsString ? row.getUTF8String(o).getBytes() : row.getBinary(o);
      rawLength = raw.length;
      return;
    }
    int nf = 0;
    int nl = 0;
    for (int i = 0; i < ordinals.length; i++) {
      int o = ordinals[i];
      if (row.isNullAt(o)) {
        continue;
      }
      if (encoders[i] instanceof ColumnEncoder.Nested) {
        ((ColumnEncoder.Nested) encoders[i]).fill(lists[i], row, o);
        outListNames[nl] = names[i];
        outLists[nl++] = lists[i];
      } else {
        ((ColumnEncoder.Single) encoders[i]).fill(features[i], row, o);
        outNames[nf] = names[i];
        outFeatures[nf++] = features[i];
      }
    }
    if (recordType == RecordType.SEQUENCE_EXAMPLE) {
      encoder.encodeSequenceExample(outNames, outFeatures, nf, outListNames, outLists, nl);
    } else {
      encoder.encodeExample(outNames, outFeatures, nf);
    }
  }

  byte[] buffer() {
    return recordType == RecordType.BYTE_ARRAY ? raw : encoder.buffer();
  }

  int length() {
    return recordType == RecordType.BYTE_ARRAY ? rawLength : encoder.length();
  }
}
