package tfhadoop.tfrecord;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.fs.Path;
import org.junit.Test;

/** Byte-level interop with tensorflow/ecosystem's tensorflow-hadoop 1.15.0 framing classes. */
public class PeerInteropTest {
  @Test
  public void weReadWhatTensorflowHadoopWrites() throws Exception {
    List<byte[]> records = TestFiles.trickyRecords(new Random(31), 200, 500);
    ByteArrayOutputStream bo = new ByteArrayOutputStream();
    org.tensorflow.hadoop.util.TFRecordWriter peer = new org.tensorflow.hadoop.util.TFRecordWriter(new DataOutputStream(bo));
    for (byte[] r : records) {
      peer.write(r);
    }
    byte[] bytes = bo.toByteArray();
    assertArrayEquals("identical framing", TestFiles.frame(records), bytes);
    File dir = Files.createTempDirectory("peer").toFile();
    Path p = TestFiles.write(dir, "peer.tfrecord", bytes);
    List<byte[]> got = TestFiles.readSplits(p, TestFiles.conf(), new long[] {100, 5000, 5001, bytes.length / 2},
        bytes.length, TFRecordOptions.defaults());
    assertEquals(records.size(), got.size());
    for (int i = 0; i < got.size(); i++) {
      assertArrayEquals(records.get(i), got.get(i));
    }
  }

  @Test
  public void tensorflowHadoopReadsWhatWeWrite() throws Exception {
    List<byte[]> records = TestFiles.trickyRecords(new Random(32), 200, 500);
    org.tensorflow.hadoop.util.TFRecordReader peer =
        new org.tensorflow.hadoop.util.TFRecordReader(new ByteArrayInputStream(TestFiles.frame(records)), true);
    List<byte[]> got = new ArrayList<>();
    for (byte[] r = peer.read(); r != null; r = peer.read()) {
      got.add(r);
    }
    assertEquals(records.size(), got.size());
    for (int i = 0; i < got.size(); i++) {
      assertArrayEquals(records.get(i), got.get(i));
    }
    assertNull(peer.read());
  }
}
