package tfhadoop.amagent;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.PreemptionContainer;
import org.apache.hadoop.yarn.api.records.PreemptionContract;
import org.apache.hadoop.yarn.api.records.PreemptionMessage;
import org.apache.hadoop.yarn.api.records.StrictPreemptionContract;

/**
 * The containers a PreemptionMessage names, appended to a file one JSON object a line:
 * {@code {"time": <ms since the epoch>, "container": "<container id>", "contract": "strict"|"negotiable"}}.
 * A strict contract's containers will be killed; a negotiable one's will be unless the application
 * gives back the resources it asks for some other way. YARN's CapacityScheduler announces each
 * container it selected in one allocate response, so a container is written once per contract
 * (a later message naming it again, as another scheduler may send, is not repeated). Each line is
 * one write on a file opened for appending: a reader sees whole lines, or none of the last one.
 */
public final class PreemptionLog {
  private static final int REMEMBERED = 4096; // container ids kept to skip repeats (oldest dropped)
  private static PreemptionLog shared;

  private final File file;
  private final Map<String, Boolean> written = new LinkedHashMap<String, Boolean>() {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
      return size() > REMEMBERED;
    }
  };
  private boolean failed;

  PreemptionLog(File file) {
    this.file = file;
  }

  /** The log of this JVM, at the file the agent was given. */
  static synchronized PreemptionLog shared() {
    if (shared == null) {
      shared = new PreemptionLog(new File(System.getProperty(Agent.FILE_PROPERTY, Agent.DEFAULT_FILE)));
    }
    return shared;
  }

  /** Record the response's preemption message, if any; never throws (Skein's AM must go on). */
  public synchronized void observe(AllocateResponse response) {
    try {
      List<String> lines = lines(response.getPreemptionMessage(), System.currentTimeMillis());
      if (!lines.isEmpty()) {
        append(lines);
      }
    } catch (Throwable t) {
      if (!failed) { // said once: a broken log must not flood the AM's log each heartbeat
        failed = true;
        System.err.println("tfhadoop AM agent: cannot record a preemption message in " + file + ": " + t);
      }
    }
  }

  /** The new lines for ``message`` (null: none), remembering the containers written. */
  synchronized List<String> lines(PreemptionMessage message, long now) {
    List<String> out = new ArrayList<String>();
    if (message == null) {
      return out;
    }
    StrictPreemptionContract strict = message.getStrictContract();
    if (strict != null && strict.getContainers() != null) {
      for (PreemptionContainer c : strict.getContainers()) {
        add(out, c, "strict", now);
      }
    }
    PreemptionContract negotiable = message.getContract();
    if (negotiable != null && negotiable.getContainers() != null) {
      for (PreemptionContainer c : negotiable.getContainers()) {
        add(out, c, "negotiable", now);
      }
    }
    return out;
  }

  private void add(List<String> out, PreemptionContainer c, String contract, long now) {
    if (c == null || c.getId() == null) {
      return;
    }
    String id = c.getId().toString();
    if (written.put(contract + " " + id, Boolean.TRUE) == null) {
      out.add("{\"time\": " + now + ", \"container\": \"" + id + "\", \"contract\": \"" + contract + "\"}\n");
    }
  }

  private void append(List<String> lines) throws IOException {
    OutputStream out = new FileOutputStream(file, true);
    try {
      for (String line : lines) {
        out.write(line.getBytes(StandardCharsets.UTF_8));
      }
    } finally {
      out.close();
    }
  }
}
