"""A fake `pynvml`, driven by plain data: one dict per device, as recorded on real machines.

The collector takes the NVML module as an argument, so tests pass a `FakeNVML` instead of
pynvml. It has the pynvml function names the gpu collector calls, error classes named and
numbered as pynvml's (`NVMLError` and `NVMLError_<Name>` subclasses), and the constants.

Device data (see nvml_data/*.json) maps a field to what NVML answers for it:

    name, pci_bus_id                       str
    memory                                 {total, free, used} bytes
    compute_capability                     [major, minor]
    utilization                            {gpu, memory} percent
    temperature_c                          int
    power_usage_mw, power_limit_mw         int milliwatts
    clocks, max_clocks                     {sm, mem} MHz
    pcie                                   {gen, max_gen, width, max_width,
                                            rx_kb_per_s, tx_kb_per_s}
    persistence_mode                       0 | 1
    ecc_mode                               [current, pending]
    clocks_event_reasons                   int bit mask
    retired_pages                          {pending: 0|1, single_bit: [addr], double_bit: [addr]}
    remapped_rows                          [correctable, uncorrectable, pending, failed]
    mig_mode                               [current, pending]
    processes                              [{pid, used_gpu_memory}]

Any value, at any depth, may be `{"$error": "NotSupported"}` (any suffix of an error class
below): the getters reading it raise that error. The top level holds `system`
({nvml_version, driver_version, cuda_driver_version: int}), `devices`, and optionally
`function_errors` ({pynvml function name: error suffix}) for functions the recorded driver
lacks, `init_error` (an error suffix) when nvmlInit failed, `missing_functions` (names an
older pynvml lacks: AttributeError) and `strings_as_bytes` (true for a pynvml that answers
strings as bytes). record_nvml.py writes this format from a real NVML.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional, TypeVar

DATA = Path(__file__).parent / "nvml_data"
ERROR_KEY = "$error"

# Constants, with pynvml's values.
NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_UNKNOWN = 999

NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0
NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1


class NVMLError(Exception):
    """pynvml's base error: `value` is the NVML return code, str() its text."""

    value = NVML_ERROR_UNKNOWN
    text = "Unknown Error"

    def __str__(self) -> str:
        return self.text


class NVMLError_Uninitialized(NVMLError):
    value, text = NVML_ERROR_UNINITIALIZED, "Uninitialized"


class NVMLError_InvalidArgument(NVMLError):
    value, text = NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument"


class NVMLError_NotSupported(NVMLError):
    value, text = NVML_ERROR_NOT_SUPPORTED, "Not Supported"


class NVMLError_NoPermission(NVMLError):
    value, text = NVML_ERROR_NO_PERMISSION, "Insufficient Permissions"


class NVMLError_AlreadyInitialized(NVMLError):
    value, text = NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized"


class NVMLError_NotFound(NVMLError):
    value, text = NVML_ERROR_NOT_FOUND, "Not Found"


class NVMLError_InsufficientSize(NVMLError):
    value, text = NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size"


class NVMLError_DriverNotLoaded(NVMLError):
    value, text = NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"


class NVMLError_Timeout(NVMLError):
    value, text = NVML_ERROR_TIMEOUT, "Timeout"


class NVMLError_LibraryNotFound(NVMLError):
    value, text = NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found"


class NVMLError_FunctionNotFound(NVMLError):
    value, text = NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found"


class NVMLError_CorruptedInforom(NVMLError):
    value, text = NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM"


class NVMLError_GpuIsLost(NVMLError):
    value, text = NVML_ERROR_GPU_IS_LOST, "GPU is lost"


class NVMLError_ResetRequired(NVMLError):
    value, text = NVML_ERROR_RESET_REQUIRED, "GPU requires restart"


class NVMLError_LibRmVersionMismatch(NVMLError):
    value = NVML_ERROR_LIB_RM_VERSION_MISMATCH
    text = "RM has detected an NVML/RM version mismatch."


class NVMLError_Unknown(NVMLError):
    value, text = NVML_ERROR_UNKNOWN, "Unknown Error"


class NVMLLibraryMismatchError(Exception):
    """pynvml raises this (not an NVMLError) when an unversioned getter's _vN is missing."""


ERROR_CLASSES: dict[str, type[NVMLError]] = {
    cls.__name__.removeprefix("NVMLError_"): cls for cls in NVMLError.__subclasses__()
}


def error(name: str) -> Exception:
    """An error instance by the suffix of its class: "NotSupported", "GpuIsLost", ...

    "LibraryMismatch" stands for NVMLLibraryMismatchError.
    """
    if name == "LibraryMismatch":
        return NVMLLibraryMismatchError(
            "Unversioned function called and the pyNVML version does not match the NVML lib"
            " version. Either use matching pyNVML and NVML lib versions or use a versioned"
            " function such as nvmlDeviceGetComputeRunningProcesses_v2"
        )
    return ERROR_CLASSES[name]()


def load_device_data(path: str | Path) -> dict[str, Any]:
    """A recorded machine: a path, or the stem of a file in nvml_data/ ("dgx-a100-8gpu")."""
    candidate = Path(path)
    if not candidate.exists() and not candidate.suffix:
        candidate = DATA / f"{path}.json"
    data: dict[str, Any] = json.loads(candidate.read_text(encoding="utf-8"))
    return data


def data_files() -> list[Path]:
    return sorted(DATA.glob("*.json"))


@dataclass(frozen=True)
class Handle:
    index: int


F = TypeVar("F", bound=Callable[..., Any])


def _api(method: F) -> F:
    """Record the call, then hang or fail as configured, then answer from the data."""

    @functools.wraps(method)
    def wrapper(self: FakeNVML, *args: Any) -> Any:
        self._enter(method.__name__, args)
        return method(self, *args)

    return wrapper  # type: ignore[return-value]


class FakeNVML:
    """A pynvml module stand-in for one recorded machine (see the module docstring)."""

    # errors and constants, as attributes like those of the pynvml module
    NVMLError = NVMLError
    NVMLError_Uninitialized = NVMLError_Uninitialized
    NVMLError_InvalidArgument = NVMLError_InvalidArgument
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_NoPermission = NVMLError_NoPermission
    NVMLError_AlreadyInitialized = NVMLError_AlreadyInitialized
    NVMLError_NotFound = NVMLError_NotFound
    NVMLError_InsufficientSize = NVMLError_InsufficientSize
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    NVMLError_Timeout = NVMLError_Timeout
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_FunctionNotFound = NVMLError_FunctionNotFound
    NVMLError_CorruptedInforom = NVMLError_CorruptedInforom
    NVMLError_GpuIsLost = NVMLError_GpuIsLost
    NVMLError_ResetRequired = NVMLError_ResetRequired
    NVMLError_LibRmVersionMismatch = NVMLError_LibRmVersionMismatch
    NVMLError_Unknown = NVMLError_Unknown
    NVMLLibraryMismatchError = NVMLLibraryMismatchError

    NVML_FEATURE_DISABLED = NVML_FEATURE_DISABLED
    NVML_FEATURE_ENABLED = NVML_FEATURE_ENABLED
    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    NVML_PCIE_UTIL_TX_BYTES = NVML_PCIE_UTIL_TX_BYTES
    NVML_PCIE_UTIL_RX_BYTES = NVML_PCIE_UTIL_RX_BYTES
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = (
        NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
    )
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = (
        NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
    )

    def __init__(
        self,
        data: Mapping[str, Any] | str | Path,
        *,
        init_error: Optional[str] = None,
        strings_as_bytes: bool = False,
        missing: Iterable[str] = (),
    ):
        if not isinstance(data, Mapping):
            data = load_device_data(data)
        self.data: dict[str, Any] = copy.deepcopy(dict(data))
        self.data.setdefault("system", {})
        self.data.setdefault("devices", [])
        self.function_errors: dict[str, str] = dict(self.data.get("function_errors", {}))
        self.init_error = init_error or self.data.get("init_error")
        self.strings_as_bytes = strings_as_bytes or bool(self.data.get("strings_as_bytes"))
        self.missing: set[str] = set(missing) | set(self.data.get("missing_functions", ()))
        self.hangs: dict[str, float] = {}
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.initialized = 0
        self.shutdowns = 0
        self._released = threading.Event()

    # -- configuring -----------------------------------------------------------------------

    def set(self, field: str, value: Any, device: Optional[int] = None) -> FakeNVML:
        """Set a device field (dotted path, "pcie.gen") on one device, or on all of them."""
        indexes = range(len(self.data["devices"])) if device is None else [device]
        for index in indexes:
            _set_path(self.data["devices"][index], field, copy.deepcopy(value))
        return self

    def set_system(self, field: str, value: Any) -> FakeNVML:
        _set_path(self.data["system"], field, copy.deepcopy(value))
        return self

    def not_supported(self, field: str, device: Optional[int] = None) -> FakeNVML:
        return self.raises(field, "NotSupported", device)

    def raises(self, field: str, error_name: str, device: Optional[int] = None) -> FakeNVML:
        """Make the getters of a device field raise NVMLError_<error_name>."""
        return self.set(field, {ERROR_KEY: error_name}, device)

    def function_raises(self, function: str, error_name: str) -> FakeNVML:
        """Make a pynvml function raise whatever it is asked (as a driver lacking it does)."""
        self.function_errors[function] = error_name
        return self

    def remove(self, function: str) -> FakeNVML:
        """Make a function absent, as in an older pynvml (AttributeError)."""
        self.missing.add(function)
        return self

    def hang(self, function: str, seconds: float = 30.0) -> FakeNVML:
        """Make a function block (until `release()` or `seconds`), as a wedged driver does."""
        self.hangs[function] = seconds
        return self

    def release(self) -> None:
        """Let hanging calls return."""
        self._released.set()

    def called(self, function: str) -> int:
        return sum(1 for name, _ in self.calls if name == function)

    # -- plumbing --------------------------------------------------------------------------

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("nvml") and name in object.__getattribute__(self, "missing"):
            raise AttributeError(f"module 'pynvml' has no attribute '{name}'")
        return object.__getattribute__(self, name)

    def _enter(self, function: str, args: tuple[Any, ...]) -> None:
        self.calls.append((function, args))
        if function in self.hangs:
            self._released.wait(self.hangs[function])
        if function in self.function_errors:
            raise error(self.function_errors[function])
        if function not in ("nvmlInit", "nvmlShutdown") and self.initialized <= self.shutdowns:
            raise NVMLError_Uninitialized()

    def _system(self, field: str) -> Any:
        return _resolve(self.data["system"], field.split("."))

    def _device(self, handle: Handle, field: str) -> Any:
        return _resolve(self.data["devices"][handle.index], field.split("."))

    def _str(self, value: Any) -> Any:
        return value.encode() if self.strings_as_bytes and isinstance(value, str) else value

    # -- pynvml's functions ----------------------------------------------------------------

    @_api
    def nvmlInit(self) -> None:
        if self.init_error:
            raise error(self.init_error)
        self.initialized += 1

    @_api
    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    @_api
    def nvmlSystemGetNVMLVersion(self) -> Any:
        return self._str(self._system("nvml_version"))

    @_api
    def nvmlSystemGetDriverVersion(self) -> Any:
        return self._str(self._system("driver_version"))

    @_api
    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return int(self._system("cuda_driver_version"))

    @_api
    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return int(self._system("cuda_driver_version"))

    @_api
    def nvmlDeviceGetCount(self) -> int:
        """The number of devices, or `system.device_count` where the data sets one."""
        if "device_count" in self.data["system"]:
            return int(self._system("device_count"))
        return len(self.data["devices"])

    @_api
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Handle:
        if not 0 <= index < len(self.data["devices"]):
            raise NVMLError_InvalidArgument()
        handle = Handle(index)
        device = self.data["devices"][index]
        if "handle" in device:
            self._device(handle, "handle")
        return handle

    @_api
    def nvmlDeviceGetName(self, handle: Handle) -> Any:
        return self._str(self._device(handle, "name"))

    @_api
    def nvmlDeviceGetPciInfo(self, handle: Handle) -> SimpleNamespace:
        bus_id = self._device(handle, "pci_bus_id")
        return SimpleNamespace(busId=self._str(bus_id), busIdLegacy=self._str(bus_id[4:]))

    @_api
    def nvmlDeviceGetMemoryInfo(self, handle: Handle) -> SimpleNamespace:
        memory = self._device(handle, "memory")
        return SimpleNamespace(total=memory["total"], free=memory["free"], used=memory["used"])

    @_api
    def nvmlDeviceGetCudaComputeCapability(self, handle: Handle) -> tuple[int, int]:
        major, minor = self._device(handle, "compute_capability")
        return (major, minor)

    @_api
    def nvmlDeviceGetUtilizationRates(self, handle: Handle) -> SimpleNamespace:
        rates = self._device(handle, "utilization")
        return SimpleNamespace(gpu=rates["gpu"], memory=rates["memory"])

    @_api
    def nvmlDeviceGetTemperature(self, handle: Handle, sensor: int) -> int:
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError_InvalidArgument()
        return int(self._device(handle, "temperature_c"))

    @_api
    def nvmlDeviceGetPowerUsage(self, handle: Handle) -> int:
        return int(self._device(handle, "power_usage_mw"))

    @_api
    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Handle) -> int:
        return int(self._device(handle, "power_limit_mw"))

    @_api
    def nvmlDeviceGetClockInfo(self, handle: Handle, clock: int) -> int:
        return int(self._device(handle, f"clocks.{_clock_name(clock)}"))

    @_api
    def nvmlDeviceGetMaxClockInfo(self, handle: Handle, clock: int) -> int:
        return int(self._device(handle, f"max_clocks.{_clock_name(clock)}"))

    @_api
    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Handle) -> int:
        return int(self._device(handle, "pcie.gen"))

    @_api
    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Handle) -> int:
        return int(self._device(handle, "pcie.max_gen"))

    @_api
    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Handle) -> int:
        return int(self._device(handle, "pcie.width"))

    @_api
    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Handle) -> int:
        return int(self._device(handle, "pcie.max_width"))

    @_api
    def nvmlDeviceGetPcieThroughput(self, handle: Handle, counter: int) -> int:
        """KB/s, as NVML answers."""
        names = {NVML_PCIE_UTIL_RX_BYTES: "rx_kb_per_s", NVML_PCIE_UTIL_TX_BYTES: "tx_kb_per_s"}
        if counter not in names:
            raise NVMLError_InvalidArgument()
        return int(self._device(handle, f"pcie.{names[counter]}"))

    @_api
    def nvmlDeviceGetPersistenceMode(self, handle: Handle) -> int:
        return int(self._device(handle, "persistence_mode"))

    @_api
    def nvmlDeviceGetEccMode(self, handle: Handle) -> list[int]:
        current, pending = self._device(handle, "ecc_mode")
        return [current, pending]

    @_api
    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Handle) -> int:
        return int(self._device(handle, "clocks_event_reasons"))

    @_api
    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: Handle) -> int:
        return int(self._device(handle, "clocks_event_reasons"))

    @_api
    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: Handle) -> int:
        return int(self._device(handle, "retired_pages.pending"))

    @_api
    def nvmlDeviceGetRetiredPages(self, handle: Handle, cause: int) -> list[int]:
        causes = {
            NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS: "single_bit",
            NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR: "double_bit",
        }
        if cause not in causes:
            raise NVMLError_InvalidArgument()
        return [int(address) for address in self._device(handle, f"retired_pages.{causes[cause]}")]

    @_api
    def nvmlDeviceGetRemappedRows(self, handle: Handle) -> tuple[int, int, int, int]:
        correctable, uncorrectable, pending, failed = self._device(handle, "remapped_rows")
        return (correctable, uncorrectable, pending, failed)

    @_api
    def nvmlDeviceGetMigMode(self, handle: Handle) -> list[int]:
        current, pending = self._device(handle, "mig_mode")
        return [current, pending]

    @_api
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Handle) -> list[SimpleNamespace]:
        return self._processes(handle)

    @_api
    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: Handle) -> list[SimpleNamespace]:
        return self._processes(handle)

    def _processes(self, handle: Handle) -> list[SimpleNamespace]:
        return [
            SimpleNamespace(
                pid=process["pid"],
                usedGpuMemory=process.get("used_gpu_memory"),
                gpuInstanceId=process.get("gpu_instance_id", 0xFFFFFFFF),
                computeInstanceId=process.get("compute_instance_id", 0xFFFFFFFF),
            )
            for process in self._device(handle, "processes")
        ]


def _clock_name(clock: int) -> str:
    names = {NVML_CLOCK_SM: "sm", NVML_CLOCK_MEM: "mem"}
    if clock not in names:
        raise NVMLError_InvalidArgument()
    return names[clock]


def _raise_if_error(node: Any) -> None:
    if isinstance(node, dict) and ERROR_KEY in node:
        raise error(node[ERROR_KEY])


def _resolve(node: Any, path: list[str]) -> Any:
    """The value at `path`; an error marker on the way raises its error."""
    for key in path:
        _raise_if_error(node)
        if not isinstance(node, dict) or key not in node:
            raise KeyError(f"fake NVML data has no '{'.'.join(path)}'")
        node = node[key]
    _raise_if_error(node)
    return node


def _set_path(node: dict[str, Any], field: str, value: Any) -> None:
    *parents, last = field.split(".")
    for key in parents:
        child = node.get(key)
        if not isinstance(child, dict) or ERROR_KEY in child:
            child = node[key] = {}
        node = child
    node[last] = value
