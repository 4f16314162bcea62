package tfhadoop.amagent;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.util.ReflectionUtils;
import org.apache.hadoop.yarn.api.ApplicationClientProtocol;
import org.apache.hadoop.yarn.api.ApplicationMasterProtocol;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateRequest;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.protocolrecords.FinishApplicationMasterRequest;
import org.apache.hadoop.yarn.api.protocolrecords.FinishApplicationMasterResponse;
import org.apache.hadoop.yarn.api.protocolrecords.RegisterApplicationMasterRequest;
import org.apache.hadoop.yarn.api.protocolrecords.RegisterApplicationMasterResponse;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.NMToken;
import org.apache.hadoop.yarn.api.records.NodeReport;
import org.apache.hadoop.yarn.api.records.PreemptionContainer;
import org.apache.hadoop.yarn.api.records.PreemptionMessage;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.StrictPreemptionContract;
import org.apache.hadoop.yarn.client.RMFailoverProxyProvider;
import org.apache.hadoop.yarn.client.RMProxy;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.junit.Test;

/** The agent's installation as Skein's AM JVM sees it: after ``Agent.install`` every Configuration
 * names our provider, which wraps the one configured before (here a fake standing for Hadoop's
 * DefaultNoHARMFailoverProxyProvider) and records the preemption messages of allocate responses. */
public class WatchingProvidersTest {
  static final ContainerId WARNED = ContainerId.newContainerId(
      ApplicationAttemptId.newInstance(ApplicationId.newInstance(1700000000000L, 3), 1), 4);

  /** The provider configured before the agent: hands out one fake ApplicationMasterProtocol. */
  public static class FakeProvider<T> implements RMFailoverProxyProvider<T> {
    static int failovers;
    static Object lastFailedOver;
    private Class<T> protocol;
    private T proxy;

    @Override
    @SuppressWarnings("unchecked")
    public void init(Configuration conf, RMProxy<T> rmProxy, Class<T> protocol) {
      this.protocol = protocol;
      if (protocol == ApplicationMasterProtocol.class) {
        proxy = (T) new FakeMaster();
      }
    }

    @Override
    public ProxyInfo<T> getProxy() {
      return new ProxyInfo<T>(proxy, "fake-rm");
    }

    @Override
    public void performFailover(T currentProxy) {
      failovers++;
      lastFailedOver = currentProxy;
    }

    @Override
    public Class<T> getInterface() {
      return protocol;
    }

    @Override
    public void close() {}
  }

  static class FakeMaster implements ApplicationMasterProtocol {
    @Override
    public RegisterApplicationMasterResponse registerApplicationMaster(RegisterApplicationMasterRequest r) {
      return null;
    }

    @Override
    public FinishApplicationMasterResponse finishApplicationMaster(FinishApplicationMasterRequest r) {
      return null;
    }

    @Override
    public AllocateResponse allocate(AllocateRequest r) {
      PreemptionMessage m = PreemptionMessage.newInstance(StrictPreemptionContract.newInstance(
          Collections.singleton(PreemptionContainer.newInstance(WARNED))), null);
      return AllocateResponse.newInstance(1, Collections.<ContainerStatus>emptyList(),
          Collections.<Container>emptyList(), Collections.<NodeReport>emptyList(), Resource.newInstance(1, 1),
          null, 1, m, Collections.<NMToken>emptyList());
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  public void installedProviderWrapsTheConfiguredOneAndRecordsWarnings() throws Exception {
    System.clearProperty(Agent.NO_HA_DELEGATE);
    File file = new File(Files.createTempDirectory("amagent").toFile(), "warnings.jsonl");
    Agent.install(file.getPath());
    assertEquals(DefaultNames.NO_HA, System.getProperty(Agent.NO_HA_DELEGATE));  // what yarn-default names
    Configuration conf = new YarnConfiguration();
    assertEquals(WatchingProviders.NoHa.class.getName(),
        conf.get(YarnConfiguration.CLIENT_FAILOVER_NO_HA_PROXY_PROVIDER));
    assertEquals(WatchingProviders.Ha.class.getName(), conf.get(YarnConfiguration.CLIENT_FAILOVER_PROXY_PROVIDER));
    assertEquals(1000, Agent.skeinHeartbeatMs(conf));  // not Skein's 5 s from yarn-default's 10-minute expiry
    System.setProperty(Agent.NO_HA_DELEGATE, FakeProvider.class.getName());

    RMFailoverProxyProvider<ApplicationMasterProtocol> provider = (RMFailoverProxyProvider<ApplicationMasterProtocol>)
        ReflectionUtils.newInstance(conf.getClass(YarnConfiguration.CLIENT_FAILOVER_NO_HA_PROXY_PROVIDER, null), conf);
    provider.init(conf, new RMProxy<ApplicationMasterProtocol>() {}, ApplicationMasterProtocol.class);
    ApplicationMasterProtocol proxy = provider.getProxy().proxy;
    assertTrue(!(proxy instanceof FakeMaster));
    assertSame("one wrapper per real proxy", proxy, provider.getProxy().proxy);
    assertEquals(ApplicationMasterProtocol.class, provider.getInterface());
    proxy.allocate(null);
    proxy.allocate(null);
    List<String> lines = Files.readAllLines(file.toPath(), StandardCharsets.UTF_8);
    assertEquals(1, lines.size());
    assertTrue(lines.get(0), lines.get(0).contains("\"container\": \"" + WARNED + "\", \"contract\": \"strict\""));
    provider.performFailover(proxy);  // the delegate is given its own proxy back
    assertEquals(1, FakeProvider.failovers);
    assertTrue(FakeProvider.lastFailedOver instanceof FakeMaster);

    // another protocol's proxy is the delegate's own
    RMFailoverProxyProvider<ApplicationClientProtocol> client = (RMFailoverProxyProvider<ApplicationClientProtocol>)
        ReflectionUtils.newInstance(conf.getClass(YarnConfiguration.CLIENT_FAILOVER_NO_HA_PROXY_PROVIDER, null), conf);
    client.init(conf, new RMProxy<ApplicationClientProtocol>() {}, ApplicationClientProtocol.class);
    assertSame(null, client.getProxy().proxy);
  }

  static final class DefaultNames {
    static final String NO_HA = YarnConfiguration.DEFAULT_CLIENT_FAILOVER_NO_HA_PROXY_PROVIDER;
  }
}
