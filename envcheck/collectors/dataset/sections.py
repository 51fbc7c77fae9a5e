"""From the tally to the two sections, `dataset` and `read_throughput`, in the shapes of
docs/snapshot-data.md: totals (extrapolated after an incomplete walk), the layout, and
the read rates, each null with its reason where it could not be had."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Optional

from envcheck.collectors.dataset.estimate import estimate
from envcheck.collectors.dataset.tally import (
    SIZE_BUCKETS,
    WALK_SHARE,
    Level,
    Pass,
    Reasons,
    Shared,
)

SHARD_EXTENSIONS = frozenset({".tar", ".tfrecord", ".tfrecords", ".tfrec", ".parquet", ".mdb"})
SHARD_MAGIC = frozenset({"tar", "tfrecord", "parquet", "lmdb"})
SHARDED_SHARE = 0.5  # sharded: at least this share of the files (or of the sample) are shards
FORMATS_LIMIT = 50  # extensions listed in `formats`; the rest are summed as "other"
ROOT_FILES_SHARE = 0.1  # class-folders: DIR itself holds at most this share of the files

# the `dataset` section's keys, in the order of docs/snapshot-data.md
DATASET_KEYS = (
    "path",
    "complete",
    "files",
    "dirs",
    "bytes",
    "mean_file_bytes",
    "size_histogram",
    "formats",
    "magic",
    "sampled",
    "layout",
    "class_folders",
    "unreadable",
    "broken_symlinks",
    "symlink_loops",
    "walk_seconds",
    "reasons",
)

METHOD = "posix_fadvise(POSIX_FADV_DONTNEED) before the cold pass; the same files again warm"
METHOD_NO_FADVISE = (
    "no posix_fadvise on this platform: the cold pass reads whatever is cached; "
    "the same files again warm"
)


def _scaled(counts: dict[str, int], factor: float, limit: int) -> dict[str, int]:
    """Counts × factor, most common first; past `limit` keys the rest is summed as "other"
    (a key no extension can have: extensions start with a dot or are "")."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    scaled = {key: round(count * factor) for key, count in ordered[:limit]}
    rest = sum(count for _, count in ordered[limit:])
    if rest:
        scaled["other"] = round(rest * factor)
    return scaled


def _level_at(levels: Sequence[Level], depth: int) -> Level:
    return levels[depth] if depth < len(levels) else Level()


def _layout(shared: Shared) -> tuple[Optional[str], Optional[int], Optional[str]]:
    """(layout, class_folders, why layout is null), from the files seen, first rule wins:

    empty          no files (after a complete walk; an incomplete one that saw none: null)
    sharded        at least half the files have a shard extension (.tar, .tfrecord(s),
                   .tfrec, .parquet, .mdb), or at least half the magic sample is tar,
                   tfrecord, parquet or lmdb
    flat           every file lies directly in DIR (subfolders without files allowed)
    class-folders  at least 2 top-level subfolders hold files directly, and at least half
                   of the listed ones do; DIR itself holds at most ROOT_FILES_SHARE of the
                   files; the top-level subfolders hold at least half of them directly.
                   class_folders: their count (after an incomplete walk, the share of the
                   listed top-level folders that hold files × all top-level folders)
    nested         anything else
    """
    files = shared.files
    if files == 0:
        if shared.complete:
            return "empty", None, None
        return None, None, "no file was seen before the walk stopped"
    shards = sum(n for ext, n in shared.formats.items() if ext in SHARD_EXTENSIONS)
    magic_shards = sum(n for kind, n in shared.magic.items() if kind in SHARD_MAGIC)
    if shards >= SHARDED_SHARE * files or (
        shared.sampled and magic_shards >= SHARDED_SHARE * shared.sampled
    ):
        return "sharded", None, None
    root = _level_at(shared.levels, 0)
    top = _level_at(shared.levels, 1)
    if root.files_seen == files:
        if top.known and not top.visited and not shared.complete:
            return None, None, "the walk stopped before it listed any subfolder"
        return "flat", None, None
    top_files = top.files_seen
    if (
        top.with_files >= 2
        and 2 * top.with_files >= top.visited
        and root.files_seen <= ROOT_FILES_SHARE * files
        and 2 * top_files >= files
    ):
        classes = top.with_files
        if not shared.complete and top.visited:
            classes = round(top.with_files / top.visited * top.known)
        return "class-folders", classes, None
    return "nested", None, None


def dataset_section(
    path: str, shared: Shared, hung: bool, waited: float, budget: float
) -> dict[str, Any]:
    reasons: Reasons = {}
    if shared.error is not None:
        # DIR itself cannot be walked: every count is unknown, for the same reason
        unknown = [key for key in DATASET_KEYS if key not in ("path", "complete", "reasons")]
        reasons.update({key: shared.error for key in unknown if key != "class_folders"})
        return {
            **dict.fromkeys(DATASET_KEYS),
            "path": path,
            "complete": False,
            "reasons": reasons,
        }

    complete = shared.complete
    if complete:
        files, dirs, size = shared.files, sum(lv.known for lv in shared.levels), shared.bytes
    else:
        guess = estimate(shared.levels, shared.files, shared.bytes)
        files, dirs, size = guess.files, guess.dirs, guess.bytes
        listed = sum(lv.listed for lv in shared.levels)
        if hung and shared.phase == "walk":
            why = (
                f"the file system stopped answering: no reply within {waited:g} s "
                "(a hung network mount?)"
            )
        elif shared.failure is not None:
            why = f"the walk failed: {shared.failure}"
        else:
            why = f"the walk stopped at its budget ({WALK_SHARE * budget:g} s)"
        reasons["complete"] = (
            f"{why} after listing {listed} of ~{dirs} folders: files, dirs, bytes, formats "
            "and size_histogram are estimates (extrapolated per depth)"
        )
        if guess.note:
            reasons["files"] = guess.note
    factor = files / shared.files if shared.files else 1.0
    layout, class_folders, layout_why = _layout(shared)
    if layout_why:
        reasons["layout"] = layout_why
    if not files:
        reasons["mean_file_bytes"] = "no files"
    magic: dict[str, int] = {"unknown": 0}
    magic.update(shared.magic)
    if not shared.sampled:
        reasons["magic"] = _not_sampled(shared, hung, waited)
    section = {
        "path": path,
        "complete": complete,
        "files": files,
        "dirs": dirs,
        "bytes": size,
        "mean_file_bytes": round(size / files) if files else None,
        "size_histogram": {
            name: round(count * factor)
            for name, count in zip(SIZE_BUCKETS, shared.histogram, strict=True)
        },
        "formats": _scaled(shared.formats, factor, FORMATS_LIMIT),
        "magic": dict(sorted(magic.items(), key=lambda item: (-item[1], item[0]))),
        "sampled": shared.sampled,
        "layout": layout,
        "class_folders": class_folders,
        "unreadable": shared.unreadable,
        "broken_symlinks": shared.broken_symlinks,
        "symlink_loops": shared.symlink_loops,
        "walk_seconds": None if shared.walk_seconds is None else round(shared.walk_seconds, 3),
        "reasons": reasons,
    }
    return section


def _not_sampled(shared: Shared, hung: bool, waited: float) -> str:
    if hung and shared.phase in ("walk", "magic"):
        return f"not sampled: the file system gave no reply within {waited:g} s"
    if shared.files == 0:
        return "no files to sample"
    return "no file could be sampled (unreadable, or no time left in the budget)"


def throughput_section(shared: Shared, hung: bool, waited: float) -> dict[str, Any]:
    reasons: Reasons = dict(shared.read_reasons)
    cold = _pass_facts(shared.cold, "cold", reasons)
    if cold is not None:
        cold["cache_dropped"] = shared.cache_dropped
    warm = _pass_facts(shared.warm, "warm", reasons)
    if shared.error is not None:
        missing = f"the data folder cannot be walked: {shared.error}"
    elif shared.failure is not None:
        missing = f"the reading failed: {shared.failure}"
    elif hung:
        missing = (
            f"not measured: the file system gave no reply within {waited:g} s "
            "(a hung network mount?)"
        )
    elif shared.sample_files == 0:
        missing = "no readable files to sample"
    else:
        missing = "no time left in the budget for this pass"
    for name, facts in (("cold", cold), ("warm", warm)):
        if facts is None:
            reasons.setdefault(name, missing)
        elif hung and shared.phase == name:
            reasons[name] = f"cut short: a read gave no reply within {waited:g} s"
    return {
        "cold": cold,
        "warm": warm,
        "sample_files": shared.sample_files,
        "method": METHOD if hasattr(os, "posix_fadvise") else METHOD_NO_FADVISE,
        "reasons": reasons,
    }


def _pass_facts(result: Optional[Pass], name: str, reasons: Reasons) -> Optional[dict[str, Any]]:
    if result is None or (result.bytes == 0 and result.files == 0):
        return None
    seconds = result.seconds
    facts: dict[str, Any] = {
        "files": result.files,
        "bytes": result.bytes,
        "seconds": round(seconds, 6),
        "files_per_s": None,
        "bytes_per_s": None,
    }
    if seconds <= 0:
        reasons[f"{name}.files_per_s"] = reasons[f"{name}.bytes_per_s"] = "too fast to time"
        return facts
    facts["bytes_per_s"] = round(result.bytes / seconds, 1)
    if result.files:
        facts["files_per_s"] = round(result.files / seconds, 1)
    else:
        reasons[f"{name}.files_per_s"] = (
            "no file was read to its end within the budget; bytes_per_s covers the part read"
        )
    return facts
