"""What one probe run measures, with the defaults a user gets without flags."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from envcheck.errors import UsageError

FRAMEWORKS = ("torch", "tensorflow")
DEVICES = ("auto", "cuda", "cpu")
SWEEPS = ("off", "auto", "full")
DEFAULT_BUDGET_S = 20.0
MIN_BUDGET_S, MAX_BUDGET_S = 2.0, 3600.0
# Importing a framework, generating the images and starting workers happen outside the
# measuring budget; this bounds them so a hung import cannot hang the doctor.
SETUP_ALLOWANCE_S = 120.0
# --concurrent starts the framework once per process, outside the budget too; the child
# waits at most this long for them to be ready (child/concurrent.py READY_TIMEOUT_S).
CONCURRENT_ALLOWANCE_S = 90.0
MAX_PROCESSES = 1024  # training processes per node; more is a typo


def usable_cores() -> int:
    """Cores this process may run on (affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def worker_candidates(cores: int) -> list[int]:
    """0, 1, 2, 4, 8, ... up to the usable cores (and the core count itself)."""
    values = [0, 1]
    n = 2
    while n <= cores:
        values.append(n)
        n *= 2
    if cores > 1 and cores not in values:
        values.append(cores)
    return values


@dataclass(frozen=True)
class ProbeSettings:
    framework: str = "torch"
    device: str = "auto"
    model: str = "small-cnn"
    batch_size: Optional[int] = None  # None: 64 on a GPU, 32 on the CPU
    image_size: int = 224
    budget_s: float = DEFAULT_BUDGET_S
    data: Optional[Path] = None
    sample_files: int = 512
    workers: Optional[int] = None  # None: the framework's default (0 / a serial map)
    pin_memory: Optional[bool] = None
    prefetch: Optional[int] = None
    sweep: str = "auto"  # off | auto (when input-bound) | full (--tune-workers)
    worker_candidates: list[int] = field(default_factory=lambda: worker_candidates(usable_cores()))
    # None: cold when the data folder is larger than the memory available for the page
    # cache (every epoch then reads from disk), cached otherwise
    cold_end_to_end: Optional[bool] = None
    # Calibration knobs for the accuracy benchmark, not user flags: a known delay added
    # to every batch, and a read-rate cap applied to cold reads (a slow-disk stand-in).
    inject_delay_s: float = 0.0
    throttle_read_bps: Optional[float] = None
    timeout_s: Optional[float] = None  # None: budget + SETUP_ALLOWANCE_S
    # The node view (node.py): training processes sharing this node's cores, where that
    # count came from, the cores they share, and whether to also run that many input
    # pipelines at once (--concurrent).
    processes: int = 1
    processes_source: str = "one process"
    node_cores: int = field(default_factory=lambda: usable_cores())
    concurrent: bool = False
    settings_from: dict[str, str] = field(default_factory=dict)  # setting -> where it came from

    def validated(self) -> ProbeSettings:
        if self.framework not in FRAMEWORKS:
            raise UsageError(f"--framework must be one of {', '.join(FRAMEWORKS)}")
        if self.device not in DEVICES:
            raise UsageError(f"--device must be one of {', '.join(DEVICES)}")
        if self.sweep not in SWEEPS:
            raise UsageError(f"sweep must be one of {', '.join(SWEEPS)}")
        if self.batch_size is not None and self.batch_size < 1:
            raise UsageError("--batch-size must be at least 1")
        if not 16 <= self.image_size <= 1024:
            raise UsageError("--image-size must be between 16 and 1024 pixels")
        if not MIN_BUDGET_S <= self.budget_s <= MAX_BUDGET_S:
            raise UsageError(
                f"--budget must be between {MIN_BUDGET_S:g} and {MAX_BUDGET_S:g} seconds"
            )
        if self.workers is not None and self.workers < 0:
            raise UsageError("--workers must be 0 or more")
        if not 1 <= self.processes <= MAX_PROCESSES:
            raise UsageError(f"--procs-per-node must be between 1 and {MAX_PROCESSES}")
        if self.data is not None and not self.data.is_dir():
            raise UsageError(f"--data {self.data}: not a directory")
        return self

    def with_overrides(self, **changes: Any) -> ProbeSettings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def hard_timeout(self) -> float:
        if self.timeout_s:
            return self.timeout_s
        extra = CONCURRENT_ALLOWANCE_S if self.concurrent and self.processes > 1 else 0.0
        return self.budget_s + SETUP_ALLOWANCE_S + extra

    def child_json(self, workdir: Path) -> dict[str, Any]:
        """What the child reads: plain JSON, paths as strings."""
        data = asdict(self)
        data["data"] = str(self.data) if self.data else None
        data["workdir"] = str(workdir)
        data.pop("settings_from")
        return data
