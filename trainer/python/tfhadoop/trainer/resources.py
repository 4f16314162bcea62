"""What each container of a job uses (issue 31 §2): CPU and resident memory of its process tree
(the role, and the ring member's training process), with the peak and the average, sampled by
the role's heartbeat thread and published as ``res/<role>/<slot>`` (``protocol.kv_resources``);
the master keeps them in the progress samples of the job directory, and ``status`` and the job
page show them per role next to what the role asked of YARN, with a hint when the peak is far
below or near it.

Read from ``/proc`` (Linux, as every NodeManager host): no extra package. GPU utilization and
memory of the container's devices come from NVML where it is present (``nvml.GpuUsage``; the
fields are absent otherwise).
"""
from __future__ import annotations

import os
import time

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
NEAR, FAR = 0.9, 0.25  # a peak above NEAR of the request is near the limit; below FAR, far below


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from ``/proc/<pid>/task/*/children``."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:  # it ended meanwhile
            continue
    return out


def usage(pid: int) -> tuple[float, int]:
    """(CPU seconds used, resident bytes) of ``pid``'s process tree now."""
    cpu, rss = 0.0, 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{p}/statm") as f:
                rss += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
        cpu += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15 of stat)
    return cpu, rss


class Usage:
    """Samples of one container's process tree: the latest, the peak and the averages."""

    def __init__(self, pid: int | None = None, clock=time.monotonic, gpus=None):
        from tfhadoop.trainer.nvml import GpuUsage

        self.pid, self.clock = pid or os.getpid(), clock
        self.gpus = gpus if gpus is not None else GpuUsage()  # the devices of CUDA_VISIBLE_DEVICES, if any
        self.t0 = self.last_t = clock()
        self.cpu0 = self.last_cpu = usage(self.pid)[0]
        self.peak_rss = self.rss_sum = self.n = 0
        self.rss = 0
        self.cpu_pct = 0.0

    def sample(self) -> dict:
        now = self.clock()
        cpu, self.rss = usage(self.pid)
        if now > self.last_t:
            self.cpu_pct = 100 * (cpu - self.last_cpu) / (now - self.last_t)
        self.last_t, self.last_cpu = now, cpu
        self.peak_rss = max(self.peak_rss, self.rss)
        self.rss_sum, self.n = self.rss_sum + self.rss, self.n + 1
        return {**self.report(), **self.gpus.sample()}

    def report(self) -> dict:
        """MiB and percent of one core, as ``res/<role>/<slot>`` holds them."""
        elapsed = self.last_t - self.t0
        return {"rss_mb": round(self.rss / 2**20, 1), "peak_rss_mb": round(self.peak_rss / 2**20, 1),
                "avg_rss_mb": round(self.rss_sum / max(self.n, 1) / 2**20, 1), "cpu_pct": round(self.cpu_pct, 1),
                "avg_cpu_pct": round(100 * (self.last_cpu - self.cpu0) / elapsed, 1) if elapsed > 0 else 0.0,
                "samples": self.n}


def latest_resources(samples: list[dict]) -> dict:
    """The newest progress sample's per-container resources ({} before any)."""
    for s in reversed(samples):
        if s.get("resources"):
            return s["resources"]
    return {}


def hint(peak_mb: float, asked_mb: float, flag: str) -> str:
    """A tuning hint for a role whose peak memory is near or far below what it asked."""
    if asked_mb <= 0:
        return ""
    share = peak_mb / asked_mb
    if share >= NEAR:
        return f"near its limit: YARN kills a container over it; raise {flag}"
    if share < FAR:
        return f"far below what it asked: {flag} {max(int(peak_mb * 2), 256)}m would do"
    return ""


def lines(resources: dict, job: dict) -> list[str]:
    """``status`` lines: per container, its memory (now, peak, average) against its request, CPU,
    its GPUs where NVML measured them, and the hint. ``resources``: {"<role>/<slot>": report},
    ``job``: the submitted spec."""
    from tfhadoop.trainer.nvml import text
    from tfhadoop.trainer.spec import mebibytes

    out = []
    for key, r in sorted(resources.items()):
        role = key.split("/", 1)[0]
        asked = job.get(f"{role}_memory")
        asked_mb = mebibytes(asked) if asked else 0
        share = f" of {asked_mb} MB asked ({100 * r['peak_rss_mb'] / asked_mb:.0f} %)" if asked_mb else ""
        note = hint(r["peak_rss_mb"], asked_mb, f"--{role}-memory")
        out.append(f"{key.replace('/', ':')}: memory peak {r['peak_rss_mb']:.0f} MB{share}, average "
                   f"{r['avg_rss_mb']:.0f} MB; CPU average {r['avg_cpu_pct']:.0f} % of a core"
                   + (f"; {text(r)}" if text(r) else "") + (f"; {note}" if note else ""))
    return out
