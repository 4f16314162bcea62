"""SparkSessions wired to the cluster in use: the tfhadoop jar on the classpath, Hadoop
configuration from ``tfhadoop.hadoop``, and (optionally) Hive support with an embedded Derby
metastore in the state dir and the warehouse on HDFS.
"""
from __future__ import annotations

import glob
import logging
import os
import sys
from pathlib import Path

from tfhadoop import hadoop, kerberos

log = logging.getLogger(__name__)


def tfhadoop_jar() -> str | None:
    """The built tfhadoop jar (``jars/tfhadoop-*.jar``), if it has been built."""
    found = sorted(glob.glob(str(hadoop.jars_dir() / "tfhadoop-*.jar")))
    return found[-1] if found else None


def _python_env() -> None:
    """Executors must run the same Python as the driver (the project venv)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def builder(app_name: str = "tfhadoop", master: str | None = None, hive: bool = False,
            state_dir: Path | None = None, extra_conf: dict | None = None, metastore_dir: Path | None = None):
    """A SparkSession.Builder for the cluster in use. ``master`` defaults to ``local[2]``.

    With ``hive``, the embedded Derby metastore lives in ``metastore_dir`` (default: the cluster
    state dir's ``metastore/``). Embedded Derby admits one JVM at a time: two concurrent Spark
    applications need different metastore dirs (or a real metastore service via hive-site.xml).
    """
    from pyspark.sql import SparkSession

    _python_env()
    conf = hadoop.use_cluster(state_dir)
    master = master or os.environ.get("TFHADOOP_SPARK_MASTER", "local[2]")
    b = (SparkSession.builder.appName(app_name).master(master)
         .config("spark.ui.showConsoleProgress", "true")
         .config("spark.sql.shuffle.partitions", "8")
         .config("spark.hadoop.fs.defaultFS", conf.default_fs))
    if master.startswith("yarn"):
        b = _on_yarn(b)
    jar = tfhadoop_jar()
    if jar:
        b = b.config("spark.jars", jar)
    driver_java = []
    if hive:
        b, meta = _with_hive(b, conf, state_dir, metastore_dir)
        driver_java.append(f"-Dderby.system.home={meta}")
    if kerberos.security_enabled(conf):
        b, krb_java = _with_kerberos(b)
        driver_java += krb_java
    if driver_java:
        b = b.config("spark.driver.extraJavaOptions", " ".join(driver_java))
    for key, value in (extra_conf or {}).items():
        b = b.config(key, value)
    return b


def _with_kerberos(b):
    """A Kerberized cluster: the driver JVM reads $KRB5_CONFIG's file, and a --principal/--keytab
    login of the command (tfhadoop.kerberos) becomes Spark's own (spark.kerberos.*), so Spark on
    YARN obtains and renews delegation tokens for its executors from the keytab."""
    opts = kerberos.java_options()
    principal, keytab = kerberos.keytab_login()
    if principal:
        b = b.config("spark.kerberos.principal", principal).config("spark.kerberos.keytab", keytab)
    if opts:
        b = b.config("spark.executor.extraJavaOptions", " ".join(opts))
    return b, opts


def _on_yarn(b):
    """Spark on YARN. On the embedded (single-host) cluster every container sees this machine's
    files, so Spark's own jars are used in place (``local:``) instead of being uploaded to HDFS for
    every application; on a real cluster set ``spark.yarn.archive`` in spark-defaults instead."""
    import pyspark

    if hadoop.embedded_state_dir() is not None:
        b = b.config("spark.yarn.jars", "local:" + str(Path(pyspark.__file__).parent / "jars" / "*"))
    return b.config("spark.yarn.queue", os.environ.get("TFHADOOP_SPARK_QUEUE", "default"))


def _with_hive(b, conf: hadoop.HadoopConf, state_dir: Path | None, metastore_dir: Path | None):
    """Hive support: Derby metastore in a local dir, warehouse on the cluster's default FS."""
    embedded = Path(state_dir) if state_dir else hadoop.embedded_state_dir()
    if metastore_dir or os.environ.get("TFHADOOP_METASTORE_DIR"):
        meta = Path(metastore_dir or os.environ["TFHADOOP_METASTORE_DIR"])
    elif embedded is not None:  # the embedded cluster's own metastore, next to its HDFS data
        meta = embedded / "metastore"
    else:  # a real cluster without a metastore service configured
        meta = Path.home() / ".tfhadoop" / "hive" / "metastore"
    meta = meta.resolve()
    meta.mkdir(parents=True, exist_ok=True)
    warehouse = conf.default_fs.rstrip("/") + "/user/hive/warehouse"
    return (b.enableHiveSupport()
            .config("spark.sql.warehouse.dir", warehouse)
            .config("spark.sql.catalogImplementation", "hive")
            .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                    f"jdbc:derby:;databaseName={meta / 'metastore_db'};create=true")
            .config("spark.hadoop.hive.metastore.warehouse.dir", warehouse)), meta


def get_session(app_name: str = "tfhadoop", master: str | None = None, hive: bool = False, **kw):
    """getOrCreate() of :func:`builder`, through :func:`get_or_create`."""
    return get_or_create(builder(app_name, master=master, hive=hive, **kw))


def get_or_create(b):
    """``b.getOrCreate()``, a second time after Spark's UI start-up race (:func:`is_ui_filter_race`)."""
    try:
        return b.getOrCreate()
    except Exception as exc:  # one known failure is tried again, the rest re-raised
        if not is_ui_filter_race(exc):
            raise
        log.warning("Spark's UI start raced YARN's AmIpFilter (a Spark defect); starting the session again")
        return b.getOrCreate()


def is_ui_filter_race(exc: BaseException) -> bool:
    """A SparkContext on YARN (client mode) that failed in Spark's own start-up race: the driver
    starts its UI handlers (SparkUI.attachAllHandlers, unsynchronized) while an RPC thread adds
    the application master's AmIpFilter to them, and Jetty's ServletHandler.initialize throws
    ConcurrentModificationException. Nothing has run yet, so a new context is safe."""
    text = str(exc)
    return "ConcurrentModificationException" in text and "SparkUI.attachAllHandlers" in text


def hive_session(app_name: str = "tfhadoop-hive", master: str | None = None, **kw):
    """A SparkSession with Hive support on the cluster in use (embedded metastore)."""
    return get_session(app_name, master=master, hive=True, **kw)
