import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.Random;

import tfhadoop.tfrecord.TFRecordWriter;

/**
 * The record-boundary index's cost inside the writer alone (issue 20), in one JVM: the same records
 * framed by TFRecordWriter into a discarding stream with and without an index (1 MiB interval),
 * in pairs of alternating order. Framing + CRC32C only is the cheapest a write can be, so the cost
 * as a share of it bounds the share in any real write (Spark rows, Example encoding, HDFS) from
 * above. Prints each pair's ratio, the median, and the best times.
 *
 *   javac -cp jars/tfhadoop-0.1.0.jar -d build/bench-jvm bench/jvm/IndexWriteCost.java
 *   java -cp jars/tfhadoop-0.1.0.jar:build/bench-jvm IndexWriteCost [records] [recordBytes] [pairs]
 */
public final class IndexWriteCost {
  private static final class Discard extends OutputStream {
    long n;

    @Override public void write(int b) {
      n++;
    }

    @Override public void write(byte[] b, int off, int len) {
      n += len;
    }
  }

  static long run(byte[][] records, long total, boolean indexed) throws IOException {
    Discard out = new Discard();
    long[] entries = new long[1];
    TFRecordWriter w = indexed
        ? new TFRecordWriter(out, 1L << 20, idx -> entries[0] = idx.toBytes().length)
        : new TFRecordWriter(out);
    long t0 = System.nanoTime();
    for (long i = 0; i < total; i++) {
      w.write(records[(int) (i % records.length)]);
    }
    w.close();
    long dt = System.nanoTime() - t0;
    if (out.n != w.bytes() || (indexed && entries[0] == 0)) {
      throw new IllegalStateException("wrote " + out.n + " of " + w.bytes() + " bytes");
    }
    return dt;
  }

  public static void main(String[] args) throws IOException {
    long total = args.length > 0 ? Long.parseLong(args[0]) : 5_000_000L;
    int size = args.length > 1 ? Integer.parseInt(args[1]) : 200;
    int pairs = args.length > 2 ? Integer.parseInt(args[2]) : 20;
    Random rnd = new Random(1);
    byte[][] records = new byte[1024][];
    for (int i = 0; i < records.length; i++) {
      records[i] = new byte[size / 2 + rnd.nextInt(size)];
      rnd.nextBytes(records[i]);
    }
    for (int i = 0; i < 3; i++) {  // JIT warm-up of both paths
      run(records, total / 5, true);
      run(records, total / 5, false);
    }
    double[] ratios = new double[pairs];
    long bestWith = Long.MAX_VALUE;
    long bestWithout = Long.MAX_VALUE;
    for (int p = 0; p < pairs; p++) {
      long with;
      long without;
      if (p % 2 == 0) {
        with = run(records, total, true);
        without = run(records, total, false);
      } else {
        without = run(records, total, false);
        with = run(records, total, true);
      }
      bestWith = Math.min(bestWith, with);
      bestWithout = Math.min(bestWithout, without);
      ratios[p] = (double) with / without;
    }
    double[] sorted = ratios.clone();
    Arrays.sort(sorted);
    StringBuilder each = new StringBuilder();
    for (double r : sorted) {
      each.append(String.format(" %+.1f", 100 * (r - 1)));
    }
    System.out.printf("records %d x ~%d B, %d pairs%n", total, size, pairs);
    System.out.printf("index cost, median pair: %+.2f %%; pairs (%%):%s%n", 100 * (sorted[pairs / 2] - 1), each);
    System.out.printf("best: with index %.3f s, without %.3f s (%+.2f %%)%n", bestWith / 1e9, bestWithout / 1e9,
        100.0 * bestWith / bestWithout - 100);
  }
}
