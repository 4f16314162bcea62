"""The files Python writes into the embedded cluster's state dir before its JVM starts: the log4j
configurations and the ``bin/yarn`` / ``bin/hdfs`` commands its clients (Skein, Hadoop's CLI) run,
and the classpaths the build left in ``jars/`` that they and the JVMs use."""
from __future__ import annotations

import os
from pathlib import Path

from tfhadoop.errors import CommandError
from tfhadoop.hadoop import LEAN_JVM_FLAGS, jars_dir, java_executable

LOG4J = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File={log}
log4j.appender.file.MaxFileSize=64MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=%d{{ISO8601}} %-5p %c{{2}} - %m%n
log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN
log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.RMAuditLogger=WARN
log4j.logger.org.apache.hadoop.yarn.server.nodemanager.NMAuditLogger=WARN
"""

# `yarn` / `hdfs` for clients of the embedded cluster. `yarn classpath` is what Skein needs; the
# other subcommands run Hadoop's own CLI classes from the cluster's jars.
YARN_SHIM = """\
#!/bin/sh
# yarn command of the tfhadoop embedded cluster (written by `tfhadoop cluster up`).
CONF='{conf}'
CLIENT_CP='{client_cp}'
TOOLS_CP='{tools_cp}'
JAVA='{java}'
LOG="{lean_jvm_flags} -Dlog4j.configuration=file:{log4j_cli}"
[ -n "$KRB5_CONFIG" ] && LOG="$LOG -Djava.security.krb5.conf=$KRB5_CONFIG"
cmd="$1"; [ $# -gt 0 ] && shift
case "$cmd" in
  classpath) echo "$CONF:$CLIENT_CP" ;;
  version) echo "Hadoop {hadoop_version} (tfhadoop embedded cluster)" ;;
  logs) exec "$JAVA" $LOG -cp "$CONF:$TOOLS_CP" org.apache.hadoop.yarn.client.cli.LogsCLI "$@" ;;
  application|applicationattempt|container)
    exec "$JAVA" $LOG -cp "$CONF:$TOOLS_CP" org.apache.hadoop.yarn.client.cli.ApplicationCLI "$cmd" "$@" ;;
  node) exec "$JAVA" $LOG -cp "$CONF:$TOOLS_CP" org.apache.hadoop.yarn.client.cli.NodeCLI "$@" ;;
  queue) exec "$JAVA" $LOG -cp "$CONF:$TOOLS_CP" org.apache.hadoop.yarn.client.cli.QueueCLI "$@" ;;
  *) echo "usage: yarn classpath|version|logs|application|applicationattempt|container|node|queue [ARGS]" >&2; exit 1 ;;
esac
"""

HDFS_SHIM = """\
#!/bin/sh
# hdfs command of the tfhadoop embedded cluster (written by `tfhadoop cluster up`).
cmd="$1"; [ $# -gt 0 ] && shift
LOG="{lean_jvm_flags} -Dlog4j.configuration=file:{log4j_cli}"
[ -n "$KRB5_CONFIG" ] && LOG="$LOG -Djava.security.krb5.conf=$KRB5_CONFIG"
case "$cmd" in
  dfs) exec '{java}' $LOG -cp '{conf}:{tools_cp}' org.apache.hadoop.fs.FsShell "$@" ;;
  dfsadmin) exec '{java}' $LOG -cp '{conf}:{tools_cp}' org.apache.hadoop.hdfs.tools.DFSAdmin "$@" ;;
  classpath) echo '{conf}:{client_cp}' ;;
  *) echo "usage: hdfs dfs|dfsadmin|classpath [ARGS]" >&2; exit 1 ;;
esac
"""

LOG4J_CLI = "log4j.rootLogger=WARN, err\nlog4j.appender.err=org.apache.log4j.ConsoleAppender\n" \
    "log4j.appender.err.Target=System.err\nlog4j.appender.err.layout=org.apache.log4j.PatternLayout\n" \
    "log4j.appender.err.layout.ConversionPattern=%p %c{2}: %m%n\n"


def read_classpath(name: str) -> list[str]:
    """The jars listed in ``jars/<name>``; one line naming the file when it or a jar is missing."""
    path = jars_dir() / name
    if not path.exists():
        raise CommandError(f"{path} is missing: build the JVM side first (`make setup` or `make jars`)")
    entries = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    missing = [e for e in entries if not Path(e).exists()]
    if missing:
        raise CommandError(f"{len(missing)} jar(s) listed in {path} are missing (first: {missing[0]}); "
                           "rebuild with `make jars`")
    return entries


def write_commands(state_dir: Path, conf_dir: Path, bin_dir: Path, logs_dir: Path) -> None:
    """``bin/yarn``, ``bin/hdfs`` and the log4j files they and the JVM use; each file replaced
    whole (a client running ``yarn classpath`` meanwhile reads the old or the new one)."""
    for d in (conf_dir, bin_dir, logs_dir, state_dir / "jvm-conf"):
        d.mkdir(parents=True, exist_ok=True)
    client_cp, cluster_cp = read_classpath("client-classpath.txt"), read_classpath("cluster-classpath.txt")
    fields = dict(
        conf=conf_dir, java=java_executable(), client_cp=os.pathsep.join(client_cp),
        tools_cp=os.pathsep.join(cluster_cp), hadoop_version=_hadoop_version(client_cp),
        log4j_cli=state_dir / "log4j-cli.properties", lean_jvm_flags=" ".join(LEAN_JVM_FLAGS),
    )
    files = [(state_dir / "log4j.properties", LOG4J.format(log=logs_dir / "hadoop.log"), 0o644),
             (state_dir / "log4j-cli.properties", LOG4J_CLI, 0o644),
             (bin_dir / "yarn", YARN_SHIM.format(**fields), 0o755),
             (bin_dir / "hdfs", HDFS_SHIM.format(**fields), 0o755)]
    for path, text, mode in files:
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(text)
        tmp.chmod(mode)
        os.replace(tmp, path)


def _hadoop_version(classpath: list[str]) -> str:
    for entry in classpath:
        name = Path(entry).name
        if name.startswith("hadoop-client-api-"):
            return name[len("hadoop-client-api-"):-len(".jar")]
    return "unknown"
