package tfhadoop.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One task's input: slices read one after another, so many small files share a task (packed up to
 * maxPartitionBytes, each file costing at least spark.sql.files.openCostInBytes, as Spark's file
 * sources do).
 */
final class SliceGroup implements InputPartition {
  private static final long serialVersionUID = 1L;
  final FileSlice[] slices;

  SliceGroup(FileSlice[] slices) {
    this.slices = slices;
  }

  @Override
  public String[] preferredLocations() {
    return slices.length == 0 ? new String[0] : slices[0].preferredLocations();
  }

  @Override
  public String toString() {
    return slices.length + " slice(s) from " + (slices.length == 0 ? "-" : slices[0].toString());
  }
}
