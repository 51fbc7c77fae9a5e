"""The training scripts named with --script: files, or folders searched for *.py.

Each file is parsed, never imported or run (envcheck/scripts/analyze.py). A file that
does not parse, is not Python, or is too large is listed in `errors` with the reason and
location, and the other files are still audited. A folder search is bounded in files and
time so that pointing --script at a whole repository stays quick; files named one by one
are all audited (up to the file limit), however long that takes, so the same files give
the same findings on a slow or busy machine.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from envcheck.collectors.base import CollectContext
from envcheck.scripts.analyze import analyze_file

MAX_FILES = 2_000
BUDGET_S = 10.0
SKIPPED_FOLDERS = {
    ".git",
    ".hg",
    ".venv",
    "venv",
    "env",
    "site-packages",
    "node_modules",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    "build",
    "dist",
}


def collect(ctx: CollectContext, clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    if not ctx.scripts:
        return {"scripts": None}
    deadline = clock() + BUDGET_S
    section: dict[str, Any] = {
        "paths": [str(p) for p in ctx.scripts],
        "files": [],
        "errors": [],
        "file_facts": [],
        "loaders": [],
        "tf_pipelines": [],
        "keras_calls": [],
        "torch_calls": [],
        "reasons": {},
    }
    for path, shown, searched in _python_files(ctx.scripts, section, lambda: clock() > deadline):
        if len(section["files"]) >= MAX_FILES or (searched and clock() > deadline):
            section["reasons"]["files"] = (
                f"stopped after {len(section['files'])} files (limit {MAX_FILES} files, "
                f"{BUDGET_S:g} s)"
            )
            break
        report = analyze_file(path, shown)
        section["files"].append(shown)
        if report.error is not None:
            section["errors"].append({"path": shown, **report.error})
            continue
        section["file_facts"].append({"path": shown, **report.facts})
        section["loaders"].extend(report.loaders)
        section["tf_pipelines"].extend(report.tf_pipelines)
        section["keras_calls"].extend(report.keras_calls)
        section["torch_calls"].extend(report.torch_calls)
    return {"scripts": section}


def _python_files(
    paths: tuple[Path, ...], section: dict[str, Any], late: Callable[[], bool]
) -> Iterator[tuple[Path, str, bool]]:
    """(path, how to show it, found by a folder search): explicit files as given, *.py
    found in folders, sorted.

    A folder's walk stops after MAX_FILES + 1 files or when `late()` (`scripts /` must
    not walk the whole disk before the limits apply)."""
    for given in paths:
        if given.is_file():
            yield given, str(given), False
        elif given.is_dir():
            found = sorted(itertools.islice(_walk(given, late), MAX_FILES + 1))
            if late():
                section["reasons"]["files"] = (
                    f"the search of {given} stopped after {BUDGET_S:g} s "
                    f"({len(found)} *.py files found by then)"
                )
            if not found:
                section["errors"].append(
                    {
                        "path": str(given),
                        "reason": "no *.py files in this folder",
                        "line": None,
                        "column": None,
                    }
                )
            for path in found:
                yield path, str(path), True
        else:
            section["errors"].append(
                {
                    "path": str(given),
                    "reason": "no such file or folder",
                    "line": None,
                    "column": None,
                }
            )


def _walk(folder: Path, late: Callable[[], bool]) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        if late():
            return
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith("."))
        for name in files:
            if name.endswith(".py"):
                yield Path(root) / name
