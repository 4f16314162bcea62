package tfhadoop.tfrecord;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Serializable;
import java.util.Locale;
import java.util.zip.Deflater;
import java.util.zip.DeflaterOutputStream;
import java.util.zip.GZIPOutputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.util.ReflectionUtils;

/**
 * How TFRecord output is compressed. GZIP and ZLIB are written with java.util.zip, in exactly the
 * formats {@code tf.data.TFRecordDataset(compression_type="GZIP"|"ZLIB")} reads; a forced Hadoop
 * codec is the escape hatch for formats TensorFlow cannot read (e.g. Hadoop's snappy framing).
 */
public final class Compression implements Serializable {
  private static final long serialVersionUID = 1L;

  public enum Kind { NONE, GZIP, ZLIB, HADOOP_CODEC }

  public static final Compression NONE = new Compression(Kind.NONE, null);
  public static final Compression GZIP = new Compression(Kind.GZIP, null);
  public static final Compression ZLIB = new Compression(Kind.ZLIB, null);

  public final Kind kind;
  /** Codec class name, for {@link Kind#HADOOP_CODEC} only. */
  public final String codecClass;

  private Compression(Kind kind, String codecClass) {
    this.kind = kind;
    this.codecClass = codecClass;
  }

  /** Resolves the {@code compression} and {@code codec} options; see {@link TFRecordOptions}. */
  public static Compression resolve(String compression, String codec, boolean force) {
    Compression fromName = null;
    if (compression != null) {
      switch (compression.toLowerCase(Locale.ROOT)) {
        case "gzip":
        case "gz":
          fromName = GZIP;
          break;
        case "zlib":
        case "deflate":
          fromName = ZLIB;
          break;
        case "none":
        case "uncompressed":
          fromName = NONE;
          break;
        default:
          throw new IllegalArgumentException("option compression must be gzip, zlib or none, got '" + compression + "'");
      }
    }
    Compression fromCodec = codec == null ? null : fromCodec(codec, force);
    if (fromName != null && fromCodec != null && fromName.kind != fromCodec.kind) {
      throw new IllegalArgumentException("options compression='" + compression + "' and codec='" + codec + "' disagree");
    }
    return fromName != null ? fromName : fromCodec != null ? fromCodec : NONE;
  }

  private static Compression fromCodec(String codec, boolean force) {
    String simple = codec.substring(codec.lastIndexOf('.') + 1).toLowerCase(Locale.ROOT);
    switch (simple) {
      case "gzipcodec":
      case "gzip":
        return GZIP;
      case "defaultcodec":
      case "deflatecodec":
      case "zlib":
      case "deflate":
        return ZLIB;
      case "none":
        return NONE;
      default:
        if (force) {
          return new Compression(Kind.HADOOP_CODEC, codec);
        }
        throw new IllegalArgumentException("codec " + codec + " writes files that tf.data.TFRecordDataset cannot read"
            + " (TensorFlow reads GZIP and ZLIB only); use compression=gzip or zlib, or set "
            + TFRecordOptions.FORCE_CODEC + "=true (Spark option forceCodec) to write it anyway");
    }
  }

  /** File name extension for output: .tfrecord, .tfrecord.gz, .tfrecord.deflate or the codec's. */
  public String extension(Configuration conf) {
    switch (kind) {
      case GZIP:
        return ".tfrecord.gz";
      case ZLIB:
        return ".tfrecord.deflate";
      case HADOOP_CODEC:
        return ".tfrecord" + codec(conf).getDefaultExtension();
      default:
        return ".tfrecord";
    }
  }

  /** Wraps a raw output stream; closing the result finishes the compressed stream. */
  public OutputStream wrap(OutputStream raw, Configuration conf) throws IOException {
    switch (kind) {
      case GZIP:
        return new GZIPOutputStream(raw, 64 * 1024);
      case ZLIB:
        return new DeflaterOutputStream(raw, new Deflater(Deflater.DEFAULT_COMPRESSION, false), 64 * 1024) {
          @Override
          public void close() throws IOException {
            try {
              super.close();
            } finally {
              def.end();
            }
          }
        };
      case HADOOP_CODEC:
        return codec(conf).createOutputStream(raw);
      default:
        return raw;
    }
  }

  private CompressionCodec codec(Configuration conf) {
    try {
      Class<?> c = conf.getClassByName(codecClass);
      return (CompressionCodec) ReflectionUtils.newInstance(c, conf);
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException("codec class " + codecClass + " not found", e);
    }
  }

  @Override
  public String toString() {
    return kind == Kind.HADOOP_CODEC ? codecClass : kind.name().toLowerCase(Locale.ROOT);
  }
}
