package tfhadoop.spark;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;

/** A Hadoop Configuration that travels to tasks (Spark's own wrapper is not public API). */
final class SerializableConf implements Serializable {
  private static final long serialVersionUID = 1L;
  private transient Configuration conf;

  SerializableConf(Configuration conf) {
    this.conf = conf;
  }

  Configuration get() {
    return conf;
  }

  /** The active session's Hadoop configuration plus the data source options (as Spark does). */
  static Configuration fromSession(Map<String, String> options) {
    Configuration c = new Configuration(SparkSession.active().sparkContext().hadoopConfiguration());
    for (Map.Entry<String, String> e : options.entrySet()) {
      if (e.getValue() != null && !e.getKey().equalsIgnoreCase("path") && !e.getKey().equalsIgnoreCase("paths")) {
        c.set(e.getKey(), e.getValue());
      }
    }
    return c;
  }

  private void writeObject(ObjectOutputStream out) throws IOException {
    out.defaultWriteObject();
    conf.write(out);
  }

  private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
    in.defaultReadObject();
    conf = new Configuration(false);
    conf.readFields(in);
  }
}
