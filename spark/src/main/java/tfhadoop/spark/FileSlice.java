package tfhadoop.spark;

/** A byte range of one file plus that file's partition values (raw strings). */
final class FileSlice implements java.io.Serializable {
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

  String[] preferredLocations() {
    return hosts;
  }

  @Override
  public String toString() {
    return path + " [" + start + ", " + (start + length) + ")";
  }
}
