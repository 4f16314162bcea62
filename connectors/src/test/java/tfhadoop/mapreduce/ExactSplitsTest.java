package tfhadoop.mapreduce;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.junit.Test;
import tfhadoop.tfrecord.RecordIndex;
import tfhadoop.tfrecord.TFRecordOptions;
import tfhadoop.tfrecord.TestFiles;

/**
 * Issue 20 through the real InputFormats (both APIs): files of nested TFRecord streams, read at
 * many split sizes with and without the writers' record-boundary index, give every record once,
 * in file order; the OutputFormats leave the index beside each part file.
 */
public class ExactSplitsTest {
  private static Configuration conf() {
    Configuration conf = new Configuration();
    conf.set("mapreduce.framework.name", "local");
    conf.set("fs.defaultFS", "file:///");
    return conf;
  }

  private static String hex(byte[] b, int off, int len) {
    StringBuilder s = new StringBuilder();
    for (int i = off; i < off + len; i++) {
      s.append(String.format("%02x", b[i]));
    }
    return s.toString();
  }

  private static List<String> hexes(List<byte[]> records) {
    List<String> out = new ArrayList<>();
    for (byte[] r : records) {
      out.add(hex(r, 0, r.length));
    }
    return out;
  }

  private static List<String> readMapreduce(Path in, Configuration base, long splitSize) throws Exception {
    Job job = Job.getInstance(base);
    FileInputFormat.addInputPath(job, in);
    FileInputFormat.setMaxInputSplitSize(job, splitSize);
    TFRecordInputFormat fmt = new TFRecordInputFormat();
    List<String> got = new ArrayList<>();
    List<InputSplit> splits = fmt.getSplits(job);
    for (InputSplit s : splits) {
      TaskAttemptContextImpl ctx = new TaskAttemptContextImpl(job.getConfiguration(), new TaskAttemptID());
      try (RecordReader<LongWritable, BytesWritable> r = fmt.createRecordReader(s, ctx)) {
        r.initialize(s, ctx);
        while (r.nextKeyValue()) {
          got.add(hex(r.getCurrentValue().getBytes(), 0, r.getCurrentValue().getLength()));
        }
      }
    }
    return got;
  }

  private static List<String> readMapred(Path in, Configuration base, int numSplits) throws Exception {
    JobConf job = new JobConf(base);
    job.setLong("mapreduce.input.fileinputformat.split.minsize", 1);
    org.apache.hadoop.mapred.FileInputFormat.addInputPath(job, in);
    tfhadoop.mapred.TFRecordInputFormat fmt = new tfhadoop.mapred.TFRecordInputFormat();
    fmt.configure(job);
    List<String> got = new ArrayList<>();
    for (org.apache.hadoop.mapred.InputSplit s : fmt.getSplits(job, numSplits)) {
      org.apache.hadoop.mapred.RecordReader<LongWritable, BytesWritable> r = fmt.getRecordReader(s, job, Reporter.NULL);
      LongWritable k = r.createKey();
      BytesWritable v = r.createValue();
      while (r.next(k, v)) {
        got.add(hex(v.getBytes(), 0, v.getLength()));
      }
      r.close();
    }
    return got;
  }

  @Test
  public void bothApisReadNestedFilesExactlyWithAndWithoutIndex() throws Exception {
    File dir = Files.createTempDirectory("mr").toFile();
    Random rnd = new Random(20);
    List<byte[]> records = TestFiles.nestedRecords(rnd, 200, 2000, 30 << 10);
    List<String> want = hexes(records);
    Path plain = TestFiles.write(dir, "plain.tfrecord", TestFiles.frame(records));
    Configuration conf = conf();
    File idxDir = new File(dir, "indexed");
    idxDir.mkdirs();
    Path indexed = new Path(new File(idxDir, "data.tfrecord").toURI());
    try (tfhadoop.tfrecord.TFRecordWriter w = tfhadoop.tfrecord.TFRecordFiles.create(indexed, conf,
        tfhadoop.tfrecord.Compression.NONE, true, 16 << 10)) {
      for (byte[] r : records) {
        w.write(r);
      }
    }
    long len = new File(plain.toUri()).length();
    for (Path p : new Path[] {plain, indexed}) {
      for (long size : new long[] {2 << 10, 16 << 10, len}) {
        assertEquals(p + " mapreduce split " + size, want, readMapreduce(p, conf, size));
      }
      for (int n : new int[] {3, 40, 200}) {
        assertEquals(p + " mapred splits " + n, want, readMapred(p, conf, n));
      }
    }
  }

  @Test
  public void outputFormatsWriteTheIndex() throws Exception {
    File dir = Files.createTempDirectory("mr").toFile();
    List<byte[]> records = TestFiles.nestedRecords(new Random(4), 300, 3000, 0);
    Path in = TestFiles.write(dir, "in.tfrecord", TestFiles.frame(records));
    Configuration conf = conf();
    conf.setLong(TFRecordOptions.INDEX_INTERVAL, 8192);
    Job job = Job.getInstance(conf, "copy");
    job.setInputFormatClass(TFRecordInputFormat.class);
    job.setOutputFormatClass(TFRecordOutputFormat.class);
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(LongWritable.class);
    job.setOutputValueClass(BytesWritable.class);
    FileInputFormat.addInputPath(job, in);
    FileInputFormat.setMaxInputSplitSize(job, 100 << 10);
    Path out = new Path(new File(dir, "out").toURI());
    FileOutputFormat.setOutputPath(job, out);
    assertTrue(job.waitForCompletion(false));
    FileSystem fs = out.getFileSystem(conf);
    List<String> got = new ArrayList<>();
    int parts = 0;
    for (FileStatus st : fs.listStatus(out)) {
      if (st.getPath().getName().startsWith("part-")) {
        parts++;
        assertTrue("index beside " + st.getPath(), fs.exists(RecordIndex.sidecar(st.getPath())));
        RecordIndex idx = RecordIndex.load(fs, st);
        assertTrue("fresh index for " + st.getPath(), idx != null && idx.dataLength == st.getLen());
        got.addAll(readMapreduce(st.getPath(), conf, 2048));
      }
    }
    assertTrue(parts > 1);
    List<String> want = hexes(records);
    Collections.sort(want);
    Collections.sort(got);
    assertEquals(want, got);
    // the sidecars are hidden from the input formats: reading the directory gives each record once
    List<String> dirRead = readMapreduce(out, conf, 4096);
    Collections.sort(dirRead);
    assertEquals(want, dirRead);
  }
}
