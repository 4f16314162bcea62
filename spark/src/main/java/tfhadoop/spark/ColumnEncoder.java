package tfhadoop.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
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
 * named {@code parent.child} (see RowEncoder). Null values omit the
 * feature; null array elements are an error.
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

  static boolean isNested(DataType t) {
    return t instanceof ArrayType && ((ArrayType) t).elementType() instanceof ArrayType;
  }

  static int kindOf(String column, DataType t) {
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

    Single(String column, DataType t) {
      super(column, kindOf(column, t instanceof ArrayType ? ((ArrayType) t).elementType() : t));
      this.array = t instanceof ArrayType;
      this.element = element(column, array ? ((ArrayType) t).elementType() : t);
    }

    void fill(Feature f, InternalRow row, int ordinal) {
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

  /** An array-of-arrays column → a FeatureList (one Feature per inner array). */
  static final class Nested extends ColumnEncoder {
    private final Element element;

    Nested(String column, DataType t) {
      super(column, kindOf(column, ((ArrayType) ((ArrayType) t).elementType()).elementType()));
      this.element = element(column, ((ArrayType) ((ArrayType) t).elementType()).elementType());
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

  static IllegalArgumentException nullElement(String column) {
    return new IllegalArgumentException("column " + column + " has a null array element; TFRecord lists cannot hold nulls");
  }
}
