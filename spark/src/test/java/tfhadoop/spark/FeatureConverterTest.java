package tfhadoop.spark;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.junit.Test;
import tfhadoop.example.Feature;

/** The conversion table of the reader: lossless conversions read, every other one is a named error. */
public class FeatureConverterTest {
  private static final FeatureConverter.Rules PLAIN = new FeatureConverter.Rules(false, false);

  private static Feature longs(long... v) {
    Feature f = new Feature().clear(Feature.INT64);
    for (long x : v) {
      f.addLong(x);
    }
    return f;
  }

  private static Feature floats(float... v) {
    Feature f = new Feature().clear(Feature.FLOAT);
    for (float x : v) {
      f.addFloat(x);
    }
    return f;
  }

  private static Feature bytes(String s) {
    Feature f = new Feature().clear(Feature.BYTES);
    f.addBytes(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    return f;
  }

  private static Object read(DataType t, Feature f) throws IOException {
    return FeatureConverter.forType("x", t, PLAIN).convert(f);
  }

  private static void fails(DataType t, Feature f, String message) {
    try {
      Object v = read(t, f);
      fail("read " + v + " into " + t.simpleString());
    } catch (IOException e) {
      assertTrue(e.getMessage(), e.getMessage().contains(message));
    }
  }

  @Test
  public void losslessConversionsRead() throws IOException {
    assertEquals(5L, read(DataTypes.LongType, longs(5)));
    assertEquals(-7, read(DataTypes.IntegerType, longs(-7)));
    assertEquals((short) 300, read(DataTypes.ShortType, longs(300)));
    assertEquals((byte) -128, read(DataTypes.ByteType, longs(-128)));
    assertEquals(true, read(DataTypes.BooleanType, longs(1)));
    assertEquals(18262, read(DataTypes.DateType, longs(18262)));
    assertEquals(2.5f, read(DataTypes.FloatType, floats(2.5f)));
    assertEquals((double) 0.1f, read(DataTypes.DoubleType, floats(0.1f)));
    assertEquals(Decimal.apply("0.10"), read(DataTypes.createDecimalType(5, 2), floats(0.1f)));
    assertEquals(Decimal.apply("12.0"), read(DataTypes.createDecimalType(5, 1), longs(12)));
    assertEquals("é", read(DataTypes.StringType, bytes("é")).toString());
    assertNull(read(DataTypes.LongType, floats()));  // an empty list holds no value
  }

  @Test
  public void kindMismatchesAreErrors() {
    fails(DataTypes.IntegerType, floats(2.5f), "feature 'x' is a float_list but column x is int");
    fails(DataTypes.LongType, floats(2.5f), "feature 'x' is a float_list but column x is bigint");
    fails(DataTypes.BooleanType, floats(1f), "is a float_list but column x is boolean");
    fails(DataTypes.DateType, floats(1f), "is a float_list but column x is date");
    fails(DataTypes.TimestampType, floats(1f), "is a float_list but column x is timestamp");
    fails(DataTypes.StringType, floats(2.5f), "is a float_list but column x is string");
    fails(DataTypes.FloatType, longs(5), "is a int64_list but column x is float");
    fails(DataTypes.DoubleType, longs(5), "is a int64_list but column x is double");
    fails(DataTypes.StringType, longs(4), "is a int64_list but column x is string");
    fails(DataTypes.LongType, bytes("7"), "is a bytes_list but column x is bigint");
    fails(DataTypes.DoubleType, bytes("7"), "is a bytes_list but column x is double");
  }

  @Test
  public void narrowingThatDoesNotFitIsAnError() {
    fails(DataTypes.ByteType, longs(300), "holds int64 300, which does not fit column x of type tinyint");
    fails(DataTypes.ShortType, longs(40000), "holds int64 40000");
    fails(DataTypes.IntegerType, longs(1L << 31), "holds int64 2147483648");
    fails(DataTypes.BooleanType, longs(2), "holds int64 2 but column x is boolean");
    fails(DataTypes.createDecimalType(4, 0), longs(123456), "does not fit column x of type decimal(4,0)");
    fails(DataTypes.createDecimalType(5, 2), floats(0.125f), "cannot hold without rounding");
    fails(DataTypes.createDecimalType(5, 2), floats(Float.NaN), "holds NaN");
  }

  @Test
  public void inferredMixedColumnsReadExactInt64Only() throws IOException {
    FeatureConverter c = FeatureConverter.forType("x", DataTypes.FloatType, new FeatureConverter.Rules(false, true));
    assertEquals(3f, c.convert(longs(3)));
    try {
      c.convert(longs((1 << 24) + 1));
      fail();
    } catch (IOException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("cannot hold exactly"));
    }
  }

  @Test
  public void exactColumnsReadTheirExactForms() throws IOException {
    FeatureConverter.Rules exact = new FeatureConverter.Rules(true, false);
    assertEquals(0.1, FeatureConverter.forType("x", DataTypes.DoubleType, exact).convert(bytes("0.1")));
    assertEquals(1234567890123.0, FeatureConverter.forType("x", DataTypes.DoubleType, exact).convert(longs(1234567890123L)));
    assertTrue(Double.isNaN((Double) FeatureConverter.forType("x", DataTypes.DoubleType, exact).convert(bytes("NaN"))));
    assertEquals(Decimal.apply("12345678.123456789000000000"), FeatureConverter.forType("x",
        DataTypes.createDecimalType(38, 18), exact).convert(bytes("12345678.123456789")));
  }
  /** The unboxed setters (Scalar.write) hold the same rules as convert: in range sets, else the named error. */
  @Test
  public void unboxedWritesKeepTheRules() throws IOException {
    // (a GenericInternalRow: building a StructType needs json4s, which the test classpath leaves out)
    org.apache.spark.sql.catalyst.expressions.GenericInternalRow row =
        new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(new Object[5]);
    assertTrue(FeatureConverter.forType("x", DataTypes.IntegerType, PLAIN).write(longs(-7), row, 0));
    assertTrue(FeatureConverter.forType("x", DataTypes.ShortType, PLAIN).write(longs(300), row, 1));
    assertTrue(FeatureConverter.forType("x", DataTypes.ByteType, PLAIN).write(longs(-128), row, 2));
    assertTrue(FeatureConverter.forType("x", DataTypes.BooleanType, PLAIN).write(longs(1), row, 3));
    assertTrue(FeatureConverter.forType("x", DataTypes.DateType, PLAIN).write(longs(19000), row, 4));
    assertEquals(-7, row.getInt(0));
    assertEquals((short) 300, row.getShort(1));
    assertEquals((byte) -128, row.getByte(2));
    assertTrue(row.getBoolean(3));
    assertEquals(19000, row.getInt(4));
    Object[][] bad = {{DataTypes.IntegerType, longs(1L << 31), "does not fit column x of type int"},
        {DataTypes.ShortType, longs(40000), "does not fit column x of type smallint"},
        {DataTypes.ByteType, longs(128), "does not fit column x of type tinyint"},
        {DataTypes.BooleanType, longs(2), "holds int64 2 but column x is boolean"},
        {DataTypes.IntegerType, floats(2.5f), "is a float_list but column x is int"}};
    for (Object[] c : bad) {
      try {
        FeatureConverter.forType("x", (DataType) c[0], PLAIN).write((Feature) c[1], row, 0);
        fail("wrote " + c[1] + " into " + c[0]);
      } catch (IOException e) {
        assertTrue(e.getMessage(), e.getMessage().contains((String) c[2]));
      }
    }
  }

  /** A packed float_list decodes in one pass, growing the reused array when needed. */
  @Test
  public void packedFloatsDecodeInOnePass() {
    Feature f = new Feature().clear(Feature.FLOAT);
    f.addFloat(9f);
    java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate(4 * 10).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < 10; i++) {
      buf.putFloat(i == 3 ? Float.NaN : i * -1.5f);
    }
    f.addFloats(buf.array(), 0, 10);
    assertEquals(11, f.count);
    assertEquals(9f, f.floats[0], 0f);
    assertEquals(-13.5f, f.floats[10], 0f);
    assertTrue(Float.isNaN(f.floats[4]));
  }
}
