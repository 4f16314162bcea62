package tfhadoop.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Everything a write task needs, fixed on the driver: output root, temporary dir of this job,
 * schema split into data and partition columns, options.
 */
final class WriteJob implements Serializable {
  private static final long serialVersionUID = 1L;
  final String root;
  final String tempDir;
  final String jobId;
  final StructType schema;
  final int[] dataOrdinals;
  final int[] partitionOrdinals;
  final SourceOptions options;

  WriteJob(String root, String jobId, StructType schema, List<String> partitionColumns, SourceOptions options) {
    this.root = root;
    this.jobId = jobId;
    this.tempDir = root.replaceAll("/+$", "") + "/_temporary/tfrecord-" + jobId;
    this.schema = schema;
    this.options = options;
    StructField[] fields = schema.fields();
    List<Integer> data = new ArrayList<>();
    int[] parts = new int[partitionColumns.size()];
    for (int p = 0; p < parts.length; p++) {
      parts[p] = -1;
      for (int i = 0; i < fields.length; i++) {
        if (fields[i].name().equalsIgnoreCase(partitionColumns.get(p))) {
          parts[p] = i;
        }
      }
      if (parts[p] < 0) {
        throw new IllegalArgumentException("partition column " + partitionColumns.get(p) + " is not in the data: "
            + schema.simpleString());
      }
    }
    for (int i = 0; i < fields.length; i++) {
      boolean isPart = false;
      for (int p : parts) {
        isPart |= p == i;
      }
      if (!isPart) {
        data.add(i);
      }
    }
    if (data.isEmpty()) {
      throw new IllegalArgumentException("tfrecord write: every column is a partition column; nothing left to write");
    }
    this.dataOrdinals = new int[data.size()];
    for (int i = 0; i < dataOrdinals.length; i++) {
      dataOrdinals[i] = data.get(i);
    }
    this.partitionOrdinals = parts;
  }
}
