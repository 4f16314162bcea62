"""Which Hadoop cluster tfhadoop talks to, and how a client process reaches it.

A ``HADOOP_CONF_DIR`` in the environment means a real cluster, used as is. Without one, the
embedded cluster's state dir provides the configuration (``tfhadoop cluster up`` writes it).
Everything that starts a Hadoop client (Skein, Spark, hdfs clients) asks this module, so the
choice is made in one place.
"""
from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from tfhadoop.errors import CommandError

STATE_DIR_ENV = "TFHADOOP_STATE_DIR"


def project_root() -> Path:
    """The source checkout (editable install): where ``jars/`` and ``tools/`` live."""
    return Path(__file__).resolve().parents[1]


def jars_dir() -> Path:
    return Path(os.environ.get("TFHADOOP_JARS", project_root() / "jars"))


def default_state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV, Path.home() / ".tfhadoop" / "cluster")).expanduser()


def java_home() -> str | None:
    """JAVA_HOME, or the JDK that the ``java`` on PATH belongs to."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java is None:
        return None
    return str(Path(os.path.realpath(java)).parents[1])


# Every JVM we start is a short-lived client or a process that relays more than it computes (the
# embedded cluster, Skein's driver and application master, the `yarn`/`hdfs` commands): the client
# compiler alone (C1) and the serial collector halve what a JVM spends starting (Skein's driver:
# 5.0 -> 2.5 cpu-s, 2.5 -> 1.9 s to its first call, on 2 cores).
LEAN_JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def java_executable() -> str:
    home = java_home()
    java = Path(home, "bin", "java") if home else None
    if java is None or not java.exists():
        raise CommandError(
            "Java not found: install a JDK (17 recommended, e.g. `apt-get install openjdk-17-jdk-headless`) "
            "or set JAVA_HOME"
        )
    return str(java)


@dataclass(frozen=True)
class HadoopConf:
    """The properties of a Hadoop configuration directory (*-site.xml), read once."""

    conf_dir: Path
    props: dict

    @classmethod
    def load(cls, conf_dir: str | os.PathLike) -> HadoopConf:
        conf_dir = Path(conf_dir)
        if not conf_dir.is_dir():
            raise CommandError(f"Hadoop configuration directory {conf_dir} does not exist")
        props: dict[str, str] = {}
        for name in ("core-site.xml", "hdfs-site.xml", "yarn-site.xml", "resource-types.xml"):
            path = conf_dir / name
            if not path.exists():
                continue
            try:
                root = ET.parse(path).getroot()
            except ET.ParseError as exc:
                raise CommandError(f"cannot parse {path}: {exc}") from exc
            for prop in root.iter("property"):
                key, value = prop.findtext("name"), prop.findtext("value")
                if key is not None and value is not None:
                    props[key.strip()] = value.strip()
        return cls(conf_dir, props)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    @property
    def default_fs(self) -> str:
        return self.props.get("fs.defaultFS", "file:///")

    @property
    def webhdfs_url(self) -> str:
        addr = self.get("dfs.namenode.http-address")
        if not addr:
            raise CommandError(f"dfs.namenode.http-address is not set in {self.conf_dir}/hdfs-site.xml")
        return f"http://{addr}"

    @property
    def rm_webapp_url(self) -> str:
        addr = self.get("yarn.resourcemanager.webapp.address")
        if not addr:
            raise CommandError(f"yarn.resourcemanager.webapp.address is not set in {self.conf_dir}/yarn-site.xml")
        return f"http://{addr}"


def is_embedded() -> bool:
    return not os.environ.get("HADOOP_CONF_DIR")


def conf_dir(state_dir: Path | None = None) -> Path:
    """The configuration directory of the cluster in use (see module docstring)."""
    if os.environ.get("HADOOP_CONF_DIR"):
        return Path(os.environ["HADOOP_CONF_DIR"])
    state = Path(state_dir) if state_dir else default_state_dir()
    conf = state / "conf"
    if not (state / "cluster.json").exists():
        raise CommandError(
            f"no HADOOP_CONF_DIR is set and the embedded cluster in {state} is not running: "
            "start it with `tfhadoop cluster up` (or export HADOOP_CONF_DIR for a real cluster)"
        )
    return conf


def load_conf(state_dir: Path | None = None) -> HadoopConf:
    return HadoopConf.load(conf_dir(state_dir))


def client_env(state_dir: Path | None = None, base: dict | None = None) -> dict:
    """Environment for a Hadoop client process: HADOOP_CONF_DIR, JAVA_HOME and, for the embedded
    cluster, its ``yarn``/``hdfs`` commands first on PATH (Skein runs ``yarn classpath``)."""
    env = dict(os.environ if base is None else base)
    env["HADOOP_CONF_DIR"] = str(conf_dir(state_dir))
    if is_embedded():
        state = Path(state_dir) if state_dir else default_state_dir()
        env["PATH"] = f"{state / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    home = java_home()
    if home:
        env.setdefault("JAVA_HOME", home)
    return env


def embedded_state_dir() -> Path | None:
    """The state dir of the embedded cluster in use, or None when HADOOP_CONF_DIR names another."""
    conf = os.environ.get("HADOOP_CONF_DIR")
    if not conf:
        return default_state_dir()
    parent = Path(conf).resolve().parent
    return parent if (parent / "cluster.json").exists() or (parent / "cluster.pid").exists() else None


def use_cluster(state_dir: Path | None = None) -> HadoopConf:
    """Point this process's Hadoop clients (Skein, pyspark) at the cluster in use."""
    embedded = is_embedded()
    os.environ.update(client_env(state_dir))
    if embedded:  # children and later lookups (metastore dir, ...) find the same state dir
        os.environ[STATE_DIR_ENV] = str(Path(state_dir) if state_dir else default_state_dir())
    return HadoopConf.load(os.environ["HADOOP_CONF_DIR"])
