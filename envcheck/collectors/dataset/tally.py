"""The tally that the file-system thread fills and the caller reads, under one lock; the
budget's shares and the sample sizes that every phase (walk, reads, sections) obeys."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

Clock = Callable[[], float]
Reasons = dict[str, str]

WALK_SHARE = 0.6  # of the budget, for the walk
MAGIC_SHARE = 0.25  # of what the walk left, for the magic-byte sample
COLD_SHARE = 0.75  # of what is then left, for the cold pass; the warm pass gets the rest
GRACE_S = 1.0  # real seconds past the budget before a silent file system counts as hung

MAGIC_SAMPLE = 60  # files whose first bytes are read for `magic`
READ_SAMPLE = 200  # files read cold and warm

KIB = 1024
MIB = 1024 * KIB
SIZE_BUCKETS = ("<16KiB", "16-64KiB", "64-256KiB", "256KiB-1MiB", "1-16MiB", ">=16MiB")
SIZE_EDGES = (16 * KIB, 64 * KIB, 256 * KIB, MIB, 16 * MIB)


def size_bucket(size: int) -> str:
    """The `size_histogram` bucket of a file of `size` bytes."""
    return SIZE_BUCKETS[bisect.bisect_right(SIZE_EDGES, size)]


def share_deadline(clock: Clock, deadline: float, share: float) -> float:
    """The deadline that gives `share` of the time left before `deadline`."""
    now = clock()
    return now + max(0.0, deadline - now) * share


@dataclass
class Level:
    """What the walk learnt about the folders at one depth below DIR (DIR is depth 0)."""

    known: int = 0  # folders found at this depth
    visited: int = 0  # folders whose listing was started and not refused
    with_files: int = 0  # visited folders holding at least one file directly
    files_seen: int = 0  # files directly in visited folders (partial listings included)
    listed: int = 0  # folders listed to the end
    files: int = 0  # files directly in the folders listed to the end
    bytes: int = 0
    subdirs: int = 0  # folders found in the folders listed to the end


@dataclass
class Pass:
    """One timed read pass over the sample (cold or warm)."""

    files: int = 0  # files read to their end
    bytes: int = 0
    seconds: float = 0.0


@dataclass
class Shared:
    """The worker's results, merged under `lock`; read by the caller once it stops waiting."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    abandoned: bool = False
    finished: bool = False
    phase: str = "walk"
    error: Optional[str] = None  # DIR itself cannot be walked
    failure: Optional[str] = None  # the worker failed (a bug)
    # walk
    complete: bool = False
    stopped_inside_folder: bool = False
    walk_seconds: Optional[float] = None
    files: int = 0
    bytes: int = 0
    histogram: list[int] = field(default_factory=lambda: [0] * len(SIZE_BUCKETS))
    formats: dict[str, int] = field(default_factory=dict)
    levels: list[Level] = field(default_factory=list)
    unreadable: int = 0
    broken_symlinks: int = 0
    symlink_loops: int = 0
    candidates: list[list[str]] = field(default_factory=list)  # per folder, in visit order
    # magic sample
    magic: dict[str, int] = field(default_factory=dict)
    sampled: int = 0
    # read sample
    sample_files: int = 0
    cold: Optional[Pass] = None
    warm: Optional[Pass] = None
    cache_dropped: bool = False
    read_reasons: Reasons = field(default_factory=dict)

    def dropped(self) -> bool:
        """Whether the caller stopped waiting (a method: the flag changes under the lock)."""
        return self.abandoned

    def level(self, depth: int) -> Level:
        while len(self.levels) <= depth:
            self.levels.append(Level())
        return self.levels[depth]
