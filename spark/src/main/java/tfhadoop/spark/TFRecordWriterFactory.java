package tfhadoop.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;

/** Ships the write job and Hadoop conf to executors and makes one writer per task attempt. */
final class TFRecordWriterFactory implements DataWriterFactory {
  private static final long serialVersionUID = 1L;
  private final WriteJob job;
  private final SerializableConf conf;

  TFRecordWriterFactory(WriteJob job, SerializableConf conf) {
    this.job = job;
    this.conf = conf;
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    return new TFRecordDataWriter(job, conf.get(), partitionId, taskId);
  }
}
