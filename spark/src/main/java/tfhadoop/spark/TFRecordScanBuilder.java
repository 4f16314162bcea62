package tfhadoop.spark;

import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructType;

/** Column pruning: only the columns Spark asks for are decoded. */
final class TFRecordScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns {
  private StructType required;
  private final SourceOptions options;

  TFRecordScanBuilder(StructType schema, SourceOptions options) {
    this.required = schema;
    this.options = options;
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = requiredSchema;
  }

  @Override
  public Scan build() {
    return new TFRecordScan(required, options);
  }
}
