"""A ring member's container (``--strategy allreduce``): ``python -m tfhadoop.trainer.ring_member``.

It publishes its address, bumps its heartbeat and waits for the master's ``ring``. For each
generation that lists it, it starts the training process (``python -m tfhadoop.trainer.allreduce
train GEN``, allreduce.py) with ``TF_CONFIG`` for that ring; a newer generation kills the running
one first. It reports each exit under ``ring_exit/<slot>``, and kills a training process that has
not touched its beat file (``protocol.ring_beat_file``) for ``--round-timeout`` s (a stopped
process, or one stuck in a collective that never completes: its peers then stall too), reporting
``protocol.RING_HANG_ERROR``, which the master answers with a new generation.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tfhadoop.trainer import children, protocol
from tfhadoop.trainer.allreduce import beat_path
from tfhadoop.trainer.spec import JobSettings

POLL_S = 0.3  # the supervisor looks at the ring and its child this often
WAITING_GRACE_S = 10.0  # a silent child that sleeps (waits on a peer) gets this much longer: the stuck peer's
# supervisor (its child stopped or spinning) reports first, so the event names the culprit


class Supervisor:
    """Runs one training process per ring generation that lists this container's address."""

    def __init__(self, app, slot: int, address: str, round_timeout: float = 0, work: str = "."):
        self.app, self.slot, self.address = app, slot, address
        self.round_timeout, self.work = round_timeout, work
        self.child: subprocess.Popen | None = None
        self.child_started = 0.0
        self.gen = 0  # the newest generation seen

    def ring(self) -> dict | None:
        raw = self.app.kv.get(protocol.KV_RING)
        return json.loads(raw.decode()) if raw else None

    def kill_child(self) -> None:
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGKILL)
            self.child.wait()
        self.child = None

    def start_child(self, ring: dict) -> None:
        rank = ring["worker"].index(self.address)
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": {"worker": ring["worker"]},
                                                       "task": {"type": "worker", "index": rank}})}
        print(f"worker:{self.slot} gen {ring['gen']}: rank {rank} of {len(ring['worker'])}", flush=True)
        self.child_started = time.time()
        self.child = children.spawn([sys.executable, "-m", "tfhadoop.trainer.allreduce", "train", str(ring["gen"])],
                                    env=env)

    def silent_for(self) -> float:
        """Seconds since the running child last made progress (touched its beat file), or since it started."""
        try:
            last = max(self.child_started, os.stat(beat_path(self.work, self.gen)).st_mtime)
        except FileNotFoundError:
            last = self.child_started
        return time.time() - last

    def check_hang(self) -> None:
        """Kill a child silent for ``round_timeout`` s (``WAITING_GRACE_S`` more if it sleeps, as
        a member waiting on a stuck peer does) and report it as ``TrainingHang`` with its process
        state (``T``: SIGSTOPped; ``S``: waiting in a collective that never completes)."""
        if not self.round_timeout or self.child is None or self.child.poll() is not None:
            return
        silent = self.silent_for()
        if silent <= self.round_timeout:
            return
        pid, state = self.child.pid, process_state(self.child.pid)
        if state == "S" and silent <= self.round_timeout + WAITING_GRACE_S:
            return
        print(f"worker:{self.slot} gen {self.gen}: no progress for {silent:.0f} s (state {state}): killed", flush=True)
        self.kill_child()
        self.exited(-signal.SIGKILL, {"type": protocol.RING_HANG_ERROR, "process_state": state, "silent_s": round(silent, 1),
                                      "message": f"generation {self.gen}: training process {pid} on worker:"
                                                 f"{self.slot} completed no round in {silent:.0f} s (--round-timeout "
                                                 f"{self.round_timeout:g}; process state {state}): killed"})

    def exited(self, rc: int, error: dict | None = None) -> None:
        """Tell the master how this generation's process ended (error type for a failure)."""
        path = os.path.join(self.work, protocol.ring_error_file(self.gen))
        if error is None and rc not in (0, protocol.STOP_EXIT) and os.path.exists(path):
            with open(path) as f:
                error = {k: v for k, v in json.load(f).items() if k != "traceback"}
        self.app.kv[protocol.kv_ring_exit(self.slot)] = json.dumps(
            {"gen": self.gen, "rc": rc, "error": error}).encode()

    def run(self) -> int:
        while True:
            ring = self.ring()
            if ring and ring["gen"] > self.gen:
                self.kill_child()  # an older generation: stuck in, or about to fail, a collective
                self.gen = ring["gen"]
                if self.address in ring["worker"]:
                    self.start_child(ring)
            self.check_hang()
            if self.child is not None and self.child.poll() is not None:
                rc = self.child.returncode
                self.child = None
                self.exited(rc)
                if rc == 0:
                    return 0
            time.sleep(POLL_S)


def process_state(pid: int) -> str:
    """The kernel's one-letter state of a process (``T``: stopped), ``?`` where /proc has none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def main() -> int:
    protocol.tf_environment()
    import skein

    from tfhadoop.ports import free_port
    from tfhadoop.trainer.role import gpu_devices, heartbeat, node_host, usable_port

    slot, port = int(os.environ[protocol.ENV_SLOT]), int(os.environ.get(protocol.ENV_PORT) or free_port())
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu_devices()
    app = skein.ApplicationClient.from_current()
    container = os.environ.get(protocol.ENV_SKEIN_CONTAINER_ID, "")
    heartbeat(app, protocol.kv_heartbeat("worker", slot), container, protocol.HEARTBEAT_S,
              protocol.kv_resources("worker", slot))  # the tree: this supervisor and its training process
    # the node's name as YARN knows it (NM_HOST), as the PS mode's roles publish: getfqdn() may name
    # another interface of a multi-homed host, or localhost
    address = f"{node_host()}:{usable_port('worker', slot, port)}"
    app.kv[protocol.kv_up("worker", slot)] = json.dumps(
        {"address": address, "container": container, "pid": os.getpid(),
         "cuda_visible_devices": os.environ["CUDA_VISIBLE_DEVICES"], "started": time.time()}).encode()
    app.kv[protocol.kv_addr("worker", slot)] = address.encode()  # last: the master counts these
    print(f"worker:{slot} at {address} (CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r})", flush=True)
    round_timeout = float(JobSettings.load(protocol.JOB_FILE).round_timeout or 0)
    return Supervisor(app, slot, address, round_timeout, os.getcwd()).run()


if __name__ == "__main__":
    sys.exit(main())
