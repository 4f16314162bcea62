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

  private HiveColumn(String name, PrimitiveCategory category, boolean list) throws SerDeException {
    this.name = name;
    this.category = category;
    this.list = list;
    this.kind = kindOf(name, category);
  }

  static HiveColumn forType(String name, TypeInfo t) throws SerDeException {
    if (t instanceof ListTypeInfo && ((ListTypeInfo) t).getListElementTypeInfo() instanceof PrimitiveTypeInfo) {
      return new HiveColumn(name, ((PrimitiveTypeInfo) ((ListTypeInfo) t).getListElementTypeInfo()).getPrimitiveCategory(), true);
    }
    if (t instanceof PrimitiveTypeInfo) {
      return new HiveColumn(name, ((PrimitiveTypeInfo) t).getPrimitiveCategory(), false);
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

  /** The Java value (standard Java object inspector form) of a decoded feature. */
  Object value(Feature f) throws IOException {
    if (!list) {
      if (f.kind == Feature.NONE || f.count == 0) {
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

  private Object element(Feature f, int i) throws IOException {
    if (f.kind != kind && !(f.kind == Feature.INT64 && kind == Feature.FLOAT)) {
      throw new IOException("feature '" + name + "' is a " + Feature.kindName(f.kind) + " but column " + name
          + " is " + category);
    }
    double d = f.kind == Feature.INT64 ? f.longs[i] : f.kind == Feature.FLOAT ? f.floats[i] : 0;
    switch (category) {
      case LONG:
        return f.longs[i];
      case INT:
        return (int) f.longs[i];
      case SHORT:
        return (short) f.longs[i];
      case BYTE:
        return (byte) f.longs[i];
      case BOOLEAN:
        return f.longs[i] != 0;
      case FLOAT:
        return (float) d;
      case DOUBLE:
        return d;
      case DECIMAL:
        return HiveDecimal.create(new java.math.BigDecimal(Float.toString((float) d)));
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
}
