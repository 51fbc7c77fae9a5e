"""Record what a real NVML answers to envcheck, as data for the fake, and check the fake.

    python tests/fakes/record_nvml.py -o nvml-recording.json     # on a machine with a GPU

Why: every GPU rule is tested against `FakeNVML`, so the fake must answer as the real
library does. This wraps the real `pynvml` module in a spy, runs envcheck's gpu collector
and one probe-sampler reading through it, and turns every call and answer (values,
errors, functions the library lacks) into device data in the fake's format
(nvml_data/*.json). Then it replays that data through `FakeNVML` and runs the same code
again: what the collector and the sampler report must be identical. Any difference is
something the real NVML does that the fake does not model; it is listed under
`fidelity`, beside the result types and struct fields the real library returned
(`observed`), so the fake can be fixed.

The recording holds no UUIDs or serial numbers (envcheck never asks for them); PCI bus
ids and process ids remain. Exit status: 0 when the replay matched, 1 when it did not,
2 when NVML could not be used at all.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):  # run as a script: make `fakes` and `envcheck` importable
    sys.path[:0] = [str(HERE.parent), str(HERE.parent.parent)]

from envcheck.collectors import gpu  # noqa: E402
from envcheck.collectors.base import CollectContext  # noqa: E402
from envcheck.interpreter import current  # noqa: E402
from envcheck.probe.sampler import Sampler  # noqa: E402
from fakes.nvml import ERROR_CLASSES, ERROR_KEY, FakeNVML  # noqa: E402

# Fields a function answers, in the fake's data: a device field (dotted) or "system.<f>".
# Functions that take a selector (a clock, a counter, a cause) map each selector to a field.
SYSTEM_FIELDS = {
    "nvmlSystemGetNVMLVersion": "nvml_version",
    "nvmlSystemGetDriverVersion": "driver_version",
    "nvmlSystemGetCudaDriverVersion": "cuda_driver_version",
    "nvmlSystemGetCudaDriverVersion_v2": "cuda_driver_version",
}
DEVICE_FIELDS = {
    "nvmlDeviceGetName": "name",
    "nvmlDeviceGetPciInfo": "pci_bus_id",
    "nvmlDeviceGetMemoryInfo": "memory",
    "nvmlDeviceGetCudaComputeCapability": "compute_capability",
    "nvmlDeviceGetUtilizationRates": "utilization",
    "nvmlDeviceGetTemperature": "temperature_c",
    "nvmlDeviceGetPowerUsage": "power_usage_mw",
    "nvmlDeviceGetEnforcedPowerLimit": "power_limit_mw",
    "nvmlDeviceGetCurrPcieLinkGeneration": "pcie.gen",
    "nvmlDeviceGetMaxPcieLinkGeneration": "pcie.max_gen",
    "nvmlDeviceGetCurrPcieLinkWidth": "pcie.width",
    "nvmlDeviceGetMaxPcieLinkWidth": "pcie.max_width",
    "nvmlDeviceGetPersistenceMode": "persistence_mode",
    "nvmlDeviceGetEccMode": "ecc_mode",
    "nvmlDeviceGetCurrentClocksEventReasons": "clocks_event_reasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons": "clocks_event_reasons",
    "nvmlDeviceGetRetiredPagesPendingStatus": "retired_pages.pending",
    "nvmlDeviceGetRemappedRows": "remapped_rows",
    "nvmlDeviceGetMigMode": "mig_mode",
    "nvmlDeviceGetComputeRunningProcesses": "processes",
    "nvmlDeviceGetComputeRunningProcesses_v2": "processes",
}
SELECTED_FIELDS: dict[str, Callable[[Any, int], str]] = {
    "nvmlDeviceGetClockInfo": lambda nvml, clock: f"clocks.{_clock(nvml, clock)}",
    "nvmlDeviceGetMaxClockInfo": lambda nvml, clock: f"max_clocks.{_clock(nvml, clock)}",
    "nvmlDeviceGetPcieThroughput": lambda nvml, counter: (
        "pcie." + ("rx_kb_per_s" if counter == nvml.NVML_PCIE_UTIL_RX_BYTES else "tx_kb_per_s")
    ),
    "nvmlDeviceGetRetiredPages": lambda nvml, cause: (
        "retired_pages."
        + (
            "double_bit"
            if cause == nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
            else "single_bit"
        )
    ),
}
# Fields more than one function answers: a function failing while another answers the
# same field is a per-function error (`function_errors`), not a field error.
SHARED = {"cuda_driver_version", "clocks_event_reasons", "processes"}
NOT_RECORDED = {"nvmlInit", "nvmlShutdown", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex"}


def _clock(nvml: Any, clock: int) -> str:
    return "sm" if clock == nvml.NVML_CLOCK_SM else "mem"


@dataclass
class Call:
    function: str
    device: Optional[int]  # the device index a handle argument stood for
    selector: Optional[int]  # a second argument (a clock, a counter, a cause)
    result: Any = None
    error: Optional[BaseException] = None


@dataclass
class SpyNVML:
    """The real module, with every nvml* call and its answer recorded."""

    module: Any
    calls: list[Call] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)
    handles: list[tuple[Any, int]] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        try:
            value = getattr(self.module, name)
        except AttributeError:
            if name.startswith("nvml"):
                self.missing.add(name)
            raise
        if not (name.startswith("nvml") and callable(value)):
            return value

        def spy(*args: Any) -> Any:
            device = self._device_of(args[0]) if args else None
            selector = args[1] if len(args) > 1 else None
            if name == "nvmlDeviceGetHandleByIndex":
                device = args[0]
            call = Call(name, device, selector)
            self.calls.append(call)
            try:
                call.result = value(*args)
            except BaseException as exc:
                call.error = exc
                raise
            if name == "nvmlDeviceGetHandleByIndex":
                self.handles.append((call.result, args[0]))
            return call.result

        return spy

    def _device_of(self, argument: Any) -> Optional[int]:
        for handle, index in self.handles:
            if handle is argument:
                return index
        return None


# -- turning calls into the fake's data ---------------------------------------------------


def error_suffix(exc: BaseException) -> str:
    """The fake's name for an error: the suffix of its NVMLError_<suffix> class."""
    name = type(exc).__name__
    if name == "NVMLLibraryMismatchError":
        return "LibraryMismatch"
    suffix = name.removeprefix("NVMLError_")
    return suffix if suffix in ERROR_CLASSES else "Unknown"


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def as_data(function: str, result: Any) -> Any:
    """A real answer in the fake's representation (see fakes/nvml.py)."""
    if function in ("nvmlSystemGetNVMLVersion", "nvmlSystemGetDriverVersion", "nvmlDeviceGetName"):
        return _text(result)
    if function == "nvmlDeviceGetPciInfo":
        return _text(result.busId)
    if function == "nvmlDeviceGetMemoryInfo":
        return {"total": int(result.total), "free": int(result.free), "used": int(result.used)}
    if function == "nvmlDeviceGetUtilizationRates":
        return {"gpu": int(result.gpu), "memory": int(result.memory)}
    if function in ("nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetEccMode"):
        return [int(value) for value in result]
    if function in ("nvmlDeviceGetMigMode", "nvmlDeviceGetRemappedRows"):
        return [int(value) for value in result]
    if function == "nvmlDeviceGetRetiredPages":
        return [int(value) for value in result]
    if function.startswith("nvmlDeviceGetComputeRunningProcesses"):
        return [_process(process) for process in result]
    return int(result)


def _process(process: Any) -> dict[str, Any]:
    found = {"pid": int(process.pid), "used_gpu_memory": process.usedGpuMemory}
    for name, key in (
        ("gpuInstanceId", "gpu_instance_id"),
        ("computeInstanceId", "compute_instance_id"),
    ):
        if hasattr(process, name):
            found[key] = int(getattr(process, name))
    return found


def to_fake_data(spy: SpyNVML) -> dict[str, Any]:
    """The fake's device data for everything the spy saw; the last answer of a field wins."""
    data: dict[str, Any] = {"system": {}, "devices": [], "function_errors": {}}
    answered: set[tuple[Optional[int], str]] = set()
    failed: list[tuple[str, tuple[Optional[int], str], str]] = []  # function, where, error
    count = max(
        (c.device + 1 for c in spy.calls if c.function == "nvmlDeviceGetHandleByIndex"),
        default=0,
    )
    for call in spy.calls:
        if call.function == "nvmlDeviceGetCount" and call.error is None:
            count = max(count, int(call.result))
    data["devices"] = [{} for _ in range(count)]
    for call in spy.calls:
        if call.function == "nvmlInit" and call.error is not None:
            data["init_error"] = error_suffix(call.error)
        if call.function == "nvmlDeviceGetCount" and call.error is not None:
            data["function_errors"][call.function] = error_suffix(call.error)
        if call.function == "nvmlDeviceGetHandleByIndex" and call.error is not None:
            data["devices"][call.device]["handle"] = {ERROR_KEY: error_suffix(call.error)}
        where = _field_of(spy, call)
        if where is None:
            continue
        if call.error is not None:
            failed.append((call.function, where, error_suffix(call.error)))
            continue
        node = data["system"] if where[0] is None else data["devices"][where[0]]
        _set(node, where[1], as_data(call.function, call.result))
        answered.add(where)
    for function, (device, name), suffix in failed:
        if name in SHARED:
            data["function_errors"][function] = suffix
        elif (device, name) not in answered:
            node = data["system"] if device is None else data["devices"][device]
            _set(node, name, {ERROR_KEY: suffix})
    if spy.missing:
        data["missing_functions"] = sorted(spy.missing)
    if any(isinstance(call.result, bytes) for call in spy.calls):
        data["strings_as_bytes"] = True
    if not data["function_errors"]:
        del data["function_errors"]
    return data


def _field_of(spy: SpyNVML, call: Call) -> Optional[tuple[Optional[int], str]]:
    """(device index or None for the system, field) that a call answers."""
    if call.function in SYSTEM_FIELDS:
        return None, SYSTEM_FIELDS[call.function]
    if call.device is None:
        return None
    if call.function in DEVICE_FIELDS:
        return call.device, DEVICE_FIELDS[call.function]
    if call.function in SELECTED_FIELDS and call.selector is not None:
        return call.device, SELECTED_FIELDS[call.function](spy.module, call.selector)
    return None


def _set(node: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def observed(spy: SpyNVML) -> dict[str, Any]:
    """Per function, the type the real library answered with and a struct's fields."""
    found: dict[str, Any] = {}
    for call in spy.calls:
        entry: dict[str, Any] = {}
        if call.error is not None:
            entry["error"] = f"{type(call.error).__name__}: {call.error}"
        else:
            result = call.result
            item = result[0] if isinstance(result, list) and result else result
            entry["type"] = type(result).__name__
            fields = getattr(type(item), "_fields_", None)
            if fields:
                entry["fields"] = [name for name, *_ in fields]
        found.setdefault(call.function, entry)
    return found


def unmodelled(spy: SpyNVML) -> list[str]:
    """Functions envcheck called that the fake has no data field for."""
    known = {*SYSTEM_FIELDS, *DEVICE_FIELDS, *SELECTED_FIELDS, *NOT_RECORDED}
    return sorted({call.function for call in spy.calls} - known)


# -- running envcheck's readers on both ----------------------------------------------------


def collector_section(nvml: Any) -> dict[str, Any]:
    section: dict[str, Any] = gpu.collect(CollectContext(interpreter=current()), nvml=nvml)["gpu"]
    return section


def sampler_reading(nvml: Any, initialise: bool) -> dict[str, Any]:
    """One sampler point and what it saw under load, read on the calling thread."""
    if initialise:
        nvml.nvmlInit()
    sampler = Sampler(nvml=nvml, interval=3600.0, cpu_percent=lambda: [])
    sampler.start()  # takes the handle; the thread would sample only after an hour
    try:
        point = sampler.sample()
    finally:
        sampler.stop()
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
    point.pop("t")
    summary = sampler.summary()  # without its overhead share: a timing, not an answer
    found = {key: summary[key] for key in ("gpu_index", "gpu_reason")}
    return {"point": point, "under_load": sampler.under_load, **found}


def differences(real: Any, fake: Any, path: str = "") -> list[str]:
    """Where two JSON-like values differ, as 'path: real != fake' lines."""
    if isinstance(real, Mapping) and isinstance(fake, Mapping):
        lines: list[str] = []
        for key in sorted(set(real) | set(fake), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in fake or key not in real:
                lines.append(
                    f"{where}: {real.get(key, '<absent>')!r} != {fake.get(key, '<absent>')!r}"
                )
            else:
                lines.extend(differences(real[key], fake[key], where))
        return lines
    if isinstance(real, list) and isinstance(fake, list) and len(real) == len(fake):
        return [
            line
            for i, (a, b) in enumerate(zip(real, fake, strict=True))
            for line in differences(a, b, f"{path}[{i}]")
        ]
    if real != fake or type(real) is not type(fake):
        return [f"{path}: {real!r} != {fake!r}"]
    return []


def record(module: Any) -> dict[str, Any]:
    """The recording, with the fake replayed against it (see the module docstring)."""
    spy = SpyNVML(module)
    real_section = collector_section(spy)
    data = to_fake_data(spy)
    fake_section = collector_section(FakeNVML(copy.deepcopy(data)))
    recording: dict[str, Any] = {
        "data": data,
        "observed": observed(spy),
        "unmodelled_functions": unmodelled(spy),
        "fidelity": {"collector": differences(real_section, fake_section)},
    }
    if real_section["status"] == "ok" and real_section["devices"]:
        sampler_spy = SpyNVML(module)
        real_point = sampler_reading(sampler_spy, initialise=True)
        sampler_data = to_fake_data(sampler_spy)
        fake_point = sampler_reading(FakeNVML(copy.deepcopy(sampler_data)), initialise=True)
        recording["sampler_data"] = sampler_data
        recording["fidelity"]["sampler"] = differences(real_point, fake_point)
        for function, entry in observed(sampler_spy).items():
            recording["observed"].setdefault(function, entry)
    recording["gpu"] = real_section
    return recording


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output", type=Path, required=True, help="the recording (JSON)")
    args = parser.parse_args(argv)
    try:
        import pynvml
    except ImportError:
        print("record_nvml: pynvml cannot be imported: install nvidia-ml-py", file=sys.stderr)
        return 2
    recording = record(pynvml)
    args.output.write_text(json.dumps(recording, indent=1, default=str) + "\n", encoding="utf-8")
    gpu_section = recording["gpu"]
    if gpu_section["status"] != "ok":
        print(f"record_nvml: NVML unavailable: {gpu_section['reason']}", file=sys.stderr)
        return 2
    mismatches = [line for lines in recording["fidelity"].values() for line in lines]
    print(
        f"recorded {len(gpu_section['devices'])} device(s), driver "
        f"{gpu_section['driver_version']}; fake replay: "
        + ("identical" if not mismatches else f"{len(mismatches)} difference(s)")
    )
    for line in mismatches:
        print(f"  {line}")
    if recording["unmodelled_functions"]:
        print(f"  functions the fake has no field for: {recording['unmodelled_functions']}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
