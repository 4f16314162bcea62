package tfhadoop.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/**
 * Append by default; truncate (static overwrite) or dynamic partition overwrite when Spark asks,
 * or when the save-mode entry point marked the write as a dynamic overwrite. The schema is checked
 * (every column writable) here, on the driver, before any task runs.
 */
/** A Write that asks Spark to sort each task's rows by the partition columns. */
interface PartitionedWrite extends Write, RequiresDistributionAndOrdering {}

final class TFRecordWriteBuilder implements WriteBuilder, SupportsTruncate, SupportsDynamicOverwrite {
  private final LogicalWriteInfo info;
  private final SourceOptions options;
  private TFRecordBatchWrite.Mode mode = TFRecordBatchWrite.Mode.APPEND;

  TFRecordWriteBuilder(LogicalWriteInfo info, SourceOptions options) {
    this.info = info;
    this.options = options;
  }

  @Override
  public WriteBuilder truncate() {
    mode = "dynamic".equalsIgnoreCase(options.get(SourceOptions.OVERWRITE))
        ? TFRecordBatchWrite.Mode.DYNAMIC : TFRecordBatchWrite.Mode.TRUNCATE;
    return this;
  }

  @Override
  public WriteBuilder overwriteDynamicPartitions() {
    mode = TFRecordBatchWrite.Mode.DYNAMIC;
    return this;
  }

  @Override
  public Write build() {
    List<String> partitions = new ArrayList<>();
    String enc = options.get(SourceOptions.PARTITION_COLUMNS);
    if (enc != null) {
      partitions.addAll(JsonStrings.parseArray(enc));
    }
    final WriteJob job = new WriteJob(options.outputPath(), info.queryId(), info.schema(), partitions, options);
    new RowEncoder(options.recordType, info.schema(), job.dataOrdinals, options.exactColumns); // validates the schema now
    final Configuration conf = SerializableConf.fromSession(options.raw);
    final SortOrder[] ordering = new SortOrder[partitions.size()];
    for (int i = 0; i < ordering.length; i++) {
      ordering[i] = Expressions.sort(Expressions.column("`" + partitions.get(i).replace("`", "``") + "`"),
          SortDirection.ASCENDING);
    }
    return new PartitionedWrite() {
      @Override
      public Distribution requiredDistribution() {
        return Distributions.unspecified();
      }

      @Override
      public SortOrder[] requiredOrdering() {
        return ordering; // rows of a partition arrive together: one open file per task
      }

      @Override
      public String description() {
        return "TFRecordWrite(" + options.recordType + ", " + job.root + ", " + mode + ")";
      }

      @Override
      public BatchWrite toBatch() {
        return new TFRecordBatchWrite(job, mode, conf);
      }
    };
  }
}
