package tfhadoop.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import tfhadoop.tfrecord.TFRecordFiles;

/**
 * Plans the read: lists files once, cuts uncompressed files into slices of
 * {@code maxPartitionBytes} (default {@code spark.sql.files.maxPartitionBytes}) that the split
 * reader resyncs in; compressed files are one slice each.
 */
final class TFRecordScan implements Scan, Batch {
  private final StructType readSchema;
  private final SourceOptions options;

  private transient FileIndex index;
  private transient Configuration conf;

  TFRecordScan(StructType readSchema, SourceOptions options) {
    this.readSchema = readSchema;
    this.options = options;
  }

  private Configuration conf() {
    if (conf == null) {
      conf = SerializableConf.fromSession(options.raw);
    }
    return conf;
  }

  private FileIndex index() {
    if (index == null) {
      try {
        index = FileIndex.list(options, conf());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return index;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    return "TFRecordScan(" + options.recordType + ", " + options.paths + ")";
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return ReadMetrics.supported();
  }

  @Override
  public InputPartition[] planInputPartitions() {
    Configuration conf = conf();
    FileIndex index = index();
    long maxBytes = options.maxPartitionBytes > 0 ? options.maxPartitionBytes
        : parseBytes(SparkSession.active().conf().get("spark.sql.files.maxPartitionBytes", "134217728"));
    long openCost = parseBytes(SparkSession.active().conf().get("spark.sql.files.openCostInBytes", "4194304"));
    StructField[] pfields = index.partitionSchema.fields();
    List<FileSlice> out = new ArrayList<>();
    for (FileIndex.DataFile f : index.files) {
      String[] pv = new String[pfields.length];
      for (int i = 0; i < pfields.length; i++) {
        pv[i] = f.partitionValues.get(pfields[i].name());
      }
      FileStatus st = f.status;
      long len = st.getLen();
      boolean split = options.tfrecord.splittable && TFRecordFiles.isUncompressed(st.getPath(), conf);
      if (!split || len <= maxBytes) {
        out.add(new FileSlice(st.getPath().toString(), 0, len, pv, hosts(st, conf, 0, len)));
      } else {
        for (long s = 0; s < len; s += maxBytes) {
          long l = Math.min(maxBytes, len - s);
          out.add(new FileSlice(st.getPath().toString(), s, l, pv, hosts(st, conf, s, l)));
        }
      }
    }
    return pack(out, maxBytes, openCost);
  }

  /** Packs slices into groups of about maxBytes (each costing at least openCost), largest first. */
  static InputPartition[] pack(List<FileSlice> slices, long maxBytes, long openCost) {
    List<FileSlice> sorted = new ArrayList<>(slices);
    java.util.Collections.sort(sorted, new java.util.Comparator<FileSlice>() {
      @Override
      public int compare(FileSlice a, FileSlice b) {
        return Long.compare(b.length, a.length);
      }
    });
    List<InputPartition> groups = new ArrayList<>();
    List<FileSlice> current = new ArrayList<>();
    long size = 0;
    for (FileSlice s : sorted) {
      long cost = Math.max(s.length, 0) + openCost;
      if (!current.isEmpty() && size + cost > maxBytes) {
        groups.add(new SliceGroup(current.toArray(new FileSlice[0])));
        current.clear();
        size = 0;
      }
      current.add(s);
      size += cost;
    }
    if (!current.isEmpty()) {
      groups.add(new SliceGroup(current.toArray(new FileSlice[0])));
    }
    return groups.toArray(new InputPartition[0]);
  }

  private static String[] hosts(FileStatus st, Configuration conf, long start, long len) {
    try {
      BlockLocation[] b = st.getPath().getFileSystem(conf).getFileBlockLocations(st, start, Math.max(1, len));
      return b.length == 0 ? new String[0] : b[0].getHosts();
    } catch (IOException | RuntimeException e) {
      return new String[0];
    }
  }

  static long parseBytes(String s) {
    String v = s.trim().toLowerCase(java.util.Locale.ROOT);
    long mult = 1;
    if (v.endsWith("b")) {
      v = v.substring(0, v.length() - 1);
    }
    if (v.endsWith("k")) {
      mult = 1L << 10;
    } else if (v.endsWith("m")) {
      mult = 1L << 20;
    } else if (v.endsWith("g")) {
      mult = 1L << 30;
    }
    if (mult > 1) {
      v = v.substring(0, v.length() - 1);
    }
    return Long.parseLong(v.trim()) * mult;
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    StructField[] pf = index().partitionSchema.fields();
    String[] names = new String[pf.length];
    for (int i = 0; i < pf.length; i++) {
      names[i] = pf[i].name();
    }
    return new TFRecordReaderFactory(readSchema, options, new SerializableConf(conf()), names);
  }
}
