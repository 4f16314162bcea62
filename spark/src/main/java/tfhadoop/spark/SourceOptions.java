package tfhadoop.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tfhadoop.tfrecord.TFRecordOptions;

/**
 * The data source's options, parsed once (on the driver) and shipped to tasks:
 * {@code path}/{@code paths}, {@code recordType}, {@code compression}/{@code codec}/{@code forceCodec},
 * {@code skipCorrupt}, {@code splittable}, {@code maxRecordBytes}, {@code samplingRatio} and
 * {@code inferSchemaMaxRecords} (schema inference), {@code recursiveFileLookup} (no partition
 * discovery), {@code partitionOverwriteMode} (static|dynamic), {@code maxPartitionBytes},
 * {@code exactColumns} (comma-separated columns whose double/decimal values are written exactly
 * instead of as float32, and read back from those exact forms).
 */
public final class SourceOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Marks the internal V2 write that the V1 save-mode entry point starts. */
  static final String V2_WRITE = "__tfrecord_v2_write";
  /** Overwrite flavour for that internal write: truncate | dynamic. */
  static final String OVERWRITE = "__tfrecord_overwrite";
  /** Spark's key for DataFrameWriter.partitionBy columns on the V1 path (a JSON array). */
  static final String PARTITION_COLUMNS = "__partition_columns";

  public final List<String> paths;
  public final RecordType recordType;
  public final TFRecordOptions tfrecord;
  public final double samplingRatio;
  public final long inferSchemaMaxRecords;
  public final boolean recursiveFileLookup;
  public final long maxPartitionBytes;
  public final Map<String, String> raw;
  /** Lower-cased names of the columns written (and read) exactly. */
  public final java.util.Set<String> exactColumns;

  public SourceOptions(Map<String, String> options) {
    Map<String, String> lower = new HashMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      lower.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
    }
    this.raw = Collections.unmodifiableMap(new HashMap<>(options));
    this.paths = parsePaths(lower);
    this.recordType = RecordType.parse(lower.get("recordtype"));
    this.tfrecord = TFRecordOptions.parse(lower);
    this.samplingRatio = parseDouble(lower, "samplingratio", 1.0);
    if (!(samplingRatio > 0 && samplingRatio <= 1)) {
      throw new IllegalArgumentException("option samplingRatio must be in (0, 1], got " + samplingRatio);
    }
    this.inferSchemaMaxRecords = (long) parseDouble(lower, "inferschemamaxrecords", Long.MAX_VALUE);
    this.recursiveFileLookup = Boolean.parseBoolean(lower.getOrDefault("recursivefilelookup", "false"));
    String mpb = lower.get("maxpartitionbytes");
    java.util.Set<String> exact = new java.util.HashSet<>();
    String ex = lower.get("exactcolumns");
    if (ex != null) {
      for (String c : ex.split(",")) {
        if (!c.trim().isEmpty()) {
          exact.add(c.trim().toLowerCase(Locale.ROOT));
        }
      }
    }
    this.exactColumns = Collections.unmodifiableSet(exact);
    this.maxPartitionBytes = mpb == null || mpb.trim().isEmpty() ? -1 : TFRecordScan.parseBytes(mpb);
  }

  public String get(String key) {
    for (Map.Entry<String, String> e : raw.entrySet()) {
      if (e.getKey().equalsIgnoreCase(key)) {
        return e.getValue();
      }
    }
    return null;
  }

  /** The single output path of a write. */
  public String outputPath() {
    if (paths.size() != 1) {
      throw new IllegalArgumentException("tfrecord write needs exactly one path, got " + paths);
    }
    return paths.get(0);
  }

  private static double parseDouble(Map<String, String> m, String key, double dflt) {
    String v = m.get(key);
    if (v == null || v.trim().isEmpty()) {
      return dflt;
    }
    try {
      return Double.parseDouble(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("option " + key + " must be a number, got '" + v + "'");
    }
  }

  private static List<String> parsePaths(Map<String, String> m) {
    List<String> out = new ArrayList<>();
    String p = m.get("path");
    if (p != null && !p.isEmpty()) {
      out.add(p);
    }
    if (out.isEmpty() && m.get("location") != null) {
      out.add(m.get("location")); // a catalog table's location property
    }
    String ps = m.get("paths");
    if (ps != null && !ps.isEmpty()) {
      out.addAll(JsonStrings.parseArray(ps));
    }
    return out;
  }
}
