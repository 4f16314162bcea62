package tfhadoop.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.UserDefinedType;
import tfhadoop.example.Feature;

/**
 * Spark ML vectors ({@code org.apache.spark.ml.linalg.VectorUDT}, and the older mllib one) without
 * a compile-time dependency on spark-mllib: a vector column is recognized by its UDT's SQL type,
 * the struct {@code <type: tinyint, size: int, indices: array<int>, values: array<double>>}
 * (type 0 = sparse, 1 = dense), which is all the reader and writer touch.
 */
final class VectorColumns {
  private VectorColumns() {}

  static boolean isVector(DataType t) {
    if (!(t instanceof UserDefinedType)) {
      return false;
    }
    DataType sql = ((UserDefinedType<?>) t).sqlType();
    if (!(sql instanceof StructType)) {
      return false;
    }
    StructField[] f = ((StructType) sql).fields();
    return f.length == 4 && f[0].name().equals("type") && f[0].dataType() instanceof ByteType
        && f[1].name().equals("size") && f[1].dataType() instanceof IntegerType
        && f[2].name().equals("indices") && f[2].dataType() instanceof ArrayType
        && ((ArrayType) f[2].dataType()).elementType() instanceof IntegerType
        && f[3].name().equals("values") && f[3].dataType() instanceof ArrayType
        && ((ArrayType) f[3].dataType()).elementType() instanceof DoubleType;
  }

  /** Adds the vector's dense values (a sparse vector as {@code size} values) to a float feature. */
  static void addDense(Feature f, InternalRow v) {
    ArrayData values = v.getArray(3);
    if (v.getByte(0) == 1) {
      int n = values.numElements();
      for (int i = 0; i < n; i++) {
        f.addFloat((float) values.getDouble(i));
      }
      return;
    }
    int size = v.getInt(1);
    int start = f.count;
    for (int i = 0; i < size; i++) {
      f.addFloat(0f);
    }
    ArrayData indices = v.getArray(2);
    int n = indices.numElements();
    for (int k = 0; k < n; k++) {
      f.floats[start + indices.getInt(k)] = (float) values.getDouble(k);
    }
  }

  /** The vector's size: {@code size} of a sparse vector, the number of values of a dense one. */
  static int size(InternalRow v) {
    return v.getByte(0) == 1 ? v.getArray(3).numElements() : v.getInt(1);
  }

  /** A DenseVector in the UDT's Catalyst form. */
  static InternalRow dense(double[] values) {
    return new GenericInternalRow(new Object[] {(byte) 1, null, null,
        UnsafeArrayData.fromPrimitiveArray(values)});
  }
}
