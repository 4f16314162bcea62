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
 * Turns a decoded Feature into the Catalyst value of one column, built once per column from its
 * type. Numeric lists convert to any numeric column (and to string); bytes lists only to string or
 * binary. A scalar column takes a one-value list (an empty list is null); more values is an error
 * naming the column.
 */
abstract class FeatureConverter {
  final String column;

  FeatureConverter(String column) {
    this.column = column;
  }

  /** Value for a Feature (context feature), or null. */
  abstract Object convert(Feature f) throws IOException;

  /** Value for a FeatureList (SequenceExample list); only array-of-array columns take these. */
  Object convertList(FeatureList l) throws IOException {
    throw new IOException("column " + column + " is not an array of arrays, but the record has a feature list of that name");
  }

  static FeatureConverter forType(String column, DataType type) {
    if (type instanceof ArrayType) {
      DataType elem = ((ArrayType) type).elementType();
      if (elem instanceof ArrayType) {
        return new Nested(column, new Array(column, ((ArrayType) elem).elementType()));
      }
      return new Array(column, elem);
    }
    return new Scalar(column, type);
  }

  static IOException mismatch(String column, Feature f, DataType t) {
    return new IOException("feature '" + column + "' is a " + Feature.kindName(f.kind) + " but column " + column
        + " is " + t.simpleString());
  }

  /** Element i of f as a value of type t. */
  static Object element(String column, Feature f, int i, DataType t) throws IOException {
    switch (f.kind) {
      case Feature.INT64: {
        long v = f.longs[i];
        if (t instanceof LongType) {
          return v;
        }
        if (t instanceof IntegerType || t instanceof DateType) {
          return (int) v;
        }
        if (t instanceof ShortType) {
          return (short) v;
        }
        if (t instanceof ByteType) {
          return (byte) v;
        }
        if (t instanceof BooleanType) {
          return v != 0;
        }
        if (t instanceof FloatType) {
          return (float) v;
        }
        if (t instanceof DoubleType) {
          return (double) v;
        }
        if (t instanceof TimestampType) {
          return v;
        }
        if (t instanceof DecimalType) {
          return decimal(BigDecimal.valueOf(v), (DecimalType) t);
        }
        if (t instanceof StringType) {
          return UTF8String.fromString(Long.toString(v));
        }
        throw mismatch(column, f, t);
      }
      case Feature.FLOAT: {
        float v = f.floats[i];
        if (t instanceof FloatType) {
          return v;
        }
        if (t instanceof DoubleType) {
          return (double) v;
        }
        if (t instanceof LongType) {
          return (long) v;
        }
        if (t instanceof IntegerType) {
          return (int) v;
        }
        if (t instanceof ShortType) {
          return (short) v;
        }
        if (t instanceof ByteType) {
          return (byte) v;
        }
        if (t instanceof BooleanType) {
          return v != 0f;
        }
        if (t instanceof DecimalType) {
          return decimal(new BigDecimal(Float.toString(v)), (DecimalType) t);
        }
        if (t instanceof StringType) {
          return UTF8String.fromString(Float.toString(v));
        }
        throw mismatch(column, f, t);
      }
      case Feature.BYTES: {
        if (t instanceof StringType) {
          return UTF8String.fromBytes(f.bytes[i], f.bytesOff[i], f.bytesLen[i]);
        }
        if (t instanceof BinaryType) {
          return f.bytesAt(i);
        }
        throw mismatch(column, f, t);
      }
      default:
        return null;
    }
  }

  private static Decimal decimal(BigDecimal v, DecimalType t) {
    Decimal d = Decimal.apply(v);
    return d.changePrecision(t.precision(), t.scale()) ? d : null;
  }

  static final class Scalar extends FeatureConverter {
    private final DataType type;

    Scalar(String column, DataType type) {
      super(column);
      this.type = type;
    }

    @Override
    Object convert(Feature f) throws IOException {
      if (f.kind == Feature.NONE || f.count == 0) {
        return null;
      }
      if (f.count > 1) {
        throw new IOException("feature '" + column + "' has " + f.count + " values but column " + column + " is "
            + type.simpleString() + " (use an array type)");
      }
      return element(column, f, 0, type);
    }
  }

  static final class Array extends FeatureConverter {
    private final DataType elem;

    Array(String column, DataType elem) {
      super(column);
      this.elem = elem;
    }

    @Override
    Object convert(Feature f) throws IOException {
      if (f.kind == Feature.NONE) {
        return new GenericArrayData(new Object[0]);
      }
      if (f.kind == Feature.INT64 && elem instanceof LongType) {
        return UnsafeArrayData.fromPrimitiveArray(f.longs, Platform.LONG_ARRAY_OFFSET, f.count, 8);
      }
      if (f.kind == Feature.FLOAT && elem instanceof FloatType) {
        return UnsafeArrayData.fromPrimitiveArray(f.floats, Platform.FLOAT_ARRAY_OFFSET, f.count, 4);
      }
      Object[] out = new Object[f.count];
      for (int i = 0; i < f.count; i++) {
        out[i] = element(column, f, i, elem);
      }
      return new GenericArrayData(out);
    }
  }

  static final class Nested extends FeatureConverter {
    private final Array inner;

    Nested(String column, Array inner) {
      super(column);
      this.inner = inner;
    }

    @Override
    Object convert(Feature f) throws IOException {
      throw new IOException("column " + column + " is an array of arrays but the record has a context feature of that"
          + " name (use recordType=SequenceExample, whose feature lists map to arrays of arrays)");
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
