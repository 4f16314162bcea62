package tfhadoop.hive;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hive.common.type.HiveChar;
import org.apache.hadoop.hive.common.type.HiveDecimal;
import org.apache.hadoop.hive.common.type.HiveVarchar;
import org.apache.hadoop.hive.serde2.SerDeException;
import org.apache.hadoop.hive.serde2.objectinspector.ListObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.PrimitiveObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.PrimitiveObjectInspector.PrimitiveCategory;
import org.apache.hadoop.hive.serde2.typeinfo.ListTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.PrimitiveTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfo;
import tfhadoop.example.Feature;

/** One Hive column ↔ one Feature, chosen once from the column's type (see {@link TFRecordSerDe}). */
final class HiveColumn {
  private final String name;
  private final PrimitiveCategory category;
  private final boolean list;
  private final int kind;
  private final PrimitiveTypeInfo type;

  private HiveColumn(String name, PrimitiveTypeInfo type, boolean list) throws SerDeException {
    this.name = name;
    this.type = type;
    this.category = type.getPrimitiveCategory();
    this.list = list;
    this.kind = kindOf(name, category);
  }

  static HiveColumn forType(String name, TypeInfo t) throws SerDeException {
    if (t instanceof ListTypeInfo && ((ListTypeInfo) t).getListElementTypeInfo() instanceof PrimitiveTypeInfo) {
      return new HiveColumn(name, (PrimitiveTypeInfo) ((ListTypeInfo) t).getListElementTypeInfo(), true);
    }
    if (t instanceof PrimitiveTypeInfo) {
      return new HiveColumn(name, (PrimitiveTypeInfo) t, false);
    }
    throw new SerDeException("column " + name + " has type " + t.getTypeName()
        + "; TFRecordSerDe supports primitive types and arrays of them");
  }

  private static int kindOf(String name, PrimitiveCategory c) throws SerDeException {
    switch (c) {
      case LONG:
      case INT:
      case SHORT:
      case BYTE:
      case BOOLEAN:
        return Feature.INT64;
      case FLOAT:
      case DOUBLE:
      case DECIMAL:
        return Feature.FLOAT;
      case STRING:
      case VARCHAR:
      case CHAR:
      case BINARY:
        return Feature.BYTES;
      default:
        throw new SerDeException("column " + name + " has unsupported type " + c);
    }
  }

  /** Writes a Hive value (read through its inspector) into {@code f}. */
  void fill(Feature f, Object v, ObjectInspector oi) throws SerDeException {
    f.clear(kind);
    if (!list) {
      add(f, ((PrimitiveObjectInspector) oi).getPrimitiveJavaObject(v));
      return;
    }
    ListObjectInspector loi = (ListObjectInspector) oi;
    PrimitiveObjectInspector eoi = (PrimitiveObjectInspector) loi.getListElementObjectInspector();
    int n = loi.getListLength(v);
    for (int i = 0; i < n; i++) {
      Object e = loi.getListElement(v, i);
      if (e == null) {
        throw new SerDeException("column " + name + " has a null array element; TFRecord lists cannot hold nulls");
      }
      add(f, eoi.getPrimitiveJavaObject(e));
    }
  }

  private void add(Feature f, Object x) {
    switch (kind) {
      case Feature.INT64:
        f.addLong(x instanceof Boolean ? (((Boolean) x) ? 1 : 0) : ((Number) x).longValue());
        break;
      case Feature.FLOAT:
        f.addFloat(x instanceof HiveDecimal ? ((HiveDecimal) x).floatValue() : ((Number) x).floatValue());
        break;
      default:
        if (x instanceof byte[]) {
          f.addBytes((byte[]) x);
        } else {
          f.addBytes(text(x).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
    }
  }

  private static String text(Object x) {
    if (x instanceof HiveVarchar) {
      return ((HiveVarchar) x).getValue();
    }
    if (x instanceof HiveChar) {
      return ((HiveChar) x).getStrippedValue();
    }
    return x.toString();
  }

  /**
   * The Java value (standard Java object inspector form) of a decoded feature. Only lossless
   * conversions, as in the Spark source: int64_list → integral columns that hold the value, boolean
   * (0/1), decimal; float_list → float, double, decimal; bytes_list → string/varchar/char/binary.
   * Anything else is an error naming feature, kind, column and type, never a converted value.
   */
  Object value(Feature f) throws IOException {
    if (!list) {
      if (f.count == 0) {
        return null;
      }
      if (f.count > 1) {
        throw new IOException("feature '" + name + "' has " + f.count + " values but column " + name + " is not an array");
      }
      return element(f, 0);
    }
    List<Object> out = new ArrayList<>(f.count);
    for (int i = 0; i < f.count; i++) {
      out.add(element(f, i));
    }
    return out;
  }

  private boolean accepts(int k) {
    if (category == PrimitiveCategory.DECIMAL) {
      return k == Feature.FLOAT || k == Feature.INT64;
    }
    return k == kind;
  }

  private Object element(Feature f, int i) throws IOException {
    if (!accepts(f.kind)) {
      throw new IOException("feature '" + name + "' is a " + Feature.kindName(f.kind) + " but column " + name
          + " is " + type.getTypeName() + " (only lossless conversions are read; cast after reading)");
    }
    switch (category) {
      case LONG:
        return f.longs[i];
      case INT:
        return (int) fits(f.longs[i], Integer.MIN_VALUE, Integer.MAX_VALUE);
      case SHORT:
        return (short) fits(f.longs[i], Short.MIN_VALUE, Short.MAX_VALUE);
      case BYTE:
        return (byte) fits(f.longs[i], Byte.MIN_VALUE, Byte.MAX_VALUE);
      case BOOLEAN:
        return fits(f.longs[i], 0, 1) == 1;
      case FLOAT:
        return f.floats[i];
      case DOUBLE:
        return (double) f.floats[i];
      case DECIMAL:
        return decimal(f.kind == Feature.INT64 ? java.math.BigDecimal.valueOf(f.longs[i]) : floatDecimal(f.floats[i]));
      case BINARY:
        return f.bytesAt(i);
      case VARCHAR:
        return new HiveVarchar(f.stringAt(i), -1);
      case CHAR:
        return new HiveChar(f.stringAt(i), -1);
      default:
        return f.stringAt(i);
    }
  }

  private long fits(long v, long min, long max) throws IOException {
    if (v < min || v > max) {
      throw new IOException("feature '" + name + "' holds int64 " + v + ", which does not fit column " + name
          + " of type " + type.getTypeName());
    }
    return v;
  }

  private java.math.BigDecimal floatDecimal(float v) throws IOException {
    if (Float.isNaN(v) || Float.isInfinite(v)) {
      throw new IOException("feature '" + name + "' holds " + v + " but column " + name + " is " + type.getTypeName());
    }
    return new java.math.BigDecimal(Float.toString(v));
  }

  private HiveDecimal decimal(java.math.BigDecimal v) throws IOException {
    org.apache.hadoop.hive.serde2.typeinfo.DecimalTypeInfo t = (org.apache.hadoop.hive.serde2.typeinfo.DecimalTypeInfo) type;
    java.math.BigDecimal scaled;
    try {
      scaled = v.setScale(t.getScale());
    } catch (ArithmeticException e) {
      throw new IOException("feature '" + name + "' holds " + v.toPlainString() + ", which column " + name + " of type "
          + type.getTypeName() + " cannot hold without rounding");
    }
    if (scaled.precision() > t.getPrecision()) {
      throw new IOException("feature '" + name + "' holds " + v.toPlainString() + ", which does not fit column " + name
          + " of type " + type.getTypeName());
    }
    return HiveDecimal.create(scaled);
  }
}
