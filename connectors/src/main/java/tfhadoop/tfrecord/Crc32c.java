package tfhadoop.tfrecord;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.zip.Checksum;

/**
 * Masked CRC32C as TFRecord framing uses it. The jar keeps Java 8 bytecode (Hadoop 2/3 and Spark
 * 3.5 clusters may still run Java 8), so {@code java.util.zip.CRC32C} (Java 9+, intrinsified) is
 * looked up at run time and the slicing-by-8 {@link PureJavaCrc32c} is used only where it is absent.
 */
public final class Crc32c {
  private static final int MASK_DELTA = 0xa282ead8;
  private static final MethodHandle JDK_CRC32C = findJdkCrc32c();

  private Crc32c() {}

  private static MethodHandle findJdkCrc32c() {
    if (Boolean.getBoolean("tfhadoop.crc32c.pure")) {
      return null;
    }
    try {
      Class<?> c = Class.forName("java.util.zip.CRC32C");
      return MethodHandles.publicLookup().findConstructor(c, MethodType.methodType(void.class))
          .asType(MethodType.methodType(Checksum.class));
    } catch (ReflectiveOperationException | LinkageError e) {
      return null;
    }
  }

  /** A fresh CRC32C checksum: the JDK's where available, else the pure-Java one. */
  public static Checksum newChecksum() {
    if (JDK_CRC32C != null) {
      try {
        return (Checksum) JDK_CRC32C.invokeExact();
      } catch (Throwable t) {
        // fall through to the portable implementation
      }
    }
    return new PureJavaCrc32c();
  }

  /** The portable implementation, whatever the runtime (for tests and measurements). */
  public static Checksum newPureJava() {
    return new PureJavaCrc32c();
  }

  /** Name of the implementation {@link #newChecksum()} returns, for logs and benchmarks. */
  public static String implementation() {
    return newChecksum().getClass().getName();
  }

  public static int mask(int crc) {
    return ((crc >>> 15) | (crc << 17)) + MASK_DELTA;
  }

  public static int unmask(int masked) {
    int rot = masked - MASK_DELTA;
    return (rot >>> 17) | (rot << 15);
  }

  /** Masked CRC32C of {@code b[off, off+len)}, computed with {@code c} (which is reset first). */
  public static int maskedCrc(Checksum c, byte[] b, int off, int len) {
    c.reset();
    c.update(b, off, len);
    return mask((int) c.getValue());
  }
}
