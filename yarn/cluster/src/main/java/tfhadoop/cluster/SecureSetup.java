package tfhadoop.cluster;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Properties;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.kerby.kerberos.kerb.crypto.EncryptionHandler;
import org.apache.kerby.kerberos.kerb.keytab.Keytab;
import org.apache.kerby.kerberos.kerb.keytab.KeytabEntry;
import org.apache.kerby.kerberos.kerb.type.base.PrincipalName;

/**
 * Kerberos for the embedded cluster (`tfhadoop cluster up --secure`): a KDC (Hadoop's MiniKdc,
 * Apache Kerby inside) started fresh at each start-up, one service principal for every daemon
 * (the daemons share one JVM, and Hadoop's login user is per JVM, as in Hadoop's own secure
 * mini-cluster tests), SPNEGO's HTTP principal, and keytabs for a test user, a second user, and
 * a stale keytab of the test user (its key was changed after export) for the negative tests.
 *
 * <p>HDFS runs with block access tokens and SASL data transfer protection on unprivileged ports
 * (ignore.secure.ports.for.testing stands in for HTTPS or root-owned ports); YARN's RPC is Kerberos;
 * delegation tokens renew every {@code renewSeconds} so that renewal happens within a test.
 */
final class SecureSetup {
  static final String REALM_ORG = "TFHADOOP";
  static final String REALM_DOMAIN = "TEST";
  static final String OTHER_USER = "intruder";

  private final MiniKdc kdc;
  private final File keytabDir;
  private final String host;
  final String realm;
  final String service;
  final String http;
  final File serviceKeytab;

  private SecureSetup(MiniKdc kdc, File keytabDir, String host) {
    this.kdc = kdc;
    this.keytabDir = keytabDir;
    this.host = host;
    this.realm = kdc.getRealm();
    this.service = "hadoop/" + host + "@" + realm;
    this.http = "HTTP/" + host + "@" + realm;
    this.serviceKeytab = new File(keytabDir, "hadoop.keytab");
  }

  /** Start the KDC under stateDir/kdc and write every keytab and the client krb5.conf. */
  static SecureSetup start(File stateDir, String user, String host) throws Exception {
    File work = new File(stateDir, "kdc");
    deleteTree(work);
    work.mkdirs();
    Properties kconf = MiniKdc.createConf();
    kconf.setProperty(MiniKdc.ORG_NAME, REALM_ORG);
    kconf.setProperty(MiniKdc.ORG_DOMAIN, REALM_DOMAIN);
    kconf.setProperty(MiniKdc.KDC_BIND_ADDRESS, host);
    kconf.setProperty(MiniKdc.KDC_PORT, "0");
    MiniKdc kdc = new MiniKdc(kconf, work);
    kdc.start();
    File keytabs = new File(stateDir, "keytabs");
    deleteTree(keytabs);
    keytabs.mkdirs();
    SecureSetup s = new SecureSetup(kdc, keytabs, host);
    kdc.createPrincipal(s.serviceKeytab, "hadoop/" + host, "HTTP/" + host);
    kdc.createPrincipal(new File(keytabs, user + ".keytab"), user);
    writeStaleKeytab(new File(keytabs, user + ".keytab"), new File(keytabs, user + ".stale.keytab"));
    kdc.createPrincipal(new File(keytabs, OTHER_USER + ".keytab"), OTHER_USER);
    for (File f : keytabs.listFiles()) {
      f.setReadable(false, false);
      f.setReadable(true, true);
    }
    s.writeKrb5Conf(new File(stateDir, "krb5.conf"));
    return s;
  }

  /** The same principal and key version with other keys: what a keytab looks like after the
   * principal's password was changed elsewhere (kinit fails with a pre-authentication error). */
  private static void writeStaleKeytab(File good, File stale) throws Exception {
    Keytab in = Keytab.loadKeytab(good);
    Keytab out = new Keytab();
    for (PrincipalName p : in.getPrincipals()) {
      for (KeytabEntry e : in.getKeytabEntries(p)) {
        out.addEntry(new KeytabEntry(p, e.getTimestamp(), e.getKvno(),
            EncryptionHandler.random2Key(e.getKey().getKeyType())));
      }
    }
    out.store(stale);
  }

  /**
   * A krb5.conf for MIT clients (kinit, hdfs-native's libgssapi) and the JVM: TCP only (MiniKdc
   * listens on TCP), and no host name canonicalisation, so "hadoop/localhost" stays as written.
   */
  private void writeKrb5Conf(File target) throws IOException {
    String text = "# written by tfhadoop cluster up --secure\n"
        + "[libdefaults]\n"
        + "  default_realm = " + realm + "\n"
        + "  udp_preference_limit = 1\n"
        + "  dns_lookup_kdc = false\n"
        + "  dns_lookup_realm = false\n"
        + "  dns_canonicalize_hostname = false\n"
        + "  rdns = false\n"
        + "  ignore_acceptor_hostname = true\n"
        + "  forwardable = true\n"
        + "  renew_lifetime = 7d\n"
        + "[realms]\n"
        + "  " + realm + " = {\n"
        + "    kdc = " + kdc.getHost() + ":" + kdc.getPort() + "\n"
        + "  }\n"
        + "[domain_realm]\n"
        + "  " + host + " = " + realm + "\n";
    Files.write(target.toPath(), text.getBytes(StandardCharsets.UTF_8));
  }

  /** The daemon side of the security settings (principals, keytabs, tokens, SASL). */
  void configure(Configuration conf, int renewSeconds) {
    String keytab = serviceKeytab.getAbsolutePath();
    conf.set("hadoop.security.authentication", "kerberos");
    conf.setBoolean("hadoop.security.authorization", true);
    conf.set("hadoop.proxyuser.hadoop.hosts", "*");
    conf.set("hadoop.proxyuser.hadoop.groups", "*");
    conf.set("hadoop.proxyuser.HTTP.hosts", "*");
    conf.set("hadoop.proxyuser.HTTP.groups", "*");
    // HDFS
    conf.setBoolean("dfs.permissions.enabled", true);
    conf.set("dfs.namenode.kerberos.principal", service);
    conf.set("dfs.namenode.keytab.file", keytab);
    conf.set("dfs.datanode.kerberos.principal", service);
    conf.set("dfs.datanode.keytab.file", keytab);
    conf.set("dfs.web.authentication.kerberos.principal", http);
    conf.set("dfs.web.authentication.kerberos.keytab", keytab);
    conf.setBoolean("dfs.block.access.token.enable", true);
    conf.set("dfs.data.transfer.protection", "authentication");
    conf.setBoolean("ignore.secure.ports.for.testing", true);
    conf.setLong("dfs.namenode.delegation.token.renew-interval", renewSeconds * 1000L);
    conf.setLong("dfs.block.access.token.lifetime", 10);
    conf.setInt("ipc.client.connect.max.retries.on.sasl", 3);
    // YARN: one principal for the RM, the NMs and the timeline server (the renewer of HDFS tokens).
    conf.set("yarn.resourcemanager.principal", service);
    conf.set("yarn.resourcemanager.keytab", keytab);
    conf.set("yarn.nodemanager.principal", service);
    conf.set("yarn.nodemanager.keytab", keytab);
    conf.set("yarn.timeline-service.principal", service);
    conf.set("yarn.timeline-service.keytab", keytab);
    conf.set("yarn.timeline-service.http-authentication.kerberos.principal", http);
    conf.set("yarn.timeline-service.http-authentication.kerberos.keytab", keytab);
    conf.setBoolean("yarn.timeline-service.client.best-effort", true);
    conf.set("yarn.resourcemanager.webapp.spnego-principal", http);
    conf.set("yarn.resourcemanager.webapp.spnego-keytab-file", keytab);
    conf.set("yarn.nodemanager.webapp.spnego-principal", http);
    conf.set("yarn.nodemanager.webapp.spnego-keytab-file", keytab);
    conf.setLong("yarn.resourcemanager.delegation.token.renew-interval", renewSeconds * 1000L);
    // Tokens named by the NameNode's IP, Hadoop's default and what real non-HA clusters hand out:
    // the TF plugin and the Python HDFS client dial the IP a token names (tokens.rs).
    conf.setBoolean("hadoop.security.token.service.use_ip", true);
    // Containers (Skein's AM is a JVM) find the realm in this krb5.conf, not in /etc/krb5.conf: a
    // JVM with hadoop.security.authentication=kerberos fails at UGI start-up without one.
    String krb5 = new File(keytabDir.getParentFile(), "krb5.conf").getAbsolutePath();
    conf.set("yarn.nodemanager.admin-env", "MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX,KRB5_CONFIG=" + krb5
        + ",JAVA_TOOL_OPTIONS=-Djava.security.krb5.conf=" + krb5);
  }

  /**
   * The client half of the security settings as a default resource of every Configuration in this
   * JVM: the NodeManagers' resource localizer builds its own `new Configuration()` to download a
   * container's files with the application's tokens, and without dfs.data.transfer.protection
   * there it skips the SASL handshake the DataNode requires. The file goes into jvm-conf/ of the
   * state dir, which `tfhadoop cluster up` puts on this JVM's classpath.
   */
  static void addDefaultResource(File stateDir, Configuration conf) throws IOException {
    String[] keys = {"hadoop.security.authentication", "hadoop.security.authorization",
        "dfs.data.transfer.protection", "dfs.block.access.token.enable", "dfs.namenode.kerberos.principal",
        "dfs.datanode.kerberos.principal", "yarn.resourcemanager.principal", "yarn.nodemanager.principal",
        "hadoop.security.token.service.use_ip"};
    StringBuilder sb = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (String k : keys) {
      sb.append("  <property><name>").append(k).append("</name><value>").append(conf.get(k))
          .append("</value></property>\n");
    }
    sb.append("</configuration>\n");
    File dir = new File(stateDir, "jvm-conf");
    dir.mkdirs();
    Files.write(new File(dir, RESOURCE).toPath(), sb.toString().getBytes(StandardCharsets.UTF_8));
    Configuration.addDefaultResource(RESOURCE);
  }

  static final String RESOURCE = "tfhadoop-secure-site.xml";

  String principal(String user) {
    return user + "@" + realm;
  }

  File keytab(String user) {
    return new File(keytabDir, user + ".keytab");
  }

  void stop() {
    kdc.stop();
  }

  private static void deleteTree(File f) {
    File[] children = f.listFiles();
    if (children != null) {
      for (File c : children) deleteTree(c);
    }
    f.delete();
  }
}
