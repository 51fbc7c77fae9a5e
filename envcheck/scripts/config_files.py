"""Settings kept in the config files a script names (YAML, JSON, INI), read safely.

semseg's tool/train.py parses `--config` (default `config/ade20k/ade20k_pspnet50.yaml`),
hands it to util/config.py's `load_cfg_from_cfg_file`, which reads the file with
`yaml.safe_load`, flattens its sections into one dict and wraps it in a `CfgNode`; the
loaders are then built with `num_workers=args.workers`. The worker count lives only in
the shipped YAML file. This module finds such loads (loaded_configs) and reads the file
they name (read_config) to answer `args.workers` (ConfigFile.lookup).

A load is a call of `yaml.safe_load` / `yaml.load` / `yaml.full_load` / `json.load` on
`open(path)` (directly or through `with open(path) as f`), in the script itself or in a
function of the script or of a project file it imports (handed the path as its first
argument). The path is one the source settles: a literal, or the default of the argparse
option the call reads (`args.config`); a path given only on the command line (no
default) names no file, and the values it would hold stay unknown. A relative path is
looked for beside the script and at the project's root (project_context.project_root);
found in both as different files, it is unknown which one runs. A path outside those
folders is never read.

Attribute reads (`cfg.workers`, `cfg.TRAIN.workers`) apply only where the loaded dict is
wrapped in an object that reads keys as attributes (the loader returns `CfgNode(cfg)`,
`EasyDict(...)`, any call on the loaded dict): a plain dict has no such attributes. The
path after the object's own name is looked up nested (`TRAIN` then `workers`); a single
name is also found at any depth when the loader flattens the file's sections into one
dict (a loop over a section's `.items()` copying each key), only when it occurs once.

Safety: a file larger than MAX_BYTES, one that fails to parse, a YAML file with more than
MAX_ALIASES aliases (a "billion laughs" bomb expands them), a document that is not a
mapping, or a lookup visiting more than MAX_NODES nodes gives unknown, never an error.
PyYAML is imported only when a YAML file is read; without it YAML files are unknown.

A config chosen at run time is judged from the configs the project ships for that entry
point. For Hydra (`@hydra.main(config_path='cfgs', config_name='config')` on a function of
the script, hydra_load) the primary file is `cfgs/config.yaml`, read as a DictConfig (by
attribute). Its `defaults:` list composes group files (`task@_global_: quadruped_walk`)
that the command line can swap for any other file of the group, so every YAML file under
the config folder (at most MAX_CANDIDATES, more: unknown) is a candidate that may set
the same key: when every candidate that sets it agrees, the value is used and the files
are named; when they disagree, unknown, naming them. A value that OmegaConf computes (an
interpolation `${...}`) or leaves to the command line (`???`) is unknown. A config folder
outside the project's root is never read; a literal default path stays as above.

A config named only on the command line (donut's train.py: `--config`, required, read by
`sconf.Config(args.config)`, chosen_load) has the YAML files the project ships in its one
config folder (`config/`, `configs/`, `cfg/`, `cfgs/` or `conf/`, beside the entry point
or at the project's root; none or several: unknown) as its candidates, at most
MAX_CANDIDATES: a key is used only when every candidate sets it to the same value (the
files named); set in some and not in others, or differently, it is unknown. Such a load
is the run's only where the entry point hands the loaded object in (handed_configs.py).
"""

from __future__ import annotations

import ast
import configparser
import functools
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

MAX_BYTES = 256 * 1024
MAX_ALIASES = 64
MAX_NODES = 20_000
MAX_CANDIDATES = 32  # config files read as the candidates of one run-time choice
# loaders of a config file named on the command line whose result is read by attribute:
# qualified name -> whether its values may be OmegaConf interpolations
CHOSEN_LOADERS = {"sconf.Config": False, "omegaconf.OmegaConf.load": True}
# the folders a project ships its configs in, beside the entry point or at its root
CONFIG_FOLDERS = ("config", "configs", "cfg", "cfgs", "conf")
SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".ini": "ini", ".cfg": "ini"}
# loaders reading an open file: qualified name -> format
LOADERS = {
    "yaml.safe_load": "yaml",
    "yaml.load": "yaml",
    "yaml.full_load": "yaml",
    "json.load": "json",
}
# calls on the loaded dict that hand back a dict again (no attribute reads)
PLAIN = {"dict", "copy.deepcopy", "deepcopy", "copy.copy"}
ALIAS = re.compile(r"(?:^|[\s\[{,:-])\*[^\s,\[\]{}]")


class Unknown(Exception):
    """A file, or a lookup in it, that gives no value."""


@dataclass(frozen=True)
class Load:
    """One load of a config file: the file, whether the loaded dict is read by attribute
    (wrapped) and whether the loader flattens its sections."""

    shown: str
    data: Mapping[str, Any]
    wrapped: bool
    flattened: bool
    # the other files a run-time choice may compose over this one (Hydra's config
    # groups): (shown, data), or None when there were more than MAX_CANDIDATES
    others: Optional[tuple[tuple[str, Mapping[str, Any]], ...]] = ()
    interpolated: bool = False  # OmegaConf: `${...}` and `???` are not plain values
    # every candidate is a whole config the run may load (chosen_load): a key set in
    # some and not in others is unknown
    every: bool = False
    # the attribute chains the loaded object is read through in the file it is handed
    # to (`("self", "config")`), None where it is read by any name
    heads: Optional[frozenset[tuple[str, ...]]] = None

    def lookup(self, path: tuple[str, ...]) -> Optional[tuple[Any, str]]:
        """(value, where) for `path` in the file, None when the file does not set it;
        Unknown when it is set more than once (flattened), the file is too large, or the
        candidates composed over it disagree or are too many."""
        direct = _nested(self.data, path)
        if direct is not None:
            return self._composed(direct[0], path)
        if self.every and any(_nested(data, path) is not None for _, data in self.others or ()):
            raise Unknown(
                f"{'.'.join(path)} is set in some of the config files, not in {self.shown}"
            )
        if not self.flattened or len(path) != 1:
            return None
        found = list(_find(self.data, path[0]))
        if not found:
            return None
        if len(found) > 1:
            raise Unknown(f"{path[0]} is set {len(found)} times in {self.shown}")
        section, value = found[0]
        return value, f"{section}.{path[0]} in {self.shown} (sections flattened by the loader)"

    def _composed(self, value: Any, path: tuple[str, ...]) -> tuple[Any, str]:
        key = ".".join(path)
        if self.others is None:
            raise Unknown(
                f"{key} = {value!r} in {self.shown}, which composes more than "
                f"{MAX_CANDIDATES} config files"
            )
        places = [(self.shown, value)]
        for shown, data in self.others:
            hit = _nested(data, path)
            if hit is not None:
                places.append((shown, hit[0]))
        named = ", ".join(f"{key} = {v!r} in {shown}" for shown, v in places)
        if self.every and len(places) < 1 + len(self.others):
            raise Unknown(f"{named}; not set in every config file the run may load")
        if len({repr(v) for _, v in places}) > 1:
            raise Unknown(f"the config files this run composes disagree: {named}")
        if self.interpolated and any(computed_value(v) for _, v in places):
            raise Unknown(f"{named}: computed by OmegaConf or left to the command line")
        if len(places) > 1:
            return value, f"{named} (every config file setting it agrees)"
        if self.others:
            return value, (
                f"{key} in {self.shown} (none of the {len(self.others)} other config "
                "files it may compose sets it)"
            )
        return value, f"{key} in {self.shown}"


def _nested(data: Mapping[str, Any], path: tuple[str, ...]) -> Optional[tuple[Any]]:
    """(value,) at `path` in `data`, None when it is not set there."""
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return (node,)


def computed_value(value: Any) -> bool:
    """An OmegaConf value that is not the file's own: an interpolation or `???`."""
    if isinstance(value, str):
        return "${" in value or value.strip() == "???"
    if isinstance(value, (list, tuple)):
        return any(computed_value(v) for v in value)
    return False


def _find(data: Mapping[str, Any], key: str) -> Iterator[tuple[str, Any]]:
    """(section, value) of every `key` below the top level of `data`, within MAX_NODES."""
    budget = MAX_NODES
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in data.items()]
    while stack:
        section, node = stack.pop()
        budget -= 1
        if budget < 0:
            raise Unknown("the config file is too large to search")
        if isinstance(node, Mapping):
            if key in node:
                yield section, node[key]
            stack.extend((f"{section}.{k}", v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((section, v) for v in node)


def read_config(path: str) -> Optional[Mapping[str, Any]]:
    """The mapping the config file at `path` holds, or None when it cannot be read
    safely (too large, malformed, odd, or PyYAML missing); read once while unchanged."""
    try:
        found = Path(path).stat()
    except OSError:
        return None
    if not Path(path).is_file() or found.st_size > MAX_BYTES:
        return None
    return _read(path, found.st_mtime_ns, found.st_size)


@functools.lru_cache(maxsize=64)
def _read(path: str, mtime: int, size: int) -> Optional[Mapping[str, Any]]:
    kind = SUFFIXES.get(Path(path).suffix.lower())
    if kind is None:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read(MAX_BYTES + 1)
        if len(text.encode("utf-8")) > MAX_BYTES:
            return None
        data: Any
        if kind == "json":
            data = json.loads(text)
        elif kind == "ini":
            parser = configparser.ConfigParser(interpolation=None)
            parser.read_string(text)
            data = {name: dict(parser[name]) for name in parser.sections()}
            data.update(parser.defaults())
        else:
            if len(ALIAS.findall(text)) > MAX_ALIASES:
                return None
            import yaml  # imported here: most runs read no YAML file

            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            data = yaml.load(text, Loader=loader)  # a safe loader: no Python objects
    except Exception:  # any failure to read is unknown (RecursionError included)
        return None
    return data if isinstance(data, dict) else None


def hydra_load(
    reader: str, call: ast.Call, project_root: Callable[[Path], Optional[Path]]
) -> Optional[Load]:
    """The primary config of `@hydra.main(config_path=..., config_name=...)` (`call`)
    decorating a function of `reader`, with the YAML files of its config folder as the
    candidates its `defaults:` list may compose; None when either name is not a literal,
    the file is missing or unreadable, or it lies outside the project's root (the
    script's folder without one)."""
    named: dict[str, Any] = {}
    for position, argument in zip(("config_path", "config_name"), call.args, strict=False):
        named[position] = argument
    named.update({k.arg: k.value for k in call.keywords if k.arg})
    values = [named.get(name) for name in ("config_path", "config_name")]
    if not all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values):
        return None
    folder_name, name = (v.value for v in values)  # type: ignore[union-attr]
    if not name or "\x00" in folder_name + name or Path(folder_name).is_absolute():
        return None
    if Path(name).suffix.lower() not in (".yaml", ".yml"):
        name += ".yaml"
    try:
        script_folder = Path(reader).resolve().parent
        root = project_root(script_folder) or script_folder
        folder = (script_folder / folder_name).resolve()
        primary = (folder / name).resolve()
        if not (folder.is_relative_to(root) and primary.is_relative_to(folder)):
            return None
        if not primary.is_file():
            return None
        data = read_config(str(primary))
        if data is None:
            return None
        others: Optional[tuple[tuple[str, Mapping[str, Any]], ...]] = ()
        if isinstance(data.get("defaults"), list):
            others = _candidates(folder, primary, root, folder_name)
    except (OSError, RuntimeError, ValueError):  # a name too long, a link loop: no file
        return None
    shown = str(Path(folder_name) / name)
    return Load(shown, data, True, False, others, True)


def chosen_load(
    entry: str, interpolated: bool, project_root: Callable[[Path], Optional[Path]]
) -> Optional[Load]:
    """The YAML files of the one config folder the project of `entry` ships (beside it or
    at its root, CONFIG_FOLDERS), as the candidates of a config named on its command
    line, every one of which must agree; None when there is no such folder or several,
    it holds none or more than MAX_CANDIDATES, or one cannot be read."""
    try:
        script_folder = Path(entry).resolve().parent
        root = project_root(script_folder) or script_folder
        folders: set[Path] = set()
        for place in (script_folder, root):
            for name in CONFIG_FOLDERS:
                folder = place / name
                if folder.is_dir() and not folder.is_symlink():
                    resolved = folder.resolve()
                    if resolved.is_relative_to(root):
                        folders.add(resolved)
        if len(folders) != 1:
            return None
        (folder,) = folders
        shown = str(folder.relative_to(root))
        found = _candidates(folder, folder, root, shown)
    except (OSError, RuntimeError, ValueError):  # a name too long, a link loop: no file
        return None
    if not found:
        return None
    (first, data), *others = found
    return Load(first, data, True, False, tuple(others), interpolated, every=True)


def _candidates(
    folder: Path, primary: Path, root: Path, shown: str
) -> Optional[tuple[tuple[str, Mapping[str, Any]], ...]]:
    """(shown, data) of the YAML files under `folder` other than `primary`, in name
    order; None when there are more than MAX_CANDIDATES, or one cannot be read or lies
    outside the project (a key it might set is unknown). Links to folders are not
    followed, and the walk stops at the cap."""
    paths: list[Path] = []
    for place, folders, files in os.walk(folder):
        folders.sort()
        for name in sorted(files):
            if Path(name).suffix.lower() not in (".yaml", ".yml"):
                continue
            path = Path(place) / name
            if path == primary:
                continue
            paths.append(path)
            if len(paths) > MAX_CANDIDATES:
                return None
    found: list[tuple[str, Mapping[str, Any]]] = []
    for path in paths:
        resolved = path.resolve()
        data = read_config(str(resolved)) if resolved.is_relative_to(root) else None
        if data is None:
            return None
        found.append((str(Path(shown) / path.relative_to(folder)), data))
    return tuple(found)


def names_a_loader(text: str) -> bool:
    """Whether a file's source names any loader of LOADERS (a cheap test before its
    functions are walked for loads)."""
    return "yaml" in text or "json.load(" in text or "from json import" in text


def config_path(
    reader: str, relative: str, project_root: Callable[[Path], Optional[Path]]
) -> Optional[str]:
    """The file `relative` names for the script `reader`: beside it or at its project's
    root (`project_root`, project_context.py's); None when neither holds it, both hold
    different files, or it lies outside them."""
    if not relative or "\x00" in relative or Path(relative).is_absolute():
        return None
    try:
        folder = Path(reader).resolve().parent
        places = [folder]
        root = project_root(folder)
        if root is not None and root not in places:
            places.append(root)
        found: set[Path] = set()
        for place in places:
            candidate = (place / relative).resolve()
            if candidate.is_file() and candidate.is_relative_to(place):
                found.add(candidate)
    except (OSError, RuntimeError, ValueError):  # a name too long, a link loop: no file
        return None
    if len(found) != 1:
        return None
    return str(found.pop())


Function = ast.FunctionDef | ast.AsyncFunctionDef


def loaded_path(function: Function | ast.Module) -> Optional[tuple[ast.expr, str]]:
    """(the path expression, the format) of the one config load in `function`'s own body
    (`yaml.safe_load(f)` with `with open(path) as f`, `json.load(open(path))`), with the
    yaml/json module called by its usual name; None when it has none or several."""
    opened: dict[str, ast.expr] = {}
    loads: list[tuple[ast.expr, str]] = []
    for node in own_nodes(function):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if _open_call(item.context_expr) and isinstance(item.optional_vars, ast.Name):
                    opened[item.optional_vars.id] = item.context_expr.args[0]  # type: ignore[attr-defined]
    for node in own_nodes(function):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        kind = LOADERS.get(ast.unparse(node.func))
        if kind is None:
            continue
        handed = node.args[0]
        if _open_call(handed):
            loads.append((handed.args[0], kind))  # type: ignore[attr-defined]
        elif isinstance(handed, ast.Name) and handed.id in opened:
            loads.append((opened[handed.id], kind))
    return loads[0] if len(loads) == 1 else None


def _open_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "open"
        and bool(node.args)
    )


def own_nodes(function: Function | ast.Module) -> Iterator[ast.AST]:
    """The nodes of `function`'s body, not those of functions or classes defined in it."""
    skipped = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    stack: list[ast.AST] = [n for n in function.body if not isinstance(n, skipped)]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, skipped):
                stack.append(child)


def flattens(function: Function) -> bool:
    """Whether `function` copies the entries of a section into one dict: `for k, v in
    loaded[key].items(): cfg[k] = v` inside a loop over the sections."""
    for outer in own_nodes(function):
        if not isinstance(outer, ast.For):
            continue
        for inner in ast.walk(outer):
            if inner is outer or not isinstance(inner, ast.For):
                continue
            if not (
                isinstance(inner.iter, ast.Call)
                and isinstance(inner.iter.func, ast.Attribute)
                and inner.iter.func.attr == "items"
                and isinstance(inner.target, ast.Tuple)
                and len(inner.target.elts) == 2
                and all(isinstance(e, ast.Name) for e in inner.target.elts)
            ):
                continue
            key, value = (e.id for e in inner.target.elts)  # type: ignore[attr-defined]
            for stmt in inner.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Subscript)
                    and isinstance(stmt.targets[0].slice, ast.Name)
                    and stmt.targets[0].slice.id == key
                    and isinstance(stmt.value, ast.Name)
                    and stmt.value.id == value
                ):
                    return True
    return False


def wraps(function: Function) -> bool:
    """Whether what `function` returns is read by attribute: a call other than a plain
    dict copy (`return CfgNode(cfg)`, `cfg = EasyDict(cfg)` ... `return cfg`)."""
    returned = [
        n.value for n in own_nodes(function) if isinstance(n, ast.Return) and n.value is not None
    ]
    if len(returned) != 1:
        return False
    (value,) = returned
    if isinstance(value, ast.Name):
        assigned = sorted(
            (
                n
                for n in own_nodes(function)
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)
            ),
            key=lambda n: (n.lineno, n.col_offset),
        )
        return bool(assigned) and _wrapping(assigned[-1].value)
    return _wrapping(value)


def _wrapping(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) not in PLAIN
        and ast.unparse(node.func) not in LOADERS
        and bool(node.args or node.keywords)
    )
