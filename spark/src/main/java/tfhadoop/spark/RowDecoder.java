package tfhadoop.spark;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import tfhadoop.example.ExampleDecoder;
import tfhadoop.example.Feature;
import tfhadoop.example.FeatureList;
import tfhadoop.tfrecord.TFRecordReader;

/**
 * Decodes records into rows of the required data columns followed by constant partition values.
 * Built once per task from the schema: features not in the schema are skipped undecoded (column
 * pruning), missing features become nulls.
 */
final class RowDecoder implements ExampleDecoder.Sink {
  private final RecordType recordType;
  private final int width;
  private final Object[] constants;
  private final int[] dataPositions;
  private final Map<String, Integer> slots = new HashMap<>();
  private final FeatureConverter[] converters;
  private final Feature[] features;
  private final FeatureList[] lists;
  private final boolean[] present;
  private final boolean[] presentList;
  private final ExampleDecoder decoder = new ExampleDecoder();

  /**
   * @param readSchema the columns to produce, in order
   * @param constants per read column: the partition value (Catalyst form) for partition columns
   * @param isPartition per read column: whether it is a partition column
   */
  RowDecoder(RecordType recordType, StructType readSchema, Object[] constants, boolean[] isPartition) {
    this.recordType = recordType;
    StructField[] fields = readSchema.fields();
    this.width = fields.length;
    this.constants = constants;
    int n = 0;
    for (boolean p : isPartition) {
      n += p ? 0 : 1;
    }
    this.dataPositions = new int[n];
    this.converters = new FeatureConverter[n];
    this.features = new Feature[n];
    this.lists = new FeatureList[n];
    this.present = new boolean[n];
    this.presentList = new boolean[n];
    int k = 0;
    for (int i = 0; i < width; i++) {
      if (isPartition[i]) {
        continue;
      }
      dataPositions[k] = i;
      slots.put(fields[i].name(), k);
      converters[k] = FeatureConverter.forType(fields[i].name(), fields[i].dataType());
      features[k] = new Feature();
      lists[k] = new FeatureList();
      k++;
    }
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
      for (int i = 0; i < dataPositions.length; i++) {
        if (presentList[i]) {
          values[dataPositions[i]] = converters[i].convertList(lists[i]);
        } else if (present[i]) {
          values[dataPositions[i]] = converters[i].convert(features[i]);
        }
      }
    } catch (IOException e) {
      throw new IOException(e.getMessage() + " (record at " + r.recordOffset() + " in " + r.file() + ")", e);
    }
    return new GenericInternalRow(values);
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
  public FeatureList featureList(String name) {
    Integer i = slots.get(name);
    if (i == null) {
      return null;
    }
    presentList[i] = true;
    return lists[i];
  }
}
