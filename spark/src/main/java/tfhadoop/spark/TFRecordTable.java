package tfhadoop.spark;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A path-based TFRecord table. It advertises batch writes only for the internal write that the
 * save-mode entry point ({@link TFRecordDataSource#createRelation}) starts: a plain TableProvider
 * that supports writes is refused every save mode except append/overwrite by Spark's
 * DataFrameWriter, so all writes go through that entry point, which handles every mode.
 */
final class TFRecordTable implements SupportsRead, SupportsWrite {
  private final StructType schema;
  private final Transform[] partitioning;
  private final SourceOptions options;
  private final boolean writable;

  TFRecordTable(StructType schema, Transform[] partitioning, SourceOptions options) {
    this.schema = schema;
    this.partitioning = partitioning;
    this.options = options;
    // Catalog tables (they carry the reserved "provider" property) take INSERTs directly; path
    // writes only through the save-mode entry point.
    this.writable = "true".equalsIgnoreCase(options.get(SourceOptions.V2_WRITE)) || options.get("provider") != null;
  }

  @Override
  public String name() {
    return "tfrecord " + options.paths;
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Transform[] partitioning() {
    return partitioning;
  }

  @Override
  public Set<TableCapability> capabilities() {
    if (writable) {
      return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE,
          TableCapability.OVERWRITE_DYNAMIC);
    }
    return Collections.unmodifiableSet(EnumSet.of(TableCapability.BATCH_READ));
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap opts) {
    return new TFRecordScanBuilder(schema, options);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new TFRecordWriteBuilder(info, options);
  }
}
