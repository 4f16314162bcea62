package tfhadoop.hive;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.serde.serdeConstants;
import org.apache.hadoop.hive.serde2.AbstractSerDe;
import org.apache.hadoop.hive.serde2.SerDeException;
import org.apache.hadoop.hive.serde2.SerDeStats;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.StructField;
import org.apache.hadoop.hive.serde2.objectinspector.StructObjectInspector;
import org.apache.hadoop.hive.serde2.typeinfo.StructTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoFactory;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Writable;
import tfhadoop.example.ExampleDecoder;
import tfhadoop.example.ExampleEncoder;
import tfhadoop.example.Feature;
import tfhadoop.example.FeatureList;

/**
 * Hive SerDe: each row is one tf.train.Example whose features are the table's columns (matched
 * case-insensitively, as Hive lower-cases column names). Use with
 * {@code STORED AS INPUTFORMAT 'tfhadoop.mapred.TFRecordInputFormat'
 * OUTPUTFORMAT 'tfhadoop.hive.TFRecordHiveOutputFormat'}. Column types: bigint/int/smallint/
 * tinyint/boolean ↔ int64_list, float/double/decimal ↔ float_list, string/varchar/char/binary ↔
 * bytes_list, array&lt;T&gt; ↔ lists. NULL omits the feature; a missing feature reads as NULL.
 */
public class TFRecordSerDe extends AbstractSerDe {
  private List<String> columns;
  private HiveColumn[] converters;
  private ObjectInspector inspector;
  private final Map<String, Integer> slots = new HashMap<>();
  private Feature[] features;
  private boolean[] present;
  private byte[][] names;
  private final ExampleDecoder decoder = new ExampleDecoder();
  private final ExampleEncoder encoder = new ExampleEncoder();
  private final BytesWritable out = new BytesWritable();
  private Feature[] outFeatures;
  private byte[][] outNames;

  @Override
  public void initialize(Configuration conf, Properties props) throws SerDeException {
    String cols = props.getProperty(serdeConstants.LIST_COLUMNS, "");
    String types = props.getProperty(serdeConstants.LIST_COLUMN_TYPES, "");
    String delim = props.getProperty(serdeConstants.COLUMN_NAME_DELIMITER, ",");
    columns = cols.isEmpty() ? new ArrayList<String>() : Arrays.asList(cols.split(java.util.regex.Pattern.quote(delim)));
    List<TypeInfo> typeInfos = TypeInfoUtils.getTypeInfosFromTypeString(types);
    if (columns.size() != typeInfos.size()) {
      throw new SerDeException("columns " + columns + " and types " + types + " differ in number");
    }
    int n = columns.size();
    converters = new HiveColumn[n];
    features = new Feature[n];
    present = new boolean[n];
    names = new byte[n][];
    outFeatures = new Feature[n];
    outNames = new byte[n][];
    for (int i = 0; i < n; i++) {
      converters[i] = HiveColumn.forType(columns.get(i), typeInfos.get(i));
      features[i] = new Feature();
      names[i] = columns.get(i).getBytes(StandardCharsets.UTF_8);
      slots.put(columns.get(i).toLowerCase(Locale.ROOT), i);
    }
    StructTypeInfo row = (StructTypeInfo) TypeInfoFactory.getStructTypeInfo(columns, typeInfos);
    inspector = TypeInfoUtils.getStandardJavaObjectInspectorFromTypeInfo(row);
  }

  @Override
  public Class<? extends Writable> getSerializedClass() {
    return BytesWritable.class;
  }

  @Override
  public Writable serialize(Object obj, ObjectInspector oi) throws SerDeException {
    StructObjectInspector soi = (StructObjectInspector) oi;
    List<? extends StructField> fields = soi.getAllStructFieldRefs();
    int nf = 0;
    for (int i = 0; i < fields.size() && i < converters.length; i++) {
      Object v = soi.getStructFieldData(obj, fields.get(i));
      if (v == null) {
        continue;
      }
      converters[i].fill(features[i], v, fields.get(i).getFieldObjectInspector());
      outNames[nf] = names[i];
      outFeatures[nf++] = features[i];
    }
    encoder.encodeExample(outNames, outFeatures, nf);
    out.set(encoder.buffer(), 0, encoder.length());
    return out;
  }

  @Override
  public SerDeStats getSerDeStats() {
    return null;
  }

  @Override
  public Object deserialize(Writable blob) throws SerDeException {
    BytesWritable b = (BytesWritable) blob;
    Arrays.fill(present, false);
    try {
      decoder.decodeExample(b.getBytes(), 0, b.getLength(), new ExampleDecoder.Sink() {
        @Override
        public Feature feature(String name) {
          Integer i = slots.get(name.toLowerCase(Locale.ROOT));
          if (i == null) {
            return null;
          }
          present[i] = true;
          return features[i];
        }

        @Override
        public FeatureList featureList(String name) {
          return null;
        }
      });
      List<Object> row = new ArrayList<>(converters.length);
      for (int i = 0; i < converters.length; i++) {
        row.add(present[i] ? converters[i].value(features[i]) : null);
      }
      return row;
    } catch (IOException e) {
      throw new SerDeException(e.getMessage(), e);
    }
  }

  @Override
  public ObjectInspector getObjectInspector() {
    return inspector;
  }
}
