"""A ~10 Hz timeline of what the GPU and the CPU cores did while the probe ran.

Runs in envcheck's own process (NVML and per-core CPU counters are machine-wide), in a
daemon thread, so the child measuring the training loop never shares an interpreter with
it. Each NVML field is read on its own: a field the device does not support is null, not
a lost sample. The thread's own CPU time is measured (`time.thread_time`) and reported as
a share of one core, so its overhead is a number, not a promise.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Optional

import psutil

from envcheck import bounded
from envcheck.collectors.gpu import KIB, clock_event_names

INTERVAL_S = 0.1


def load_nvml(
    module: Any = None, timeout: float = bounded.NVML_TIMEOUT_S
) -> tuple[Any, Optional[str]]:
    """The pynvml module (or `module`), initialised, or None and why not.

    Initialisation is bounded: a hanging driver gives a reason, not a hung command."""
    if module is None:
        try:
            import pynvml
        except ImportError:
            return None, "nvidia-ml-py (pynvml) is not installed"
        except Exception as exc:  # a broken install must not take the command down
            return None, f"pynvml failed to import: {type(exc).__name__}: {exc}"
        module = pynvml
    try:
        bounded.call(module.nvmlInit, timeout, "NVML initialisation")
    except bounded.Hung as exc:
        return None, f"NVML unavailable: {exc}"
    except Exception as exc:
        return None, f"NVML unavailable: {type(exc).__name__}: {exc}"
    return module, None


def close_nvml(nvml: Any, timeout: float = bounded.NVML_TIMEOUT_S) -> None:
    """nvmlShutdown, bounded; a failing or hanging shutdown changes no measurement."""
    if nvml is None:
        return
    with contextlib.suppress(Exception):
        bounded.call(nvml.nvmlShutdown, timeout, "NVML shutdown")


class Sampler:
    """Start, tell it the phase now and then, stop; then read `samples` and `summary()`."""

    def __init__(
        self,
        nvml: Any = None,
        gpu_index: Optional[int] = 0,
        interval: float = INTERVAL_S,
        cpu_percent: Callable[[], list[float]] = lambda: psutil.cpu_percent(percpu=True),
        nvml_reason: Optional[str] = None,
        nvml_timeout: float = bounded.NVML_TIMEOUT_S,
    ) -> None:
        self.nvml = nvml
        self.nvml_timeout = nvml_timeout
        self.nvml_reason = nvml_reason
        self.gpu_index = gpu_index
        self.interval = interval
        self.cpu_percent = cpu_percent
        self.samples: list[dict[str, Any]] = []
        self.phase = "start"
        self.under_load: dict[str, Any] = {}
        self._handle: Any = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._start = 0.0
        self._cpu_s = 0.0
        self._wall_s = 0.0
        self._busiest = -1

    def start(self) -> None:
        if self.nvml is not None and self.gpu_index is not None:
            nvml, index = self.nvml, self.gpu_index
            try:
                self._handle = bounded.call(
                    lambda: nvml.nvmlDeviceGetHandleByIndex(index),
                    self.nvml_timeout,
                    f"NVML lookup of GPU {index}",
                )
            except bounded.Hung as exc:
                self.nvml_reason = str(exc)
            except Exception as exc:
                self.nvml_reason = f"no NVML handle for GPU {self.gpu_index}: {exc}"
        self.cpu_percent()  # the first per-core reading is against boot; discard it
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="envcheck-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        cpu0 = time.thread_time()
        wall0 = time.monotonic()
        while not self._stop.wait(self.interval):
            self.samples.append(self.sample())
        self._cpu_s = time.thread_time() - cpu0
        self._wall_s = time.monotonic() - wall0

    def sample(self) -> dict[str, Any]:
        point: dict[str, Any] = {
            "t": round(time.monotonic() - self._start, 3),
            "phase": self.phase,
            "gpu_util": None,
            "gpu_mem_bytes": None,
            "sm_clock_mhz": None,
            "pcie_rx_bps": None,
            "pcie_tx_bps": None,
            "cpu_util": [round(v, 1) for v in self.cpu_percent()],
        }
        if self._handle is not None:
            self._read_gpu(point)
        return point

    def _read_gpu(self, point: dict[str, Any]) -> None:
        nvml, handle = self.nvml, self._handle
        with contextlib.suppress(Exception):
            point["gpu_util"] = int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        with contextlib.suppress(Exception):
            point["gpu_mem_bytes"] = int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
        with contextlib.suppress(Exception):
            point["sm_clock_mhz"] = int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
        for key, counter in (("pcie_rx_bps", "RX"), ("pcie_tx_bps", "TX")):
            with contextlib.suppress(Exception):
                kind = getattr(nvml, f"NVML_PCIE_UTIL_{counter}_BYTES")
                point[key] = int(nvml.nvmlDeviceGetPcieThroughput(handle, kind)) * KIB
        util = point["gpu_util"]
        if util is not None and util > self._busiest:
            self._busiest = util
            self.under_load = self._link_and_clocks(util)

    def _link_and_clocks(self, util: int) -> dict[str, Any]:
        """PCIe link and clock event reasons at the busiest moment so far."""
        nvml, handle = self.nvml, self._handle
        found: dict[str, Any] = {"gpu_util": util, "phase": self.phase}
        for key, function in (
            ("gen", "nvmlDeviceGetCurrPcieLinkGeneration"),
            ("max_gen", "nvmlDeviceGetMaxPcieLinkGeneration"),
            ("width", "nvmlDeviceGetCurrPcieLinkWidth"),
            ("max_width", "nvmlDeviceGetMaxPcieLinkWidth"),
        ):
            try:
                found[key] = int(getattr(nvml, function)(handle))
            except Exception:
                found[key] = None
        try:
            getter = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or (
                nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            )
            found["clocks_event_reasons"] = clock_event_names(int(getter(handle)))
        except Exception:
            found["clocks_event_reasons"] = None
        return found

    def summary(self) -> dict[str, Any]:
        return {
            "interval_s": self.interval,
            "samples": len(self.samples),
            "gpu_index": self.gpu_index if self._handle is not None else None,
            "gpu_reason": self.nvml_reason if self._handle is None else None,
            "overhead_core_share": round(self._cpu_s / self._wall_s, 5) if self._wall_s else None,
        }
