"""Entry point of a parameter-server or worker container (``python -m tfhadoop.trainer.role``).

The job master hands every container its slot and port (env TFH_ROLE, TFH_SLOT, TFH_PORT): a
replacement for a lost worker binds the lost worker's port, so the coordinator, whose cluster
spec cannot change, finds it at the address it expects (docs/design/trainer.md). If that port
cannot be bound here (taken on this node), the container takes a free one and publishes that
address: the master puts it into the spec and restarts the coordinator with it. Rendezvous in
the Skein key-value store: the container publishes ``addr/<role>/<slot>`` = host:port, waits for
the ``cluster`` spec the master assembles from those, starts its server, publishes
``up/<role>/<slot>`` and serves until killed. A thread bumps ``hb/<role>/<slot>`` meanwhile: the
master's hang detection. An exception that ends the process is left at ``error/<role>/<slot>``
first, so the master can say why the container failed.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time

PORT_RETRY_S = 3.0  # a lost container on this node may take a moment to release the slot's port


def gpu_devices() -> str:
    """The GPUs YARN assigned to this container, for CUDA_VISIBLE_DEVICES. With the NodeManager's
    GPU plugin, YARN already sets CUDA_VISIBLE_DEVICES/NVIDIA_VISIBLE_DEVICES: respect that.
    Without it (the embedded cluster counts GPUs, it does not isolate them) use the first N."""
    for var in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        if os.environ.get(var):
            return os.environ[var]
    from tfhadoop.trainer import protocol

    n = int(os.environ.get(protocol.ENV_GPUS, "0"))
    return ",".join(str(i) for i in range(n)) if n else ""


def usable_port(role: str, slot: int, port: int) -> int:
    """The slot's port if it can be bound on this node, else a free one (logged). Falling back
    costs a coordinator restart (the spec changes) but waiting for a port that another process
    holds would leave the slot empty for good."""
    from tfhadoop.ports import free_port, port_is_free

    deadline = time.monotonic() + PORT_RETRY_S
    while not port_is_free(port):
        if time.monotonic() > deadline:
            new = free_port()
            print(f"{role}:{slot}: port {port} is taken on this node; serving on port {new} instead "
                  f"(the master moves the slot to the new address)", flush=True)
            return new
        time.sleep(0.25)
    return port


def node_host() -> str:
    """The name of this container's node as YARN knows it (``NM_HOST``, the NodeManager's node id):
    the one address of a multi-homed host that YARN itself uses to reach it. Outside YARN, the FQDN."""
    return os.environ.get("NM_HOST") or socket.getfqdn()


def heartbeat(app, key: str, container: str, period: float, resources_key: str | None = None) -> None:
    """Bump ``key`` every ``period`` s from a daemon thread, for the master's hang detection: a
    process that is stopped (SIGSTOP, a dead NFS mount, swapped out) stops bumping it, and the
    master kills and replaces it after ``--hang-timeout`` s. A failed write is retried next time
    (the master's key-value store may be restarting with a new application attempt). With
    ``resources_key`` each beat also publishes what this container's processes use
    (``resources.Usage``: memory now, peak and average, CPU)."""
    import threading

    from tfhadoop.trainer.resources import Usage

    use = Usage() if resources_key else None

    def beat():
        n = 0
        while True:
            n += 1
            try:
                app.kv[key] = f"{container} {n}".encode()
                if use is not None and resources_key:
                    app.kv[resources_key] = json.dumps({"container": container, "time": time.time(),
                                                        **use.sample()}).encode()
            except Exception:  # noqa: BLE001 - the next beat tries again
                pass
            time.sleep(period)

    threading.Thread(target=beat, name="heartbeat", daemon=True).start()


def error_line(error: BaseException) -> str:
    """One line for the master's message: the exception's type and the first line of its text."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:500]}" if text else type(error).__name__


def leave_error(app, role: str, slot: int, container: str, error: BaseException) -> None:
    """Tell the master why this process ends (``protocol.kv_role_error``), before it exits: the
    master reads it when YARN reports the container ended. Best effort: the traceback goes to the
    container's log anyway."""
    from tfhadoop.trainer import protocol as P

    try:
        app.kv[P.kv_role_error(role, slot)] = json.dumps({"container": container, "error": error_line(error)}).encode()
    except Exception:  # noqa: BLE001 - the master's store may be gone with its attempt
        pass


def main() -> int:
    import skein

    from tfhadoop.trainer import protocol as P

    P.tf_environment()
    role, slot, port = os.environ[P.ENV_ROLE], int(os.environ[P.ENV_SLOT]), int(os.environ[P.ENV_PORT])
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu_devices()
    app = skein.ApplicationClient.from_current()
    container = os.environ.get(P.ENV_SKEIN_CONTAINER_ID, "")
    try:
        return serve(app, role, slot, port, container)
    except Exception as e:
        leave_error(app, role, slot, container, e)
        raise


def serve(app, role: str, slot: int, port: int, container: str) -> int:
    """Publish this slot's address, start its TensorFlow server once the spec holds it, serve."""
    from tfhadoop.trainer import protocol as P

    heartbeat(app, P.kv_heartbeat(role, slot), container, P.HEARTBEAT_S, P.kv_resources(role, slot))
    port = usable_port(role, slot, port)
    address = f"{node_host()}:{port}"
    app.kv[P.kv_addr(role, slot)] = address.encode()
    from tfhadoop.trainer import server

    server.import_tensorflow()  # seconds of import while the master assembles the spec
    import tfhadoop.tfhdfs  # before serving: closures open the shards' hdfs:// URLs

    tfhadoop.tfhdfs.ride_out_outages()  # a NameNode restart stalls a shard open, not the closure
    cluster = json.loads(app.kv.wait(P.KV_CLUSTER).decode())
    # A worker that arrives after training started with fewer workers, or a replacement at a new
    # address, is in the spec once the master has put it there; until then it waits.
    while address not in cluster[role]:
        time.sleep(1)
        cluster = json.loads(app.kv[P.KV_CLUSTER].decode())
    index = cluster[role].index(address)
    t0 = time.monotonic()
    srv = server.start(cluster, role, index, port=port, threads=int(os.environ.get(P.ENV_THREADS, "2")))
    app.kv[P.kv_up(role, slot)] = json.dumps({"address": address, "container": container, "pid": os.getpid(),
                                            "cuda_visible_devices": os.environ["CUDA_VISIBLE_DEVICES"],
                                            "started": time.time(), "server_start_s": time.monotonic() - t0}).encode()
    print(f"{role}:{slot} serving at {address} (CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r})", flush=True)
    srv.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
