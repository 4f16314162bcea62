package tfhadoop.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The files under the input paths (globs allowed), listed recursively, skipping hidden names
 * ({@code _*}, {@code .*}), with {@code key=value} partition values taken from the directories
 * between each root and its files (unless {@code recursiveFileLookup}).
 */
final class FileIndex {
  /** One data file and its partition values (raw strings, null for Hive's null marker). */
  static final class DataFile {
    final FileStatus status;
    final Map<String, String> partitionValues;

    DataFile(FileStatus status, Map<String, String> partitionValues) {
      this.status = status;
      this.partitionValues = partitionValues;
    }
  }

  final List<DataFile> files;
  final StructType partitionSchema;

  private FileIndex(List<DataFile> files, StructType partitionSchema) {
    this.files = files;
    this.partitionSchema = partitionSchema;
  }

  static FileIndex list(SourceOptions options, Configuration conf) throws IOException {
    if (options.paths.isEmpty()) {
      throw new IllegalArgumentException("tfrecord: no path given (use load(path) or option path)");
    }
    List<DataFile> out = new ArrayList<>();
    for (String p : options.paths) {
      Path path = new Path(p);
      FileSystem fs = path.getFileSystem(conf);
      FileStatus[] roots = fs.globStatus(path);
      if (roots == null || roots.length == 0) {
        throw new IOException("tfrecord: path does not exist: " + path);
      }
      for (FileStatus root : roots) {
        if (root.isFile()) {
          out.add(new DataFile(root, new LinkedHashMap<String, String>()));
        } else {
          walk(fs, root.getPath(), new LinkedHashMap<String, String>(), options.recursiveFileLookup, out);
        }
      }
    }
    Collections.sort(out, new Comparator<DataFile>() {
      @Override
      public int compare(DataFile a, DataFile b) {
        return a.status.getPath().toString().compareTo(b.status.getPath().toString());
      }
    });
    return new FileIndex(out, inferPartitionSchema(out));
  }

  private static void walk(FileSystem fs, Path dir, Map<String, String> parts, boolean noPartitions,
      List<DataFile> out) throws IOException {
    for (FileStatus st : fs.listStatus(dir)) {
      String name = st.getPath().getName();
      if (name.startsWith("_") || name.startsWith(".")) {
        continue;
      }
      if (st.isDirectory()) {
        Map<String, String> sub = parts;
        int eq = name.indexOf('=');
        if (!noPartitions && eq > 0) {
          sub = new LinkedHashMap<>(parts);
          sub.put(PartitionPaths.unescape(name.substring(0, eq)), PartitionPaths.value(name.substring(eq + 1)));
        }
        walk(fs, st.getPath(), sub, noPartitions, out);
      } else if (!name.endsWith(".crc")) {
        out.add(new DataFile(st, parts));
      }
    }
  }

  /** Partition columns in directory order; types int, bigint, double or string, as the values allow. */
  private static StructType inferPartitionSchema(List<DataFile> files) {
    LinkedHashMap<String, DataType> types = new LinkedHashMap<>();
    for (DataFile f : files) {
      for (Map.Entry<String, String> e : f.partitionValues.entrySet()) {
        DataType t = typeOf(e.getValue());
        DataType prev = types.get(e.getKey());
        types.put(e.getKey(), prev == null ? t : widen(prev, t));
      }
    }
    List<StructField> fields = new ArrayList<>();
    for (Map.Entry<String, DataType> e : types.entrySet()) {
      DataType t = e.getValue() == DataTypes.NullType ? DataTypes.StringType : e.getValue();
      fields.add(DataTypes.createStructField(e.getKey(), t, true));
    }
    return DataTypes.createStructType(fields);
  }

  private static DataType typeOf(String v) {
    if (v == null) {
      return DataTypes.NullType;
    }
    try {
      long l = Long.parseLong(v);
      return l == (int) l ? DataTypes.IntegerType : DataTypes.LongType;
    } catch (NumberFormatException e) {
      // not integral
    }
    try {
      Double.parseDouble(v);
      if (!v.endsWith("d") && !v.endsWith("f") && !v.endsWith("D") && !v.endsWith("F")) {
        return DataTypes.DoubleType;
      }
    } catch (NumberFormatException e) {
      // not numeric
    }
    return DataTypes.StringType;
  }

  private static DataType widen(DataType a, DataType b) {
    if (a.equals(b) || b == DataTypes.NullType) {
      return a;
    }
    if (a == DataTypes.NullType) {
      return b;
    }
    DataType[] order = {DataTypes.IntegerType, DataTypes.LongType, DataTypes.DoubleType, DataTypes.StringType};
    int ia = 0;
    int ib = 0;
    for (int i = 0; i < order.length; i++) {
      if (order[i].equals(a)) {
        ia = i;
      }
      if (order[i].equals(b)) {
        ib = i;
      }
    }
    return order[Math.max(ia, ib)];
  }
}
