"""The NVML recorder (tests/fakes/record_nvml.py), with the fake standing in for the real
library: whatever a machine answers, the recording must replay to the same collector
section and sampler reading, and a replay that differs must be reported, not hidden."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes import record_nvml
from fakes.nvml import ERROR_KEY, FakeNVML, NVMLError, data_files, load_device_data

VARIANTS: dict[str, Callable[[FakeNVML], FakeNVML]] = {
    "as recorded": lambda f: f,
    "ecc not supported": lambda f: f.not_supported("ecc_mode"),
    "sm clock not supported": lambda f: f.not_supported("clocks.sm"),
    "no permission for processes": lambda f: f.function_raises(
        "nvmlDeviceGetComputeRunningProcesses", "NoPermission"
    ),
    "process getter mismatched, _v2 answers": lambda f: f.function_raises(
        "nvmlDeviceGetComputeRunningProcesses", "LibraryMismatch"
    ),
    "driver without _v2 cuda version": lambda f: f.function_raises(
        "nvmlSystemGetCudaDriverVersion_v2", "FunctionNotFound"
    ),
    "old pynvml without event reasons": lambda f: f.remove(
        "nvmlDeviceGetCurrentClocksEventReasons"
    ),
    "strings as bytes": lambda f: f.__class__(f.data, strings_as_bytes=True),
    "device count fails": lambda f: f.function_raises("nvmlDeviceGetCount", "Unknown"),
    "one device lost": lambda f: f.raises("handle", "GpuIsLost", device=0),
    "driver not loaded": lambda f: f.__class__(f.data, init_error="DriverNotLoaded"),
}


@pytest.mark.parametrize("machine", [path.stem for path in data_files()])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_replay_of_a_recording_is_identical(machine: str, variant: str) -> None:
    real = VARIANTS[variant](FakeNVML(machine))
    recording = record_nvml.record(real)
    assert recording["fidelity"]["collector"] == []
    assert recording["fidelity"].get("sampler", []) == []
    assert recording["unmodelled_functions"] == []
    json.dumps(recording["data"])  # the data is plain JSON, as nvml_data/*.json


def test_recording_holds_the_values_the_machine_answered() -> None:
    original = load_device_data("old-driver-v100")
    data = record_nvml.record(FakeNVML(original))["data"]
    assert data["system"] == {
        key: original["system"][key]
        for key in ("nvml_version", "driver_version", "cuda_driver_version")
    }
    for recorded, device in zip(data["devices"], original["devices"], strict=True):
        for key, value in recorded.items():
            if key == "processes":  # the recording adds the MIG instance ids NVML answers
                value = [{k: p[k] for k in ("pid", "used_gpu_memory")} for p in value]
            assert value == device[key], key


def test_errors_missing_functions_and_bytes_are_recorded() -> None:
    real = (
        FakeNVML("mixed-models", strings_as_bytes=True)
        .not_supported("remapped_rows")
        .remove("nvmlDeviceGetCurrentClocksEventReasons")
        .function_raises("nvmlSystemGetCudaDriverVersion_v2", "FunctionNotFound")
    )
    data = record_nvml.record(real)["data"]
    assert data["devices"][0]["remapped_rows"] == {ERROR_KEY: "NotSupported"}
    assert data["missing_functions"] == ["nvmlDeviceGetCurrentClocksEventReasons"]
    assert data["function_errors"] == {"nvmlSystemGetCudaDriverVersion_v2": "FunctionNotFound"}
    assert data["strings_as_bytes"] is True
    assert FakeNVML(data).strings_as_bytes and "nvmlDeviceGetCurrentClocksEventReasons" in (
        FakeNVML(data).missing
    )


def test_init_failure_is_recorded() -> None:
    recording = record_nvml.record(FakeNVML("mig-a100", init_error="NoPermission"))
    assert recording["data"]["init_error"] == "NoPermission"
    assert recording["gpu"]["status"] == "unavailable"
    assert "sampler" not in recording["fidelity"]


class NVMLError_ArgumentVersionMismatch(NVMLError):
    """An error of a newer NVML (return code 25) that the fake has no class for."""

    value, text = 25, "Argument version mismatch"


class _NewerLibrary(FakeNVML):
    """A 'real' library that fails a call with an error the fake cannot raise."""

    NVMLError_ArgumentVersionMismatch = NVMLError_ArgumentVersionMismatch

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
        self._enter("nvmlDeviceGetMemoryInfo", (handle,))
        raise NVMLError_ArgumentVersionMismatch()


def test_a_replay_that_differs_is_reported(tmp_path: Path) -> None:
    recording = record_nvml.record(_NewerLibrary("workstation-rtx4090"))
    assert recording["data"]["devices"][0]["memory"] == {ERROR_KEY: "Unknown"}
    assert recording["fidelity"]["collector"] == [
        f"devices[0].reasons.{field}: 'Argument version mismatch' != 'Unknown Error'"
        for field in ("memory_total_bytes", "memory_used_bytes")
    ]
    assert recording["observed"]["nvmlDeviceGetMemoryInfo"] == {
        "error": "NVMLError_ArgumentVersionMismatch: Argument version mismatch"
    }


def test_functions_without_a_field_are_listed() -> None:
    class Extra(FakeNVML):
        def nvmlDeviceGetBrand(self, handle: Any) -> int:
            return 2

    spy = record_nvml.SpyNVML(Extra("mig-a100"))
    spy.nvmlInit()
    handle = spy.nvmlDeviceGetHandleByIndex(0)
    spy.nvmlDeviceGetBrand(handle)
    assert record_nvml.unmodelled(spy) == ["nvmlDeviceGetBrand"]
    assert record_nvml.observed(spy)["nvmlDeviceGetBrand"] == {"type": "int"}


def test_differences_names_the_path() -> None:
    real = {"a": [{"b": 1}, {"c": "x"}], "d": 1}
    assert record_nvml.differences(real, {"a": [{"b": 1}, {"c": "y"}], "d": 1.0}) == [
        "a[1].c: 'x' != 'y'",
        "d: 1 != 1.0",
    ]
    assert record_nvml.differences({"a": 1}, {}) == ["a: 1 != '<absent>'"]


def test_main_without_pynvml_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)
    assert record_nvml.main(["-o", str(tmp_path / "r.json")]) == 2
    assert "pynvml cannot be imported" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_main_on_this_machine_writes_a_recording_or_says_why(tmp_path: Path, capsys: Any) -> None:
    """The real pynvml: with a driver the replay must be identical (exit 0); without one
    the recording still says why NVML is unavailable (exit 2)."""
    pytest.importorskip("pynvml")
    out = tmp_path / "recording.json"
    code = record_nvml.main(["-o", str(out)])
    recording = json.loads(out.read_text(encoding="utf-8"))
    if recording["gpu"]["status"] == "ok":
        assert code == 0, capsys.readouterr().out
    else:
        assert code == 2
        assert "NVML unavailable" in capsys.readouterr().err
