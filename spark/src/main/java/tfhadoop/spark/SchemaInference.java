package tfhadoop.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import tfhadoop.example.ExampleDecoder;
import tfhadoop.example.Feature;
import tfhadoop.example.FeatureList;
import tfhadoop.tfrecord.TFRecordFiles;
import tfhadoop.tfrecord.TFRecordReader;

/**
 * Infers a schema from the records of all files (or a {@code samplingRatio} share of them, and at
 * most {@code inferSchemaMaxRecords} per file). Rules: int64_list → bigint, float_list → float,
 * bytes_list → string; int64 mixed with float → float; anything mixed with bytes → string. A
 * feature is a scalar only if every occurrence holds exactly one value, otherwise an array (an
 * empty list makes it an array: that keeps "empty" and "missing" apart). Missing features and
 * kind-less features are nulls and do not affect the type; a feature never seen with a kind is a
 * string. SequenceExample feature lists are arrays of arrays. Columns are sorted by name.
 */
final class SchemaInference implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  /** Files at or above which inference runs as a Spark job, one task per group of files. */
  static final int DISTRIBUTE_FROM_FILES = 4;

  /** What has been seen of one feature name. */
  private static final class Seen implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    int kinds;
    boolean notSingle;
  }

  private final TreeMap<String, Seen> context = new TreeMap<>();
  private final TreeMap<String, Seen> lists = new TreeMap<>();
  private transient Feature scratch;
  private transient FeatureList scratchList;

  static StructType infer(FileIndex index, SourceOptions options, Configuration conf) throws IOException {
    StructType data;
    if (options.recordType == RecordType.BYTE_ARRAY) {
      data = new StructType().add(RecordType.BYTE_ARRAY_COLUMN, DataTypes.BinaryType, true);
    } else {
      List<FileIndex.DataFile> files = sample(index.files, options.samplingRatio);
      SchemaInference s;
      if (files.size() >= DISTRIBUTE_FROM_FILES) {
        s = distributed(files, options, conf);
      } else {
        s = new SchemaInference();
        for (FileIndex.DataFile f : files) {
          s.scan(f.status.getPath().toString(), options, conf);
        }
      }
      data = s.schema();
    }
    for (StructField pf : index.partitionSchema.fields()) {
      if (!hasField(data, pf.name())) {
        data = data.add(pf);
      }
    }
    return data;
  }

  static boolean hasField(StructType t, String name) {
    for (String n : t.fieldNames()) {
      if (n.equalsIgnoreCase(name)) {
        return true;
      }
    }
    return false;
  }

  /** Every k-th file so that about ratio × n files (at least one) are read. */
  static List<FileIndex.DataFile> sample(List<FileIndex.DataFile> files, double ratio) {
    if (ratio >= 1 || files.isEmpty()) {
      return files;
    }
    int want = Math.max(1, (int) Math.ceil(files.size() * ratio));
    List<FileIndex.DataFile> out = new ArrayList<>();
    double step = files.size() / (double) want;
    for (int i = 0; i < want; i++) {
      out.add(files.get((int) Math.floor(i * step)));
    }
    return out;
  }

  /** Notes each decoded feature once the decoder has moved past it. */
  private final class Recorder implements ExampleDecoder.Sink {
    private String lastName;
    private Seen lastList;

    @Override
    public Feature feature(String name) {
      flush();
      lastName = name;
      return scratch;
    }

    @Override
    public FeatureList featureList(String name) {
      flush();
      Seen s = lists.get(name);
      if (s == null) {
        lists.put(name, s = new Seen());
      }
      lastList = s;
      return scratchList;
    }

    void flush() {
      if (lastName != null) {
        note(context, lastName, scratch);
        lastName = null;
      }
      if (lastList != null) {
        for (int i = 0; i < scratchList.size(); i++) {
          Feature f = scratchList.get(i);
          if (f.kind != Feature.NONE) {
            lastList.kinds |= 1 << f.kind;
          }
        }
        lastList = null;
      }
    }
  }

  /** Scans the files in a Spark job (the driver only merges per-task summaries). */
  private static SchemaInference distributed(List<FileIndex.DataFile> files, final SourceOptions options,
      Configuration conf) {
    List<String> paths = new ArrayList<>();
    for (FileIndex.DataFile f : files) {
      paths.add(f.status.getPath().toString());
    }
    org.apache.spark.api.java.JavaSparkContext jsc =
        org.apache.spark.api.java.JavaSparkContext.fromSparkContext(org.apache.spark.sql.SparkSession.active().sparkContext());
    int slices = Math.max(1, Math.min(paths.size(), jsc.defaultParallelism() * 4));
    final SerializableConf sconf = new SerializableConf(conf);
    jsc.setJobDescription("tfrecord schema inference over " + paths.size() + " files");
    List<SchemaInference> parts = jsc.parallelize(paths, slices).mapPartitions(
        new org.apache.spark.api.java.function.FlatMapFunction<java.util.Iterator<String>, SchemaInference>() {
          @Override
          public java.util.Iterator<SchemaInference> call(java.util.Iterator<String> it) throws Exception {
            SchemaInference s = new SchemaInference();
            while (it.hasNext()) {
              s.scan(it.next(), options, sconf.get());
            }
            return java.util.Collections.singletonList(s).iterator();
          }
        }).collect();
    jsc.setJobDescription(null);
    SchemaInference all = new SchemaInference();
    for (SchemaInference p : parts) {
      all.merge(p);
    }
    return all;
  }

  private void merge(SchemaInference o) {
    mergeInto(context, o.context);
    mergeInto(lists, o.lists);
  }

  private static void mergeInto(Map<String, Seen> into, Map<String, Seen> from) {
    for (Map.Entry<String, Seen> e : from.entrySet()) {
      Seen s = into.get(e.getKey());
      if (s == null) {
        into.put(e.getKey(), s = new Seen());
      }
      s.kinds |= e.getValue().kinds;
      s.notSingle |= e.getValue().notSingle;
    }
  }

  private void scan(String file, SourceOptions options, Configuration conf) throws IOException {
    if (scratch == null) {
      scratch = new Feature();
      scratchList = new FeatureList();
    }
    ExampleDecoder dec = new ExampleDecoder();
    boolean seq = options.recordType == RecordType.SEQUENCE_EXAMPLE;
    Recorder rec = new Recorder();
    try (TFRecordReader r = TFRecordFiles.open(new org.apache.hadoop.fs.Path(file), conf, options.tfrecord)) {
      long n = 0;
      while (n < options.inferSchemaMaxRecords && r.next()) {
        n++;
        try {
          if (seq) {
            dec.decodeSequenceExample(r.buffer(), r.recordStart(), r.recordLength(), rec);
          } else {
            dec.decodeExample(r.buffer(), r.recordStart(), r.recordLength(), rec);
          }
          rec.flush();
        } catch (IOException e) {
          throw new IOException(e.getMessage() + " (record at " + r.recordOffset() + " in " + r.file() + ")", e);
        }
      }
    }
  }

  private static void note(Map<String, Seen> into, String name, Feature f) {
    Seen s = into.get(name);
    if (s == null) {
      into.put(name, s = new Seen());
    }
    if (f.kind != Feature.NONE) {
      s.kinds |= 1 << f.kind;
      if (f.count != 1) {
        s.notSingle = true;
      }
    }
  }

  private StructType schema() {
    StructType t = new StructType();
    for (Map.Entry<String, Seen> e : context.entrySet()) {
      if (lists.containsKey(e.getKey())) {
        continue;
      }
      DataType elem = elementType(e.getValue().kinds);
      t = t.add(e.getKey(), e.getValue().notSingle ? DataTypes.createArrayType(elem, true) : elem, true,
          metadata(e.getValue().kinds));
    }
    for (Map.Entry<String, Seen> e : lists.entrySet()) {
      DataType elem = elementType(e.getValue().kinds);
      t = t.add(e.getKey(), DataTypes.createArrayType(DataTypes.createArrayType(elem, true), true), true,
          metadata(e.getValue().kinds));
    }
    return t;
  }

  /**
   * A float column inferred from int64 and float features says so, so that its reader accepts the
   * int64 values a float holds exactly (and only those).
   */
  private static org.apache.spark.sql.types.Metadata metadata(int kinds) {
    org.apache.spark.sql.types.MetadataBuilder b = new org.apache.spark.sql.types.MetadataBuilder();
    if (kinds == ((1 << Feature.FLOAT) | (1 << Feature.INT64))) {
      b.putBoolean(FeatureConverter.MIXED_NUMERIC, true);
    }
    return b.build();
  }

  private static DataType elementType(int kinds) {
    if ((kinds & (1 << Feature.BYTES)) != 0 || kinds == 0) {
      return DataTypes.StringType;
    }
    if ((kinds & (1 << Feature.FLOAT)) != 0) {
      return DataTypes.FloatType;
    }
    return DataTypes.LongType;
  }
}
