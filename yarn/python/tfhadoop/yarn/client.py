"""Skein clients, made here only. Skein's driver runs ``yarn classpath`` to find Hadoop's jars;
without a ``yarn`` command it dies with a FileNotFoundError followed by an AttributeError from its
half-built client, so the command is looked for first and its absence said in one line."""
from __future__ import annotations

import os
import shutil

from tfhadoop import hadoop
from tfhadoop.errors import CommandError


def require_yarn_command(env: dict | None = None) -> str:
    """The ``yarn`` executable on ``env``'s PATH (default: this process's, as Skein sees it)."""
    path = (os.environ if env is None else env).get("PATH", "")
    found = shutil.which("yarn", path=path)
    if found:
        return found
    state = hadoop.embedded_state_dir()  # also once use_cluster has set HADOOP_CONF_DIR to its conf/
    if state is not None:
        shim = state / "bin" / "yarn"
        if shim.exists():
            raise CommandError(f"no `yarn` command on PATH: the embedded cluster's is {shim}; "
                               f"export PATH={shim.parent}:$PATH (`tfhadoop cluster env` prints the exports)")
        raise CommandError(f"no `yarn` command on PATH, and the embedded cluster has no {shim} (its start was "
                           "interrupted before writing it): run `tfhadoop cluster up` again to write it")
    raise CommandError("no `yarn` command on PATH: YARN clients (Skein) run `yarn classpath` to find the "
                       f"Hadoop jars of the cluster in HADOOP_CONF_DIR ({os.environ.get('HADOOP_CONF_DIR')}); "
                       "put your Hadoop client on PATH: export PATH=$HADOOP_HOME/bin:$PATH")


def skein_client(**kwargs):
    """A ``skein.Client`` (``kwargs`` as Skein's), or a one-line CommandError; the caller has pointed
    this process at the cluster (``hadoop.use_cluster``). On an embedded cluster without Kerberos,
    a client of its shared driver (tfhadoop.yarn.warm_driver; ``log`` and ``log_level`` then do not
    apply: that driver logs to the state dir's ``logs/skein-driver.log``)."""
    import skein

    require_yarn_command()
    if "SKEIN_DRIVER_JAVA_OPTIONS" not in os.environ:  # Skein's own setting, which replaces ours
        kwargs.setdefault("java_options", list(hadoop.LEAN_JVM_FLAGS))
    if "keytab" not in kwargs and "address" not in kwargs:
        shared = _shared_driver_client(kwargs.get("java_options"))
        if shared is not None:
            return shared
    return skein.Client(**kwargs)


def _shared_driver_client(java_options: list[str] | None):
    """A client of the embedded cluster's shared driver, or None (another cluster, Kerberos)."""
    state = hadoop.embedded_state_dir()
    if state is None:
        return None
    from tfhadoop.yarn import warm_driver
    from tfhadoop.yarn.embedded import EmbeddedCluster

    info = EmbeddedCluster(state).info()
    if info is None or info.get("secure"):
        return None
    return warm_driver.client(state, info["pid"], [*(java_options or []), *SHARED_DRIVER_JVM_FLAGS])


def shared_driver_log(client) -> str | None:
    """The log of the embedded cluster's shared driver when ``client`` is one of its clients."""
    state = hadoop.embedded_state_dir()
    if state is None:
        return None
    from tfhadoop.yarn import warm_driver

    return warm_driver.log_of(state, client.address)


# The shared driver outlives the commands that use it: a bounded heap, not a quarter of the host's.
SHARED_DRIVER_JVM_FLAGS = ("-Xmx512m",)
