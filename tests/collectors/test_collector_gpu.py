"""gpu collector: NVML through a fake driven by recorded device data, and a fake /sys/bus/pci.

The shapes checked here are those of docs/snapshot-gpu-frameworks.md, written out below so
that a change to either side shows.
"""

from __future__ import annotations

import builtins
import ctypes
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from fakes.nvml import DATA, FakeNVML, data_files, load_device_data

from envcheck.collectors import gpu
from envcheck.collectors.base import CollectContext, run_collector
from envcheck.interpreter import current
from envcheck.snapshot import Facts, Missing, Snapshot

DOC = Path(__file__).resolve().parents[2] / "docs" / "snapshot-gpu-frameworks.md"

GPU_KEYS = {
    "status",
    "reason",
    "nvml_version",
    "driver_version",
    "cuda_driver_version",
    "pci_nvidia_devices",
    "devices",
    "reasons",
}
DEVICE_KEYS = {
    "index",
    "name",
    "pci_bus_id",
    "memory_total_bytes",
    "memory_used_bytes",
    "compute_capability",
    "utilization_gpu_percent",
    "utilization_memory_percent",
    "temperature_c",
    "power_draw_w",
    "power_limit_w",
    "clocks_mhz",
    "pcie",
    "pcie_sampled_under_load",
    "persistence_mode",
    "ecc_mode",
    "clocks_event_reasons",
    "clocks_event_reasons_mask",
    "retired_pages",
    "remapped_rows",
    "mig_mode",
    "processes",
    "reasons",
}
CLOCK_KEYS = {"sm", "mem", "max_sm", "max_mem"}
PCIE_KEYS = {"gen", "max_gen", "width", "max_width", "rx_bytes_per_s", "tx_bytes_per_s"}
RETIRED_KEYS = {"pending", "single_bit", "double_bit"}
REMAPPED_KEYS = {"pending", "failed", "correctable", "uncorrectable"}
MIG_KEYS = {"current", "pending"}
PROCESS_KEYS = {"pid", "used_bytes", "name"}

GIB = 1024**3
NO_SUCH_PID = 2**22 + 12345  # above the largest pid_max Linux allows


def _gpu(machine, fake: Any, timeout: float = 10.0) -> dict[str, Any]:
    return gpu.collect(machine.ctx(), nvml=fake, timeout=timeout)["gpu"]


def _get(device: dict[str, Any], path: str) -> Any:
    node: Any = device
    for key in path.split("."):
        node = node[key]
    return node


def _assert_documented_shape(facts: dict[str, Any]) -> None:
    assert set(facts) == GPU_KEYS
    assert facts["status"] in ("ok", "unavailable")
    assert isinstance(facts["reasons"], dict)
    assert all(isinstance(why, str) and why for why in facts["reasons"].values())
    for index, device in enumerate(facts["devices"]):
        assert set(device) == DEVICE_KEYS, f"device {index}"
        assert device["index"] == index
        assert set(device["clocks_mhz"]) == CLOCK_KEYS
        assert set(device["pcie"]) == PCIE_KEYS
        assert device["pcie_sampled_under_load"] is False
        for name, keys in (
            ("retired_pages", RETIRED_KEYS),
            ("remapped_rows", REMAPPED_KEYS),
            ("mig_mode", MIG_KEYS),
        ):
            assert device[name] is None or set(device[name]) == keys, name
        if device["processes"] is not None:
            assert all(set(p) == PROCESS_KEYS for p in device["processes"])
        # every null has its reason, nested ones under "parent.child"
        for key, value in device.items():
            if value is None:
                assert device["reasons"].get(key), f"device {index}: {key} null without reason"
        for parent in ("clocks_mhz", "pcie", "retired_pages"):
            for key, value in (device[parent] or {}).items():
                if value is None:
                    assert device["reasons"].get(f"{parent}.{key}"), f"{parent}.{key}"
    json.dumps(facts)  # the snapshot is JSON: no NVML structs may leak into it


@pytest.fixture
def fakes() -> Iterator[list[FakeNVML]]:
    """Fakes registered here have their hanging calls released after the test."""
    made: list[FakeNVML] = []
    yield made
    for fake in made:
        fake.release()


def _pci_device(machine, address: str, vendor: str, pci_class: str) -> None:
    machine.sys_file(f"bus/pci/devices/{address}/vendor", vendor + "\n")
    machine.sys_file(f"bus/pci/devices/{address}/class", pci_class + "\n")


def _two_nvidia_gpus(machine) -> None:
    _pci_device(machine, "0000:07:00.0", "0x10de", "0x030200")  # A100: 3D controller
    _pci_device(machine, "0000:01:00.0", "0x10de", "0x030000")  # GeForce: VGA
    _pci_device(machine, "0000:01:00.1", "0x10de", "0x040300")  # its HDMI audio
    _pci_device(machine, "0000:00:02.0", "0x8086", "0x030000")  # Intel iGPU


# -- the recorded machines -----------------------------------------------------------------


@pytest.mark.parametrize("path", data_files(), ids=lambda p: p.stem)
def test_recorded_machine_gives_documented_shape(machine, path: Path) -> None:
    fake = FakeNVML(path)
    facts = _gpu(machine, fake)
    assert facts["status"] == "ok"
    assert facts["reason"] is None
    assert facts["devices"]
    _assert_documented_shape(facts)
    # the recorded data is complete: the only failures are the ones it records
    for device in facts["devices"]:
        assert set(device["reasons"].values()) <= {"not supported"}, device["reasons"]
    assert facts["reasons"] == {"pci_nvidia_devices": facts["reasons"]["pci_nvidia_devices"]}
    assert (fake.initialized, fake.shutdowns) == (1, 1)


def _dgx_device(index: int) -> dict[str, Any]:
    busy = {3: (97, 58, 30 * GIB), 5: (100, 71, 71 * GIB)}
    gpu_util, mem_util, extra = busy.get(index, (0, 0, 0))
    return {
        "name": "NVIDIA A100-SXM4-80GB",
        "pci_bus_id": f"00000000:{['07', '0F', '47', '4E', '87', '90', 'B7', 'BD'][index]}:00.0",
        "memory_total_bytes": 85899345920,
        "memory_used_bytes": 524288000 + extra,
        "compute_capability": "8.0",
        "utilization_gpu_percent": gpu_util,
        "utilization_memory_percent": mem_util,
        "power_limit_w": 400.0,
        "clocks_mhz": {
            "sm": {3: 1410, 5: 1275}.get(index, 210),
            "mem": 1593,
            "max_sm": 1410,
            "max_mem": 1593,
        },
        "persistence_mode": True,
        "ecc_mode": True,
        "clocks_event_reasons": {5: ["sw_power_cap"]}.get(index, []),
        "clocks_event_reasons_mask": {3: 0, 5: 4}.get(index, 1),
        "retired_pages": None,
        "remapped_rows": {"pending": False, "failed": False, "correctable": 0, "uncorrectable": 0},
        "mig_mode": {"current": False, "pending": False},
        "reasons": {"retired_pages": "not supported"},
    }


NOT_SUPPORTED_ON_GEFORCE = {
    "ecc_mode": "not supported",
    "retired_pages": "not supported",
    "remapped_rows": "not supported",
    "mig_mode": "not supported",
}

EXPECTED: dict[str, dict[str, Any]] = {
    "dgx-a100-8gpu": {
        "system": ("12.535.104.05", "535.104.05", "12.2"),
        "devices": [_dgx_device(i) for i in range(8)],
    },
    "workstation-rtx4090": {
        "system": ("12.550.54.14", "550.54.14", "12.4"),
        "devices": [
            {
                "name": "NVIDIA GeForce RTX 4090",
                "compute_capability": "8.9",
                "memory_total_bytes": 25757220864,
                "clocks_mhz": {"sm": 210, "mem": 405, "max_sm": 3120, "max_mem": 10501},
                "pcie": {
                    "gen": 1,
                    "max_gen": 4,
                    "width": 16,
                    "max_width": 16,
                    "rx_bytes_per_s": 1024 * 1024,
                    "tx_bytes_per_s": 512 * 1024,
                },
                "pcie_sampled_under_load": False,
                "power_draw_w": 21.734,
                "power_limit_w": 450.0,
                "persistence_mode": False,
                "ecc_mode": None,
                "retired_pages": None,
                "remapped_rows": None,
                "mig_mode": None,
                "clocks_event_reasons": [],
                "clocks_event_reasons_mask": 1,
                "processes": [],
                "reasons": NOT_SUPPORTED_ON_GEFORCE,
            }
        ],
    },
    "mig-a100": {
        "system": ("12.535.129.03", "535.129.03", "12.2"),
        "devices": [
            {
                "name": "NVIDIA A100-SXM4-40GB",
                "compute_capability": "8.0",
                "mig_mode": {"current": True, "pending": True},
                "utilization_gpu_percent": None,
                "utilization_memory_percent": None,
                "reasons": {
                    "utilization_gpu_percent": "not supported",
                    "utilization_memory_percent": "not supported",
                    "retired_pages": "not supported",
                },
            }
        ],
    },
    "old-driver-v100": {
        "system": ("11.470.199.02", "470.199.02", "11.4"),
        "devices": [
            {
                "name": "Tesla V100-SXM2-16GB",
                "compute_capability": "7.0",
                "memory_total_bytes": 17179869184,
                "pcie": {"gen": 3, "max_gen": 3, "width": 16, "max_width": 16},
                "clocks_event_reasons": [],
                "clocks_event_reasons_mask": 0,
                "retired_pages": {"pending": False, "single_bit": 0, "double_bit": 0},
                "remapped_rows": None,
                "mig_mode": None,
                "processes": [{"pid": 20931, "used_bytes": 2560 * 1024**2}],
                "reasons": {"remapped_rows": "not supported", "mig_mode": "not supported"},
            },
            {
                "name": "Tesla V100-SXM2-16GB",
                "clocks_event_reasons_mask": 1,
                "retired_pages": {"pending": True, "single_bit": 2, "double_bit": 1},
                "remapped_rows": None,
                "processes": [],
                "reasons": {"remapped_rows": "not supported", "mig_mode": "not supported"},
            },
        ],
    },
    "mixed-models": {
        "system": ("12.545.23.06", "545.23.06", "12.3"),
        "devices": [
            {
                "name": "NVIDIA GeForce RTX 3090",
                "compute_capability": "8.6",
                "memory_total_bytes": 25769803776,
                "power_limit_w": 350.0,
                "clocks_mhz": {"max_sm": 2100, "max_mem": 9751},
                "pcie": {"gen": 4, "rx_bytes_per_s": 687000 * 1024},
                "ecc_mode": None,
                "remapped_rows": None,
                "processes": [{"pid": 3127, "used_bytes": 20401094656}],
                "reasons": NOT_SUPPORTED_ON_GEFORCE,
            },
            {
                "name": "NVIDIA RTX A4000",
                "compute_capability": "8.6",
                "memory_total_bytes": 17171480576,
                "power_limit_w": 140.0,
                "clocks_mhz": {"max_sm": 2100, "max_mem": 7001},
                "ecc_mode": False,
                "remapped_rows": {
                    "pending": False,
                    "failed": False,
                    "correctable": 0,
                    "uncorrectable": 0,
                },
                "processes": [{"pid": 3190, "used_bytes": None}],
                "reasons": {"retired_pages": "not supported", "mig_mode": "not supported"},
            },
        ],
    },
}


def _assert_matches(actual: Any, expected: Any, where: str) -> None:
    """Dicts match on the expected keys (a partial expectation); anything else exactly.

    `reasons` mappings are compared whole: an unexpected reason is a failure.
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            assert key in actual, f"{where}.{key} missing"
            if key == "reasons":
                assert actual[key] == value, f"{where}.reasons"
            else:
                _assert_matches(actual[key], value, f"{where}.{key}")
    elif isinstance(expected, list) and isinstance(actual, list):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _assert_matches(a, e, f"{where}[{i}]")
    else:
        assert actual == expected, where


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_machine_facts(machine, name: str) -> None:
    expected = EXPECTED[name]
    facts = _gpu(machine, FakeNVML(name))
    system = (facts["nvml_version"], facts["driver_version"], facts["cuda_driver_version"])
    assert system == expected["system"]
    _assert_matches(facts["devices"], expected["devices"], name)


def test_every_data_file_has_an_expectation() -> None:
    assert {p.stem for p in data_files()} == set(EXPECTED)


@pytest.mark.parametrize("path", data_files(), ids=lambda p: p.stem)
def test_data_files_describe_every_field(path: Path) -> None:
    data = load_device_data(path)
    assert data["description"]
    assert set(data["system"]) == {"nvml_version", "driver_version", "cuda_driver_version"}
    fields = {
        "name",
        "pci_bus_id",
        "memory",
        "compute_capability",
        "utilization",
        "temperature_c",
        "power_usage_mw",
        "power_limit_mw",
        "clocks",
        "max_clocks",
        "pcie",
        "persistence_mode",
        "ecc_mode",
        "clocks_event_reasons",
        "retired_pages",
        "remapped_rows",
        "mig_mode",
        "processes",
    }
    for device in data["devices"]:
        assert set(device) == fields
        assert re.fullmatch(r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]", device["pci_bus_id"])
    assert load_device_data(path.stem) == data


# -- fields NVML will not give ---------------------------------------------------------------

FULLY_SUPPORTED_RETIRED = {"pending": 0, "single_bit": [], "double_bit": []}


@pytest.mark.parametrize(
    ("data_field", "fields"),
    [
        ("name", ["name"]),
        ("pci_bus_id", ["pci_bus_id"]),
        ("memory", ["memory_total_bytes", "memory_used_bytes"]),
        ("compute_capability", ["compute_capability"]),
        ("utilization", ["utilization_gpu_percent", "utilization_memory_percent"]),
        ("temperature_c", ["temperature_c"]),
        ("power_usage_mw", ["power_draw_w"]),
        ("power_limit_mw", ["power_limit_w"]),
        ("clocks.sm", ["clocks_mhz.sm"]),
        ("clocks", ["clocks_mhz.sm", "clocks_mhz.mem"]),
        ("max_clocks.mem", ["clocks_mhz.max_mem"]),
        ("pcie.gen", ["pcie.gen"]),
        ("pcie.max_width", ["pcie.max_width"]),
        ("pcie.rx_kb_per_s", ["pcie.rx_bytes_per_s"]),
        ("pcie", sorted(f"pcie.{key}" for key in PCIE_KEYS)),
        ("persistence_mode", ["persistence_mode"]),
        ("ecc_mode", ["ecc_mode"]),
        ("clocks_event_reasons", ["clocks_event_reasons", "clocks_event_reasons_mask"]),
        ("retired_pages", ["retired_pages"]),
        ("retired_pages.pending", ["retired_pages.pending"]),
        ("retired_pages.double_bit", ["retired_pages.double_bit"]),
        ("remapped_rows", ["remapped_rows"]),
        ("mig_mode", ["mig_mode"]),
        ("processes", ["processes"]),
    ],
)
@pytest.mark.parametrize(
    ("error_name", "reason"),
    [
        ("NotSupported", "not supported"),
        ("GpuIsLost", "GPU is lost"),
        ("NoPermission", "Insufficient Permissions"),
        ("Unknown", "Unknown Error"),
    ],
)
def test_field_failure_is_null_with_reason(
    machine, data_field: str, fields: list[str], error_name: str, reason: str
) -> None:
    fake = FakeNVML("dgx-a100-8gpu").set("retired_pages", FULLY_SUPPORTED_RETIRED)
    fake.raises(data_field, error_name, device=2)
    facts = _gpu(machine, fake)
    assert facts["status"] == "ok"
    _assert_documented_shape(facts)
    device = facts["devices"][2]
    for field in fields:
        assert _get(device, field) is None, field
        assert device["reasons"][field] == reason
    assert set(device["reasons"]) == set(fields)
    # the other devices are untouched
    for other in facts["devices"][:2] + facts["devices"][3:]:
        assert other["reasons"] == {}
        for field in fields:
            assert _get(other, field) is not None


def test_non_nvml_exception_in_a_getter_is_a_reason(machine) -> None:
    fake = FakeNVML("workstation-rtx4090").set("temperature_c", "hot")  # int("hot") fails
    device = _gpu(machine, fake)["devices"][0]
    assert device["temperature_c"] is None
    assert device["reasons"]["temperature_c"].startswith("ValueError: ")


def test_unopenable_device_is_null_and_others_are_read(machine) -> None:
    fake = FakeNVML("dgx-a100-8gpu").raises("handle", "GpuIsLost", device=4)
    facts = _gpu(machine, fake)
    assert facts["status"] == "ok"
    _assert_documented_shape(facts)
    lost = facts["devices"][4]
    assert lost["index"] == 4
    assert lost["name"] is None and lost["processes"] is None
    assert lost["reasons"]["name"] == "cannot open the device: GPU is lost"
    assert lost["clocks_mhz"] == dict.fromkeys(CLOCK_KEYS)
    assert [d["name"] for i, d in enumerate(facts["devices"]) if i != 4] == [
        "NVIDIA A100-SXM4-80GB"
    ] * 7


def test_device_count_failure_leaves_no_devices_with_reason(machine) -> None:
    fake = FakeNVML("dgx-a100-8gpu").function_raises("nvmlDeviceGetCount", "Unknown")
    facts = _gpu(machine, fake)
    assert facts["status"] == "ok"
    assert facts["devices"] == []
    assert facts["reasons"]["devices"] == "Unknown Error"
    assert facts["driver_version"] == "535.104.05"
    assert fake.shutdowns == 1


@pytest.mark.parametrize("field", ["nvml_version", "driver_version", "cuda_driver_version"])
def test_system_field_failure_is_null_with_reason(machine, field: str) -> None:
    fake = FakeNVML("mixed-models").set_system(field, {"$error": "NotSupported"})
    facts = _gpu(machine, fake)
    assert facts["status"] == "ok"
    assert facts[field] is None
    assert facts["reasons"][field] == "not supported"
    assert len(facts["devices"]) == 2


# -- versions, clock event reasons, units ------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "version"),
    [
        (12040, "12.4"),
        (11080, "11.8"),
        (12020, "12.2"),
        (11040, "11.4"),
        (12000, "12.0"),
        (10010, "10.1"),
        (9020, "9.2"),
        (13000, "13.0"),
    ],
)
def test_cuda_driver_version_decoding(machine, value: int, version: str) -> None:
    assert gpu.cuda_version(value) == version
    fake = FakeNVML("workstation-rtx4090").set_system("cuda_driver_version", value)
    assert _gpu(machine, fake)["cuda_driver_version"] == version


@pytest.mark.parametrize("how", ["absent", "function-not-found"])
def test_cuda_version_falls_back_to_unversioned_getter(machine, how: str) -> None:
    fake = FakeNVML("old-driver-v100")
    if how == "absent":
        fake.remove("nvmlSystemGetCudaDriverVersion_v2")
    else:
        fake.function_raises("nvmlSystemGetCudaDriverVersion_v2", "FunctionNotFound")
    facts = _gpu(machine, fake)
    assert facts["cuda_driver_version"] == "11.4"
    assert fake.called("nvmlSystemGetCudaDriverVersion") == 1


def test_cuda_version_v2_is_preferred(machine) -> None:
    fake = FakeNVML("dgx-a100-8gpu")
    _gpu(machine, fake)
    assert fake.called("nvmlSystemGetCudaDriverVersion_v2") == 1
    assert fake.called("nvmlSystemGetCudaDriverVersion") == 0


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0x0, []),
        (0x1, []),
        (0x4, ["sw_power_cap"]),
        (0x5, ["sw_power_cap"]),
        (0x2, ["applications_clocks_setting"]),
        (0x8 | 0x40, ["hw_slowdown", "hw_thermal_slowdown"]),
        (0x10 | 0x20, ["sync_boost", "sw_thermal_slowdown"]),
        (0x80, ["hw_power_brake_slowdown"]),
        (0x100, ["display_clock_setting"]),
        (0x200, ["unknown_0x200"]),
        (0x4 | 0x400, ["sw_power_cap", "unknown_0x400"]),
        (
            0x1FF,
            [
                "applications_clocks_setting",
                "sw_power_cap",
                "hw_slowdown",
                "sync_boost",
                "sw_thermal_slowdown",
                "hw_thermal_slowdown",
                "hw_power_brake_slowdown",
                "display_clock_setting",
            ],
        ),
    ],
)
def test_clock_event_reasons_decoding(machine, mask: int, names: list[str]) -> None:
    assert gpu.clock_event_names(mask) == names
    fake = FakeNVML("workstation-rtx4090").set("clocks_event_reasons", mask)
    device = _gpu(machine, fake)["devices"][0]
    assert device["clocks_event_reasons"] == names
    assert device["clocks_event_reasons_mask"] == mask


@pytest.mark.parametrize("how", ["absent", "function-not-found"])
def test_clock_event_reasons_fall_back_to_throttle_reasons(machine, how: str) -> None:
    fake = FakeNVML("dgx-a100-8gpu")
    if how == "absent":
        fake.remove("nvmlDeviceGetCurrentClocksEventReasons")
    else:
        fake.function_raises("nvmlDeviceGetCurrentClocksEventReasons", "FunctionNotFound")
    devices = _gpu(machine, fake)["devices"]
    assert devices[5]["clocks_event_reasons"] == ["sw_power_cap"]
    assert [d["clocks_event_reasons_mask"] for d in devices] == [1, 1, 1, 0, 1, 4, 1, 1]
    assert fake.called("nvmlDeviceGetCurrentClocksThrottleReasons") == 8


def test_clock_event_reasons_other_errors_do_not_fall_back(machine) -> None:
    fake = FakeNVML("workstation-rtx4090").not_supported("clocks_event_reasons")
    device = _gpu(machine, fake)["devices"][0]
    assert device["clocks_event_reasons"] is None
    assert device["reasons"]["clocks_event_reasons_mask"] == "not supported"
    assert fake.called("nvmlDeviceGetCurrentClocksThrottleReasons") == 0


def test_clock_event_reasons_with_neither_getter(machine) -> None:
    fake = FakeNVML("workstation-rtx4090")
    fake.remove("nvmlDeviceGetCurrentClocksEventReasons")
    fake.remove("nvmlDeviceGetCurrentClocksThrottleReasons")
    device = _gpu(machine, fake)["devices"][0]
    assert device["clocks_event_reasons"] is None
    assert device["clocks_event_reasons_mask"] is None
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in device["reasons"]["clocks_event_reasons"]


def test_bytes_strings_are_decoded(machine) -> None:
    """Older pynvml returns bytes for names, versions and bus ids."""
    fake = FakeNVML("mixed-models", strings_as_bytes=True)
    facts = _gpu(machine, fake)
    assert facts["nvml_version"] == "12.545.23.06"
    assert facts["driver_version"] == "545.23.06"
    assert [d["name"] for d in facts["devices"]] == [
        "NVIDIA GeForce RTX 3090",
        "NVIDIA RTX A4000",
    ]
    assert [d["pci_bus_id"] for d in facts["devices"]] == ["00000000:01:00.0", "00000000:21:00.0"]
    json.dumps(facts)


def test_power_is_watts_and_pcie_throughput_bytes_per_second(machine) -> None:
    device = _gpu(machine, FakeNVML("dgx-a100-8gpu"))["devices"][5]
    assert device["power_draw_w"] == pytest.approx(398.733)
    assert device["power_limit_w"] == 400.0
    assert device["pcie"]["rx_bytes_per_s"] == 1250000 * 1024
    assert device["pcie"]["tx_bytes_per_s"] == 220000 * 1024
    assert device["pcie_sampled_under_load"] is False


# -- processes ----------------------------------------------------------------------------------


def test_own_pid_is_excluded_and_names_resolved(machine) -> None:
    parent = os.getppid()
    processes = [
        {"pid": os.getpid(), "used_gpu_memory": 1 * GIB},
        {"pid": parent, "used_gpu_memory": 2 * GIB},
        {"pid": NO_SUCH_PID, "used_gpu_memory": None},
    ]
    fake = FakeNVML("workstation-rtx4090").set("processes", processes)
    device = _gpu(machine, fake)["devices"][0]
    assert device["processes"] == [
        {"pid": parent, "used_bytes": 2 * GIB, "name": psutil.Process(parent).name()},
        {"pid": NO_SUCH_PID, "used_bytes": None, "name": None},
    ]


@pytest.mark.parametrize(
    ("configure", "expected"),
    [
        pytest.param(
            lambda f: f.function_raises("nvmlDeviceGetComputeRunningProcesses", "LibraryMismatch"),
            "ok",
            id="library-mismatch-falls-back-to-v2",
        ),
        pytest.param(
            lambda f: f.function_raises("nvmlDeviceGetComputeRunningProcesses", "FunctionNotFound"),
            "ok",
            id="function-not-found-falls-back-to-v2",
        ),
        pytest.param(
            lambda f: f.remove("nvmlDeviceGetComputeRunningProcesses"),
            "ok",
            id="absent-falls-back-to-v2",
        ),
        pytest.param(
            lambda f: f.function_raises("nvmlDeviceGetComputeRunningProcesses", "NoPermission"),
            "Insufficient Permissions",
            id="other-error-is-the-reason",
        ),
        pytest.param(
            lambda f: (
                f.function_raises("nvmlDeviceGetComputeRunningProcesses", "LibraryMismatch"),
                f.remove("nvmlDeviceGetComputeRunningProcesses_v2"),
            ),
            "AttributeError: ",
            id="neither-getter",
        ),
    ],
)
def test_process_getter_fallback(machine, configure, expected: str) -> None:
    fake = FakeNVML("mixed-models")
    configure(fake)
    device = _gpu(machine, fake)["devices"][0]
    if expected == "ok":
        assert [p["pid"] for p in device["processes"]] == [3127]
        assert "processes" not in device["reasons"]
    else:
        assert device["processes"] is None
        assert device["reasons"]["processes"].startswith(expected)


# -- when NVML cannot be used --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("init_error", "reason"),
    [
        ("LibraryNotFound", "NVML library not found: no NVIDIA driver installed"),
        ("DriverNotLoaded", "NVIDIA driver not loaded"),
        ("NoPermission", "no permission to use the NVIDIA device files"),
        ("LibRmVersionMismatch", "NVML and the NVIDIA kernel module differ in version"),
        ("GpuIsLost", "a GPU has fallen off the bus"),
        ("Unknown", "NVML failed to initialise: Unknown Error"),
        ("Uninitialized", "NVML failed to initialise: Uninitialized"),
    ],
)
def test_init_failure_is_unavailable_with_pci_count(machine, init_error: str, reason: str) -> None:
    _two_nvidia_gpus(machine)
    fake = FakeNVML("dgx-a100-8gpu", init_error=init_error)
    facts = _gpu(machine, fake)
    _assert_documented_shape(facts)
    assert facts["status"] == "unavailable"
    assert facts["reason"].startswith(reason)
    assert facts["devices"] == []
    assert facts["pci_nvidia_devices"] == 2
    for field in ("nvml_version", "driver_version", "cuda_driver_version"):
        assert facts[field] is None
        assert facts["reasons"][field] == facts["reason"]
    assert fake.shutdowns == 0


def test_init_raising_a_non_nvml_error_is_unavailable(machine) -> None:
    fake = FakeNVML("dgx-a100-8gpu")

    def init() -> None:
        raise OSError("libnvidia-ml.so.1: bad ELF")

    fake.nvmlInit = init  # type: ignore[method-assign]
    facts = _gpu(machine, fake)
    assert facts["status"] == "unavailable"
    assert facts["reason"] == "NVML failed to initialise: OSError: libnvidia-ml.so.1: bad ELF"


def test_shutdown_failure_changes_nothing(machine) -> None:
    fake = FakeNVML("mig-a100").function_raises("nvmlShutdown", "Unknown")
    facts = _gpu(machine, fake)
    assert facts["status"] == "ok"
    assert facts["devices"][0]["mig_mode"] == {"current": True, "pending": True}
    assert fake.called("nvmlShutdown") == 1


@pytest.mark.parametrize(
    "function",
    ["nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetTemperature", "nvmlShutdown"],
)
def test_hanging_driver_is_unavailable_after_timeout(machine, fakes, function: str) -> None:
    _two_nvidia_gpus(machine)
    fake = FakeNVML("dgx-a100-8gpu").hang(function, seconds=60)
    fakes.append(fake)
    facts = _gpu(machine, fake, timeout=0.2)
    _assert_documented_shape(facts)
    assert facts["status"] == "unavailable"
    assert facts["reason"] == "NVML did not answer within 0.2 s (driver hung?)"
    assert facts["devices"] == []
    assert facts["pci_nvidia_devices"] == 2


def test_pynvml_not_installed_is_unavailable(machine, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    facts = _gpu(machine, None)
    _assert_documented_shape(facts)
    assert facts["status"] == "unavailable"
    assert "nvidia-ml-py" in facts["reason"]
    assert facts["devices"] == []


def test_pynvml_failing_to_import_is_unavailable(machine, monkeypatch) -> None:
    real_import = builtins.__import__

    def broken_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pynvml":
            raise RuntimeError("ctypes is broken")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.setattr(builtins, "__import__", broken_import)
    facts = _gpu(machine, None)
    assert facts["status"] == "unavailable"
    assert facts["reason"] == "pynvml failed to import: RuntimeError: ctypes is broken"


# -- /sys/bus/pci ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("devices", "count"),
    [
        ([], 0),
        ([("0000:07:00.0", "0x10de", "0x030200")], 1),
        ([("0000:01:00.0", "0x10de", "0x030000"), ("0000:01:00.1", "0x10de", "0x040300")], 1),
        ([(f"0000:{b:02x}:00.0", "0x10de", "0x030200") for b in range(8)], 8),
        ([("0000:c1:00.0", "0x10de", "0x068000")], 0),  # NVSwitch: a bridge, not a GPU
        ([("0000:00:02.0", "0x8086", "0x030000")], 0),  # Intel graphics
        ([("0000:03:00.0", "0x1002", "0x030000")], 0),  # AMD
        ([("0000:65:00.0", "0x10DE", "0x030200")], 1),  # case does not matter
        ([("0000:65:00.0", "0x10de", "")], 0),
    ],
    ids=[
        "no-devices",
        "one-3d-controller",
        "vga-with-audio",
        "eight",
        "nvswitch",
        "intel",
        "amd",
        "upper-case",
        "no-class",
    ],
)
def test_pci_nvidia_devices(machine, devices: list[tuple[str, str, str]], count: int) -> None:
    (machine.sys / "bus/pci/devices").mkdir(parents=True)
    for address, vendor, pci_class in devices:
        _pci_device(machine, address, vendor, pci_class)
    facts = _gpu(machine, FakeNVML("dgx-a100-8gpu", init_error="DriverNotLoaded"))
    assert facts["pci_nvidia_devices"] == count
    assert "pci_nvidia_devices" not in facts["reasons"]


def test_no_sys_bus_pci_is_null_with_reason(machine) -> None:
    facts = _gpu(machine, FakeNVML("workstation-rtx4090"))
    assert facts["status"] == "ok"
    assert facts["pci_nvidia_devices"] is None
    assert "bus/pci/devices" in facts["reasons"]["pci_nvidia_devices"]


# -- with the rest of envcheck ---------------------------------------------------------------------


def test_runs_under_run_collector(machine) -> None:
    fake = FakeNVML("dgx-a100-8gpu")
    outcome = run_collector("gpu", lambda ctx: gpu.collect(ctx, nvml=fake), machine.ctx())
    assert outcome.status == "ok"
    assert len(outcome.sections["gpu"]["devices"]) == 8


def test_unavailable_facts_are_missing_with_the_reason(machine) -> None:
    _two_nvidia_gpus(machine)
    section = gpu.collect(machine.ctx(), nvml=FakeNVML("dgx-a100-8gpu", init_error="Unknown"))
    facts = Facts(Snapshot.from_dict({"schema_version": 1, "collectors": {}, **section}))
    driver = facts.lookup("gpu.driver_version")
    assert isinstance(driver, Missing)
    assert "NVML failed to initialise" in driver.reason
    assert facts.lookup("gpu.pci_nvidia_devices") == 2
    assert facts.lookup("gpu.status") == "unavailable"


def test_doc_lists_the_keys_produced() -> None:
    """The gpu block of docs/snapshot-gpu-frameworks.md names exactly these keys.

    Its top level does not list `reasons`: the doc's general rule ("its reason sits in the
    nearest reasons mapping") puts the reasons for pci_nvidia_devices and the versions there.
    """
    if not DOC.exists():
        pytest.skip(f"{DOC} is not in this checkout")
    text = DOC.read_text(encoding="utf-8")
    block = text.split("\ngpu:\n", 1)[1].split("```", 1)[0]
    top = set(re.findall(r"^  (\w+):", block, flags=re.M))
    device = set(re.findall(r"^    (\w+):", block, flags=re.M))
    assert top == GPU_KEYS - {"reasons"}
    assert device == DEVICE_KEYS
    assert set(gpu.DEVICE_FIELDS) == DEVICE_KEYS


def test_fake_mirrors_pynvml() -> None:
    pynvml = pytest.importorskip("pynvml")
    fake = FakeNVML("dgx-a100-8gpu")
    for name in dir(FakeNVML):
        if name.startswith("NVMLError"):
            real, mirrored = getattr(pynvml, name), getattr(fake, name)
            assert issubclass(real, pynvml.NVMLError), name
            if name != "NVMLError":
                assert real().value == mirrored.value, name
                assert str(real()) == str(mirrored()), name
        elif name.startswith("NVML_"):
            assert getattr(pynvml, name) == getattr(fake, name), name
        elif name.startswith("nvml"):
            assert callable(getattr(pynvml, name)), name
    assert fake.NVMLLibraryMismatchError.__name__ in dir(pynvml)


# -- the real pynvml on this machine -------------------------------------------------------------


def _has_nvml_library() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def test_real_pynvml_never_raises() -> None:
    facts = gpu.collect(CollectContext(interpreter=current()), timeout=30)["gpu"]
    _assert_documented_shape(facts)
    if facts["status"] == "unavailable":
        assert isinstance(facts["reason"], str) and facts["reason"]
    else:
        assert facts["reason"] is None


@pytest.mark.skipif(_has_nvml_library(), reason="this machine has an NVIDIA driver")
def test_real_pynvml_without_driver_is_unavailable() -> None:
    pytest.importorskip("pynvml")
    facts = gpu.collect(CollectContext(interpreter=current()))["gpu"]
    assert facts["status"] == "unavailable"
    assert facts["reason"].startswith("NVML library not found: no NVIDIA driver installed")
    assert facts["devices"] == []
    assert facts["pci_nvidia_devices"] == 0 or facts["pci_nvidia_devices"] is None


def test_data_folder_is_the_fakes_own() -> None:
    assert DATA.is_dir() and len(data_files()) == 5
