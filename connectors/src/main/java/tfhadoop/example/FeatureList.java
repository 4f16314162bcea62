package tfhadoop.example;

/** One tf.train.FeatureList (a SequenceExample feature list): reusable Features, in order. */
public final class FeatureList {
  private Feature[] items = new Feature[4];
  private int size;

  public FeatureList clear() {
    size = 0;
    return this;
  }

  /** Appends a cleared Feature (reused from earlier records) and returns it. */
  public Feature add(int kind) {
    if (size == items.length) {
      items = java.util.Arrays.copyOf(items, size * 2);
    }
    Feature f = items[size];
    if (f == null) {
      f = items[size] = new Feature();
    }
    size++;
    return f.clear(kind);
  }

  public int size() {
    return size;
  }

  public Feature get(int i) {
    return items[i];
  }
}
