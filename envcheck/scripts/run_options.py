"""Command-line options shared by the files of one `envcheck scripts` run.

Real projects define their options in one file and read them in another: open_clip's
`data.py` builds its loaders with `num_workers=args.workers`, and `args` is the namespace
of `params.py`'s parser (`--workers`, default 4). A file with no parser of its own that
reads `args.workers`, `self.args.workers` or `cfg.workers` is judged at the default of the
option of that name defined by the other files audited in the same run: those in its own
folder when any define it, else the nearest by path (the longest leading path shared, cut
at a name boundary), else any file of the run. When those parsers disagree, or a
default is not determined by its source, the value stays unknown with the reason.

Config trees are shared the same way: a yacs defaults module (`_C = CN()`,
`_C.TRAIN.workers = 16`) audited in the run gives `cfg.TRAIN.workers` in any file of the
run its default, the path read after the object's own name (the longest path that
matches), as argparse defaults are taken for a default run; this holds for a file with a
parser of its own too (`--cfg` names a YAML file that overrides the tree at run time).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, TypeVar

from envcheck.scripts.configs import attribute_path, module_config_tree, option_defaults
from envcheck.scripts.values import Scope, Value, resolve

_Found = TypeVar("_Found", "_Parser", "_Tree")

# Cheap text test before the parse tree is searched for a parser.
MARKERS = ("add_argument", "DEFINE_")


@dataclass
class _Parser:
    shown: str
    module: ast.Module
    options: dict[str, tuple[str, ast.expr]]
    scope: Optional[Scope] = None

    def default(self, dest: str) -> Value:
        """The option's default, read in this file's own module scope."""
        if self.scope is None:
            self.scope = Scope.of_module(self.module)
        return resolve(self.options[dest][1], self.scope)


def shared_prefix(a: str, b: str) -> int:
    """Length of the leading path two files share, cut at a name boundary (`/`, `_`, `-`,
    `.`): `pkg/data.py` and `pkg/data_args.py` share `pkg/`, not `pkg/data`."""
    length = 0
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            break
        if x in "/\\_-.":
            length = index + 1
    return length


def nearest(reader: str, parsers: list[_Found]) -> list[_Found]:
    """The parsers (or config trees) closest to `reader` in the tree: those sharing the
    longest leading path with it (its own folder first, then its package's), all of them
    when none shares any."""
    best = max(shared_prefix(reader, p.shown) for p in parsers)
    return [p for p in parsers if shared_prefix(reader, p.shown) == best]


@dataclass
class _Tree:
    shown: str
    module: ast.Module
    paths: dict[tuple[str, ...], tuple[str, ast.expr]]
    scope: Optional[Scope] = None

    def default(self, path: tuple[str, ...]) -> Value:
        """The path's default, read in this file's own module scope."""
        if self.scope is None:
            self.scope = Scope.of_module(self.module)
        return resolve(self.paths[path][1], self.scope)


class RunOptions:
    """The argparse (and absl) options of every file of one run, by destination, and
    the config trees their modules build (configs.module_config_tree)."""

    def __init__(self) -> None:
        self.parsers: list[_Parser] = []
        self.trees: list[_Tree] = []
        self._found: dict[tuple[str, str], Optional[Value]] = {}

    def add(self, shown: str, module: ast.Module, text: str) -> None:
        paths = module_config_tree(module)
        if paths:
            self.trees.append(_Tree(shown, module, paths))
        if not any(marker in text for marker in MARKERS):
            return
        options = option_defaults(module)
        if options:
            self.parsers.append(_Parser(shown, module, options))

    def config(self, reader: str, node: ast.expr) -> Optional[Value]:
        """`cfg.TRAIN.workers` read in `reader`: the default a config tree of the run
        gives the longest path it ends with (at least two names, or one below the object:
        `cfg.workers`), or None when no tree of the run sets it."""
        chain = attribute_path(node)
        if chain is None or len(chain) < 2:
            return None
        text = ast.unparse(node)
        for length in range(len(chain) - 1, 0, -1):
            path = chain[-length:]
            trees = [t for t in self.trees if path in t.paths]
            if not trees:
                continue
            candidates = nearest(reader, trees)
            found = [(t, t.default(path)) for t in candidates]
            unknowns = [(t, v) for t, v in found if not v.known]
            if unknowns:
                tree, value = unknowns[0]
                where = tree.paths[path][0]
                return Value(
                    False, None, text, f"{where} in {tree.shown}: not determined ({value.source})"
                )
            places = ", ".join(f"{t.paths[path][0]} = {v.value!r} in {t.shown}" for t, v in found)
            if len({repr(v.value) for _, v in found}) > 1:
                return Value(False, None, text, f"the config trees of this run disagree: {places}")
            return Value(True, found[0][1].value, text, f"config default {places}")
        return None

    def lookup(self, reader: str, dest: str, text: str) -> Optional[Value]:
        """The value of `dest` for the file `reader` (shown path), or None when no other
        file of the run defines that option."""
        key = (reader, dest)
        if key not in self._found:
            self._found[key] = self._lookup(reader, dest)
        found = self._found[key]
        return None if found is None else Value(found.known, found.value, text, found.source)

    def _lookup(self, reader: str, dest: str) -> Optional[Value]:
        text = f"--{dest}"
        others = [p for p in self.parsers if p.shown != reader and dest in p.options]
        if not others:
            return None
        candidates = nearest(reader, others)
        found = [(p, p.default(dest)) for p in candidates]
        unknowns = [(p, v) for p, v in found if not v.known]
        if unknowns:
            parser, value = unknowns[0]
            option = parser.options[dest][0]
            return Value(
                False,
                None,
                text,
                f"{option} in {parser.shown}: default not determined ({value.source})",
            )
        values = {repr(v.value) for _, v in found}
        places = ", ".join(
            f"{p.options[dest][0]} defaults to {v.value!r} in {p.shown}" for p, v in found
        )
        if len(values) > 1:
            return Value(False, None, text, f"the parsers of this run disagree: {places}")
        return Value(True, found[0][1].value, text, f"argparse {places}")
