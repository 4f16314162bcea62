package tfhadoop.cluster;

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.util.resource.ResourceUtils;
import org.apache.hadoop.yarn.webapp.util.WebAppUtils;

/**
 * One more NodeManager for a running embedded cluster, in its own JVM and on its own loopback
 * address (127.0.0.2, ...): YARN sees another host, so a container that replaces one of its
 * containers lands elsewhere, and killing this JVM (and its containers) is a node that is lost
 * without a word, as when a machine loses power. It registers with the cluster's ResourceManager
 * over RPC (the addresses in the cluster's client configuration), writes {@code nm.json} (node id,
 * pid) into its directory once registered, and runs until killed.
 */
public final class ExtraNodeManager {
  private ExtraNodeManager() {}

  public static void main(String[] args) throws Exception {
    File confDir = null;
    File dir = null;
    String host = null;
    int memoryMb = 4096;
    int vcores = 4;
    int gpus = 0;
    for (int i = 0; i + 1 < args.length; i += 2) {
      String v = args[i + 1];
      switch (args[i]) {
        case "--conf-dir": confDir = new File(v).getAbsoluteFile(); break;
        case "--dir": dir = new File(v).getAbsoluteFile(); break;
        case "--host": host = v; break;
        case "--memory-mb": memoryMb = Integer.parseInt(v); break;
        case "--vcores": vcores = Integer.parseInt(v); break;
        case "--gpus": gpus = Integer.parseInt(v); break;
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    if (confDir == null || dir == null || host == null) {
      throw new IllegalArgumentException("--conf-dir, --dir and --host are required");
    }
    YarnConfiguration conf = new YarnConfiguration();
    for (String name : new String[] {"core-site.xml", "hdfs-site.xml", "yarn-site.xml"}) {
      conf.addResource(new Path(new File(confDir, name).toURI()));
    }
    EmbeddedCluster.nodeManagerSettings(conf, memoryMb, vcores, gpus);
    File local = new File(dir, "local");
    File logs = new File(dir, "logs");
    local.mkdirs();
    logs.mkdirs();
    conf.set(YarnConfiguration.NM_LOCAL_DIRS, local.getAbsolutePath());
    conf.set(YarnConfiguration.NM_LOG_DIRS, logs.getAbsolutePath());
    // Bound to this address only, and named by it: the node id's host is what containers get as
    // NM_HOST, and what a role publishes as its address.
    conf.set(YarnConfiguration.NM_BIND_HOST, host);
    conf.set(YarnConfiguration.NM_ADDRESS, host + ":0");
    conf.set(YarnConfiguration.NM_LOCALIZER_ADDRESS, host + ":0");
    conf.set(YarnConfiguration.NM_COLLECTOR_SERVICE_ADDRESS, host + ":0");
    WebAppUtils.setNMWebAppHostNameAndPort(conf, host, 0);
    conf.setBoolean(YarnConfiguration.NM_RECOVERY_ENABLED, false);
    ResourceUtils.resetResourceTypes(conf);
    ResourceUtils.resetNodeResources();

    NodeManager nm = new NodeManager();
    nm.init(conf);
    nm.start(); // registers with the ResourceManager before it returns
    String nodeId = String.valueOf(nm.getNMContext().getNodeId());
    String json = "{\"node_id\": \"" + nodeId + "\", \"pid\": " + ProcessHandle.current().pid() + "}\n";
    File ready = new File(dir, "nm.json");
    File tmp = new File(dir, ".nm.json.tmp");
    try (OutputStream out = new FileOutputStream(tmp)) {
      out.write(json.getBytes(StandardCharsets.UTF_8));
    }
    Files.move(tmp.toPath(), ready.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    System.out.println("extra NodeManager " + nodeId + " registered");
    System.out.flush();
    Thread.currentThread().join();
  }
}
