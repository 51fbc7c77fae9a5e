"""NVIDIA GPUs as the driver sees them, read in-process through NVML (`pynvml`).

Why in-process and not `nvidia-smi`: NVML answers field by field, so a field the device
does not support (ECC on a GeForce card, row remapping on Volta) becomes one null with a
reason instead of an unparsable "[N/A]" column, and there is no subprocess to start.

Why a time limit (envcheck.bounded): a wedged driver (a GPU that fell off the bus, a hung
kernel module) can block an NVML call forever, and the doctor must still report. The
reading runs in a daemon thread; if it does not finish within `timeout` the section says
so and the thread is abandoned.

Why /sys/bus/pci as well: it counts NVIDIA GPUs without any driver, so "no driver" can be
told apart from "no GPU".
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any, Optional

import psutil

from envcheck import bounded
from envcheck.collectors.base import CollectContext, read_text

NVIDIA_VENDOR_ID = "0x10de"
# PCI class codes: 0x0300 VGA-compatible controller, 0x0302 3D controller (headless GPUs).
GPU_CLASS_PREFIXES = ("0x0300", "0x0302")

# Clock event (formerly "throttle") reason bits, as named in the snapshot.
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
GPU_IDLE = 0x1

# NVML reports PCIe throughput in KB/s.
KIB = 1024

# Why nvmlInit failed, by the pynvml error class's suffix (NVMLError_<suffix>).
INIT_REASONS: dict[str, str] = {
    "LibraryNotFound": "NVML library not found: no NVIDIA driver installed"
    " (libnvidia-ml.so.1 cannot be loaded)",
    "DriverNotLoaded": "NVIDIA driver not loaded: the kernel module is not running",
    "NoPermission": "no permission to use the NVIDIA device files (/dev/nvidia*)",
    "LibRmVersionMismatch": "NVML and the NVIDIA kernel module differ in version"
    " (driver upgraded without a reboot?)",
    "GpuIsLost": "a GPU has fallen off the bus (NVML: GPU is lost)",
}

_SYSTEM_FIELDS = ("nvml_version", "driver_version", "cuda_driver_version")

Reasons = dict[str, str]


def collect(ctx: CollectContext, nvml: Any | None = None, timeout: float = 10.0) -> dict[str, Any]:
    reasons: Reasons = {}
    facts: dict[str, Any] = {
        "status": "unavailable",
        "reason": None,
        "nvml_version": None,
        "driver_version": None,
        "cuda_driver_version": None,
        "pci_nvidia_devices": pci_nvidia_devices(ctx, reasons),
        "devices": [],
        "reasons": reasons,
    }
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return _unavailable(facts, "pynvml cannot be imported: install nvidia-ml-py")
        except Exception as exc:  # a broken install must not take the doctor down
            return _unavailable(facts, f"pynvml failed to import: {_describe(exc)}")
        nvml = pynvml

    try:
        result = bounded.call(lambda: _read_nvml(nvml), timeout, "NVML")
    except bounded.Hung:
        return _unavailable(facts, f"NVML did not answer within {timeout:g} s (driver hung?)")
    except BaseException as exc:  # whatever NVML raises, the doctor still reports
        return _unavailable(facts, f"NVML failed: {_describe(exc)}")
    if result.get("status") != "ok":
        return _unavailable(facts, result.get("reason") or "NVML failed")
    reasons.update(result["reasons"])
    facts.update({k: result[k] for k in (*_SYSTEM_FIELDS, "devices")}, status="ok")
    return {"gpu": facts}


def _unavailable(facts: dict[str, Any], reason: str) -> dict[str, Any]:
    """Status unavailable; the system fields are null for the same reason."""
    facts["reason"] = reason
    for name in _SYSTEM_FIELDS:
        facts["reasons"][name] = reason
    return {"gpu": facts}


def pci_nvidia_devices(ctx: CollectContext, reasons: Reasons) -> Optional[int]:
    """NVIDIA display and 3D controllers on the PCI bus; needs no driver.

    Audio functions and NVSwitches share the vendor id but not the class, so they are not
    counted.
    """
    devices = ctx.sys_root / "bus/pci/devices"
    if not devices.is_dir():
        reasons["pci_nvidia_devices"] = f"no {devices} (not Linux, or /sys is not mounted)"
        return None
    count = 0
    try:
        entries = sorted(devices.iterdir())
    except OSError as exc:
        reasons["pci_nvidia_devices"] = f"cannot list {devices}: {exc.strerror or exc}"
        return None
    for entry in entries:
        vendor = (read_text(entry / "vendor") or "").lower()
        pci_class = (read_text(entry / "class") or "").lower()
        if vendor == NVIDIA_VENDOR_ID and pci_class.startswith(GPU_CLASS_PREFIXES):
            count += 1
    return count


def _read_nvml(nvml: Any) -> dict[str, Any]:
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return {"status": "unavailable", "reason": _init_reason(nvml, exc)}
    try:
        reasons: Reasons = {}
        read = _Reader(nvml, reasons)
        system = {
            "nvml_version": read("nvml_version", lambda: _text(nvml.nvmlSystemGetNVMLVersion())),
            "driver_version": read(
                "driver_version", lambda: _text(nvml.nvmlSystemGetDriverVersion())
            ),
            "cuda_driver_version": read(
                "cuda_driver_version", lambda: cuda_version(_cuda_driver_version(nvml))
            ),
        }
        count = read("devices", lambda: int(nvml.nvmlDeviceGetCount()))
        devices = [_device_or_unreadable(nvml, index) for index in range(count or 0)]
        return {"status": "ok", **system, "devices": devices, "reasons": reasons}
    finally:
        # the facts are read; a failing shutdown changes none of them
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def _init_reason(nvml: Any, exc: Exception) -> str:
    for suffix, reason in INIT_REASONS.items():
        if _is_error(nvml, exc, suffix):
            return reason
    return f"NVML failed to initialise: {_describe(exc)}"


class _Reader:
    """Calls one NVML getter; a failure becomes None and a reason under the field's name."""

    def __init__(self, nvml: Any, reasons: Reasons):
        self.nvml = nvml
        self.reasons = reasons

    def __call__(self, field: str, getter: Callable[[], Any]) -> Any:
        try:
            return getter()
        except Exception as exc:
            self.reasons[field] = self.why(exc)
            return None

    def why(self, exc: BaseException) -> str:
        if _is_error(self.nvml, exc, "NotSupported"):
            return "not supported"
        return _describe(exc)


def _device_or_unreadable(nvml: Any, index: int) -> dict[str, Any]:
    try:
        return _device(nvml, index)
    except Exception as exc:  # a bug reading one device must not lose the others
        return _unreadable_device(index, f"cannot read the device: {_describe(exc)}")


def _device(nvml: Any, index: int) -> dict[str, Any]:
    reasons: Reasons = {}
    read = _Reader(nvml, reasons)
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:
        return _unreadable_device(index, f"cannot open the device: {read.why(exc)}")

    memory = read("memory", lambda: _memory(nvml.nvmlDeviceGetMemoryInfo(handle)))
    utilization = read(
        "utilization", lambda: _utilization(nvml.nvmlDeviceGetUtilizationRates(handle))
    )
    for parent, children in (
        ("memory", ("memory_total_bytes", "memory_used_bytes")),
        ("utilization", ("utilization_gpu_percent", "utilization_memory_percent")),
    ):
        if parent in reasons:
            why = reasons.pop(parent)
            reasons.update(dict.fromkeys(children, why))
    memory_total, memory_used = memory or (None, None)
    utilization_gpu, utilization_memory = utilization or (None, None)
    mask = read("clocks_event_reasons_mask", lambda: int(_clock_event_mask(nvml, handle)))
    if mask is None:
        reasons["clocks_event_reasons"] = reasons["clocks_event_reasons_mask"]
    return {
        "index": index,
        "name": read("name", lambda: _text(nvml.nvmlDeviceGetName(handle))),
        "pci_bus_id": read("pci_bus_id", lambda: _text(nvml.nvmlDeviceGetPciInfo(handle).busId)),
        "memory_total_bytes": memory_total,
        "memory_used_bytes": memory_used,
        "compute_capability": read(
            "compute_capability",
            lambda: "{}.{}".format(*nvml.nvmlDeviceGetCudaComputeCapability(handle)),
        ),
        "utilization_gpu_percent": utilization_gpu,
        "utilization_memory_percent": utilization_memory,
        "temperature_c": read(
            "temperature_c",
            lambda: int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
        ),
        "power_draw_w": read("power_draw_w", lambda: _watts(nvml.nvmlDeviceGetPowerUsage(handle))),
        "power_limit_w": read(
            "power_limit_w", lambda: _watts(nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
        ),
        "clocks_mhz": _clocks(nvml, handle, read),
        "pcie": _pcie(nvml, handle, read),
        "pcie_sampled_under_load": False,
        "persistence_mode": read(
            "persistence_mode", lambda: bool(nvml.nvmlDeviceGetPersistenceMode(handle))
        ),
        "ecc_mode": read("ecc_mode", lambda: bool(nvml.nvmlDeviceGetEccMode(handle)[0])),
        "clocks_event_reasons": None if mask is None else clock_event_names(mask),
        "clocks_event_reasons_mask": mask,
        "retired_pages": _retired_pages(nvml, handle, read),
        "remapped_rows": read("remapped_rows", lambda: _remapped_rows(nvml, handle)),
        "mig_mode": read("mig_mode", lambda: _mig_mode(nvml, handle)),
        "processes": read("processes", lambda: _processes(nvml, handle)),
        "reasons": reasons,
    }


DEVICE_FIELDS = (
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
)
CLOCK_FIELDS = ("sm", "mem", "max_sm", "max_mem")
PCIE_FIELDS = ("gen", "max_gen", "width", "max_width", "rx_bytes_per_s", "tx_bytes_per_s")


def _memory(info: Any) -> tuple[int, int]:
    return int(info.total), int(info.used)


def _utilization(rates: Any) -> tuple[int, int]:
    return int(rates.gpu), int(rates.memory)


def _unreadable_device(index: int, why: str) -> dict[str, Any]:
    """A device whose handle NVML would not give: every field null, for the same reason."""
    device: dict[str, Any] = dict.fromkeys(DEVICE_FIELDS)
    device.update(
        index=index,
        clocks_mhz=dict.fromkeys(CLOCK_FIELDS),
        pcie=dict.fromkeys(PCIE_FIELDS),
        pcie_sampled_under_load=False,
    )
    nested = [f"clocks_mhz.{name}" for name in CLOCK_FIELDS] + [f"pcie.{n}" for n in PCIE_FIELDS]
    flat = [name for name, value in device.items() if value is None and name != "reasons"]
    device["reasons"] = dict.fromkeys(flat + nested, why)
    return device


def _clocks(nvml: Any, handle: Any, read: _Reader) -> dict[str, Optional[int]]:
    """Current and maximum SM and memory clocks; sub-field reasons as "clocks_mhz.<name>"."""
    getters = {
        "sm": ("nvmlDeviceGetClockInfo", "NVML_CLOCK_SM"),
        "mem": ("nvmlDeviceGetClockInfo", "NVML_CLOCK_MEM"),
        "max_sm": ("nvmlDeviceGetMaxClockInfo", "NVML_CLOCK_SM"),
        "max_mem": ("nvmlDeviceGetMaxClockInfo", "NVML_CLOCK_MEM"),
    }

    def clock(function: str, clock_type: str) -> Callable[[], int]:
        return lambda: int(getattr(nvml, function)(handle, getattr(nvml, clock_type)))

    return {name: read(f"clocks_mhz.{name}", clock(*spec)) for name, spec in getters.items()}


def _pcie(nvml: Any, handle: Any, read: _Reader) -> dict[str, Optional[int]]:
    """Link generation and width now and at most, and throughput in bytes/s."""

    def link(function: str) -> Callable[[], int]:
        return lambda: int(getattr(nvml, function)(handle))

    def throughput(counter: str) -> Callable[[], int]:
        return lambda: int(nvml.nvmlDeviceGetPcieThroughput(handle, getattr(nvml, counter))) * KIB

    getters = {
        "gen": link("nvmlDeviceGetCurrPcieLinkGeneration"),
        "max_gen": link("nvmlDeviceGetMaxPcieLinkGeneration"),
        "width": link("nvmlDeviceGetCurrPcieLinkWidth"),
        "max_width": link("nvmlDeviceGetMaxPcieLinkWidth"),
        "rx_bytes_per_s": throughput("NVML_PCIE_UTIL_RX_BYTES"),
        "tx_bytes_per_s": throughput("NVML_PCIE_UTIL_TX_BYTES"),
    }
    return {name: read(f"pcie.{name}", getter) for name, getter in getters.items()}


def _clock_event_mask(nvml: Any, handle: Any) -> Any:
    """The current clock event reasons; drivers before 535 only know the "throttle" name."""
    try:
        getter = nvml.nvmlDeviceGetCurrentClocksEventReasons
    except AttributeError:
        return nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
    try:
        return getter(handle)
    except Exception as exc:
        if _is_error(nvml, exc, "FunctionNotFound"):
            return nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
        raise


def clock_event_names(mask: int) -> list[str]:
    """Names of the set bits, lowest first; gpu_idle is left out (it is in the mask)."""
    names = []
    bit = 1
    while bit <= mask:
        if mask & bit and bit != GPU_IDLE:
            names.append(CLOCK_EVENT_REASONS.get(bit, f"unknown_{bit:#x}"))
        bit <<= 1
    return names


def _retired_pages(nvml: Any, handle: Any, read: _Reader) -> Optional[dict[str, Any]]:
    """Pages retired for ECC errors (Kepler to Volta; Ampere remaps rows instead).

    Null as a whole when no part can be read; otherwise the parts that failed are null
    with reasons under "retired_pages.<name>".
    """
    sub_reasons: Reasons = {}
    sub = _Reader(nvml, sub_reasons)

    def count(cause: str) -> Callable[[], int]:
        return lambda: len(nvml.nvmlDeviceGetRetiredPages(handle, getattr(nvml, cause)))

    pages = {
        "pending": sub(
            "pending", lambda: bool(nvml.nvmlDeviceGetRetiredPagesPendingStatus(handle))
        ),
        "single_bit": sub(
            "single_bit", count("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS")
        ),
        "double_bit": sub("double_bit", count("NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR")),
    }
    if len(sub_reasons) == len(pages):
        read.reasons["retired_pages"] = sub_reasons["pending"]
        return None
    read.reasons.update({f"retired_pages.{name}": why for name, why in sub_reasons.items()})
    return pages


def _remapped_rows(nvml: Any, handle: Any) -> dict[str, Any]:
    """Rows remapped for ECC errors (Ampere and later); pending means a reset is needed."""
    correctable, uncorrectable, pending, failed = nvml.nvmlDeviceGetRemappedRows(handle)
    return {
        "pending": bool(pending),
        "failed": bool(failed),
        "correctable": int(correctable),
        "uncorrectable": int(uncorrectable),
    }


def _mig_mode(nvml: Any, handle: Any) -> dict[str, bool]:
    current, pending = nvml.nvmlDeviceGetMigMode(handle)
    return {"current": bool(current), "pending": bool(pending)}


# pynvml's unversioned getter calls _v3, which drivers before 510 lack; there it raises
# NVMLLibraryMismatchError (not an NVMLError), and _v2 still answers.
_PROCESS_GETTERS = (
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetComputeRunningProcesses_v2",
)


def _processes(nvml: Any, handle: Any) -> list[dict[str, Any]]:
    """Compute processes on the device other than this one, with the memory each holds."""
    running: Any = None
    for position, name in enumerate(_PROCESS_GETTERS):
        last = position == len(_PROCESS_GETTERS) - 1
        try:
            running = getattr(nvml, name)(handle)
            break
        except AttributeError:
            if last:
                raise
        except Exception as exc:
            if last or not (
                _is_error(nvml, exc, "FunctionNotFound")
                or type(exc).__name__ == "NVMLLibraryMismatchError"
            ):
                raise
    own = os.getpid()
    processes = []
    for process in running or []:
        pid = int(process.pid)
        if pid == own:
            continue
        used = getattr(process, "usedGpuMemory", None)
        processes.append(
            {"pid": pid, "used_bytes": None if used is None else int(used), "name": _name(pid)}
        )
    return processes


def _name(pid: int) -> Optional[str]:
    """The process's name, None when it is not visible (another PID namespace, no rights)."""
    try:
        return str(psutil.Process(pid).name())
    except Exception:
        return None


def _cuda_driver_version(nvml: Any) -> int:
    """The CUDA version the driver supports; the _v2 getter first, as NVML recommends."""
    try:
        return int(nvml.nvmlSystemGetCudaDriverVersion_v2())
    except Exception:
        return int(nvml.nvmlSystemGetCudaDriverVersion())


def cuda_version(value: int) -> str:
    """NVML's integer CUDA version as "major.minor": 12040 → "12.4"."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def _watts(milliwatts: Any) -> float:
    return int(milliwatts) / 1000.0


def _text(value: Any) -> str:
    """Older pynvml returns bytes for strings."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _is_error(nvml: Any, exc: BaseException, suffix: str) -> bool:
    """Whether `exc` is the module's NVMLError_<suffix> (works for pynvml and fakes alike)."""
    error_class = getattr(nvml, f"NVMLError_{suffix}", None)
    return isinstance(error_class, type) and isinstance(exc, error_class)


def _describe(exc: BaseException) -> str:
    """An NVML error's own text ("GPU is lost"); anything else with its type."""
    try:
        text = str(exc)
    except Exception:  # pynvml's __str__ asks the library, which may be gone
        text = ""
    if type(exc).__name__.startswith("NVMLError"):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
