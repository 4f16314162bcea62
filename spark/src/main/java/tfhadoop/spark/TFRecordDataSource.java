package tfhadoop.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.RelationProvider;
import org.apache.spark.sql.sources.SchemaRelationProvider;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Tuple2;

/**
 * The {@code tfrecord} Spark data source (alias {@code tfrecords}), written against Spark's public
 * DataSource V2 Java API so one jar serves Spark 3.5 and 4.x.
 *
 * <p>Reads are plain V2. Writes enter through {@link CreatableRelationProvider}: Spark's
 * DataFrameWriter refuses the ErrorIfExists (its default) and Ignore modes for a V2 TableProvider
 * that supports batch writes, and falls back to this V1 entry point when the table does not. So
 * the table advertises writes only to the internal V2 write started here, which is where each
 * save mode is decided (ErrorIfExists/Ignore check the path; Append; Overwrite as truncate or,
 * with partitionOverwriteMode=dynamic, dynamic partition overwrite).
 */
public class TFRecordDataSource implements TableProvider, DataSourceRegister, CreatableRelationProvider,
    RelationProvider, SchemaRelationProvider {
  @Override
  public String shortName() {
    return "tfrecord";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    SourceOptions o = new SourceOptions(options.asCaseSensitiveMap());
    Configuration conf = SerializableConf.fromSession(o.raw);
    try {
      FileIndex index = FileIndex.list(o, conf);
      if (index.files.isEmpty()) {
        throw new IllegalArgumentException("Unable to infer schema for tfrecord at " + o.paths
            + ": no data files found (names starting with _ or . are skipped); give a schema with .schema(...)");
      }
      StructType schema = SchemaInference.infer(index, o, conf);
      if (schema.fields().length == 0) {
        throw new IllegalArgumentException("Unable to infer schema for tfrecord at " + o.paths + ": "
            + index.files.size() + " file(s) hold no features; give a schema with .schema(...)");
      }
      return schema;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new TFRecordTable(schema, partitioning, new SourceOptions(properties));
  }

  /** V1 read entry (catalog tables on Spark 3.5): the schema is inferred. */
  @Override
  public BaseRelation createRelation(SQLContext sqlContext, scala.collection.immutable.Map<String, String> parameters) {
    Map<String, String> opts = toJava(parameters);
    return new TFRecordRelation(sqlContext, opts, inferSchema(new CaseInsensitiveStringMap(opts)));
  }

  /** V1 read entry with the table's schema. */
  @Override
  public BaseRelation createRelation(SQLContext sqlContext, scala.collection.immutable.Map<String, String> parameters,
      StructType schema) {
    return new TFRecordRelation(sqlContext, toJava(parameters), schema);
  }

  private static Map<String, String> toJava(scala.collection.immutable.Map<String, String> parameters) {
    Map<String, String> opts = new HashMap<>();
    scala.collection.Iterator<Tuple2<String, String>> it = parameters.iterator();
    while (it.hasNext()) {
      Tuple2<String, String> kv = it.next();
      opts.put(kv._1(), kv._2());
    }
    return opts;
  }

  @Override
  public BaseRelation createRelation(final SQLContext sqlContext, SaveMode mode,
      scala.collection.immutable.Map<String, String> parameters, final Dataset<Row> data) {
    Map<String, String> opts = toJava(parameters);
    SourceOptions o = new SourceOptions(opts);
    Path path = new Path(o.outputPath());
    boolean exists;
    try {
      exists = path.getFileSystem(SerializableConf.fromSession(opts)).exists(path);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    opts.put(SourceOptions.V2_WRITE, "true");
    switch (mode) {
      case ErrorIfExists:
        if (exists) {
          throw new IllegalStateException("tfrecord: path " + path + " already exists"
              + " (save mode ErrorIfExists; use mode append, overwrite or ignore)");
        }
        write(data, opts, "append");
        break;
      case Ignore:
        if (!exists) {
          write(data, opts, "append");
        }
        break;
      case Append:
        write(data, opts, "append");
        break;
      default:
        String dyn = o.get("partitionOverwriteMode");
        if (dyn == null) {
          dyn = SparkSession.active().conf().get("spark.sql.sources.partitionOverwriteMode", "static");
        }
        opts.put(SourceOptions.OVERWRITE, "dynamic".equalsIgnoreCase(dyn) ? "dynamic" : "truncate");
        write(data, opts, "overwrite");
    }
    final StructType schema = data.schema();
    return new BaseRelation() {
      @Override
      public SQLContext sqlContext() {
        return sqlContext;
      }

      @Override
      public StructType schema() {
        return schema;
      }
    };
  }

  private void write(Dataset<Row> data, Map<String, String> opts, String mode) {
    data.write().format(getClass().getName()).mode(mode).options(opts).save();
  }
}
