"""One training process's share of the node's cores, as the probe child applies it.

On a node running N training processes, each gets about cores // N of the CPU. The child
pins itself (every thread, so framework pools and the loader workers it starts inherit
it) to that many cores while it measures one process, and lets go of the pin to measure
what the whole node can decode. Linux only (sched_setaffinity); elsewhere the child
measures unpinned and says so.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional


def current_cores() -> Optional[List[int]]:
    """The cores this process may run on, or None where affinity cannot be read."""
    getter = getattr(os, "sched_getaffinity", None)
    if getter is None:
        return None
    try:
        return sorted(getter(0))
    except OSError:
        return None


def pin(cores: List[int]) -> bool:
    """Restrict every thread of this process to `cores`; False where it cannot be done.

    os.sched_setaffinity(0, ...) changes only the calling thread on Linux, so each task
    under /proc/self/task is set too (threads started later inherit from their creator).
    """
    setter = getattr(os, "sched_setaffinity", None)
    if setter is None or not cores:
        return False
    try:
        setter(0, cores)
    except OSError:
        return False
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        tasks = []
    for task in tasks:
        try:
            setter(int(task), cores)
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
    return True


class CoreShare:
    """The node's cores and one process's share of them (the first cores // N)."""

    def __init__(self, processes: int) -> None:
        self.processes = max(1, int(processes))
        self.all = current_cores()
        count = len(self.all) if self.all else (os.cpu_count() or 1)
        self.per_process = max(1, count // self.processes)
        self.count = count
        self.pinned = False

    def share(self) -> Optional[List[int]]:
        return self.all[: self.per_process] if self.all else None

    def enter_share(self) -> None:
        """Pin to one process's share (only when it is smaller than the node)."""
        share = self.share()
        if share is not None and len(share) < self.count:
            self.pinned = pin(share)

    def leave_share(self) -> bool:
        """Back to every core (to measure the node); True if the pin was lifted."""
        if self.all is None or not self.pinned:
            return False
        return pin(self.all)

    def describe(self) -> Dict[str, Any]:
        return {
            "usable": self.count,
            "processes": self.processes,
            "per_process": self.per_process,
            "pinned": self.pinned,
            "share": self.share() if self.pinned else None,
        }
