package tfhadoop.spark;

import java.io.IOException;
import java.math.BigDecimal;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
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
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import tfhadoop.example.Feature;
import tfhadoop.example.FeatureList;

/**
 * Turns a decoded Feature into the Catalyst value of one column. Built once per column from its type
 * (like Spark's AvroDeserializer): for each feature kind the element reader is decided here, and a
 * kind the column cannot hold without changing the value is an error, never a conversion. The
 * allowed conversions (one table, in docs/tfrecord-jvm.md):
 *
 * <ul>
 *   <li>float_list → float, double, decimal (the float's shortest decimal form), vector;
 *   <li>int64_list → bigint, and int/smallint/tinyint/date when the value fits, boolean (0/1),
 *       timestamp (microseconds), decimal when it fits, vector (|v| ≤ 2^53);
 *   <li>bytes_list → string, binary;
 *   <li>columns written exactly ({@code exactColumns}): double/float from int64 (exact) or a decimal
 *       string, decimal from int64 or a decimal string, when the value fits without rounding;
 *   <li>a column inferred from int64 and float features ({@link #MIXED_NUMERIC} metadata): float
 *       from int64 values the float holds exactly.
 * </ul>
 *
 * A scalar column takes a one-value list (an empty list is null); more values is an error. An
 * empty list of any kind is an empty array. Errors name feature, kind, column and type; the caller
 * adds the file and the record's offset.
 */
abstract class FeatureConverter {
  /** Field metadata key set by schema inference on a float column seen with int64 values too. */
  static final String MIXED_NUMERIC = "tfrecord.mixedInt64Float";

  final String column;
  final DataType type;

  FeatureConverter(String column, DataType type) {
    this.column = column;
    this.type = type;
  }

  /** Value for a Feature (context feature), or null when it holds no value. */
  abstract Object convert(Feature f) throws IOException;

  /**
   * Sets the value of {@code f} at {@code ordinal} of a mutable row (null when it holds none);
   * returns whether it was non-null. Scalar numeric columns override this to set values unboxed.
   */
  boolean write(Feature f, org.apache.spark.sql.catalyst.InternalRow row, int ordinal) throws IOException {
    Object v = convert(f);
    if (v == null) {
      row.setNullAt(ordinal);
      return false;
    }
    row.update(ordinal, v);
    return true;
  }

  /** Value for a FeatureList (SequenceExample list); only array-of-array columns take these. */
  Object convertList(FeatureList l) throws IOException {
    throw new IOException("column " + column + " is " + type.simpleString()
        + ", not an array of arrays, but the record has a feature list '" + column + "'");
  }

  /** Reads element i of a feature of one kind as a Catalyst value. */
  interface Elem {
    Object get(Feature f, int i) throws IOException;
  }

  /** How a column reads: which kinds it accepts, by element reader. */
  static final class Rules {
    final boolean exact;
    final boolean mixed;

    Rules(boolean exact, boolean mixed) {
      this.exact = exact;
      this.mixed = mixed;
    }
  }

  static FeatureConverter forType(String column, DataType type, Rules rules) {
    if (VectorColumns.isVector(type)) {
      return new Vector(column, type);
    }
    if (type instanceof ArrayType) {
      DataType elem = ((ArrayType) type).elementType();
      if (elem instanceof ArrayType || VectorColumns.isVector(elem)) {
        FeatureConverter inner = VectorColumns.isVector(elem) ? new Vector(column, elem)
            : new Array(column, ((ArrayType) elem).elementType(), rules);
        return new Nested(column, type, inner);
      }
      return new Array(column, elem, rules);
    }
    return new Scalar(column, type, rules);
  }

  static IOException mismatch(String column, Feature f, DataType t) {
    return new IOException("feature '" + column + "' is a " + Feature.kindName(f.kind) + " but column " + column
        + " is " + t.simpleString() + ": " + accepts(t) + " (read it as its own type and cast after reading)");
  }

  private static String accepts(DataType t) {
    if (t instanceof FloatType || t instanceof DoubleType) {
      return t.simpleString() + " columns read float_list features";
    }
    if (t instanceof DecimalType) {
      return "decimal columns read float_list and int64_list features";
    }
    if (t instanceof StringType || t instanceof BinaryType) {
      return t.simpleString() + " columns read bytes_list features";
    }
    return t.simpleString() + " columns read int64_list features";
  }

  /** An int64 element read into a narrower integral column: an error when it does not fit. */
  static Elem narrowing(String column, DataType t, long min, long max, java.util.function.LongFunction<Object> cast) {
    return (f, i) -> {
      long v = f.longs[i];
      if (v < min || v > max) {
        throw outOfRange(column, v, t);
      }
      return cast.apply(v);
    };
  }

  static IOException outOfRange(String column, long v, DataType t) {
    return new IOException("feature '" + column + "' holds int64 " + v + ", which does not fit column " + column
        + " of type " + t.simpleString());
  }

  /** The element readers of type t, indexed by feature kind (null: that kind is a mismatch). */
  static Elem[] readers(final String column, final DataType t, Rules rules) {
    Elem[] r = new Elem[4];
    if (t instanceof LongType || t instanceof TimestampType) {
      r[Feature.INT64] = (f, i) -> f.longs[i];
    } else if (t instanceof IntegerType || t instanceof DateType) {
      r[Feature.INT64] = narrowing(column, t, Integer.MIN_VALUE, Integer.MAX_VALUE, v -> (int) v);
    } else if (t instanceof ShortType) {
      r[Feature.INT64] = narrowing(column, t, Short.MIN_VALUE, Short.MAX_VALUE, v -> (short) v);
    } else if (t instanceof ByteType) {
      r[Feature.INT64] = narrowing(column, t, Byte.MIN_VALUE, Byte.MAX_VALUE, v -> (byte) v);
    } else if (t instanceof BooleanType) {
      r[Feature.INT64] = (f, i) -> {
        long v = f.longs[i];
        if (v != 0 && v != 1) {
          throw new IOException("feature '" + column + "' holds int64 " + v + " but column " + column
              + " is boolean (written as 1 / 0)");
        }
        return v == 1;
      };
    } else if (t instanceof FloatType) {
      r[Feature.FLOAT] = (f, i) -> f.floats[i];
      if (rules.exact || rules.mixed) {
        r[Feature.INT64] = (f, i) -> {
          long v = f.longs[i];
          float x = (float) v;
          if ((long) x != v || x == 0x1p63f) {
            throw new IOException("feature '" + column + "' holds int64 " + v + ", which float column " + column
                + " cannot hold exactly");
          }
          return x;
        };
      }
      if (rules.exact) {
        r[Feature.BYTES] = (f, i) -> {
          Double special = special(f, i);
          if (special != null) {
            return special.floatValue();
          }
          BigDecimal d = decimalText(column, f, i);
          float x = d.floatValue();
          if (Float.isInfinite(x)
              || new BigDecimal(Float.toString(x)).compareTo(d) != 0 && new BigDecimal(x).compareTo(d) != 0) {
            throw new IOException("feature '" + column + "' holds " + d.toPlainString() + ", which float column "
                + column + " cannot hold exactly");
          }
          return x;
        };
      }
    } else if (t instanceof DoubleType) {
      r[Feature.FLOAT] = (f, i) -> (double) f.floats[i];
      if (rules.exact || rules.mixed) {
        r[Feature.INT64] = (f, i) -> {
          long v = f.longs[i];
          double x = (double) v;
          if ((long) x != v || x == 0x1p63) {
            throw new IOException("feature '" + column + "' holds int64 " + v + ", which double column " + column
                + " cannot hold exactly");
          }
          return x;
        };
      }
      if (rules.exact) {
        r[Feature.BYTES] = (f, i) -> {
          Double special = special(f, i);
          if (special != null) {
            return special;
          }
          BigDecimal d = decimalText(column, f, i);
          double x = d.doubleValue();
          if (Double.isInfinite(x) || BigDecimal.valueOf(x).compareTo(d) != 0 && new BigDecimal(x).compareTo(d) != 0) {
            throw new IOException("feature '" + column + "' holds " + d.toPlainString() + ", which double column "
                + column + " cannot hold exactly");
          }
          return x;
        };
      }
    } else if (t instanceof DecimalType) {
      final DecimalType dt = (DecimalType) t;
      r[Feature.FLOAT] = (f, i) -> {
        float v = f.floats[i];
        if (Float.isNaN(v) || Float.isInfinite(v)) {
          throw new IOException("feature '" + column + "' holds " + v + " but column " + column + " is "
              + dt.simpleString());
        }
        return decimal(column, new BigDecimal(Float.toString(v)), dt);
      };
      r[Feature.INT64] = (f, i) -> decimal(column, BigDecimal.valueOf(f.longs[i]), dt);
      if (rules.exact) {
        r[Feature.BYTES] = (f, i) -> decimal(column, decimalText(column, f, i), dt);
      }
    } else if (t instanceof StringType) {
      r[Feature.BYTES] = (f, i) -> UTF8String.fromBytes(f.bytes[i], f.bytesOff[i], f.bytesLen[i]);
    } else if (t instanceof BinaryType) {
      r[Feature.BYTES] = (f, i) -> f.bytesAt(i);
    } else {
      throw new IllegalArgumentException("tfrecord cannot read column " + column + " of type " + t.simpleString()
          + ": supported are numeric, boolean, date, timestamp, string, binary, vector, arrays and structs of them");
    }
    return r;
  }

  /** NaN, Infinity and -Infinity, as the exact writer spells them (Double.toString). */
  private static Double special(Feature f, int i) {
    String s = f.stringAt(i);
    return s.equals("NaN") || s.equals("Infinity") || s.equals("-Infinity") ? Double.valueOf(s) : null;
  }

  private static BigDecimal decimalText(String column, Feature f, int i) throws IOException {
    String s = f.stringAt(i);
    try {
      return new BigDecimal(s);
    } catch (NumberFormatException e) {
      throw new IOException("feature '" + column + "' holds '" + s + "', which is not a decimal number, but column "
          + column + " is written exactly as decimal text");
    }
  }

  /** v as a Decimal of t, or an error when it would need rounding or does not fit. */
  static Decimal decimal(String column, BigDecimal v, DecimalType t) throws IOException {
    BigDecimal scaled;
    try {
      scaled = v.setScale(t.scale());
    } catch (ArithmeticException e) {
      throw new IOException("feature '" + column + "' holds " + v.toPlainString() + ", which column " + column
          + " of type " + t.simpleString() + " cannot hold without rounding");
    }
    if (scaled.precision() > t.precision()) {
      throw new IOException("feature '" + column + "' holds " + v.toPlainString() + ", which does not fit column "
          + column + " of type " + t.simpleString());
    }
    return Decimal.apply(scaled, t.precision(), t.scale());
  }

  static final class Scalar extends FeatureConverter {
    private final Elem[] readers;
    /**
     * Unboxed setter, decided once per column: 1 bigint/timestamp, 4 int/date, 5 smallint, 6 tinyint,
     * 7 boolean (all from int64), 2 float, 3 double (from float), 0 generic. A value the fast path
     * cannot take (out of range, another kind) goes the generic way, which raises the named error.
     */
    private final int fast;

    Scalar(String column, DataType type, Rules rules) {
      super(column, type);
      this.readers = readers(column, type, rules);
      this.fast = type instanceof LongType || type instanceof TimestampType ? 1 : type instanceof FloatType ? 2
          : type instanceof DoubleType ? 3 : type instanceof IntegerType || type instanceof DateType ? 4
          : type instanceof ShortType ? 5 : type instanceof ByteType ? 6 : type instanceof BooleanType ? 7 : 0;
    }

    @Override
    boolean write(Feature f, org.apache.spark.sql.catalyst.InternalRow row, int ordinal) throws IOException {
      if (f.count == 1) {
        if (fast == 1 && f.kind == Feature.INT64) {
          row.setLong(ordinal, f.longs[0]);
          return true;
        }
        if (fast == 2 && f.kind == Feature.FLOAT) {
          row.setFloat(ordinal, f.floats[0]);
          return true;
        }
        if (fast == 3 && f.kind == Feature.FLOAT) {
          row.setDouble(ordinal, f.floats[0]);
          return true;
        }
        if (fast >= 4 && f.kind == Feature.INT64) {
          long v = f.longs[0];
          if (fast == 4 && v == (int) v) {
            row.setInt(ordinal, (int) v);
            return true;
          }
          if (fast == 5 && v == (short) v) {
            row.setShort(ordinal, (short) v);
            return true;
          }
          if (fast == 6 && v == (byte) v) {
            row.setByte(ordinal, (byte) v);
            return true;
          }
          if (fast == 7 && (v == 0 || v == 1)) {
            row.setBoolean(ordinal, v == 1);
            return true;
          }
        }
      }
      return super.write(f, row, ordinal);
    }

    @Override
    Object convert(Feature f) throws IOException {
      if (f.count == 0) {
        return null;
      }
      if (f.count > 1) {
        throw new IOException("feature '" + column + "' has " + f.count + " values but column " + column + " is "
            + type.simpleString() + " (use an array type)");
      }
      Elem e = readers[f.kind];
      if (e == null) {
        throw mismatch(column, f, type);
      }
      return e.get(f, 0);
    }
  }

  static final class Array extends FeatureConverter {
    private final DataType elem;
    private final Elem[] readers;
    private final boolean longs;
    private final boolean floats;

    Array(String column, DataType elem, Rules rules) {
      super(column, new ArrayType(elem, false));
      this.elem = elem;
      this.readers = readers(column, elem, rules);
      this.longs = elem instanceof LongType || elem instanceof TimestampType;
      this.floats = elem instanceof FloatType;
    }

    @Override
    Object convert(Feature f) throws IOException {
      if (f.count == 0) {
        return new GenericArrayData(new Object[0]);
      }
      if (f.kind == Feature.INT64 && longs) {
        return UnsafeArrayData.fromPrimitiveArray(f.longs, Platform.LONG_ARRAY_OFFSET, f.count, 8);
      }
      if (f.kind == Feature.FLOAT && floats) {
        return UnsafeArrayData.fromPrimitiveArray(f.floats, Platform.FLOAT_ARRAY_OFFSET, f.count, 4);
      }
      Elem e = readers[f.kind];
      if (e == null) {
        throw mismatch(column, f, type);
      }
      Object[] out = new Object[f.count];
      for (int i = 0; i < f.count; i++) {
        out[i] = e.get(f, i);
      }
      return new GenericArrayData(out);
    }
  }

  /** A Spark ML vector column: a float_list (or int64_list) becomes a DenseVector. */
  static final class Vector extends FeatureConverter {
    Vector(String column, DataType type) {
      super(column, type);
    }

    @Override
    Object convert(Feature f) throws IOException {
      double[] v = new double[f.count];
      if (f.kind == Feature.FLOAT) {
        for (int i = 0; i < v.length; i++) {
          v[i] = f.floats[i];
        }
      } else if (f.kind == Feature.INT64) {
        for (int i = 0; i < v.length; i++) {
          long x = f.longs[i];
          if (Math.abs(x) > (1L << 53)) {
            throw new IOException("feature '" + column + "' holds int64 " + x + ", which vector column " + column
                + " (doubles) cannot hold exactly");
          }
          v[i] = x;
        }
      } else if (f.count > 0) {
        throw new IOException("feature '" + column + "' is a " + Feature.kindName(f.kind) + " but column " + column
            + " is a vector: vector columns read float_list and int64_list features");
      }
      return VectorColumns.dense(v);
    }
  }

  static final class Nested extends FeatureConverter {
    private final FeatureConverter inner;

    Nested(String column, DataType type, FeatureConverter inner) {
      super(column, type);
      this.inner = inner;
    }

    @Override
    Object convert(Feature f) throws IOException {
      throw new IOException("column " + column + " is " + type.simpleString() + " but the record has a context "
          + "feature of that name (use recordType=SequenceExample, whose feature lists map to arrays of arrays)");
    }

    @Override
    Object convertList(FeatureList l) throws IOException {
      Object[] out = new Object[l.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = inner.convert(l.get(i));
      }
      return new GenericArrayData(out);
    }
  }
}
