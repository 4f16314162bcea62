package tfhadoop.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecificInternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import tfhadoop.example.ExampleDecoder;
import tfhadoop.example.Feature;
import tfhadoop.example.FeatureList;
import tfhadoop.tfrecord.TFRecordReader;

/**
 * Decodes records into rows of the read schema: data columns from features, partition columns as
 * constants. Built once per task from the schema: features not in the schema are skipped
 * undecoded (column pruning), missing features become nulls, except under a non-nullable column,
 * where they are an error naming feature, column, file and the record's offset (as is any value the
 * column cannot hold: see {@link FeatureConverter}). A struct column {@code s} is read from the
 * flattened features {@code s.a}, {@code s.b}, ... (as the writer stores structs); it is null when
 * none of them is present.
 */
final class RowDecoder implements ExampleDecoder.Sink {
  /** A column or struct field: a leaf feature slot, or a struct of children. */
  private static final class Node {
    final int slot;
    final Node[] children;
    final String name;
    final boolean nullable;

    Node(int slot, Node[] children, String name, boolean nullable) {
      this.slot = slot;
      this.children = children;
      this.name = name;
      this.nullable = nullable;
    }
  }

  private final RecordType recordType;
  private final Object[] constants;
  private final int[] dataPositions;
  private final Node[] nodes;
  private final Map<String, Integer> slots = new HashMap<>();
  private final List<FeatureConverter> converterList = new ArrayList<>();
  private final FeatureConverter[] converters;
  private final java.util.Set<String> exactColumns;
  private TFRecordReader current;
  private final SpecificInternalRow row;
  private Feature[] features;
  private FeatureList[] lists;
  private boolean[] present;
  private boolean[] presentList;
  private final ExampleDecoder decoder = new ExampleDecoder();
  private final NameTable names;

  /**
   * @param readSchema the columns to produce, in order
   * @param constants per read column: the partition value (Catalyst form) for partition columns
   * @param isPartition per read column: whether it is a partition column
   * @param exactColumns columns written exactly (option exactColumns): they also read int64 and
   *     decimal-text features
   */
  RowDecoder(RecordType recordType, StructType readSchema, Object[] constants, boolean[] isPartition,
      java.util.Set<String> exactColumns) {
    this.recordType = recordType;
    this.exactColumns = exactColumns;
    StructField[] fields = readSchema.fields();
    this.constants = constants;
    int n = 0;
    for (boolean p : isPartition) {
      n += p ? 0 : 1;
    }
    this.dataPositions = new int[n];
    this.nodes = new Node[n];
    int k = 0;
    for (int i = 0; i < fields.length; i++) {
      if (isPartition[i]) {
        continue;
      }
      dataPositions[k] = i;
      nodes[k++] = node(fields[i], fields[i].name());
    }
    names = new NameTable(slots);
    converters = converterList.toArray(new FeatureConverter[0]);
    row = new SpecificInternalRow(readSchema);
    for (int i = 0; i < fields.length; i++) {
      if (isPartition[i]) {
        row.update(i, constants[i]);
      }
    }
    int slotsN = converters.length;
    features = new Feature[slotsN];
    lists = new FeatureList[slotsN];
    present = new boolean[slotsN];
    presentList = new boolean[slotsN];
    for (int s = 0; s < slotsN; s++) {
      features[s] = new Feature();
      lists[s] = new FeatureList();
    }
  }

  private Node node(StructField field, String name) {
    DataType type = field.dataType();
    if (type instanceof StructType && recordType != RecordType.BYTE_ARRAY) {
      StructField[] f = ((StructType) type).fields();
      Node[] children = new Node[f.length];
      for (int i = 0; i < f.length; i++) {
        children[i] = node(f[i], name + "." + f[i].name());
      }
      return new Node(-1, children, name, field.nullable());
    }
    int slot = converterList.size();
    slots.put(name, slot);
    if (recordType != RecordType.BYTE_ARRAY) {
      boolean mixed = field.metadata().contains(FeatureConverter.MIXED_NUMERIC);
      converterList.add(FeatureConverter.forType(name, type,
          new FeatureConverter.Rules(exactColumns.contains(name.toLowerCase(java.util.Locale.ROOT)), mixed)));
    } else {
      converterList.add(null);
    }
    return new Node(slot, null, name, field.nullable());
  }

  /**
   * Decodes one record. The returned row is reused by the next call (Spark's scan projects each row
   * to an UnsafeRow before asking for the next, as with its own file readers); scalar numeric
   * columns are set unboxed.
   */
  InternalRow decode(TFRecordReader r) throws IOException {
    if (recordType == RecordType.BYTE_ARRAY) {
      Object[] values = constants.clone();
      if (dataPositions.length > 0) {
        values[dataPositions[0]] = r.copyRecord();
      }
      return new GenericInternalRow(values);
    }
    java.util.Arrays.fill(present, false);
    java.util.Arrays.fill(presentList, false);
    current = r;
    try {
      if (recordType == RecordType.SEQUENCE_EXAMPLE) {
        decoder.decodeSequenceExample(r.buffer(), r.recordStart(), r.recordLength(), this);
      } else {
        decoder.decodeExample(r.buffer(), r.recordStart(), r.recordLength(), this);
      }
      for (int i = 0; i < nodes.length; i++) {
        Node n = nodes[i];
        int s = n.slot;
        if (n.children == null && present[s] && !presentList[s]) {
          if (!converters[s].write(features[s], row, dataPositions[i]) && !n.nullable) {
            value(n); // throws the missing-value error
          }
        } else {
          row.update(dataPositions[i], value(n));
        }
      }
    } catch (MissingValue e) {
      throw e;
    } catch (IOException e) {
      throw new IOException(e.getMessage() + " (record at offset " + r.recordOffset() + " of " + r.file() + ")", e);
    }
    return row;
  }

  private Object value(Node n) throws IOException {
    if (n.children == null) {
      int s = n.slot;
      Object v;
      if (presentList[s]) {
        v = converters[s].convertList(lists[s]);
      } else if (present[s]) {
        v = converters[s].convert(features[s]);
        if (v == null && !n.nullable) {
          throw new MissingValue("feature '" + n.name + "' has no value in record at offset " + current.recordOffset()
              + " of " + current.file() + ", but column " + n.name + " is not nullable");
        }
      } else {
        v = null;
        if (!n.nullable) {
          throw new MissingValue("feature '" + n.name + "' is missing in record at offset " + current.recordOffset()
              + " of " + current.file() + ", but column " + n.name + " is not nullable");
        }
      }
      return v;
    }
    Object[] v = new Object[n.children.length];
    boolean any = anyPresent(n);
    if (!any) {
      if (!n.nullable) {
        throw new MissingValue("no feature of struct column " + n.name + " (" + n.name + ".*) is present in record at"
            + " offset " + current.recordOffset() + " of " + current.file() + ", but column " + n.name
            + " is not nullable");
      }
      return null;
    }
    for (int i = 0; i < v.length; i++) {
      v[i] = value(n.children[i]);
    }
    return new GenericInternalRow(v);
  }

  private boolean anyPresent(Node n) {
    if (n.children == null) {
      return present[n.slot] || presentList[n.slot];
    }
    for (Node c : n.children) {
      if (anyPresent(c)) {
        return true;
      }
    }
    return false;
  }

  /** A missing value under a non-nullable column; its message already names file and offset. */
  static final class MissingValue extends IOException {
    private static final long serialVersionUID = 1L;

    MissingValue(String message) {
      super(message);
    }
  }

  @Override
  public Feature feature(String name) {
    Integer i = slots.get(name);
    if (i == null) {
      return null;
    }
    present[i] = true;
    return features[i];
  }

  @Override
  public Feature feature(byte[] b, int off, int len) {
    int i = names.get(b, off, len);
    if (i < 0) {
      return null;
    }
    present[i] = true;
    return features[i];
  }

  @Override
  public FeatureList featureList(String name) {
    Integer i = slots.get(name);
    if (i == null) {
      return null;
    }
    presentList[i] = true;
    return lists[i];
  }
}
