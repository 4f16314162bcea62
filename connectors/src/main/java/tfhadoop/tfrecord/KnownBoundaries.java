package tfhadoop.tfrecord;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * Record boundaries this JVM has proven for a file version (reached by a header chain from the
 * file start), so a later split of the same file walks from the nearest one instead of from the
 * file start. Without a record-boundary index this is what keeps exact splits cheap when one JVM
 * reads several splits of a file (Spark executors, Hive/Tez containers): split k's reader stops on
 * the very boundary where split k+1 starts, and leaves it here. Keyed by path, length and
 * modification time, so a rewritten file never reuses another version's boundaries.
 */
final class KnownBoundaries {
  /** Spacing of the checkpoints a walk or a read leaves behind. */
  static final long MARK_INTERVAL = 1L << 20;
  private static final int MAX_FILES = 512;
  private static final int MAX_MARKS_PER_FILE = 1 << 16;

  private static final Map<String, TreeSet<Long>> FILES =
      new LinkedHashMap<String, TreeSet<Long>>(16, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, TreeSet<Long>> eldest) {
          return size() > MAX_FILES;
        }
      };

  private KnownBoundaries() {}

  static String key(String path, long length, long modificationTime) {
    return path + '\0' + length + '\0' + modificationTime;
  }

  /** The greatest proven boundary at or before {@code pos} (0, the file start, when none). */
  static long floor(String key, long pos) {
    synchronized (FILES) {
      TreeSet<Long> s = FILES.get(key);
      Long f = s == null ? null : s.floor(pos);
      return f == null ? 0 : f;
    }
  }

  /** Records {@code offset} as a proven boundary of the file version {@code key}. */
  static void add(String key, long offset) {
    if (offset <= 0) {
      return;
    }
    synchronized (FILES) {
      TreeSet<Long> s = FILES.get(key);
      if (s == null) {
        s = new TreeSet<>();
        FILES.put(key, s);
      }
      if (s.size() < MAX_MARKS_PER_FILE) {
        s.add(offset);
      }
    }
  }

  /** Forgets everything (tests and benchmarks measure the walk from the file start). */
  static void clear() {
    synchronized (FILES) {
      FILES.clear();
    }
  }
}
