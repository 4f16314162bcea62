package tfhadoop.spark;

/** The same source under the short name {@code tfrecords} (tensorflow/ecosystem's spelling). */
public class TFRecordsDataSource extends TFRecordDataSource {
  @Override
  public String shortName() {
    return "tfrecords";
  }
}
