"""What every collector shares: injected roots and environment, and a never-raise wrapper.

A collector gathers one area of facts. Its side effects (the filesystem roots /sys and
/proc, the environment, the audited interpreter) come in through `CollectContext`, so
tests run collectors against fake trees. `run_collector` is the only caller of a
collector: whatever it raises becomes `status: unavailable` with the reason.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from envcheck.defaults import DATA_BUDGET_S
from envcheck.interpreter import Interpreter


class Unavailable(Exception):
    """Raised by a collector that cannot gather its facts; the message says why."""


@dataclass(frozen=True)
class CollectContext:
    interpreter: Interpreter
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    root: Path = Path("/")
    sys_root: Path = Path("/sys")
    proc_root: Path = Path("/proc")
    home: Path = field(default_factory=Path.home)
    data: Optional[Path] = None  # the dataset folder (--data), only ever read
    data_budget_s: float = DATA_BUDGET_S  # the dataset walk and the read sample together
    scripts: tuple[Path, ...] = ()  # training scripts or folders (--script), read, never run
    # Work several collectors share within one collection (the metadata scan), so that it
    # runs once; not part of the context's identity.
    memo: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def path(self, absolute: str) -> Path:
        """An absolute path such as /dev/shm, under the injected root."""
        return self.root / absolute.lstrip("/")


Collector = Callable[[CollectContext], dict[str, Any]]


@dataclass(frozen=True)
class CollectorOutcome:
    name: str
    status: str  # "ok" | "unavailable"
    reason: Optional[str]
    seconds: float
    sections: Mapping[str, Any]

    def status_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "seconds": round(self.seconds, 4)}


def run_collector(name: str, collector: Collector, ctx: CollectContext) -> CollectorOutcome:
    """Run one collector; it returns {section: facts}. Never raises."""
    start = time.perf_counter()
    try:
        sections = collector(ctx)
        status, reason = "ok", None
    except Unavailable as exc:
        sections, status, reason = {}, "unavailable", str(exc)
    except Exception as exc:  # a collector bug must not take the doctor down
        sections, status, reason = {}, "unavailable", f"{type(exc).__name__}: {exc}"
    return CollectorOutcome(name, status, reason, time.perf_counter() - start, sections)


def read_text(path: Path) -> Optional[str]:
    """A small file's stripped text, or None when it does not exist or cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
