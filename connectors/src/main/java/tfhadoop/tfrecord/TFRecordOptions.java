package tfhadoop.tfrecord;

import java.io.Serializable;
import java.util.Locale;
import java.util.Map;

/**
 * Reader and writer settings, parsed once from a Hadoop Configuration or a Spark option map.
 * Keys are the same in both places (Spark options also accept the short names in parentheses):
 * <ul>
 *   <li>{@code tfrecord.compression} ({@code compression}): gzip | zlib | none, for writing;
 *   <li>{@code tfrecord.codec} ({@code codec}): a Hadoop codec class, for writing; GzipCodec and
 *       DefaultCodec/DeflateCodec map to gzip/zlib, any other codec is refused unless
 *       {@code tfrecord.codec.force} ({@code forceCodec}) is true;
 *   <li>{@code tfrecord.read.skip.corrupt} ({@code skipCorrupt}): skip corrupt records instead of
 *       failing;
 *   <li>{@code tfrecord.read.splittable} ({@code splittable}): split uncompressed files (default
 *       true);
 *   <li>{@code tfrecord.read.max.record.bytes} ({@code maxRecordBytes}): largest record accepted;
 *   <li>{@code tfrecord.index.interval} ({@code indexInterval}): bytes between entries of the
 *       record-boundary index our writers put beside each uncompressed file (default 1 MiB; 0
 *       writes none);
 *   <li>{@code tfrecord.read.index} ({@code useIndex}): start splits on that index when present
 *       (default true);
 *   <li>{@code tfrecord.read.walk.cache} ({@code walkCache}): without an index, a split finds its
 *       first record by walking the header chain from the nearest record boundary this JVM has
 *       already proven for the file (default true); false walks from the file start every time.
 * </ul>
 * Hadoop's own output-compression settings are deliberately never read.
 */
public final class TFRecordOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  public static final String COMPRESSION = "tfrecord.compression";
  public static final String CODEC = "tfrecord.codec";
  public static final String FORCE_CODEC = "tfrecord.codec.force";
  public static final String SKIP_CORRUPT = "tfrecord.read.skip.corrupt";
  public static final String SPLITTABLE = "tfrecord.read.splittable";
  public static final String MAX_RECORD_BYTES = "tfrecord.read.max.record.bytes";
  public static final String INDEX_INTERVAL = "tfrecord.index.interval";
  public static final String USE_INDEX = "tfrecord.read.index";
  public static final String WALK_CACHE = "tfrecord.read.walk.cache";

  /** Where option values come from (Configuration::get, Map::get, ...). */
  public interface Lookup {
    String get(String key);
  }

  public final Compression compression;
  public final boolean skipCorrupt;
  public final boolean splittable;
  public final long maxRecordBytes;
  public final long indexInterval;
  public final boolean useIndex;
  public final boolean walkCache;

  private TFRecordOptions(Compression compression, boolean skipCorrupt, boolean splittable, long maxRecordBytes,
      long indexInterval, boolean useIndex, boolean walkCache) {
    this.compression = compression;
    this.skipCorrupt = skipCorrupt;
    this.splittable = splittable;
    this.maxRecordBytes = maxRecordBytes;
    this.indexInterval = indexInterval;
    this.useIndex = useIndex;
    this.walkCache = walkCache;
  }

  public static TFRecordOptions defaults() {
    return new TFRecordOptions(Compression.NONE, false, true, Integer.MAX_VALUE - 64, RecordIndex.DEFAULT_INTERVAL,
        true, true);
  }

  /** A copy with the given index and verification settings (tests, benchmarks). */
  public TFRecordOptions withIndex(long interval, boolean use, boolean walkCache) {
    return new TFRecordOptions(compression, skipCorrupt, splittable, maxRecordBytes, interval, use, walkCache);
  }

  /** Parses the options; the short (Spark) name is consulted when the full key is absent. */
  public static TFRecordOptions parse(Lookup lookup) {
    String compression = first(lookup, COMPRESSION, "compression");
    String codec = first(lookup, CODEC, "codec");
    boolean force = bool(first(lookup, FORCE_CODEC, "forceCodec"), false, FORCE_CODEC);
    Compression c = Compression.resolve(compression, codec, force);
    boolean skip = bool(first(lookup, SKIP_CORRUPT, "skipCorrupt"), false, SKIP_CORRUPT);
    boolean split = bool(first(lookup, SPLITTABLE, "splittable"), true, SPLITTABLE);
    String max = first(lookup, MAX_RECORD_BYTES, "maxRecordBytes");
    long maxBytes = Integer.MAX_VALUE - 64;
    if (max != null) {
      try {
        maxBytes = Long.parseLong(max.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("option " + MAX_RECORD_BYTES + " must be a number of bytes, got '" + max + "'");
      }
    }
    long interval = RecordIndex.DEFAULT_INTERVAL;
    String iv = first(lookup, INDEX_INTERVAL, "indexInterval");
    if (iv != null) {
      try {
        interval = Long.parseLong(iv);
      } catch (NumberFormatException e) {
        interval = -1;
      }
      if (interval < 0) {
        throw new IllegalArgumentException("option " + INDEX_INTERVAL + " must be a number of bytes >= 0, got '" + iv + "'");
      }
    }
    boolean useIndex = bool(first(lookup, USE_INDEX, "useIndex"), true, USE_INDEX);
    boolean walkCache = bool(first(lookup, WALK_CACHE, "walkCache"), true, WALK_CACHE);
    return new TFRecordOptions(c, skip, split, maxBytes, interval, useIndex, walkCache);
  }

  public static TFRecordOptions parse(final Map<String, String> map) {
    return parse(new Lookup() {
      @Override
      public String get(String key) {
        String v = map.get(key);
        if (v == null) {
          for (Map.Entry<String, String> e : map.entrySet()) {
            if (e.getKey().equalsIgnoreCase(key)) {
              return e.getValue();
            }
          }
        }
        return v;
      }
    });
  }

  private static String first(Lookup lookup, String key, String shortKey) {
    String v = lookup.get(key);
    if (v == null || v.trim().isEmpty()) {
      v = lookup.get(shortKey);
    }
    return v == null || v.trim().isEmpty() ? null : v.trim();
  }

  private static boolean bool(String v, boolean dflt, String key) {
    if (v == null) {
      return dflt;
    }
    switch (v.toLowerCase(Locale.ROOT)) {
      case "true":
        return true;
      case "false":
        return false;
      default:
        throw new IllegalArgumentException("option " + key + " must be true or false, got '" + v + "'");
    }
  }
}
