package tfhadoop.cluster;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.ShutdownHookManager;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.util.resource.ResourceUtils;

/**
 * A real single-host Hadoop cluster in one JVM: the NameNode and DataNode of MiniDFSCluster and the
 * ResourceManager (CapacityScheduler, preemption monitor on) and NodeManagers of MiniYARNCluster.
 * One JVM starts in a fraction of the time and memory of five daemon JVMs on a 2-core machine,
 * and the daemons are Hadoop's own classes. It writes a client configuration directory with the
 * ports it got, then a ready file, and runs until SIGTERM.
 */
public final class EmbeddedCluster {
  private final Options opts;
  private MiniDFSCluster dfs;
  private MiniYARNCluster yarn;
  private SecureSetup secure;

  private EmbeddedCluster(Options opts) {
    this.opts = opts;
  }

  /** Command-line options, parsed once. */
  static final class Options {
    File stateDir;
    File confDir;
    int nodeManagers = 2;
    int gpusPerNode = 2;
    int nmMemoryMb = 8192;
    int nmVcores = 8;
    int namenodePort = 0;
    String clientClasspath = "";
    String host = "localhost";
    boolean secure = false;
    /** HDFS permission checks without Kerberos (the secure cluster always has them). */
    boolean permissions = false;
    String user = System.getProperty("user.name");
    int tokenRenewSeconds = 120;
    long nmExpiryMs = 15_000;
    /** DataNodes, and the replication of every file: 2 lets a file's close succeed on its first
     *  NameNode call (closeCommittedAllowed; HDFS allows it only above the minimum replication, 1). */
    int dataNodes = 2;
    /** dfs.namenode.file.close.num-committed-allowed: 1 closes a file before the DataNodes have
     *  reported its last block (see docs/tfhdfs.md); 0 is Hadoop's default. */
    int closeCommittedAllowed = 1;

    static Options parse(String[] args) {
      Options o = new Options();
      for (int i = 0; i < args.length; i += 2) {
        if (i + 1 >= args.length) throw new IllegalArgumentException("missing value for " + args[i]);
        String v = args[i + 1];
        switch (args[i]) {
          case "--state-dir": o.stateDir = new File(v).getAbsoluteFile(); break;
          case "--conf-dir": o.confDir = new File(v).getAbsoluteFile(); break;
          case "--node-managers": o.nodeManagers = Integer.parseInt(v); break;
          case "--gpus-per-node": o.gpusPerNode = Integer.parseInt(v); break;
          case "--nm-memory-mb": o.nmMemoryMb = Integer.parseInt(v); break;
          case "--nm-vcores": o.nmVcores = Integer.parseInt(v); break;
          case "--client-classpath": o.clientClasspath = v; break;
          case "--namenode-port": o.namenodePort = Integer.parseInt(v); break;
          case "--host": o.host = v; break;
          case "--secure": o.secure = Boolean.parseBoolean(v); break;
          case "--permissions": o.permissions = Boolean.parseBoolean(v); break;
          case "--user": o.user = v; break;
          case "--token-renew-seconds": o.tokenRenewSeconds = Integer.parseInt(v); break;
          case "--nm-expiry-ms": o.nmExpiryMs = Long.parseLong(v); break;
          case "--close-committed-allowed": o.closeCommittedAllowed = Integer.parseInt(v); break;
          case "--datanodes": o.dataNodes = Integer.parseInt(v); break;
          default: throw new IllegalArgumentException("unknown option " + args[i]);
        }
      }
      if (o.stateDir == null || o.confDir == null) {
        throw new IllegalArgumentException("--state-dir and --conf-dir are required");
      }
      return o;
    }
  }

  public static void main(String[] args) throws Exception {
    Options opts = Options.parse(args);
    EmbeddedCluster cluster = new EmbeddedCluster(opts);
    // Through Hadoop's hook manager, ahead of FileSystem's own hook, so daemons stop in order.
    ShutdownHookManager.get().addShutdownHook(cluster::stop, 100);
    long t0 = System.nanoTime();
    try {
      cluster.start();
    } catch (Throwable t) {
      System.err.println("tfhadoop embedded cluster failed to start: " + t);
      t.printStackTrace();
      System.exit(1);
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    cluster.writeReadyFile(secs);
    cluster.watchControlRequests();
    System.out.printf("tfhadoop embedded cluster ready in %.1f s%n", secs);
    System.out.flush();
    Thread.currentThread().join(); // until SIGTERM runs the shutdown hook
  }

  private void start() throws Exception {
    File hdfsDir = new File(opts.stateDir, "hdfs");
    boolean format = !hasNameNodeStorage(hdfsDir);
    Configuration conf = baseConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, hdfsDir.getAbsolutePath());
    if (opts.secure) {
      secure = SecureSetup.start(opts.stateDir, opts.user, opts.host);
      secure.configure(conf, opts.tokenRenewSeconds);
      SecureSetup.addDefaultResource(opts.stateDir, conf);
      UserGroupInformation.setConfiguration(conf);
      System.out.println("KDC up, realm " + secure.realm);
    }
    dfs = new MiniDFSCluster.Builder(conf)
        .numDataNodes(opts.dataNodes)
        .nameNodePort(opts.namenodePort)
        .format(format)
        .checkDataNodeHostConfig(true)
        .build();
    dfs.waitActive();
    String defaultFs = dfs.getFileSystem().getUri().toString();
    conf.set("fs.defaultFS", defaultFs);
    System.out.println("HDFS up at " + defaultFs + (format ? " (formatted)" : " (existing data)"));
    if (opts.secure) {
      prepareSecureHdfs(dfs.getFileSystem());
    }

    yarnConfiguration(conf);
    ResourceUtils.resetResourceTypes(conf);
    ResourceUtils.resetNodeResources();
    // With the application history server: it keeps finished containers' exit status and
    // diagnostics (-102 for a preempted one), which no YARN client API returns once they are gone.
    yarn = new MiniYARNCluster("tfhadoop", 1, opts.nodeManagers, 1, 1, true);
    try (ServerSocket probeBlocker = holdPort(9188)) {
      yarn.init(conf);
    }
    yarn.start();
    if (!yarn.waitForNodeManagersToConnect(60_000)) {
      throw new IllegalStateException("NodeManagers did not register with the ResourceManager in 60 s");
    }
    writeClientConfiguration(yarn.getConfig(), defaultFs);
  }

  /**
   * Requests from the Python side (tests and benchmarks that take HDFS away for a while): a file
   * {@code control/<request>} appears, the answer goes to {@code control/<request>.done} ("ok" or
   * the error). {@code namenode-stop} stops the NameNode (clients get connection refused);
   * {@code namenode-start} starts it again on the same ports and storage and answers once it has
   * left safe mode, so the cluster is as healthy as before.
   */
  private void watchControlRequests() {
    File dir = new File(opts.stateDir, "control");
    dir.mkdirs();
    Thread t = new Thread(() -> {
      while (true) {
        for (String request : new String[] {"namenode-stop", "namenode-start"}) {
          File file = new File(dir, request);
          if (file.exists() && file.delete()) {
            answer(dir, request, runControlRequest(request));
          }
        }
        try {
          Thread.sleep(200);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "tfhadoop-control");
    t.setDaemon(true);
    t.start();
  }

  private synchronized String runControlRequest(String request) {
    try {
      if (request.equals("namenode-stop")) {
        dfs.shutdownNameNode(0);
        System.out.println("NameNode stopped (control request)");
      } else {
        dfs.restartNameNode(0, true);
        long deadline = System.currentTimeMillis() + 120_000;
        while (dfs.getNameNode(0).isInSafeMode()) {
          if (System.currentTimeMillis() > deadline) {
            return "the restarted NameNode is still in safe mode after 120 s";
          }
          Thread.sleep(200);
        }
        System.out.println("NameNode restarted (control request), out of safe mode");
      }
      return "ok";
    } catch (Throwable e) {
      e.printStackTrace();
      return request + " failed: " + e;
    }
  }

  private static void answer(File dir, String request, String text) {
    try {
      File tmp = new File(dir, request + ".done.tmp");
      Files.write(tmp.toPath(), text.getBytes(StandardCharsets.UTF_8));
      Files.move(tmp.toPath(), new File(dir, request + ".done").toPath(), StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      System.err.println("answering " + request + ": " + e);
    }
  }

  /**
   * With permissions on: home dirs owned by the two users and private to them (jobs stage their
   * files there), and the world-writable sticky dirs YARN, Hive and clients expect, made by the
   * superuser (the service principal the daemons logged in as).
   */
  private void prepareSecureHdfs(FileSystem fs) throws IOException {
    // /user/hive/warehouse: the shared Hive warehouse (Spark's embedded metastore puts managed
    // tables there), world-writable and sticky as on a real cluster.
    for (String dir : new String[] {"/tmp", "/tmp/logs", "/user", "/user/hive/warehouse"}) {
      Path p = new Path(dir);
      fs.mkdirs(p);
      fs.setPermission(p, dir.equals("/user") ? new FsPermission((short) 0755) : new FsPermission((short) 01777));
    }
    for (String user : new String[] {opts.user, SecureSetup.OTHER_USER}) {
      Path home = new Path("/user/" + user);
      fs.mkdirs(home);
      fs.setOwner(home, user, user);
      fs.setPermission(home, new FsPermission((short) 0700));
    }
  }

  /** MiniDFSCluster keeps NameNode storage in name-N-M dirs; any formatted one means "reuse". */
  private static boolean hasNameNodeStorage(File hdfsDir) {
    File[] names = hdfsDir.listFiles((dir, n) -> n.startsWith("name"));
    if (names == null) return false;
    for (File f : names) {
      if (new File(f, "current/VERSION").exists()) return true;
    }
    return false;
  }

  private Configuration baseConfiguration() {
    YarnConfiguration conf = new YarnConfiguration();
    conf.set("hadoop.tmp.dir", new File(opts.stateDir, "tmp").getAbsolutePath());
    conf.setBoolean("dfs.permissions.enabled", opts.secure || opts.permissions);
    conf.setBoolean("dfs.webhdfs.enabled", true);
    conf.setInt("dfs.replication", opts.dataNodes);
    conf.setInt("dfs.namenode.file.close.num-committed-allowed", opts.closeCommittedAllowed);
    // The NameNode's deleted-block scrubber sleeps this long between looks (10 ms by default:
    // its thread was the idle cluster's second busiest). Deletions land within 0.5 s anyway.
    conf.setLong("dfs.namenode.block.deletion.unlock.interval.ms", 500);
    conf.set("dfs.namenode.rpc-address", opts.host + ":0");
    conf.set("dfs.namenode.http-address", opts.host + ":0");
    conf.set("hadoop.proxyuser." + System.getProperty("user.name") + ".hosts", "*");
    conf.set("hadoop.proxyuser." + System.getProperty("user.name") + ".groups", "*");
    return conf;
  }

  private void yarnConfiguration(Configuration conf) {
    String cs = "yarn.scheduler.capacity.";
    // Resource types: yarn.io/gpu counted by the scheduler, no GPU plugin (counts only).
    conf.set("yarn.resource-types", "yarn.io/gpu");
    conf.set("yarn.resource-types.yarn.io/gpu.maximum-allocation", Integer.toString(opts.gpusPerNode));
    conf.setInt("yarn.minicluster.yarn.nodemanager.resource.memory-mb", opts.nmMemoryMb);
    nodeManagerSettings(conf, opts.nmMemoryMb, opts.nmVcores, opts.gpusPerNode);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, opts.nmMemoryMb);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, opts.nmVcores);
    conf.set(YarnConfiguration.RM_SCHEDULER, "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler");
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, false);
    conf.setInt(YarnConfiguration.RM_AM_MAX_ATTEMPTS, 2);
    // A NodeManager that stops heartbeating is LOST after this long (YARN's default is 10 min):
    // its containers end with exit status -100 soon enough for a test of a lost node.
    conf.setLong(YarnConfiguration.RM_NM_EXPIRY_INTERVAL_MS, opts.nmExpiryMs);
    conf.setBoolean(YarnConfiguration.TIMELINE_SERVICE_ENABLED, true);
    conf.setBoolean(YarnConfiguration.SYSTEM_METRICS_PUBLISHER_ENABLED, true);
    conf.set(YarnConfiguration.TIMELINE_SERVICE_WEBAPP_ADDRESS, opts.host + ":0");
    conf.set(YarnConfiguration.TIMELINE_SERVICE_ADDRESS, opts.host + ":0");
    // Container logs end up on HDFS so they are retrievable after the application ends.
    conf.setBoolean(YarnConfiguration.LOG_AGGREGATION_ENABLED, true);
    // Containers run with the client classpath (what `yarn classpath` prints) and our conf dir.
    conf.set(YarnConfiguration.YARN_APPLICATION_CLASSPATH,
        opts.confDir.getAbsolutePath() + "," + opts.clientClasspath.replace(File.pathSeparatorChar, ','));

    // CapacityScheduler: queues default / train / urgent, DominantResourceCalculator (counts GPUs).
    conf.set(cs + "resource-calculator", "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator");
    conf.set(cs + "root.queues", "default,train,urgent");
    conf.set(cs + "root.default.capacity", "10");
    conf.set(cs + "root.train.capacity", "50");
    conf.set(cs + "root.urgent.capacity", "40");
    for (String q : new String[] {"default", "train", "urgent"}) {
      conf.set(cs + "root." + q + ".maximum-capacity", "100");
      conf.set(cs + "root." + q + ".user-limit-factor", "10");
      conf.set(cs + "root." + q + ".state", "RUNNING");
      conf.set(cs + "root." + q + ".acl_submit_applications", "*");
      conf.set(cs + "root." + q + ".maximum-am-resource-percent", "0.5");
    }
    conf.set(cs + "maximum-am-resource-percent", "0.5");
    conf.setInt(cs + "node-locality-delay", -1);
    // The asynchronous scheduler's thread wakes every 5 ms by default: ~2 % of a core while the
    // cluster idles, all session long. 50 ms is still well inside a NodeManager's 1 s heartbeat.
    conf.setLong(cs + "schedule-asynchronously.scheduling-interval-ms", 50);
    // Preemption monitor with short timings, so a preemption lands within seconds.
    conf.setBoolean(YarnConfiguration.RM_SCHEDULER_ENABLE_MONITORS, true);
    conf.set(YarnConfiguration.RM_SCHEDULER_MONITOR_POLICIES,
        "org.apache.hadoop.yarn.server.resourcemanager.monitor.capacity.ProportionalCapacityPreemptionPolicy");
    String p = "yarn.resourcemanager.monitor.capacity.preemption.";
    conf.setLong(p + "monitoring_interval", 1000);
    // A selected container is announced to its application master (PreemptionMessage) and killed
    // this long after. 10 s (YARN's default: 15 s) leaves the warning time to act: Skein's AM sees it
    // at its next heartbeat (every 5 s when it has no request pending, else 1 s), the job master within
    // its next 1 s round, and a worker's closures in flight finish before the kill (issue 12, row 6).
    conf.setLong(p + "max_wait_before_kill", 10000);
    conf.setFloat(p + "total_preemption_per_round", 1.0f);
    conf.setFloat(p + "max_ignored_over_capacity", 0.0f);
    conf.setFloat(p + "natural_termination_factor", 1.0f);
  }

  /**
   * What every NodeManager of an embedded cluster is given, the ones inside this JVM and the extra
   * ones a test starts in their own JVM ({@link ExtraNodeManager}): its resources (GPUs counted,
   * not isolated), no memory or disk checks, container logs aggregated to HDFS.
   */
  static void nodeManagerSettings(Configuration conf, int memoryMb, int vcores, int gpus) {
    conf.set("yarn.nodemanager.resource-type.yarn.io/gpu", Integer.toString(gpus));
    conf.setInt(YarnConfiguration.NM_PMEM_MB, memoryMb);
    conf.setInt(YarnConfiguration.NM_VCORES, vcores);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    conf.setFloat("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", 99.9f);
    conf.setInt("yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb", 0);
    conf.setInt("yarn.nodemanager.delete.debug-delay-sec", 300);
    conf.set("yarn.nodemanager.env-whitelist",
        "JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,CLASSPATH_PREPEND_DISTCACHE,"
        + "HADOOP_YARN_HOME,HADOOP_MAPRED_HOME,PATH,LANG,TZ");
    conf.set(YarnConfiguration.NM_REMOTE_APP_LOG_DIR, "/tmp/logs");
    conf.setLong("yarn.nodemanager.log-aggregation.roll-monitoring-interval-seconds", -1);
  }

  /** The files a client needs: core-site, hdfs-site, yarn-site, resource-types, capacity-scheduler. */
  private void writeClientConfiguration(Configuration live, String defaultFs) throws IOException {
    opts.confDir.mkdirs();
    Map<String, String> core = new LinkedHashMap<>();
    core.put("fs.defaultFS", defaultFs);
    core.put("hadoop.proxyuser." + System.getProperty("user.name") + ".hosts", "*");
    core.put("hadoop.proxyuser." + System.getProperty("user.name") + ".groups", "*");
    if (secure != null) {
      core.put("hadoop.security.authentication", "kerberos");
      core.put("hadoop.security.authorization", "true");
      core.put("hadoop.security.token.service.use_ip", "true");
    }
    writeXml("core-site.xml", core);

    Configuration dconf = dfs.getConfiguration(0);
    Map<String, String> hdfs = new LinkedHashMap<>();
    hdfs.put("dfs.namenode.rpc-address", dconf.get("dfs.namenode.rpc-address"));
    hdfs.put("dfs.namenode.http-address", dconf.get("dfs.namenode.http-address"));
    hdfs.put("dfs.replication", "1");
    hdfs.put("dfs.permissions.enabled", Boolean.toString(secure != null || opts.permissions));
    hdfs.put("dfs.webhdfs.enabled", "true");
    if (secure != null) {
      for (String k : new String[] {"dfs.namenode.kerberos.principal", "dfs.datanode.kerberos.principal",
          "dfs.web.authentication.kerberos.principal", "dfs.block.access.token.enable",
          "dfs.data.transfer.protection"}) {
        hdfs.put(k, dconf.get(k));
      }
    }
    writeXml("hdfs-site.xml", hdfs);

    Map<String, String> yarnSite = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : live) {
      String k = e.getKey();
      if (k.startsWith("yarn.") && !k.startsWith("yarn.scheduler.capacity.")
          && !k.startsWith("yarn.nodemanager.") && !k.startsWith("yarn.minicluster.")) {
        yarnSite.put(k, live.get(k));
      }
    }
    yarnSite.put("yarn.nodemanager.remote-app-log-dir", live.get(YarnConfiguration.NM_REMOTE_APP_LOG_DIR));
    writeXml("yarn-site.xml", new java.util.TreeMap<>(yarnSite));

    Map<String, String> types = new LinkedHashMap<>();
    types.put("yarn.resource-types", "yarn.io/gpu");
    writeXml("resource-types.xml", types);

    Map<String, String> capacity = new java.util.TreeMap<>();
    for (Map.Entry<String, String> e : live) {
      if (e.getKey().startsWith("yarn.scheduler.capacity.")) capacity.put(e.getKey(), e.getValue());
    }
    writeXml("capacity-scheduler.xml", capacity);
  }

  private void writeXml(String name, Map<String, String> props) throws IOException {
    StringBuilder sb = new StringBuilder("<?xml version=\"1.0\"?>\n<!-- written by tfhadoop cluster up -->\n<configuration>\n");
    for (Map.Entry<String, String> e : props.entrySet()) {
      if (e.getValue() == null) continue;
      sb.append("  <property><name>").append(escape(e.getKey())).append("</name><value>")
          .append(escape(e.getValue())).append("</value></property>\n");
    }
    sb.append("</configuration>\n");
    atomicWrite(new File(opts.confDir, name), sb.toString());
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }

  private void writeReadyFile(double seconds) throws IOException {
    Configuration c = yarn.getConfig();
    Configuration d = dfs.getConfiguration(0);
    String json = "{\n"
        + "  \"pid\": " + ProcessHandle.current().pid() + ",\n"
        + "  \"start_seconds\": " + String.format(java.util.Locale.ROOT, "%.2f", seconds) + ",\n"
        + "  \"fs_default\": \"" + dfs.getFileSystem().getUri() + "\",\n"
        + "  \"namenode_rpc\": \"" + d.get("dfs.namenode.rpc-address") + "\",\n"
        + "  \"namenode_http\": \"" + d.get("dfs.namenode.http-address") + "\",\n"
        + "  \"rm_address\": \"" + c.get(YarnConfiguration.RM_ADDRESS) + "\",\n"
        + "  \"rm_webapp\": \"" + c.get(YarnConfiguration.RM_WEBAPP_ADDRESS) + "\",\n"
        + "  \"node_managers\": " + opts.nodeManagers + ",\n"
        + "  \"nm_expiry_ms\": " + opts.nmExpiryMs + ",\n"
        + (secure == null ? "" : secureJson())
        + "  \"gpus_per_node\": " + opts.gpusPerNode + "\n"
        + "}\n";
    atomicWrite(new File(opts.stateDir, "cluster.json"), json);
  }

  private String secureJson() {
    String other = SecureSetup.OTHER_USER;
    return "  \"secure\": true,\n"
        + "  \"realm\": \"" + secure.realm + "\",\n"
        + "  \"service_principal\": \"" + secure.service + "\",\n"
        + "  \"krb5_conf\": \"" + new File(opts.stateDir, "krb5.conf") + "\",\n"
        + "  \"principal\": \"" + secure.principal(opts.user) + "\",\n"
        + "  \"keytab\": \"" + secure.keytab(opts.user) + "\",\n"
        + "  \"other_principal\": \"" + secure.principal(other) + "\",\n"
        + "  \"other_keytab\": \"" + secure.keytab(other) + "\",\n"
        + "  \"token_renew_seconds\": " + opts.tokenRenewSeconds + ",\n";
  }

  private static void atomicWrite(File target, String content) throws IOException {
    File tmp = new File(target.getParentFile(), "." + target.getName() + ".tmp");
    try (OutputStream out = new FileOutputStream(tmp)) {
      out.write(content.getBytes(StandardCharsets.UTF_8));
    }
    Files.move(tmp.toPath(), target.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private synchronized void stop() {
    new File(opts.stateDir, "cluster.json").delete();
    if (yarn != null) {
      try { yarn.stop(); } catch (Exception e) { System.err.println("stopping YARN: " + e); }
      yarn = null;
    }
    if (dfs != null) {
      try { dfs.shutdown(); } catch (Exception e) { System.err.println("stopping HDFS: " + e); }
      dfs = null;
    }
    if (secure != null) {
      try { secure.stop(); } catch (Exception e) { System.err.println("stopping the KDC: " + e); }
      secure = null;
    }
    System.out.println("tfhadoop embedded cluster stopped");
  }

  /**
   * MiniYARNCluster gives the history server's web app the first port from 9188 that its probe
   * (a wildcard bind) can take, and binds it later on 127.0.0.1. A wildcard bind succeeds while
   * another cluster listens on 127.0.0.1:9188, so a second cluster on the host failed to start.
   * Holding 9188 during init makes the probe move on to a random free port, every time.
   */
  private static ServerSocket holdPort(int port) {
    try {
      return new ServerSocket(port);
    } catch (IOException e) {
      return null; // taken by a wildcard listener already: the probe will move on by itself
    }
  }
}
