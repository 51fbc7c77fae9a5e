"""The probe's sampler against a recorded NVML machine (fake) and fake CPU counters."""

from __future__ import annotations

import time

from fakes.nvml import DATA, FakeNVML

from envcheck.probe.sampler import Sampler
from envcheck.probe.session import probed_gpu_index


def _sampler(nvml: FakeNVML | None, **kw: object) -> Sampler:
    return Sampler(nvml=nvml, gpu_index=0 if nvml else None, cpu_percent=lambda: [50.0, 25.0], **kw)


def _initialised(name: str) -> FakeNVML:
    nvml = FakeNVML(DATA / name)
    nvml.nvmlInit()
    return nvml


def test_samples_gpu_and_cpu_fields_at_the_interval() -> None:
    nvml = _initialised("workstation-rtx4090.json")
    nvml.set("utilization.gpu", 97).set("pcie.gen", 4).set("clocks_event_reasons", 0x20)
    sampler = _sampler(nvml, interval=0.01)
    sampler.start()
    sampler.phase = "end_to_end"
    time.sleep(0.15)
    sampler.stop()
    assert len(sampler.samples) >= 3
    point = sampler.samples[-1]
    assert point["gpu_util"] == 97
    assert point["gpu_mem_bytes"] == 354418688
    assert point["sm_clock_mhz"] == 210
    assert point["pcie_rx_bps"] == 1024 * 1024 and point["pcie_tx_bps"] == 512 * 1024
    assert point["cpu_util"] == [50.0, 25.0]
    load = sampler.under_load
    assert load["gen"] == 4 and load["max_gen"] == 4 and load["width"] == 16
    assert load["clocks_event_reasons"] == ["sw_thermal_slowdown"]
    summary = sampler.summary()
    assert summary["gpu_index"] == 0 and summary["samples"] == len(sampler.samples)
    assert 0 <= summary["overhead_core_share"] < 1


def test_unsupported_fields_are_null_not_lost_samples() -> None:
    nvml = _initialised("workstation-rtx4090.json")
    nvml.not_supported("utilization").function_raises("nvmlDeviceGetPcieThroughput", "NotSupported")
    sampler = _sampler(nvml, interval=0.01)
    sampler.start()
    time.sleep(0.05)
    sampler.stop()
    point = sampler.samples[-1]
    assert point["gpu_util"] is None and point["pcie_rx_bps"] is None
    assert point["gpu_mem_bytes"] == 354418688


def test_older_drivers_answer_through_the_throttle_api() -> None:
    nvml = _initialised("workstation-rtx4090.json")
    nvml.remove("nvmlDeviceGetCurrentClocksEventReasons").set("clocks_event_reasons", 0x4)
    sampler = _sampler(nvml, interval=0.01)
    sampler.start()
    time.sleep(0.05)
    sampler.stop()
    assert sampler.under_load["clocks_event_reasons"] == ["sw_power_cap"]


def test_without_nvml_only_cpu_is_sampled_and_the_reason_kept() -> None:
    sampler = _sampler(None, interval=0.01, nvml_reason="NVML unavailable: no driver")
    sampler.start()
    time.sleep(0.05)
    sampler.stop()
    assert sampler.samples and all(p["gpu_util"] is None for p in sampler.samples)
    assert sampler.summary()["gpu_reason"] == "NVML unavailable: no driver"
    assert sampler.under_load == {}


def test_a_bad_gpu_index_is_a_reason_not_a_crash() -> None:
    nvml = _initialised("workstation-rtx4090.json")
    sampler = Sampler(nvml=nvml, gpu_index=3, interval=0.01, cpu_percent=lambda: [1.0])
    sampler.start()
    time.sleep(0.03)
    sampler.stop()
    assert "GPU 3" in (sampler.summary()["gpu_reason"] or "")


def test_cuda_visible_devices_picks_the_sampled_gpu() -> None:
    assert probed_gpu_index({}) == 0
    assert probed_gpu_index({"CUDA_VISIBLE_DEVICES": "3,1"}) == 3
    assert probed_gpu_index({"CUDA_VISIBLE_DEVICES": "GPU-8f2e-uuid"}) == 0
