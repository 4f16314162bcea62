package tfhadoop.spark;

import java.io.IOException;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import tfhadoop.tfrecord.TFRecordFiles;
import tfhadoop.tfrecord.TFRecordReader;

/** Creates a row reader per slice; shipped to executors with the options and Hadoop conf. */
final class TFRecordReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;
  private final StructType readSchema;
  private final SourceOptions options;
  private final SerializableConf conf;
  private final String[] partitionColumns;

  TFRecordReaderFactory(StructType readSchema, SourceOptions options, SerializableConf conf, String[] partitionColumns) {
    this.readSchema = readSchema;
    this.options = options;
    this.conf = conf;
    this.partitionColumns = partitionColumns;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    return new TFRecordPartitionReader(((SliceGroup) partition).slices, this);
  }

  /** A decoder for one slice (its partition values become constants). */
  RowDecoder decoder(FileSlice slice) {
    StructField[] fields = readSchema.fields();
    Object[] constants = new Object[fields.length];
    boolean[] isPartition = new boolean[fields.length];
    for (int i = 0; i < fields.length; i++) {
      for (int j = 0; j < partitionColumns.length; j++) {
        if (partitionColumns[j].equalsIgnoreCase(fields[i].name())) {
          isPartition[i] = true;
          constants[i] = partitionValue(slice.partitionValues[j], fields[i]);
        }
      }
    }
    return new RowDecoder(options.recordType, readSchema, constants, isPartition, options.exactColumns);
  }

  TFRecordReader open(FileSlice slice) throws IOException {
    return TFRecordFiles.open(new Path(slice.path), conf.get(), slice.start, slice.length, options.tfrecord);
  }

  private static Object partitionValue(String v, StructField f) {
    if (v == null) {
      return null;
    }
    DataType t = f.dataType();
    try {
      if (t instanceof StringType) {
        return UTF8String.fromString(v);
      }
      if (t instanceof IntegerType) {
        return Integer.parseInt(v);
      }
      if (t instanceof LongType) {
        return Long.parseLong(v);
      }
      if (t instanceof DoubleType) {
        return Double.parseDouble(v);
      }
      if (t instanceof FloatType) {
        return Float.parseFloat(v);
      }
      if (t instanceof ShortType) {
        return Short.parseShort(v);
      }
      if (t instanceof BooleanType) {
        return Boolean.parseBoolean(v);
      }
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("partition value '" + v + "' of column " + f.name() + " is not a " + t.simpleString());
    }
    throw new IllegalArgumentException("partition column " + f.name() + " has unsupported type " + t.simpleString());
  }
}
