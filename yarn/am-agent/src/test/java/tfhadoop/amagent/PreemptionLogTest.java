package tfhadoop.amagent;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;

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
import org.apache.hadoop.yarn.api.records.PreemptionContract;
import org.apache.hadoop.yarn.api.records.PreemptionMessage;
import org.apache.hadoop.yarn.api.records.PreemptionResourceRequest;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.StrictPreemptionContract;
import org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.junit.Test;

public class PreemptionLogTest {
  private static final ApplicationAttemptId ATTEMPT =
      ApplicationAttemptId.newInstance(ApplicationId.newInstance(1700000000000L, 7), 1);

  private static ContainerId container(long n) {
    return ContainerId.newContainerId(ATTEMPT, n);
  }

  private static PreemptionMessage message(List<ContainerId> strict, List<ContainerId> negotiable) {
    StrictPreemptionContract s = strict == null ? null
        : StrictPreemptionContract.newInstance(containers(strict));
    PreemptionContract n = negotiable == null ? null
        : PreemptionContract.newInstance(Collections.<PreemptionResourceRequest>emptyList(), containers(negotiable));
    return PreemptionMessage.newInstance(s, n);
  }

  private static java.util.Set<PreemptionContainer> containers(List<ContainerId> ids) {
    java.util.Set<PreemptionContainer> out = new HashSet<PreemptionContainer>();
    for (ContainerId id : ids) {
      out.add(PreemptionContainer.newInstance(id));
    }
    return out;
  }

  private static AllocateResponse response(PreemptionMessage message) {
    return AllocateResponse.newInstance(1, Collections.<ContainerStatus>emptyList(), Collections.<Container>emptyList(),
        Collections.<NodeReport>emptyList(), Resource.newInstance(1024, 1), null, 1, message,
        Collections.<NMToken>emptyList());
  }

  @Test
  public void namesEachContainerOncePerContract() {
    PreemptionLog log = new PreemptionLog(new File("unused"));
    List<String> first = log.lines(message(Arrays.asList(container(2)), Arrays.asList(container(3))), 1234L);
    assertEquals(Arrays.asList(
        "{\"time\": 1234, \"container\": \"container_1700000000000_0007_01_000002\", \"contract\": \"strict\"}\n",
        "{\"time\": 1234, \"container\": \"container_1700000000000_0007_01_000003\", \"contract\": \"negotiable\"}\n"),
        first);
    // the same containers again (another scheduler repeats its message each heartbeat): nothing new;
    // container 3 moving to the strict contract is new
    List<String> again = log.lines(message(Arrays.asList(container(2), container(3)), Arrays.asList(container(3))), 1300L);
    assertEquals(Collections.singletonList(
        "{\"time\": 1300, \"container\": \"container_1700000000000_0007_01_000003\", \"contract\": \"strict\"}\n"), again);
    assertTrue(log.lines(null, 1400L).isEmpty());
    assertTrue(log.lines(message(null, null), 1400L).isEmpty());
  }

  /** The ApplicationMasterProtocol a provider hands out: calls go to the real proxy, results and
   * exceptions come back unchanged, and an allocate response's message is appended to the file. */
  @Test
  public void watchingProxyForwardsAndAppendsAllocateResponses() throws Exception {
    File dir = Files.createTempDirectory("amagent").toFile();
    File file = new File(dir, "warnings.jsonl");
    final AllocateResponse[] next = {response(null)};
    ApplicationMasterProtocol real = new ApplicationMasterProtocol() {
      @Override
      public RegisterApplicationMasterResponse registerApplicationMaster(RegisterApplicationMasterRequest r)
          throws YarnException {
        throw new ApplicationMasterNotRegisteredException("from the real proxy");
      }

      @Override
      public FinishApplicationMasterResponse finishApplicationMaster(FinishApplicationMasterRequest r) {
        return null;
      }

      @Override
      public AllocateResponse allocate(AllocateRequest r) {
        return next[0];
      }
    };
    ApplicationMasterProtocol proxy =
        WatchingProviders.watching(ApplicationMasterProtocol.class, real, new PreemptionLog(file));
    assertSame(next[0], proxy.allocate(null));
    assertTrue("no message, no file", !file.exists());
    next[0] = response(message(null, Arrays.asList(container(5))));
    assertSame(next[0], proxy.allocate(null));
    next[0] = response(message(Arrays.asList(container(6)), Arrays.asList(container(5))));
    proxy.allocate(null);
    try {
      proxy.registerApplicationMaster(null);
      fail("the real proxy's exception must come through");
    } catch (ApplicationMasterNotRegisteredException e) {
      assertEquals("from the real proxy", e.getMessage());
    }
    List<String> lines = Files.readAllLines(file.toPath(), StandardCharsets.UTF_8);
    assertEquals(2, lines.size());
    assertTrue(lines.get(0), lines.get(0).contains("\"container\": \"container_1700000000000_0007_01_000005\", "
        + "\"contract\": \"negotiable\""));
    assertTrue(lines.get(1), lines.get(1).contains("\"container\": \"container_1700000000000_0007_01_000006\", "
        + "\"contract\": \"strict\""));
  }

  /** A file that cannot be written does not reach the application master: observe never throws. */
  @Test
  public void unwritableFileIsNotTheCallersProblem() throws IOException {
    File dir = Files.createTempDirectory("amagent").toFile();
    PreemptionLog log = new PreemptionLog(new File(new File(dir, "missing-dir"), "w.jsonl"));
    log.observe(response(message(Arrays.asList(container(9)), null)));
    log.observe(response(message(Arrays.asList(container(10)), null)));
  }
}
