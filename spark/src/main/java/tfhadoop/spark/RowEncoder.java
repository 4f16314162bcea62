package tfhadoop.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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
  /** Where a leaf column sits: ordinals from the top row down through structs, and struct widths. */
  private static final class Leaf {
    final int[] path;
    final int[] widths;

    Leaf(int[] path, int[] widths) {
      this.path = path;
      this.widths = widths;
    }
  }

  private final RecordType recordType;
  private final int[] ordinals;
  private final Leaf[] leaves;
  private byte[][] names;
  private ColumnEncoder[] encoders;
  private Feature[] features;
  private FeatureList[] lists;
  private byte[][] outNames;
  private Feature[] outFeatures;
  private byte[][] outListNames;
  private FeatureList[] outLists;
  private final ExampleEncoder encoder = new ExampleEncoder();
  private final boolean rawIsString;
  private final int width;
  private byte[] raw;
  private int rawLength;

  /** @param ordinals positions in the input row of the data columns (schema order) */
  RowEncoder(RecordType recordType, StructType schema, int[] ordinals) {
    this(recordType, schema, ordinals, java.util.Collections.<String>emptySet());
  }

  /** @param exactColumns lower-cased columns written exactly (option exactColumns) */
  RowEncoder(RecordType recordType, StructType schema, int[] ordinals, java.util.Set<String> exactColumns) {
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
      leaves = null;
    } else {
      List<StructField> flat = new ArrayList<>();
      List<Leaf> where = new ArrayList<>();
      for (int o : ordinals) {
        flatten(fields[o], fields[o].name(), new int[] {o}, new int[0], flat, where);
      }
      n = flat.size();
      names = new byte[n][];
      encoders = new ColumnEncoder[n];
      features = new Feature[n];
      lists = new FeatureList[n];
      leaves = where.toArray(new Leaf[0]);
      for (int i = 0; i < n; i++) {
        StructField f = flat.get(i);
        names[i] = f.name().getBytes(StandardCharsets.UTF_8);
        if (ColumnEncoder.isNested(f.dataType())) {
          if (recordType != RecordType.SEQUENCE_EXAMPLE) {
            throw new IllegalArgumentException("column " + f.name() + " is " + f.dataType().simpleString()
                + ": arrays of arrays (and of vectors) need recordType=SequenceExample");
          }
          encoders[i] = new ColumnEncoder.Nested(f.name(), f.dataType());
          lists[i] = new FeatureList();
        } else {
          encoders[i] = new ColumnEncoder.Single(f.name(), f.dataType(),
              exactColumns.contains(f.name().toLowerCase(java.util.Locale.ROOT)));
          features[i] = new Feature();
        }
      }
    }
    for (String c : exactColumns) {
      boolean found = false;
      for (byte[] name : names) {
        found |= name != null && new String(name, StandardCharsets.UTF_8).equalsIgnoreCase(c);
      }
      if (!found) {
        throw new IllegalArgumentException("option exactColumns names " + c + ", which is not a column written"
            + " (columns: " + schema.simpleString() + ")");
      }
    }
    outNames = new byte[n][];
    this.width = n;
    outFeatures = new Feature[n];
    outListNames = new byte[n][];
    outLists = new FeatureList[n];
  }

  /** Struct fields become features named parent.child (recursively); other columns are leaves. */
  private static void flatten(StructField f, String name, int[] path, int[] widths, List<StructField> out,
      List<Leaf> where) {
    if (f.dataType() instanceof StructType) {
      StructField[] children = ((StructType) f.dataType()).fields();
      int[] w = java.util.Arrays.copyOf(widths, widths.length + 1);
      w[widths.length] = children.length;
      for (int c = 0; c < children.length; c++) {
        int[] p = java.util.Arrays.copyOf(path, path.length + 1);
        p[path.length] = c;
        flatten(children[c], name + "." + children[c].name(), p, w, out, where);
      }
      return;
    }
    out.add(new StructField(name, f.dataType(), true, f.metadata()));
    where.add(new Leaf(path, widths));
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
    for (int i = 0; i < width; i++) {
      Leaf leaf = leaves[i];
      InternalRow r = row;
      int last = leaf.path.length - 1;
      for (int k = 0; k < last && r != null; k++) {
        r = r.isNullAt(leaf.path[k]) ? null : r.getStruct(leaf.path[k], leaf.widths[k]);
      }
      int o = leaf.path[last];
      if (r == null || r.isNullAt(o)) {
        continue;
      }
      if (encoders[i] instanceof ColumnEncoder.Nested) {
        ((ColumnEncoder.Nested) encoders[i]).fill(lists[i], r, o);
        outListNames[nl] = names[i];
        outLists[nl++] = lists[i];
      } else {
        ((ColumnEncoder.Single) encoders[i]).fill(features[i], r, o);
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
