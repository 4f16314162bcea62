package tfhadoop.mapreduce;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

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
import org.apache.hadoop.mapred.JobClient;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RunningJob;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.junit.Test;
import tfhadoop.tfrecord.Compression;
import tfhadoop.tfrecord.Configurations;
import tfhadoop.tfrecord.TFRecordCounters;
import tfhadoop.tfrecord.TFRecordFiles;
import tfhadoop.tfrecord.TFRecordOptions;
import tfhadoop.tfrecord.TFRecordReader;
import tfhadoop.tfrecord.TestFiles;

/** Local MapReduce jobs through both APIs: split reads, compressed output, no codec leaks. */
public class HadoopJobsTest {
  private static Configuration localConf() {
    Configuration conf = new Configuration();
    conf.set("mapreduce.framework.name", "local");
    conf.set("fs.defaultFS", "file:///");
    // A cluster-wide default codec that must NOT leak into TFRecord output.
    conf.setBoolean("mapreduce.output.fileoutputformat.compress", true);
    conf.set("mapreduce.output.fileoutputformat.compress.codec", "org.apache.hadoop.io.compress.BZip2Codec");
    conf.setBoolean("mapred.output.compress", true);
    return conf;
  }

  private static List<String> readOutput(Path dir, Configuration conf, String ext) throws Exception {
    FileSystem fs = dir.getFileSystem(conf);
    List<String> got = new ArrayList<>();
    int files = 0;
    for (FileStatus st : fs.listStatus(dir)) {
      String name = st.getPath().getName();
      if (name.startsWith("part-")) {
        assertTrue(name + " should end with " + ext, name.endsWith(ext));
        files++;
        try (TFRecordReader r = TFRecordFiles.open(st.getPath(), conf, TFRecordOptions.defaults())) {
          while (r.next()) {
            got.add(hex(r.copyRecord()));
          }
        }
      }
    }
    assertTrue("no part files in " + dir, files > 0);
    Collections.sort(got);
    return got;
  }

  private static String hex(byte[] b) {
    StringBuilder s = new StringBuilder();
    for (byte x : b) {
      s.append(String.format("%02x", x));
    }
    return s.toString();
  }

  private static List<String> input(File dir, int n, Path[] out) throws Exception {
    List<byte[]> records = TestFiles.trickyRecords(new Random(21), n, 300);
    out[0] = TestFiles.write(dir, "in.tfrecord", TestFiles.frame(records));
    List<String> want = new ArrayList<>();
    for (byte[] r : records) {
      want.add(hex(r));
    }
    Collections.sort(want);
    return want;
  }

  @Test
  public void mapreduceApiSplitsAndGzip() throws Exception {
    File dir = Files.createTempDirectory("mr").toFile();
    Path[] in = new Path[1];
    List<String> want = input(dir, 400, in);
    Configuration conf = localConf();
    conf.set(TFRecordOptions.COMPRESSION, "gzip");
    Job job = Job.getInstance(conf, "tfrecord-copy");
    job.setInputFormatClass(TFRecordInputFormat.class);
    job.setOutputFormatClass(TFRecordOutputFormat.class);
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(LongWritable.class);
    job.setOutputValueClass(BytesWritable.class);
    FileInputFormat.addInputPath(job, in[0]);
    FileInputFormat.setMaxInputSplitSize(job, 4096);
    Path out = new Path(new File(dir, "out").toURI());
    FileOutputFormat.setOutputPath(job, out);
    assertTrue(new TFRecordInputFormat().getSplits(job).size() > 10);
    assertTrue("job failed", job.waitForCompletion(false));
    assertEquals(400, job.getCounters().findCounter(TFRecordCounters.RECORDS_READ).getValue());
    assertEquals(want, readOutput(out, conf, ".tfrecord.gz"));
  }

  @Test
  public void mapredApiSplitsAndZlib() throws Exception {
    File dir = Files.createTempDirectory("mr").toFile();
    Path[] in = new Path[1];
    List<String> want = input(dir, 300, in);
    JobConf job = new JobConf(localConf());
    job.set(TFRecordOptions.COMPRESSION, "zlib");
    job.setInputFormat(tfhadoop.mapred.TFRecordInputFormat.class);
    job.setOutputFormat(tfhadoop.mapred.TFRecordOutputFormat.class);
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(LongWritable.class);
    job.setOutputValueClass(BytesWritable.class);
    job.setLong("mapreduce.input.fileinputformat.split.minsize", 1);
    org.apache.hadoop.mapred.FileInputFormat.addInputPath(job, in[0]);
    Path out = new Path(new File(dir, "out").toURI());
    org.apache.hadoop.mapred.FileOutputFormat.setOutputPath(job, out);
    tfhadoop.mapred.TFRecordInputFormat fmt = new tfhadoop.mapred.TFRecordInputFormat();
    fmt.configure(job);
    assertTrue(fmt.getSplits(job, 20).length >= 10);
    job.setNumMapTasks(20);
    RunningJob rj = JobClient.runJob(job);
    assertTrue(rj.isSuccessful());
    assertEquals(300, rj.getCounters().findCounter(TFRecordCounters.RECORDS_READ).getValue());
    assertEquals(want, readOutput(out, job, ".tfrecord.deflate"));
  }

  @Test
  public void codecsTensorFlowCannotReadAreRefusedUnlessForced() {
    Configuration conf = new Configuration(false);
    conf.set(TFRecordOptions.CODEC, "org.apache.hadoop.io.compress.SnappyCodec");
    try {
      Configurations.options(conf);
      fail("snappy accepted");
    } catch (IllegalArgumentException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("cannot read"));
    }
    conf.setBoolean(TFRecordOptions.FORCE_CODEC, true);
    assertEquals(Compression.Kind.HADOOP_CODEC, Configurations.options(conf).compression.kind);
    conf.set(TFRecordOptions.CODEC, "org.apache.hadoop.io.compress.GzipCodec");
    assertEquals(Compression.Kind.GZIP, Configurations.options(conf).compression.kind);
    conf.set(TFRecordOptions.COMPRESSION, "zlib");
    try {
      Configurations.options(conf);
      fail("conflict accepted");
    } catch (IllegalArgumentException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("disagree"));
    }
    assertEquals(Compression.Kind.NONE, Configurations.options(new Configuration(false)).compression.kind);
  }

  @Test
  public void skipCorruptCountsAsHadoopCounters() throws Exception {
    File dir = Files.createTempDirectory("mr").toFile();
    List<byte[]> records = TestFiles.trickyRecords(new Random(3), 100, 100);
    byte[] b = TestFiles.frame(records);
    long off = TestFiles.offsets(records)[50];
    b[(int) off + 3] ^= 0x7f;
    Path in = TestFiles.write(dir, "bad.tfrecord", b);
    Configuration conf = localConf();
    conf.setBoolean(TFRecordOptions.SKIP_CORRUPT, true);
    Job job = Job.getInstance(conf, "skip");
    job.setInputFormatClass(TFRecordInputFormat.class);
    job.setOutputFormatClass(TFRecordOutputFormat.class);
    job.setNumReduceTasks(0);
    FileInputFormat.addInputPath(job, in);
    FileInputFormat.setMaxInputSplitSize(job, 1000);
    FileOutputFormat.setOutputPath(job, new Path(new File(dir, "out").toURI()));
    assertTrue(job.waitForCompletion(false));
    assertEquals(99, job.getCounters().findCounter(TFRecordCounters.RECORDS_READ).getValue());
    assertEquals(1, job.getCounters().findCounter(TFRecordCounters.CORRUPT_RECORDS_SKIPPED).getValue());
    assertEquals(16 + records.get(50).length, job.getCounters().findCounter(TFRecordCounters.CORRUPT_BYTES_SKIPPED).getValue());
  }
}
