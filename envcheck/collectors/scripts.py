"""The training scripts named with --script: files, or folders searched for *.py.

Each file is parsed, never imported or run (envcheck/scripts/analyze.py). A file that
does not parse, is not Python, or is too large is listed in `errors` with the reason and
location, and the other files are still audited. A folder search is bounded in files and
time so that pointing --script at a whole repository stays quick; files named one by one
are all audited (up to the file limit), however long that takes, so the same files give
the same findings on a slow or busy machine. When several files are audited, each is
parsed once before the audit so that the options one file defines are known to the others
(envcheck/scripts/run_options.py).
"""

from __future__ import annotations

import ast
import itertools
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from envcheck.collectors.base import CollectContext
from envcheck.scripts.analyze import analyze_file
from envcheck.scripts.parsing import Parsed, parse_file
from envcheck.scripts.project_context import context_files, project_root
from envcheck.scripts.run_options import RunOptions

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
TEST_FOLDERS = {"tests", "test"}
SOURCES = (".py", ".ipynb")  # what a folder search audits


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
    late = lambda: clock() > deadline  # noqa: E731
    entries = list(itertools.islice(_python_files(ctx.scripts, section, late), MAX_FILES + 1))
    # reading every file's options first may take at most half of what is left, so that
    # a large folder still gets audited (as far as the budget goes) instead of not at all
    halfway = clock() + max(0.0, deadline - clock()) / 2
    run, parsed, context = _run_options(entries, lambda: clock() > halfway)
    if context:
        section["context"] = context
    for path, shown, searched in entries:
        if len(section["files"]) >= MAX_FILES or (searched and clock() > deadline):
            section["reasons"]["files"] = (
                f"stopped after {len(section['files'])} files (limit {MAX_FILES} files, "
                f"{BUDGET_S:g} s)"
            )
            break
        report = analyze_file(path, shown, run, parsed.pop(shown, None))
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


def _run_options(
    entries: list[tuple[Path, str, bool]], late: Callable[[], bool]
) -> tuple[Optional[RunOptions], dict[str, Parsed], list[str]]:
    """The options every file of the run defines (run_options.py), with the project
    modules the named files import read as context (project_context.py); the files as
    parsed for it, so that each is parsed once; and the context files read. None when
    a single file imports nothing of its project and composes no Hydra config."""
    run = RunOptions()
    run.project_root = project_root
    parsed: dict[str, Parsed] = {}
    named: list[tuple[Path, str, ast.Module]] = []
    for path, shown, searched in entries[:MAX_FILES]:
        if searched and late():
            break
        parsed[shown] = parse_file(path, shown)
        found = parsed[shown]
        if not isinstance(found, dict):
            if not searched:
                named.append((path, shown, found[0]))
            try:
                run.add(shown, *found)
            except RecursionError:  # analyze_file reports the file; the others still share
                continue
    context = _context(run, named, [path for path, _, _ in entries], late)
    # a Hydra entry point's composed config is the run's own (config_files.hydra_load)
    composed = any("@hydra.main" in text for text in run.texts.values())
    if len(entries) < 2 and not context and not composed:
        return None, parsed, []
    return run, parsed, context


def _context(
    run: RunOptions,
    named: list[tuple[Path, str, ast.Module]],
    known: list[Path],
    late: Callable[[], bool],
) -> list[str]:
    """Add the project modules the named files import to `run` (never audited); their
    shown paths."""
    if not named or late():
        return []
    try:
        found = context_files(named, known)
    except (OSError, RecursionError, ValueError):
        # an unreadable folder, a path the system refuses: the scripts are still audited
        return []
    for shown, module, text in found.files:
        run.context.add(shown)
        try:
            run.add(shown, module, text, own_options=shown not in found.silent)
        except RecursionError:
            continue
    for importer, imported in found.links:
        run.link(importer, imported)
    return [shown for shown, _, _ in found.files]


def _python_files(
    paths: tuple[Path, ...], section: dict[str, Any], late: Callable[[], bool]
) -> Iterator[tuple[Path, str, bool]]:
    """(path, how to show it, found by a folder search): explicit files as given, *.py
    found in folders, sorted.

    A folder's walk stops after MAX_FILES + 1 files or when `late()` (`scripts /` must
    not walk the whole disk before the limits apply)."""
    for given in paths:
        if given.is_file() or (given.exists() and not given.is_dir()):
            # a named FIFO or device is a file given to audit: parse_file() says why it
            # cannot be, and the closing line counts it among the files
            yield given, str(given), False
        elif given.is_dir():
            skipped = [0]
            found = sorted(itertools.islice(_walk(given, late, skipped), MAX_FILES + 1))
            if skipped[0]:
                section["reasons"]["tests"] = (
                    f"{skipped[0]} test file{'' if skipped[0] == 1 else 's'} left out "
                    "(name them to audit them)"
                )
            if late():
                section["reasons"]["files"] = (
                    f"the search of {given} stopped after {BUDGET_S:g} s "
                    f"({len(found)} *.py files found by then)"
                )
            if not found:
                section["errors"].append(
                    {
                        "path": str(given),
                        "reason": "no *.py or *.ipynb files in this folder",
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
                    "reason": _missing(given),
                    "line": None,
                    "column": None,
                }
            )


def _missing(given: Path) -> str:
    """Why a path given to audit is neither a file nor a folder."""
    if given.is_symlink() and not given.exists():
        return "a broken or looping symbolic link"
    if given.exists():
        return "not a regular file (a device, FIFO or socket)"
    return "no such file or folder"


def test_file(name: str) -> bool:
    """pytest's names for test modules: tests exercise the code, they are not the run
    whose speed matters (a folder search leaves them out; named files are audited)."""
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")


def _walk(
    folder: Path, late: Callable[[], bool], skipped: Optional[list[int]] = None
) -> Iterator[Path]:
    """*.py under `folder`; test modules and test folders below it are counted in
    `skipped[0]` instead (`envcheck scripts tests/` still audits the folder named)."""
    for root, dirs, files in os.walk(folder):
        if late():
            return
        kept = []
        for d in sorted(dirs):
            if d in SKIPPED_FOLDERS or d.startswith("."):
                continue
            if d in TEST_FOLDERS:
                if skipped is not None:
                    skipped[0] += sum(
                        1 for _, _, fs in os.walk(Path(root) / d) for f in fs if f.endswith(SOURCES)
                    )
                continue
            kept.append(d)
        dirs[:] = kept
        for name in files:
            if not name.endswith(SOURCES):
                continue
            if test_file(name):
                if skipped is not None:
                    skipped[0] += 1
                continue
            yield Path(root) / name
