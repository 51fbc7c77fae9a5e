"""The project modules a named script imports, found on disk beside it.

A user runs `envcheck scripts train.py` inside the repository, and train.py reads
`cfg.DATA.workers` from `config.py`, builds its loaders in `datasets/loader.py` and parses
its options in `opts.py`. Those files are what Python would import when the script runs,
so their option defaults, config trees, constants and Dataset classes are the script's own
(run_options.py): without them a worker count set there stays unknown. They are read here
as context only: parsed, never imported or run, and never reported on (naming them audits
them).

An import is resolved the way Python resolves it for `python path/to/train.py`: relative
imports (`from .data import x`) from the importer's package; absolute ones from the
script's folder (sys.path[0]), then from the project's root (the nearest folder above
holding .git, pyproject.toml, setup.py, setup.cfg or requirements.txt, at most MAX_LEVELS
up) and its `src/`, which is where running from the root, `pip install -e .` or a
`sys.path.insert` of the root finds them; for a script that extends sys.path itself or
through `import _init_paths`, also from `lib/` and `src/` beside it and `lib/` at the
root. The folders in between are on no path. With no project root in reach only the
script's own folder is searched (the folders above may hold another project's modules).
Imports of the files found are followed too (MAX_DEPTH), within MAX_FILES files; a
third-party package is never found (it is not under the project).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from envcheck.scripts.index import module_nodes
from envcheck.scripts.parsing import parse_file
from envcheck.scripts.run_options import PATH_SETUP_MODULES, adds_to_sys_path

MAX_LEVELS = 3  # folders above the script searched for its project's root
MAX_DEPTH = 3  # imports of imports followed
MAX_FILES = 64  # context files read per run, all named scripts together
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")
LIBRARY_FOLDERS = ("src", "lib")
# never a project's own module, whatever a folder beside the script holds
SKIPPED_PARTS = {"site-packages", "dist-packages", "node_modules", ".venv", "venv", "__pycache__"}


@dataclass(frozen=True)
class Import:
    """One module an `import` names: the dotted name and, for a relative import, how many
    packages up it starts (0: absolute)."""

    dotted: str
    level: int = 0


@dataclass
class ContextFiles:
    """The context files found for a run, in the order found: (shown path, parsed module,
    text); and the import links (importer's shown path, imported one's) that tie them to
    the scripts."""

    files: list[tuple[str, ast.Module, str]] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    truncated: bool = False


def module_imports(module: ast.Module) -> list[Import]:
    """The modules a file imports, at any depth of its statements: `import a.b` names
    a.b; `from a import b` names a and a.b (b may be a module); `from . import p` names p
    one package up from nothing (level 1)."""
    found: list[Import] = []
    for node in module_nodes(module):
        if isinstance(node, ast.Import):
            found += [Import(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if base:
                found.append(Import(base, node.level))
            found += [
                Import(f"{base}.{a.name}" if base else a.name, node.level)
                for a in node.names
                if a.name != "*"
            ]
    return found


def search_folders(script: Path, widened: bool = False) -> list[Path]:
    """Where an absolute import of `script` is looked for, in order: its folder
    (sys.path[0]), then the project's root and its src/ (where `pip install -e .` or
    running from the root puts the project's packages), and for a script that extends
    sys.path (`widened`) the lib/ and src/ beside it and lib/ at the root. The folders in
    between are on no path. Without a project root within MAX_LEVELS, only the script's
    folder: a folder above it may hold another project's modules."""
    folder = script.parent
    root: Optional[Path] = folder
    levels = 0
    while root is not None and not _is_project_root(root):
        levels += 1
        root = root.parent if root.parent != root and levels <= MAX_LEVELS else None
    candidates = [folder]
    if root is not None:
        candidates += [root, root / "src"]
    if widened:
        candidates += [folder / "lib", folder / "src"]
        candidates += [root / "lib"] if root is not None else []
    folders: list[Path] = []
    for candidate in candidates:
        if candidate not in folders and (candidate == folder or candidate.is_dir()):
            folders.append(candidate)
    return folders


def extends_sys_path(module: ast.Module) -> bool:
    """The script puts a folder on sys.path itself or imports a module that does by its
    name (`import _init_paths`, the py-faster-rcnn idiom)."""
    return adds_to_sys_path(module) or any(
        found.dotted.rsplit(".", 1)[-1] in PATH_SETUP_MODULES for found in module_imports(module)
    )


def _is_project_root(folder: Path) -> bool:
    return any((folder / marker).exists() for marker in PROJECT_MARKERS)


def module_file(folder: Path, dotted: str) -> Optional[Path]:
    """The file `dotted` names under `folder` (a/b.py, or a/b/__init__.py), if any."""
    parts = [p for p in dotted.split(".") if p]
    if not parts or any(not p.isidentifier() for p in parts):
        return None
    stem = folder.joinpath(*parts)
    for candidate in (stem.with_name(stem.name + ".py"), stem / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def resolve_import(script: Path, found: Import, folders: list[Path]) -> Optional[Path]:
    """The project file an import of `script` loads, or None (the standard library, an
    installed package, a name that is not a module)."""
    if found.level:
        base = script.parent
        for _ in range(found.level - 1):
            base = base.parent
        return module_file(base, found.dotted) if found.dotted else None
    for folder in folders:
        hit = module_file(folder, found.dotted)
        if hit is not None:
            return hit
    return None


def shown_path(path: Path, like: str, like_path: Path) -> str:
    """How to name a context file: relative to where the named script was given from
    when that is short (`train.py` given, `config.py` shown), else absolute."""
    base = Path(like).parent
    try:
        relative = os.path.relpath(path, like_path.parent)
    except ValueError:  # another drive on Windows
        return str(path)
    joined = os.path.normpath(base / relative)
    return str(path) if joined.startswith("..") else joined


def context_files(scripts: list[tuple[Path, str, ast.Module]], known: list[Path]) -> ContextFiles:
    """The project files the named `scripts` (path, shown, parsed module) import, directly
    or through each other, that are not among the run's files already (`known`). Reading
    stops at MAX_FILES files (truncated is set)."""
    result = ContextFiles()
    seen = {str(_real(path)) for path in known}
    shown_of = {str(_real(path)): shown for path, shown, _ in scripts}
    queue: list[tuple[Path, str, ast.Module, int, list[Path]]] = [
        (
            path.absolute(),
            shown,
            module,
            0,
            search_folders(path.absolute(), extends_sys_path(module)),
        )
        for path, shown, module in scripts
    ]
    while queue:
        path, shown, module, depth, folders = queue.pop(0)
        for imported in _project_files(path, module, folders):
            real = str(_real(imported))
            if real in shown_of:
                result.links.append((shown, shown_of[real]))
                continue
            if real in seen:
                continue
            if len(result.files) >= MAX_FILES:
                result.truncated = True
                return result
            seen.add(real)
            name = shown_path(imported, shown, path)
            parsed = parse_file(imported, name)
            if isinstance(parsed, dict):  # unreadable or not Python: no context from it
                continue
            shown_of[real] = name
            result.files.append((name, *parsed))
            result.links.append((shown, name))
            if depth + 1 < MAX_DEPTH:
                queue.append((imported, name, parsed[0], depth + 1, folders))
    return result


def _project_files(path: Path, module: ast.Module, folders: list[Path]) -> Iterator[Path]:
    for found in module_imports(module):
        hit = resolve_import(path, found, folders)
        if hit is not None and not SKIPPED_PARTS.intersection(hit.parts):
            yield hit


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return path.absolute()
