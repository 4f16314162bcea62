package tfhadoop.spark;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampType;
import tfhadoop.example.Feature;
import tfhadoop.example.FeatureList;

/**
 * Writes one column's value as a Feature; chosen once per column from its Spark type.
 *
 * <p>Type mapping (documented in docs): bigint/int/smallint/tinyint → int64_list; boolean →
 * int64_list 0/1; date → int64_list (days since epoch); timestamp → int64_list (microseconds since
 * epoch); float → float_list; double and decimal → float_list (TensorFlow has no float64 or decimal
 * feature: values are rounded to float32); string → bytes_list (UTF-8); binary → bytes_list; arrays
 * of these → lists; arrays of arrays → a FeatureList (SequenceExample only); struct fields → features
 * named {@code parent.child} (see RowEncoder); Spark ML vectors (dense or sparse) → float_list of
 * the vector's {@code size} values. Null values omit the feature; null array elements are an error.
 * A double or decimal column named in {@code exactColumns} is written without rounding instead: see
 * {@link Exact}.
 */
abstract class ColumnEncoder {
  final String column;
  final int kind;

  ColumnEncoder(String column, int kind) {
    this.column = column;
    this.kind = kind;
  }

  /** Element reader for a scalar type: adds {@code get(i)} of a row or array to a feature. */
  interface Element {
    void add(Feature f, InternalRow row, int ordinal);

    void add(Feature f, ArrayData array, int i);
  }

  /** Arrays of arrays and arrays of vectors: a FeatureList, one Feature per element. */
  static boolean isNested(DataType t) {
    return t instanceof ArrayType && (((ArrayType) t).elementType() instanceof ArrayType
        || VectorColumns.isVector(((ArrayType) t).elementType()));
  }

  static int kindOf(String column, DataType t) {
    if (VectorColumns.isVector(t)) {
      return Feature.FLOAT;
    }
    if (t instanceof LongType || t instanceof IntegerType || t instanceof ShortType || t instanceof ByteType
        || t instanceof BooleanType || t instanceof DateType || t instanceof TimestampType) {
      return Feature.INT64;
    }
    if (t instanceof FloatType || t instanceof DoubleType || t instanceof DecimalType) {
      return Feature.FLOAT;
    }
    if (t instanceof StringType || t instanceof BinaryType) {
      return Feature.BYTES;
    }
    throw new IllegalArgumentException("tfrecord cannot write column " + column + " of type " + t.simpleString()
        + ": supported are numeric, boolean, date, timestamp, string, binary, arrays of them and structs of all these"
        + " (arrays of arrays with recordType=SequenceExample)");
  }

  static Element element(String column, final DataType t) {
    kindOf(column, t);
    if (VectorColumns.isVector(t)) {
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          VectorColumns.addDense(f, r.getStruct(o, 4));
        }

        public void add(Feature f, ArrayData a, int i) {
          VectorColumns.addDense(f, a.getStruct(i, 4));
        }
      };
    }
    if (t instanceof LongType || t instanceof TimestampType) {
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          f.addLong(r.getLong(o));
        }

        public void add(Feature f, ArrayData a, int i) {
          f.addLong(a.getLong(i));
        }
      };
    }
    if (t instanceof IntegerType || t instanceof DateType) {
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          f.addLong(r.getInt(o));
        }

        public void add(Feature f, ArrayData a, int i) {
          f.addLong(a.getInt(i));
        }
      };
    }
    if (t instanceof ShortType) {
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          f.addLong(r.getShort(o));
        }

        public void add(Feature f, ArrayData a, int i) {
          f.addLong(a.getShort(i));
        }
      };
    }
    if (t instanceof ByteType) {
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          f.addLong(r.getByte(o));
        }

        public void add(Feature f, ArrayData a, int i) {
          f.addLong(a.getByte(i));
        }
      };
    }
    if (t instanceof BooleanType) {
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          f.addLong(r.getBoolean(o) ? 1 : 0);
        }

        public void add(Feature f, ArrayData a, int i) {
          f.addLong(a.getBoolean(i) ? 1 : 0);
        }
      };
    }
    if (t instanceof FloatType) {
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          f.addFloat(r.getFloat(o));
        }

        public void add(Feature f, ArrayData a, int i) {
          f.addFloat(a.getFloat(i));
        }
      };
    }
    if (t instanceof DoubleType) {
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          f.addFloat((float) r.getDouble(o));
        }

        public void add(Feature f, ArrayData a, int i) {
          f.addFloat((float) a.getDouble(i));
        }
      };
    }
    if (t instanceof DecimalType) {
      final int p = ((DecimalType) t).precision();
      final int s = ((DecimalType) t).scale();
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          f.addFloat((float) r.getDecimal(o, p, s).toDouble());
        }

        public void add(Feature f, ArrayData a, int i) {
          f.addFloat((float) a.getDecimal(i, p, s).toDouble());
        }
      };
    }
    if (t instanceof StringType) {
      return new Element() {
        public void add(Feature f, InternalRow r, int o) {
          f.addBytes(r.getUTF8String(o).getBytes());
        }

        public void add(Feature f, ArrayData a, int i) {
          f.addBytes(a.getUTF8String(i).getBytes());
        }
      };
    }
    return new Element() {
      public void add(Feature f, InternalRow r, int o) {
        f.addBytes(r.getBinary(o));
      }

      public void add(Feature f, ArrayData a, int i) {
        f.addBytes(a.getBinary(i));
      }
    };
  }

  /** A scalar or array column → one Feature. */
  static final class Single extends ColumnEncoder {
    private final Element element;
    private final boolean array;
    private final Exact exact;

    Single(String column, DataType t, boolean exact) {
      super(column, kindOf(column, t instanceof ArrayType ? ((ArrayType) t).elementType() : t));
      this.array = t instanceof ArrayType;
      DataType elem = array ? ((ArrayType) t).elementType() : t;
      this.element = element(column, elem);
      this.exact = exact ? Exact.forType(column, elem) : null;
    }

    void fill(Feature f, InternalRow row, int ordinal) {
      if (exact != null) {
        if (array) {
          exact.fill(f, row.getArray(ordinal));
        } else {
          exact.fill(f, row, ordinal);
        }
        return;
      }
      f.clear(kind);
      if (!array) {
        element.add(f, row, ordinal);
        return;
      }
      ArrayData a = row.getArray(ordinal);
      int n = a.numElements();
      for (int i = 0; i < n; i++) {
        if (a.isNullAt(i)) {
          throw nullElement(column);
        }
        element.add(f, a, i);
      }
    }
  }

  /**
   * An array-of-arrays column → a FeatureList (one Feature per inner array); an array of vectors →
   * one float Feature per vector. A null inner array or vector is an empty Feature.
   */
  static final class Nested extends ColumnEncoder {
    private final Element element;
    private final boolean vectors;

    Nested(String column, DataType t) {
      super(column, kindOf(column, inner(t)));
      this.element = element(column, inner(t));
      this.vectors = VectorColumns.isVector(((ArrayType) t).elementType());
    }

    private static DataType inner(DataType t) {
      DataType e = ((ArrayType) t).elementType();
      return VectorColumns.isVector(e) ? e : ((ArrayType) e).elementType();
    }

    void fill(FeatureList list, InternalRow row, int ordinal) {
      list.clear();
      ArrayData outer = row.getArray(ordinal);
      int n = outer.numElements();
      for (int j = 0; j < n; j++) {
        Feature f = list.add(kind);
        if (outer.isNullAt(j)) {
          continue;
        }
        if (vectors) {
          element.add(f, outer, j);
          continue;
        }
        ArrayData a = outer.getArray(j);
        int m = a.numElements();
        for (int i = 0; i < m; i++) {
          if (a.isNullAt(i)) {
            throw nullElement(column);
          }
          element.add(f, a, i);
        }
      }
    }
  }

  /**
   * Exact writing of a double or decimal column (instead of float32): a decimal of scale 0 (that
   * fits a long) and a double holding an integer below 2^63 as int64, anything else as bytes of
   * its decimal text (a decimal's plain string; a double's shortest round-trip string, or NaN,
   * Infinity, -Infinity). One kind per feature: an array is int64 only if all its values are.
   */
  static final class Exact {
    private final String column;
    private final DecimalType decimal;

    private Exact(String column, DecimalType decimal) {
      this.column = column;
      this.decimal = decimal;
    }

    static Exact forType(String column, DataType t) {
      if (t instanceof DoubleType) {
        return new Exact(column, null);
      }
      if (t instanceof DecimalType) {
        return new Exact(column, (DecimalType) t);
      }
      throw new IllegalArgumentException("option exactColumns names column " + column + " of type "
          + t.simpleString() + ": only double and decimal columns (and arrays of them) are written exactly");
    }

    void fill(Feature f, InternalRow row, int o) {
      if (decimal == null) {
        double v = row.getDouble(o);
        if (integral(v)) {
          f.clear(Feature.INT64).addLong((long) v);
        } else {
          f.clear(Feature.BYTES).addBytes(text(v));
        }
        return;
      }
      Decimal d = row.getDecimal(o, decimal.precision(), decimal.scale());
      if (decimal.scale() == 0 && decimal.precision() <= 18) {
        f.clear(Feature.INT64).addLong(d.toLong());
      } else {
        f.clear(Feature.BYTES).addBytes(d.toJavaBigDecimal().toPlainString().getBytes(StandardCharsets.UTF_8));
      }
    }

    void fill(Feature f, ArrayData a) {
      int n = a.numElements();
      boolean ints = true;
      for (int i = 0; i < n; i++) {
        if (a.isNullAt(i)) {
          throw nullElement(column);
        }
        ints &= decimal == null ? integral(a.getDouble(i)) : decimal.scale() == 0 && decimal.precision() <= 18;
      }
      f.clear(ints ? Feature.INT64 : Feature.BYTES);
      for (int i = 0; i < n; i++) {
        if (decimal == null) {
          double v = a.getDouble(i);
          if (ints) {
            f.addLong((long) v);
          } else {
            f.addBytes(text(v));
          }
        } else {
          Decimal d = a.getDecimal(i, decimal.precision(), decimal.scale());
          if (ints) {
            f.addLong(d.toLong());
          } else {
            f.addBytes(d.toJavaBigDecimal().toPlainString().getBytes(StandardCharsets.UTF_8));
          }
        }
      }
    }

    static boolean integral(double v) {
      return v == Math.rint(v) && Math.abs(v) < 0x1p63 && !(v == 0 && 1 / v < 0);
    }

    static byte[] text(double v) {
      return Double.toString(v).getBytes(StandardCharsets.UTF_8);
    }
  }

  static IllegalArgumentException nullElement(String column) {
    return new IllegalArgumentException("column " + column + " has a null array element; TFRecord lists cannot hold nulls");
  }
}
