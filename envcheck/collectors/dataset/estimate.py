"""The size of a folder whose walk stopped early, extrapolated per depth (`estimate`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from envcheck.collectors.dataset.tally import Level


@dataclass(frozen=True)
class Estimate:
    """The extrapolated totals, never below what the walk saw."""

    files: int
    dirs: int
    bytes: int
    note: Optional[str]  # where the estimate is weaker than the extrapolation


def estimate(levels: Sequence[Level], files_seen: int, bytes_seen: int) -> Estimate:
    """ESTIMATE of the whole folder's files, folders and bytes after an incomplete walk.

    Per-depth extrapolation. Depth 0 is DIR, one folder. At each depth d, the folders
    listed to the end are a random sample (the walk visits each depth in shuffled order)
    of the folders expected there, E(d); so each of them stands for E(d) / listed(d)
    folders:

        files  += files(d) × E(d) / listed(d)      (bytes likewise)
        E(d+1)  = subfolders(d) × E(d) / listed(d)

    E(0) = 1, and while the walk reached every folder of a depth the factor is 1 and the
    counts are exact. Example: DIR with 200 class folders of 1000 files, stopped after
    listing 50 of them: E(1) = 200, files = 50,000 × 200/50 = 200,000.

    A depth whose folders were found but none listed to the end is given the mean per
    folder of the deepest listed depth that held files, and deeper folders are not
    guessed: `note` says so. With no such depth (the walk stopped inside DIR) the files
    seen are reported, a lower bound. The result is never below what was seen.
    """
    files = size = dirs = 0.0
    expected = 1.0
    mean: Optional[tuple[float, float, int]] = None  # files, bytes per folder; its depth
    note: Optional[str] = None
    for depth, level in enumerate(levels):
        if expected <= 0:
            break
        dirs += expected
        if level.listed:
            factor = expected / level.listed
            files += level.files * factor
            size += level.bytes * factor
            if level.files:
                mean = (level.files / level.listed, level.bytes / level.listed, depth)
            expected = level.subdirs * factor
            continue
        if mean is None:
            note = "a lower bound: the walk stopped before it had listed a folder that holds files"
        else:
            files += expected * mean[0]
            size += expected * mean[1]
            note = (
                f"no folder at depth {depth} was listed before the budget ran out: each is "
                f"assumed to hold as much as the listed folders at depth {mean[2]}, and "
                "deeper folders are not counted"
            )
        break
    return Estimate(
        files=max(round(files), files_seen),
        dirs=max(round(dirs), sum(level.known for level in levels)),
        bytes=max(round(size), bytes_seen),
        note=note,
    )
