package tfhadoop.amagent;

import java.io.File;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * A Java agent for Skein's application master JVM (``JAVA_TOOL_OPTIONS=-javaagent:./<this jar>=FILE``,
 * set by the job's master spec): it lets the job master see YARN's preemption warnings, which
 * Skein's ApplicationMaster receives in every AllocateResponse and ignores.
 *
 * <p>Before Skein's main runs, it names {@link WatchingProviders} as the ResourceManager failover
 * proxy providers of this JVM (``yarn.client.failover-no-ha-proxy-provider`` and
 * ``yarn.client.failover-proxy-provider``, through a default resource added after yarn-site.xml),
 * remembering the providers configured before so that ours wrap them. Every AllocateResponse's
 * PreemptionMessage is then appended to FILE (relative: the container's working directory, where
 * the Python master reads it) by {@link PreemptionLog}. The same site file shortens Skein's
 * allocator heartbeat from 5 s to 1 s (see the file), so that requests reach the ResourceManager
 * and lost containers are seen within a second. Skein's ApplicationMaster itself is not replaced
 * or changed.
 *
 * <p>Harmless elsewhere: in a JVM without Hadoop's YARN classes it only says so on stderr, and the
 * providers behave as the ones they wrap for every protocol but ApplicationMasterProtocol.
 */
public final class Agent {
  /** The site file inside this jar that names our providers. */
  static final String SITE = "tfhadoop-am-agent-site.xml";
  /** System properties: where to log, and the providers ours wrap (as configured before us). */
  static final String FILE_PROPERTY = "tfhadoop.preemption.file";
  static final String NO_HA_DELEGATE = "tfhadoop.preemption.no-ha-delegate";
  static final String HA_DELEGATE = "tfhadoop.preemption.ha-delegate";
  static final String DEFAULT_FILE = "preemption_warnings.jsonl";
  /** What Skein 0.8's ApplicationMaster reads to choose its idle heartbeat (min(5 s, value / 2)). */
  static final String AM_EXPIRY = "yarn.am.liveness-monitor.expiry-interval-ms";

  /** Skein's idle heartbeat to the ResourceManager in a JVM whose configuration is ``conf``. */
  static long skeinHeartbeatMs(Configuration conf) {
    return Math.min(5000, Math.max(0, conf.getInt(AM_EXPIRY, 600000) / 2));
  }

  private Agent() {}

  public static void premain(String args) {
    try {
      install(fileOf(args == null ? "" : args));
    } catch (Throwable t) { // never stop the application master from starting
      System.err.println("tfhadoop AM agent: not watching preemption messages: " + t);
    }
  }

  /**
   * The log file named by the agent's argument. A NodeManager that sets JAVA_TOOL_OPTIONS in its
   * admin environment (a Kerberized cluster: -Djava.security.krb5.conf=...) appends its value to
   * ours after a ':' (YARN merges variables like paths), so its first option arrives glued to our
   * argument ("FILE:-Dkey=value") instead of reaching the JVM: a -D option is set here, as the JVM
   * would have; another kind cannot be, and is named on stderr.
   */
  static String fileOf(String args) {
    int glued = args.indexOf(":-");
    if (glued < 0) {
      return args.isEmpty() ? DEFAULT_FILE : args;
    }
    String option = args.substring(glued + 1);
    int eq = option.indexOf('=');
    if (option.startsWith("-D") && eq > 2) {
      System.setProperty(option.substring(2, eq), option.substring(eq + 1));
    } else if (option.startsWith("-D")) {
      System.setProperty(option.substring(2), "");
    } else {
      System.err.println("tfhadoop AM agent: cannot apply JVM option " + option
          + " (appended to JAVA_TOOL_OPTIONS by the NodeManager)");
    }
    String file = args.substring(0, glued);
    return file.isEmpty() ? DEFAULT_FILE : file;
  }

  static void install(String file) {
    System.setProperty(FILE_PROPERTY, new File(file).getAbsolutePath());
    // Loads yarn-default.xml and yarn-site.xml (YarnConfiguration's static initialiser adds them as
    // default resources): the providers configured there are the ones ours wrap, and our site file,
    // added after them, wins over them in every Configuration of this JVM.
    YarnConfiguration conf = new YarnConfiguration();
    String noHa = conf.get(YarnConfiguration.CLIENT_FAILOVER_NO_HA_PROXY_PROVIDER,
        YarnConfiguration.DEFAULT_CLIENT_FAILOVER_NO_HA_PROXY_PROVIDER);
    String ha = conf.get(YarnConfiguration.CLIENT_FAILOVER_PROXY_PROVIDER,
        YarnConfiguration.DEFAULT_CLIENT_FAILOVER_PROXY_PROVIDER);
    if (!noHa.startsWith(WatchingProviders.class.getName())) {
      System.setProperty(NO_HA_DELEGATE, noHa);
    }
    if (!ha.startsWith(WatchingProviders.class.getName())) {
      System.setProperty(HA_DELEGATE, ha);
    }
    Configuration.addDefaultResource(SITE);
    System.err.println("tfhadoop AM agent: preemption messages are appended to "
        + System.getProperty(FILE_PROPERTY) + " (wrapping " + noHa + " and " + ha + "); heartbeat "
        + skeinHeartbeatMs(new YarnConfiguration()) + " ms");
  }
}
