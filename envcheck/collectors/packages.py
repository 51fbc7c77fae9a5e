"""Installed distributions of the audited interpreter, read from metadata on disk.

Nothing of the target environment is imported. Each sys.path entry is listed once; the
first distribution of a name on sys.path wins, as it does for the import system. Only the
header of each METADATA file is read (Name and Version come first), which keeps a
thousand-package environment cheap to scan.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from packaging.utils import canonicalize_name

from envcheck.collectors.base import CollectContext, Unavailable

# Top-level import names whose providers matter to rules: two distributions that both
# ship `tensorflow/` shadow each other (tensorflow/tensorflow#22472).
WATCHED_MODULES = ("tensorflow", "torch", "keras", "pynvml", "theano")

_META_SUFFIXES = (".dist-info", ".egg-info")


def collect(ctx: CollectContext) -> dict[str, Any]:
    if not ctx.interpreter.sys_path:
        raise Unavailable("the interpreter reported an empty sys.path")
    found = scan(ctx)
    packages: dict[str, str] = {}
    shadowed: dict[str, list[str]] = {}
    modules: dict[str, list[str]] = {m: [] for m in WATCHED_MODULES}
    for dist in found.distributions:
        if dist.name in packages:
            shadowed.setdefault(dist.name, []).append(dist.version)
            continue
        packages[dist.name] = dist.version
        for module in dist.top_level_modules():
            if module in modules:
                modules[module].append(dist.name)
    return {
        "packages": dict(sorted(packages.items())),
        "modules": {
            "providers": modules,
            "shadowed": dict(sorted(shadowed.items())),
            "unreadable_metadata": list(found.unreadable),
            "distribution_count": len(packages),
        },
    }


@dataclass(frozen=True)
class InstalledDistribution:
    """One readable distribution's metadata on sys.path."""

    name: str  # canonical: "tensorflow-cpu"
    version: str
    meta_path: Path  # the .dist-info / .egg-info folder or file
    entry: Path  # the sys.path entry that holds it

    def top_level_modules(self) -> set[str]:
        """Its top-level import names (top_level.txt, else the watched modules in RECORD)."""
        return _top_level_modules(self.meta_path)


@dataclass(frozen=True)
class Scan:
    """Every distribution on sys.path, in sys.path order, shadowed ones included.

    Callers that want what the import system sees keep the first of each name.
    """

    distributions: tuple[InstalledDistribution, ...]
    unreadable: tuple[str, ...]  # metadata without a readable Name and Version


def scan(ctx: CollectContext) -> Scan:
    """The audited interpreter's distributions, read once per collection and shared."""
    key = ("distributions", tuple(ctx.interpreter.sys_path))
    cached = ctx.memo.get(key)
    if isinstance(cached, Scan):
        return cached
    found, unreadable = [], []
    for meta_path in _metadata_paths([Path(p) for p in ctx.interpreter.sys_path if p]):
        header = _read_header(meta_path)
        if header is None:
            unreadable.append(str(meta_path))
            continue
        name, version = header
        found.append(
            InstalledDistribution(canonicalize_name(name), version, meta_path, meta_path.parent)
        )
    result = Scan(tuple(found), tuple(unreadable))
    ctx.memo[key] = result
    return result


def _metadata_paths(entries: list[Path]) -> Iterator[Path]:
    seen: set[str] = set()
    for entry in entries:
        key = os.path.realpath(entry)
        if key in seen or not os.path.isdir(entry):
            continue  # zip files and missing folders hold no installed metadata
        seen.add(key)
        try:
            names = sorted(os.listdir(entry))
        except OSError:
            continue
        for name in names:
            if name.endswith(_META_SUFFIXES):
                yield entry / name


def _read_header(meta_path: Path) -> Optional[tuple[str, str]]:
    """(Name, Version) from the metadata file's header, stopping at the first blank line."""
    if meta_path.is_dir():
        candidates = [meta_path / "METADATA", meta_path / "PKG-INFO"]
    else:
        candidates = [meta_path]  # an egg-info file
    for candidate in candidates:
        try:
            with open(candidate, encoding="utf-8", errors="replace") as handle:
                name = version = None
                for line in handle:
                    if not line.strip():
                        break
                    key, _, value = line.partition(":")
                    if key == "Name" and name is None:
                        name = value.strip()
                    elif key == "Version" and version is None:
                        version = value.strip()
                    if name and version:
                        return name, version
        except OSError:
            continue
    return None


def _top_level_modules(meta_path: Path) -> set[str]:
    """Top-level import names a distribution ships: top_level.txt, else RECORD."""
    if not meta_path.is_dir():
        return set()
    top_level = meta_path / "top_level.txt"
    try:
        return {line.strip() for line in top_level.read_text().splitlines() if line.strip()}
    except OSError:
        pass
    found: set[str] = set()
    try:
        with open(meta_path / "RECORD", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                head = line.split("/", 1)[0] if "/" in line else ""
                if head in WATCHED_MODULES:
                    found.add(head)
    except OSError:
        pass
    return found
