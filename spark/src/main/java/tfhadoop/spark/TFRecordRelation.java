package tfhadoop.spark;

import java.util.Map;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.InsertableRelation;
import org.apache.spark.sql.sources.PrunedScan;
import org.apache.spark.sql.types.StructType;

/**
 * The V1 view of a TFRecord path, for Spark versions that resolve catalog tables
 * ({@code CREATE TABLE ... USING tfrecord}) through the V1 API (Spark 3.5). Scans and inserts
 * delegate to the V2 source, so there is one implementation of reading and writing.
 */
final class TFRecordRelation extends BaseRelation implements PrunedScan, InsertableRelation {
  private final SQLContext sqlContext;
  private final Map<String, String> options;
  private final StructType schema;

  TFRecordRelation(SQLContext sqlContext, Map<String, String> options, StructType schema) {
    this.sqlContext = sqlContext;
    this.options = options;
    this.schema = schema;
  }

  @Override
  public SQLContext sqlContext() {
    return sqlContext;
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public RDD<Row> buildScan(String[] requiredColumns) {
    Dataset<Row> df = sqlContext.sparkSession().read().format(TFRecordDataSource.class.getName())
        .options(options).schema(schema).load();
    Column[] cols = new Column[requiredColumns.length];
    for (int i = 0; i < cols.length; i++) {
      cols[i] = df.col("`" + requiredColumns[i].replace("`", "``") + "`");
    }
    return df.select(cols).rdd();
  }

  @Override
  public void insert(Dataset<Row> data, boolean overwrite) {
    data.write().format(TFRecordDataSource.class.getName()).options(options)
        .mode(overwrite ? "overwrite" : "append").save();
  }
}
