"""Command-line options shared by the files of one `envcheck scripts` run.

Real projects define their options in one file and read them in another: open_clip's
`data.py` builds its loaders with `num_workers=args.workers`, and `args` is the namespace
of `params.py`'s parser (`--workers`, default 4). A file with no parser of its own that
reads `args.workers`, `self.args.workers` or `cfg.workers` is judged at the default of the
option of that name defined by the other files audited in the same run: those in its own
folder when any define it, else the nearest by path (the longest leading path shared, cut
at a name boundary), else any file of the run. When those parsers disagree, or a
default is not determined by its source, the value stays unknown with the reason.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from envcheck.scripts.configs import option_defaults
from envcheck.scripts.values import Scope, Value, resolve

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


def nearest(reader: str, parsers: list[_Parser]) -> list[_Parser]:
    """The parsers closest to `reader` in the tree: those sharing the longest leading path
    with it (its own folder first, then its package's), all of them when none shares any."""
    best = max(shared_prefix(reader, p.shown) for p in parsers)
    return [p for p in parsers if shared_prefix(reader, p.shown) == best]


class RunOptions:
    """The argparse (and absl) options of every file of one run, by destination."""

    def __init__(self) -> None:
        self.parsers: list[_Parser] = []
        self._found: dict[tuple[str, str], Optional[Value]] = {}

    def add(self, shown: str, module: ast.Module, text: str) -> None:
        if not any(marker in text for marker in MARKERS):
            return
        options = option_defaults(module)
        if options:
            self.parsers.append(_Parser(shown, module, options))

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
