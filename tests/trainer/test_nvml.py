"""GPU figures through NVML (issue 31 §2), with a fake ``pynvml`` module: no GPU on the machines
these tests run on, so the real library's path is not exercised here. What is: the devices of
CUDA_VISIBLE_DEVICES (indices and UUIDs) sampled, the averages and peaks, and every way of having
no GPU figures (no library, no driver, no device, a refused call) without an error."""
from __future__ import annotations

import sys
import types

import pytest

from tfhadoop.trainer import nvml, resources

MIB = 2**20


class FakeNvml(types.ModuleType):
    """pynvml's calls the sampler makes: devices by index or UUID, utilization, memory."""

    def __init__(self, devices: dict, init_error: Exception | None = None):
        super().__init__("pynvml")
        self.devices, self.init_error, self.fail = devices, init_error, False  # devices: {index: (uuid, util, used, total)}
        self.inits = 0

    def nvmlInit(self):
        self.inits += 1
        if self.init_error:
            raise self.init_error

    def nvmlDeviceGetHandleByIndex(self, i):
        if i not in self.devices:
            raise RuntimeError("NVML_ERROR_INVALID_ARGUMENT")
        return i

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return next(i for i, d in self.devices.items() if d[0] == uuid)

    def nvmlDeviceGetUtilizationRates(self, h):
        if self.fail:
            raise RuntimeError("NVML_ERROR_GPU_IS_LOST")
        return types.SimpleNamespace(gpu=self.devices[h][1], memory=0)

    def nvmlDeviceGetMemoryInfo(self, h):
        _, _, used, total = self.devices[h]
        return types.SimpleNamespace(used=used, total=total, free=total - used)


def two_gpus():
    return FakeNvml({0: ("GPU-aaa", 30, 1000 * MIB, 16000 * MIB), 1: ("GPU-bbb", 90, 3000 * MIB, 16000 * MIB)})


def test_the_given_devices_are_sampled_with_averages_and_peaks():
    fake = two_gpus()
    gpus = nvml.GpuUsage(nvml.visible("0,GPU-bbb"), module=fake)
    first = gpus.sample()
    assert first["gpus"] == [{"device": "0", "util_pct": 30.0, "mem_mb": 1000.0, "mem_total_mb": 16000.0},
                             {"device": "GPU-bbb", "util_pct": 90.0, "mem_mb": 3000.0, "mem_total_mb": 16000.0}]
    assert (first["gpu_util_pct"], first["gpu_mem_mb"], first["gpu_mem_total_mb"]) == (60.0, 4000.0, 32000.0)
    fake.devices[0] = ("GPU-aaa", 10, 500 * MIB, 16000 * MIB)
    fake.devices[1] = ("GPU-bbb", 10, 500 * MIB, 16000 * MIB)
    second = gpus.sample()
    assert second["gpu_util_pct"] == 10.0 and second["avg_gpu_util_pct"] == 35.0
    assert second["gpu_mem_mb"] == 1000.0 and second["peak_gpu_mem_mb"] == 4000.0  # the peak stays


def test_only_the_container_s_own_devices():
    gpus = nvml.GpuUsage(nvml.visible("1"), module=two_gpus())
    assert [g["device"] for g in gpus.sample()["gpus"]] == ["1"]
    unknown = nvml.GpuUsage(["0", "7"], module=two_gpus())  # NVML does not know 7: the others still count
    assert [g["device"] for g in unknown.sample()["gpus"]] == ["0"]


@pytest.mark.parametrize("devices, module", [
    ([], two_gpus()),  # no GPU given to the container (CUDA_VISIBLE_DEVICES empty): NVML not even loaded
    (["0"], FakeNvml({}, init_error=RuntimeError("NVML_ERROR_DRIVER_NOT_LOADED"))),  # no driver
    (["3"], two_gpus()),  # a device NVML does not have
])
def test_no_gpu_figures_is_no_fields_and_no_error(devices, module):
    assert nvml.GpuUsage(devices, module=module).sample() == {}


def test_no_pynvml_module_is_no_fields(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError
    assert nvml.load() is None
    assert nvml.GpuUsage(["0"]).sample() == {}


def test_the_pynvml_module_is_found_by_its_name(monkeypatch):
    fake = two_gpus()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert nvml.GpuUsage().sample()["gpu_mem_mb"] == 1000.0 and fake.inits == 1


def test_a_refused_sample_has_no_gpu_fields_and_the_next_one_does():
    fake = two_gpus()
    gpus = nvml.GpuUsage(["0"], module=fake)
    fake.fail = True
    assert gpus.sample() == {}
    fake.fail = False
    assert gpus.sample()["gpu_util_pct"] == 30.0


@pytest.mark.parametrize("value, devices", [(None, []), ("", []), ("-1", []), ("0, 1", ["0", "1"]),
                                            ("GPU-aaa", ["GPU-aaa"])])
def test_visible_devices(monkeypatch, value, devices):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert nvml.visible(value) == devices


def test_a_container_s_report_status_line_and_job_page_show_its_gpus():
    from tfhadoop.trainer.report import render

    report = resources.Usage(gpus=nvml.GpuUsage(["1"], module=two_gpus())).sample()
    assert report["gpu_util_pct"] == 90.0 and report["peak_gpu_mem_mb"] == 3000.0 and "peak_rss_mb" in report
    plain = resources.Usage(gpus=nvml.GpuUsage([], module=two_gpus())).sample()
    assert not [k for k in plain if "gpu" in k], plain
    line = resources.lines({"worker/0": report}, {"worker_memory": "64g"})[0]
    assert "; GPU 1 utilization average 90 %, memory peak 3000 of 16000 MB" in line, line
    assert "GPU" not in resources.lines({"worker/0": plain}, {"worker_memory": "64g"})[0]
    page = render({"app": "a1", "job": {"worker_memory": "64g"}, "samples": [{"resources": {"worker/0": report}}]})
    assert "<td>GPU 1 utilization average 90 %, memory peak 3000 of 16000 MB</td>" in page
