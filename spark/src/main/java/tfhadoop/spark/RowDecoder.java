package tfhadoop.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
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
 * undecoded (column pruning), missing features become nulls. A struct column {@code s} is read
 * from the flattened features {@code s.a}, {@code s.b}, ... (as the writer stores structs); it is
 * null when none of them is present.
 */
final class RowDecoder implements ExampleDecoder.Sink {
  /** A column or struct field: a leaf feature slot, or a struct of children. */
  private static final class Node {
    final int slot;
    final Node[] children;

    Node(int slot, Node[] children) {
      this.slot = slot;
      this.children = children;
    }
  }

  private final RecordType recordType;
  private final Object[] constants;
  private final int[] dataPositions;
  private final Node[] nodes;
  private final Map<String, Integer> slots = new HashMap<>();
  private final List<FeatureConverter> converters = new ArrayList<>();
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
   */
  RowDecoder(RecordType recordType, StructType readSchema, Object[] constants, boolean[] isPartition) {
    this.recordType = recordType;
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
      nodes[k++] = node(fields[i].name(), fields[i].dataType());
    }
    names = new NameTable(slots);
    int slotsN = converters.size();
    features = new Feature[slotsN];
    lists = new FeatureList[slotsN];
    present = new boolean[slotsN];
    presentList = new boolean[slotsN];
    for (int s = 0; s < slotsN; s++) {
      features[s] = new Feature();
      lists[s] = new FeatureList();
    }
  }

  private Node node(String name, DataType type) {
    if (type instanceof StructType && recordType != RecordType.BYTE_ARRAY) {
      StructField[] f = ((StructType) type).fields();
      Node[] children = new Node[f.length];
      for (int i = 0; i < f.length; i++) {
        children[i] = node(name + "." + f[i].name(), f[i].dataType());
      }
      return new Node(-1, children);
    }
    int slot = converters.size();
    slots.put(name, slot);
    converters.add(FeatureConverter.forType(name, type));
    return new Node(slot, null);
  }

  InternalRow decode(TFRecordReader r) throws IOException {
    Object[] values = constants.clone();
    if (recordType == RecordType.BYTE_ARRAY) {
      if (dataPositions.length > 0) {
        values[dataPositions[0]] = r.copyRecord();
      }
      return new GenericInternalRow(values);
    }
    java.util.Arrays.fill(present, false);
    java.util.Arrays.fill(presentList, false);
    try {
      if (recordType == RecordType.SEQUENCE_EXAMPLE) {
        decoder.decodeSequenceExample(r.buffer(), r.recordStart(), r.recordLength(), this);
      } else {
        decoder.decodeExample(r.buffer(), r.recordStart(), r.recordLength(), this);
      }
      for (int i = 0; i < nodes.length; i++) {
        values[dataPositions[i]] = value(nodes[i]);
      }
    } catch (IOException e) {
      throw new IOException(e.getMessage() + " (record at " + r.recordOffset() + " in " + r.file() + ")", e);
    }
    return new GenericInternalRow(values);
  }

  private Object value(Node n) throws IOException {
    if (n.children == null) {
      int s = n.slot;
      if (presentList[s]) {
        return converters.get(s).convertList(lists[s]);
      }
      return present[s] ? converters.get(s).convert(features[s]) : null;
    }
    Object[] v = new Object[n.children.length];
    boolean any = false;
    for (int i = 0; i < v.length; i++) {
      v[i] = value(n.children[i]);
      any |= v[i] != null;
    }
    return any ? new GenericInternalRow(v) : null;
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
