package tfhadoop.tfrecord;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.zip.GZIPInputStream;
import java.util.zip.InflaterInputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;

/**
 * Opens TFRecord files on any Hadoop FileSystem. Compression is chosen by file extension: .gz and
 * .deflate/.zlib are decoded with java.util.zip (so GZIP/ZLIB files from TensorFlow read without
 * native Hadoop libraries); other extensions go through Hadoop's CompressionCodecFactory.
 * Only uncompressed files can be split.
 */
public final class TFRecordFiles {
  private TFRecordFiles() {}

  /** True when the file is stored uncompressed (and can therefore be split). */
  public static boolean isUncompressed(Path path, Configuration conf) {
    String name = path.getName();
    if (name.endsWith(".gz") || name.endsWith(".deflate") || name.endsWith(".zlib")) {
      return false;
    }
    return new CompressionCodecFactory(conf).getCodec(path) == null;
  }

  /**
   * A reader for records starting in [start, start+length) of the file; compressed files are read
   * whole by the split that starts at 0 (other splits of them are empty).
   */
  public static TFRecordReader open(Path path, Configuration conf, long start, long length,
      TFRecordOptions options) throws IOException {
    FileSystem fs = path.getFileSystem(conf);
    String name = path.toString();
    if (!isUncompressed(path, conf)) {
      InputStream raw = fs.open(path);
      if (start > 0) {
        raw.close();
        raw = new java.io.ByteArrayInputStream(new byte[0]);
        return new TFRecordReader(raw, name, 0, 0, 0, options.skipCorrupt, options.maxRecordBytes);
      }
      return new TFRecordReader(decompress(path, raw, conf), name, 0, Long.MAX_VALUE, -1,
          options.skipCorrupt, options.maxRecordBytes);
    }
    org.apache.hadoop.fs.FileStatus status = fs.getFileStatus(path);
    long fileLength = status.getLen();
    long end = length < 0 || start + length >= fileLength ? Long.MAX_VALUE : start + length;
    boolean exact = false;
    if (start > 0 || end != Long.MAX_VALUE) {
      RecordIndex index = options.useIndex ? RecordIndex.load(fs, status) : null;
      if (index != null) {
        // the split is snapped to indexed boundaries: records from the first entry at or after
        // start up to the first entry at or after end; every split agrees, no scan is needed
        start = index.boundaryAtOrAfter(start);
        end = end == Long.MAX_VALUE ? end : index.boundaryAtOrAfter(end);
        end = end >= fileLength ? Long.MAX_VALUE : end;
        exact = true;
      }
    }
    FSDataInputStream in = fs.open(path);
    if (start > 0) {
      in.seek(Math.min(start, fileLength));
    }
    final FileSystem f = fs;
    final Path p = path;
    TFRecordReader.Opener opener = new TFRecordReader.Opener() {
      @Override
      public InputStream open(long offset) throws IOException {
        FSDataInputStream s = f.open(p);
        s.seek(offset);
        return s;
      }
    };
    String key = exact || !options.walkCache ? null
        : KnownBoundaries.key(fs.makeQualified(path).toString(), fileLength, status.getModificationTime());
    return new TFRecordReader(in, name, start, end, fileLength, options.skipCorrupt, options.maxRecordBytes,
        exact, opener, key);
  }

  /** A reader for the whole file. */
  public static TFRecordReader open(Path path, Configuration conf, TFRecordOptions options) throws IOException {
    return open(path, conf, 0, -1, options);
  }

  private static InputStream decompress(Path path, InputStream raw, Configuration conf) throws IOException {
    String name = path.getName();
    if (name.endsWith(".gz")) {
      return new GZIPInputStream(raw, 64 * 1024);
    }
    if (name.endsWith(".deflate") || name.endsWith(".zlib")) {
      return new InflaterInputStream(raw, new java.util.zip.Inflater(false), 64 * 1024);
    }
    CompressionCodec codec = new CompressionCodecFactory(conf).getCodec(path);
    return codec.createInputStream(raw);
  }

  /** Creates a framed writer on a new file, compressed as {@code compression} says. */
  public static TFRecordWriter create(Path path, Configuration conf, Compression compression, boolean overwrite)
      throws IOException {
    return create(path, conf, compression, overwrite, Configurations.options(conf).indexInterval);
  }

  /**
   * Same, with the record-boundary index sidecar ({@link RecordIndex#sidecar}) written on close
   * every ~{@code indexInterval} bytes; 0 writes none, and compressed files (read whole) get none.
   */
  public static TFRecordWriter create(Path path, Configuration conf, Compression compression, boolean overwrite,
      long indexInterval) throws IOException {
    final FileSystem fs = path.getFileSystem(conf);
    final Path file = fs.makeQualified(path);
    OutputStream raw = fs.create(path, overwrite);
    OutputStream out = new java.io.BufferedOutputStream(compression.wrap(raw, conf), 64 * 1024);
    if (indexInterval <= 0 || compression.kind != Compression.Kind.NONE) {
      // an index left by an earlier file of this name would describe other bytes
      fs.delete(RecordIndex.sidecar(file), false);
      return new TFRecordWriter(out);
    }
    return new TFRecordWriter(out, indexInterval, new TFRecordWriter.IndexSink() {
      @Override
      public void write(RecordIndex index) throws IOException {
        index.write(fs, file);
      }
    });
  }

  /** True when {@link #create} writes an index sidecar for these settings. */
  public static boolean writesIndex(Compression compression, long indexInterval) {
    return indexInterval > 0 && compression.kind == Compression.Kind.NONE;
  }
}
