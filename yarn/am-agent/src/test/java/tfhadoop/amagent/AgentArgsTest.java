package tfhadoop.amagent;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

/** The agent's argument as a Kerberized NodeManager hands it over (its admin JAVA_TOOL_OPTIONS glued on). */
public class AgentArgsTest {
  @Test
  public void aGluedSystemPropertyIsAppliedAndTheFileKept() {
    System.clearProperty("tfhadoop.test.krb5");
    assertEquals("w.jsonl", Agent.fileOf("w.jsonl:-Dtfhadoop.test.krb5=/x/krb5.conf"));
    assertEquals("/x/krb5.conf", System.getProperty("tfhadoop.test.krb5"));
  }

  @Test
  public void plainOrEmptyArgumentsNameTheFile() {
    assertEquals("w.jsonl", Agent.fileOf("w.jsonl"));
    assertEquals(Agent.DEFAULT_FILE, Agent.fileOf(""));
    assertEquals(Agent.DEFAULT_FILE, Agent.fileOf(":-Dtfhadoop.test.other=1"));
    assertEquals("1", System.getProperty("tfhadoop.test.other"));
  }
}
