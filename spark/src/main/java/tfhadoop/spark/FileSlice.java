package tfhadoop.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One task's input: a byte range of one file plus that file's partition values (raw strings). */
final class FileSlice implements InputPartition {
  private static final long serialVersionUID = 1L;
  final String path;
  final long start;
  final long length;
  final String[] partitionValues;
  private final String[] hosts;

  FileSlice(String path, long start, long length, String[] partitionValues, String[] hosts) {
    this.path = path;
    this.start = start;
    this.length = length;
    this.partitionValues = partitionValues;
    this.hosts = hosts;
  }

  @Override
  public String[] preferredLocations() {
    return hosts;
  }

  @Override
  public String toString() {
    return path + " [" + start + ", " + (start + length) + ")";
  }
}
