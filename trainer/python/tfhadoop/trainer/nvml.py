"""GPU figures of a container through NVML (issue 31 §2): utilization and memory of the devices
the container was given (``CUDA_VISIBLE_DEVICES``, as ``role.gpu_devices`` set it), added by
``resources.Usage`` to each ``res/<role>/<slot>`` sample.

Optional in every way: without the ``pynvml`` module (package ``nvidia-ml-py``), without a driver
(``nvmlInit`` fails), without devices given, or when NVML refuses a call, a sample simply has no
GPU fields; nothing here raises. The figures are the devices' own (NVML's utilization rate and
memory in use), so a device that another container shares is counted with that container's use.
"""
from __future__ import annotations

import os


def load(module=None):
    """NVML initialized (``module``: a stand-in, for tests; default ``pynvml``), or None."""
    try:
        if module is None:
            import importlib

            module = importlib.import_module("pynvml")
        module.nvmlInit()
        return module
    except Exception:  # noqa: BLE001 - no library, no driver, no GPU: no GPU figures
        return None


def visible(value: str | None = None) -> list[str]:
    """The devices in ``CUDA_VISIBLE_DEVICES`` (indices or ``GPU-...`` UUIDs); none when unset or empty."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES") if value is None else value
    return [d.strip() for d in (value or "").split(",") if d.strip() and d.strip() != "-1"]


class GpuUsage:
    """Samples of the given devices: utilization now and on average, memory in use now and its peak."""

    def __init__(self, devices: list[str] | None = None, module=None):
        devices = visible() if devices is None else devices
        self.nvml = load(module) if devices else None
        self.handles: list[tuple[str, object]] = []
        if self.nvml is not None:
            for d in devices:
                try:
                    h = (self.nvml.nvmlDeviceGetHandleByIndex(int(d)) if d.isdigit()
                         else self.nvml.nvmlDeviceGetHandleByUUID(d))
                except Exception as exc:  # noqa: BLE001 - that device unseen, the others still sampled
                    print(f"NVML does not know GPU {d!r}: {exc}", flush=True)
                    continue
                self.handles.append((d, h))
        self.peak_mem = 0.0
        self.util_sum, self.n = 0.0, 0

    def sample(self) -> dict:
        """GPU fields of a ``res/`` sample (MiB, percent); {} when there is nothing to sample."""
        if not self.handles:
            return {}
        assert self.nvml is not None
        per = []
        try:
            for d, h in self.handles:
                util = self.nvml.nvmlDeviceGetUtilizationRates(h)
                mem = self.nvml.nvmlDeviceGetMemoryInfo(h)
                per.append({"device": d, "util_pct": float(util.gpu), "mem_mb": round(mem.used / 2**20, 1),
                            "mem_total_mb": round(mem.total / 2**20, 1)})
        except Exception as exc:  # noqa: BLE001 - this sample without GPU figures
            print(f"NVML sample failed: {exc}", flush=True)
            return {}
        util = sum(g["util_pct"] for g in per) / len(per)
        mem = sum(g["mem_mb"] for g in per)
        self.peak_mem = max(self.peak_mem, mem)
        self.util_sum, self.n = self.util_sum + util, self.n + 1
        return {"gpus": per, "gpu_util_pct": round(util, 1), "avg_gpu_util_pct": round(self.util_sum / self.n, 1),
                "gpu_mem_mb": round(mem, 1), "peak_gpu_mem_mb": round(self.peak_mem, 1),
                "gpu_mem_total_mb": round(sum(g["mem_total_mb"] for g in per), 1)}


def text(r: dict) -> str:
    """A ``res/`` report's GPU figures in words ("" without them), for ``status`` and the job page."""
    if "gpu_util_pct" not in r:
        return ""
    devices = ",".join(str(g.get("device")) for g in r.get("gpus") or [])
    return (f"GPU {devices} utilization average {r['avg_gpu_util_pct']:.0f} %, memory peak "
            f"{r['peak_gpu_mem_mb']:.0f} of {r['gpu_mem_total_mb']:.0f} MB")
