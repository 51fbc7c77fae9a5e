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
`sys.path.insert` of the root finds them. The folders in between are on no path. With no
project root in reach only the script's own folder is searched (the folders above may
hold another project's modules). A file of the run that puts a folder on sys.path itself,
where its source determines which (`sys.path.insert(0, osp.join(osp.dirname(__file__),
'lib'))`, directly or through a helper `add_path(lib_path)`: added_folders), has it
searched for the imports that follow, as Python would: CenterNet's `import _init_paths`
then `from opts import opts` is `src/lib/opts.py`; a script that extends sys.path in a
way its source does not settle also has `lib/` and `src/` beside it and `lib/` at the root
searched. Imports of the files found are followed too (MAX_DEPTH; a package's `__init__.py`
at the last level has the modules it re-exports read with it, and a module building a
config tree, `_C = CN()` then `_C.X.Y = 8`, is read one import past the last level:
tools/train.py -> utils/parser.py -> config/defaults.py), within MAX_FILES files;
a third-party package is never found (it is not under the project).

The other way round, a named module that an entry point of the project imports (the
`trainer.py` or `data/build.py` a user names, imported by `train.py` beside it, at the
project's root or in its tools/, scripts/ or examples/, directly or through its package's
`__init__.py`, or one module away: run.py importing exp/exp_main.py, which imports the
named data_provider/data_factory.py) is judged with that entry point, where its options,
config and device are set, when exactly one such file imports it (importer_candidates,
imports_script, through_module). With several (a demo, an evaluation and a training
script, each with its own defaults) which one runs is not in sight: their own options are
read only where they all agree (RunOptions._shared_lookup), their config trees not at all;
the modules they import are (the config tree they all build on).

Size: one reader of how Python finds a script's modules both ways (what it imports,
what imports it) and of the sys.path changes that steer that search, kept together so
that every lookup resolves an import the same way.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from envcheck.scripts.assignments import simple_assignments
from envcheck.scripts.index import module_nodes
from envcheck.scripts.parsing import parse_file
from envcheck.scripts.run_options import PATH_SETUP_MODULES, adds_to_sys_path

MAX_LEVELS = 3  # folders above the script searched for its project's root
MAX_DEPTH = 3  # imports of imports followed
MAX_FILES = 64  # context files read per run, all named scripts together
MAX_IMPORTER_CANDIDATES = 200  # files per folder looked at for an entry point importing a script
MAX_IMPORTER_BYTES = 1_000_000  # a candidate entry point larger than this is not read
# a run naming more files than this names its entry points itself: no importer search
# (each named file would read the same folders again)
MAX_NAMED_FOR_IMPORTERS = 16
MAX_SHARED_IMPORTERS = 10  # entry points importing one named file read for what they import
MAX_PATH_DEPTH = 8  # calls and names followed to read a folder put on sys.path
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")
LIBRARY_FOLDERS = ("src", "lib")
# folders at a project's root that hold its entry points (`tools/train.py`, MedicalZoo's
# `examples/train_brats2019_new.py`, one per data set, importing lib/medloaders)
ENTRY_FOLDERS = ("tools", "scripts", "train", "bin", "examples")
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
    # entry points read only for the modules they import: one of several importing a
    # named file, whose own options and config trees are not the run's (which runs is
    # not in sight)
    silent: set[str] = field(default_factory=set)
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
    root = project_root(folder)
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


PATH_CALLS = ("dirname", "abspath", "realpath", "normpath", "expanduser")
PATH_METHODS = ("resolve", "absolute", "expanduser")


def added_folders(
    path: Path, module: ast.Module, entry: bool = False, text: Optional[str] = None
) -> list[tuple[bool, Path]]:
    """(first, folder) for each existing folder the file at `path` puts on sys.path,
    where its source determines which: `sys.path.insert(0, X)` (first) or
    `sys.path.append(X)`, X a path built from `__file__` (os.path's dirname, join,
    abspath..., pathlib's `.parent`, `/`, `.resolve()`), directly, through a name the file
    assigns once, or through the parameter of a helper of the file the file calls with
    one (`def add_path(path): sys.path.insert(0, path)`, `add_path(lib_path)`). In an
    `entry` file (one run as `python path/to/main.py`) `sys.path[0]` is its own folder
    too (audioset_tagging_cnn's `os.path.join(sys.path[0], '../utils')`); in a module it
    imports, that is the entry point's folder, not taken. A folder relative to the
    working directory, or computed at run time, is not taken. A file whose `text` never
    names sys.path adds nothing (its tree is not walked)."""
    if text is not None and "sys.path" not in text:
        return []
    nodes = module_nodes(module)
    if not any(_sys_path_addition(node) is not None for node in nodes):
        return []  # no `sys.path.insert/append` anywhere: nothing to read per function
    names = simple_assignments(module.body)
    helpers: dict[str, tuple[bool, int]] = {}  # function -> (first, parameter position)
    direct: list[tuple[bool, ast.expr]] = []
    for function in nodes:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in function.args.args]
        for node in ast.walk(function):
            added = _sys_path_addition(node)
            if added is not None and isinstance(added[1], ast.Name) and added[1].id in params:
                helpers[function.name] = (added[0], params.index(added[1].id))
    for node in nodes:
        added = _sys_path_addition(node)
        if added is not None:
            direct.append(added)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in helpers
            and len(node.args) > helpers[node.func.id][1]
        ):
            first, position = helpers[node.func.id]
            direct.append((first, node.args[position]))
    found: list[tuple[bool, Path]] = []
    for first, expr in direct:
        folder = _path_value(expr, path, names, 0, entry)
        if folder is not None and folder.is_dir():
            found.append((first, Path(os.path.normpath(folder))))
    return found


def _sys_path_addition(node: ast.AST) -> Optional[tuple[bool, ast.expr]]:
    """(first, the folder expression) of `sys.path.insert(i, X)` / `sys.path.append(X)`."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and ast.unparse(node.func.value) == "sys.path"
    ):
        return None
    if node.func.attr == "insert" and len(node.args) == 2:
        return True, node.args[1]
    if node.func.attr == "append" and len(node.args) == 1:
        return False, node.args[0]
    return None


def _path_value(
    expr: ast.expr, path: Path, names: dict[str, ast.expr], depth: int, entry: bool = False
) -> Optional[Path]:
    """The absolute path `expr` computes in the file at `path`, when it is built from
    `__file__` (or, in an `entry` file, `sys.path[0]`: its folder); None otherwise (a bare
    relative string depends on the working folder)."""
    if depth > MAX_PATH_DEPTH:
        return None
    again = functools.partial(_path_value, path=path, names=names, depth=depth + 1, entry=entry)
    if entry and isinstance(expr, ast.Subscript) and ast.unparse(expr) == "sys.path[0]":
        return path.parent
    if isinstance(expr, ast.Name):
        if expr.id == "__file__":
            return path
        bound = names.get(expr.id)
        return again(bound) if bound is not None else None
    if isinstance(expr, ast.Attribute) and expr.attr == "parent":
        base = again(expr.value)
        return base.parent if base is not None else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
        base, part = again(expr.left), _text(expr.right)
        return base / part if base is not None and part is not None else None
    if not isinstance(expr, ast.Call) or expr.keywords:
        return None
    func = expr.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if isinstance(func, ast.Attribute) and name in PATH_METHODS and not expr.args:
        return again(func.value)
    if len(expr.args) == 1 and name in ("dirname", "Path", "str", *PATH_CALLS):
        base = again(expr.args[0])
        if base is None:
            return None
        return base.parent if name == "dirname" else Path(os.path.normpath(base))
    if name == "join" and expr.args and not isinstance(getattr(func, "value", None), ast.Constant):
        base = again(expr.args[0])
        parts = [_text(a) for a in expr.args[1:]]
        if base is None or any(p is None for p in parts):
            return None
        return base.joinpath(*[p for p in parts if p is not None])
    return None


def _text(expr: ast.expr) -> Optional[str]:
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None


def project_root(folder: Path) -> Optional[Path]:
    """The nearest folder from `folder` up holding a project marker, at most MAX_LEVELS
    up; None when there is none in reach."""
    root: Optional[Path] = folder
    levels = 0
    while root is not None and not _is_project_root(root):
        levels += 1
        root = root.parent if root.parent != root and levels <= MAX_LEVELS else None
    return root


def importer_candidates(script: Path) -> list[Path]:
    """The files that may import `script` as the run's entry point: the *.py beside it,
    at the project's root, beside the package it is in, and in the root's entry-point
    folders (`tools/train.py` importing `data/build.py`'s package), at most
    MAX_IMPORTER_CANDIDATES per folder, sorted by name."""
    folder = script.parent
    root = project_root(folder)
    places = [folder]
    if root is not None and root != folder:
        places.append(root)
        if (folder / "__init__.py").is_file() and folder.parent not in places:
            places.append(folder.parent)
        # the folders between, for packages without __init__.py (namespace packages):
        # decision-transformer's gym/experiment.py imports
        # `decision_transformer.training.seq_trainer` from beside the package
        between = folder.parent
        while between != root and root in between.parents:
            if between not in places and not (folder / "__init__.py").is_file():
                places.append(between)
            between = between.parent
    if root is not None:
        places += [root / name for name in ENTRY_FOLDERS if (root / name) not in places]
    found: list[Path] = []
    for place in places:
        try:
            entries = sorted(place.iterdir())
        except OSError:  # an unreadable folder gives no candidates
            continue
        here = [e for e in entries if e.suffix == ".py" and e != script and e.is_file()]
        found += here[:MAX_IMPORTER_CANDIDATES]
    return found


def imports_script(
    candidate: Path, module: ast.Module, script: Path, folders: Optional[list[Path]] = None
) -> bool:
    """Whether the file `candidate` imports the file `script` (resolved as Python would
    from the candidate's place, or from `folders`: the sys.path of the entry point that
    imports the candidate), directly or through the `__init__.py` of the script's
    package when that imports it (`from data import build_loader`, data/__init__.py
    importing .build)."""
    if folders is None:
        folders = search_folders(candidate, extends_sys_path(module))
    targets = {_real(script)}
    init = package_init(script)
    if init is not None:
        targets.add(_real(init))
    return any(
        hit is not None and _real(hit) in targets
        for hit in (resolve_import(candidate, found, folders) for found in module_imports(module))
    )


def package_init(script: Path) -> Optional[Path]:
    """The `__init__.py` of the package `script` is in, when it imports `script` (so that
    importing the package loads it); else None."""
    init = script.parent / "__init__.py"
    if script.name == "__init__.py" or not init.is_file():
        return None
    parsed = parse_file(init, str(init))
    if isinstance(parsed, dict):
        return None
    target = _real(script)
    folders = [script.parent]
    for found in module_imports(parsed[0]):
        hit = resolve_import(init, found, folders)
        if hit is not None and _real(hit) == target:
            return init
    return None


# what an entry point's source holds (a library module importing the script is no run)
ENTRY_MARKERS = ("__main__", "parse_args", "hydra.main", "app.run(", "LightningCLI", "fire.Fire")


def _entry_text(candidate: Path) -> Optional[str]:
    """The text of a candidate importer when it is an entry point (a `__main__` guard, a
    parser, a Hydra or absl main) of a readable size; None otherwise: a library module
    importing the script (a package's `__init__.py` re-exporting it) sets no run's
    options."""
    text = _small_text(candidate)
    if text is None or not any(marker in text for marker in ENTRY_MARKERS):
        return None
    return text


# `_C = CN()` ... `_C.DATA_LOADER.NUM_WORKERS = 8` at a module's top level (a yacs
# defaults tree, configs.module_config_tree), found in the text before parsing it
_TREE_ROOT = re.compile(r"^(\w+) *= *[\w.]+\(", re.M)


def _config_tree_text(path: Path) -> bool:
    """Whether the module at `path` builds a config tree at its top level (`_C = CN()`,
    `_C.TRAIN.workers = 16`): read one import past the depth limit, since the tree a
    run's `cfg` comes from sits behind the loader of its parser (tools/train.py imports
    utils/parser.py, which imports config/defaults.py), and the settings every file of the
    run reads through a `cfg` handed round are its defaults."""
    text = _small_text(path)
    if text is None:
        return False
    roots = {m.group(1) for m in _TREE_ROOT.finditer(text)}
    return any(re.search(rf"^{re.escape(root)}\.\w+\.\w+ *=", text, re.M) for root in roots)


def _small_text(path: Path) -> Optional[str]:
    try:
        if path.stat().st_size > MAX_IMPORTER_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _names_in_import(text: str, stems: set[str]) -> bool:
    """A cheap text test before a file is parsed: it names one of the script's module
    `stems` in an import statement."""
    return any(
        re.search(rf"^\s*(from|import)\b[^\n]*\b{re.escape(stem)}\b", text, re.M) is not None
        for stem in stems
    )


def _is_project_root(folder: Path) -> bool:
    return any((folder / marker).exists() for marker in PROJECT_MARKERS)


def module_file(folder: Path, dotted: str) -> Optional[Path]:
    """The file `dotted` names under `folder` (a/b.py, or a/b/__init__.py), if any. A
    package missing from the folder answers for all its modules: `torch.nn.functional`
    is not looked for under a project without `torch/`."""
    parts = [p for p in dotted.split(".") if p]
    if not parts or any(not p.isidentifier() for p in parts):
        return None
    if len(parts) > 1 and not _is_folder(folder / parts[0]):
        return None
    stem = folder.joinpath(*parts)
    for candidate in (stem.with_name(stem.name + ".py"), stem / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.lru_cache(maxsize=4096)
def _is_folder(path: Path) -> bool:
    """Whether `path` is a folder, asked once per run (context_files clears it) for a
    top-level package name: every file of a run imports torch, numpy, os..."""
    return path.is_dir()


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
    _is_folder.cache_clear()  # folders are asked about once per run, never across runs
    result = ContextFiles()
    seen = {str(_real(path)) for path in known}
    shown_of = {str(_real(path)): shown for path, shown, _ in scripts}
    queue: list[tuple[Path, str, ast.Module, int, list[Path]]] = []
    for path, shown, module in scripts:
        folders = search_folders(path.absolute(), extends_sys_path(module))
        _add_folders(folders, added_folders(path.absolute(), module, entry=True))
        queue.append((path.absolute(), shown, module, 0, folders))
    for path, shown, _ in scripts if len(scripts) <= MAX_NAMED_FOR_IMPORTERS else ():
        importers = _importers(path.absolute(), shown, seen, shown_of)
        for importer, name, entry in importers:
            if len(result.files) >= MAX_FILES:
                result.truncated = True
                return result
            if len(importers) > 1:
                result.silent.add(name)
            result.files.append((name, *entry))
            result.links.append((name, shown))
            folders = search_folders(importer, extends_sys_path(entry[0]))
            _add_folders(folders, added_folders(importer, entry[0], entry=True, text=entry[1]))
            queue.append((importer, name, entry[0], MAX_DEPTH - 1, folders))
    while queue:
        path, shown, module, depth, folders = queue.pop(0)
        for imported in _project_files(path, module, folders):
            real = str(_real(imported))
            if real in shown_of and depth <= MAX_DEPTH:
                result.links.append((shown, shown_of[real]))
                continue
            if real in seen:
                continue
            if len(result.files) >= MAX_FILES:
                result.truncated = True
                return result
            # past the depth limit only a config tree is read and linked, nothing else
            # (_config_tree_text)
            if depth > MAX_DEPTH and not _config_tree_text(imported):
                continue
            seen.add(real)
            name = shown_path(imported, shown, path)
            parsed = parse_file(imported, name)
            if isinstance(parsed, dict):  # unreadable or not Python: no context from it
                continue
            shown_of[real] = name
            # sys.path as the file leaves it, for the imports that follow (the list is
            # the one the imports being resolved read)
            _add_folders(folders, added_folders(imported.absolute(), parsed[0], text=parsed[1]))
            result.files.append((name, *parsed))
            result.links.append((shown, name))
            # a package's __init__.py is its face: what it re-exports (`from .defaults
            # import _C as cfg`) is read with it, one level more at the depth limit
            if depth + 1 < MAX_DEPTH or (imported.name == "__init__.py" and depth < MAX_DEPTH):
                queue.append((imported, name, parsed[0], depth + 1, folders))
            elif depth < MAX_DEPTH:  # its imports: a config tree only, and no further
                queue.append((imported, name, parsed[0], MAX_DEPTH + 1, folders))
    return result


def _importers(
    script: Path, shown: str, seen: set[str], shown_of: dict[str, str]
) -> list[tuple[Path, str, tuple[ast.Module, str]]]:
    """The entry points of the project that import the named `script` (`train.py`
    importing the `trainer.py` named), where its options, config and device are set,
    directly or, for a named file that is no entry point itself, one module away
    (`run.py` importing `exp/exp_forecasting.py`, which imports the
    `data_provider/data_factory.py` named: through_module). When several
    import it (a demo, an evaluation and a training script, each with its own defaults:
    which one runs is not in sight), at most MAX_SHARED_IMPORTERS of them are read only
    for the modules they import (a config module they share), never for their own
    options (ContextFiles.silent); more than that, none. Those found are marked seen, so
    each is read once; their own imports are followed one level."""
    stems = {script.stem if script.stem != "__init__" else script.parent.name}
    if package_init(script) is not None:
        stems.add(script.parent.name)  # `from data import build_loader`
    found: list[tuple[Path, str, tuple[ast.Module, str]]] = []
    others: list[tuple[Path, str]] = []  # entry points naming no stem: one module away?
    for candidate in importer_candidates(script):
        real = str(_real(candidate))
        text = None if real in seen or real in shown_of else _entry_text(candidate)
        if text is None:
            continue
        if not _names_in_import(text, stems):
            others.append((candidate, text))
            continue
        name = shown_path(candidate, shown, script)
        parsed = parse_file(candidate, name)
        if isinstance(parsed, dict) or not imports_script(candidate, parsed[0], script):
            continue
        found.append((candidate, name, parsed))
        if len(found) > MAX_SHARED_IMPORTERS:
            return []
    # one module away only for a library module: a named entry point runs as it is
    if _entry_text(script) is not None:
        others = []
    importing: dict[Path, bool] = {}  # module -> whether it imports the script
    for candidate, text in others:
        name = shown_path(candidate, shown, script)
        parsed = parse_file(candidate, name)
        if isinstance(parsed, dict) or not through_module(
            candidate, parsed[0], script, stems, importing, text
        ):
            continue
        found.append((candidate, name, parsed))
        if len(found) > MAX_SHARED_IMPORTERS:
            return []
    for candidate, name, _ in found:
        seen.add(str(_real(candidate)))
        shown_of[str(_real(candidate))] = name
    return found


def through_module(
    entry: Path,
    module: ast.Module,
    script: Path,
    stems: set[str],
    importing: dict[Path, bool],
    text: Optional[str] = None,
) -> bool:
    """Whether the entry point `entry` imports a project module that imports `script`
    (resolved from the entry point's sys.path, as Python would when it runs). Each module
    is looked at once per search (`importing` keeps the answers): a cheap text test for
    the script's `stems` in an import statement first, a parse only then. `text`: the
    entry point's source (added_folders)."""
    folders = search_folders(entry, extends_sys_path(module))
    _add_folders(folders, added_folders(entry, module, entry=True, text=text))
    target = _real(script)
    for hit in _project_files(entry, module, folders):
        real = _real(hit)
        if real == target:
            continue
        if real not in importing:
            text = _small_text(hit)
            parsed = None
            if text is not None and _names_in_import(text, stems):
                parsed = parse_file(hit, str(hit))
            importing[real] = parsed is not None and (
                not isinstance(parsed, dict) and imports_script(hit, parsed[0], script, folders)
            )
        if importing[real]:
            return True
    return False


def _add_folders(folders: list[Path], added: list[tuple[bool, Path]]) -> None:
    """Put the folders a file adds to sys.path into the script's search list, in place:
    `insert` ones first, `append` ones last."""
    for first, folder in added:
        if folder in folders:
            continue
        if first:
            folders.insert(0, folder)
        else:
            folders.append(folder)


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
