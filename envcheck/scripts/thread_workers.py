"""A project class handed `num_workers=` that builds no DataLoader with it.

kospeech's bin/main.py builds `SupervisedTrainer(..., num_workers=config.train.num_workers)`:
a class of the project, not a DataLoader maker. Its `__init__` keeps the count
(`self.num_workers = num_workers`), sizes a `queue.Queue(self.num_workers << 1)` with it and
hands it to `MultiDataLoader(..., self.num_workers, ...)`, a class of the project that starts
that many `threading.Thread` loaders (`for idx in range(self.num_workers)`). No DataLoader
worker process is ever started from that count, so the call is no loader maker (EC504 and
the other worker rules read DataLoaders).

`reaches_no_loader` follows the count through the class, read in the file of the run that
defines it (run_options.RunOptions.thread_class): the names and `self.` attributes bound to
it as they are (`self.workers = num_workers`, `n = self.workers`), and every call handed one
of them as an argument. A call of a builtin that only counts (`range(n)`, `min(n, 4)`) is
fine; a call of another class of the run is read the same way for the parameter it binds the
count to; anything else (a function, a class out of sight, a dict or list holding the count,
`**kwargs`) may build a DataLoader with it, and so may a class that calls anything named
`...DataLoader` or derives from a loader: then the class is not settled (False) and the call
stays a maker out of sight. The count used inside an expression (`n << 1`, `'%d' % n`, a
comparison) sizes or prints something: not handed on.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional

# builtins that read a count without handing it on
COUNTING = {"range", "int", "min", "max", "len", "str", "float", "bool", "print", "abs"}
MAX_DEPTH = 3

# a name called in a file of the run -> (the class of the run it names, the resolver of
# the names that class's own file calls), or None
Resolver = Callable[[str], Optional[tuple[ast.ClassDef, object]]]


def reaches_no_loader(
    cls: ast.ClassDef,
    parameter: Optional[str],
    position: Optional[int],
    resolve_class: Resolver,
    depth: int = 0,
) -> bool:
    """Whether the worker count bound to `parameter` (or the positional argument
    `position`, not counting `self`) of `cls.__init__` reaches no DataLoader in the class
    and the classes of the run it hands the count to. `resolve_class(name)` gives the class
    a name called in the class's file names, with its own resolver, or None."""
    if depth > MAX_DEPTH or _loader_like(cls, resolve_class, depth):
        return False
    init = next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    if init is None:
        return False  # inherited: the constructor out of sight
    args = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
    names = args + [a.arg for a in init.args.kwonlyargs]
    if parameter is None and position is not None and position < len(args):
        parameter = args[position]
    if parameter is None or parameter not in names:
        return False  # taken by **kwargs or *args: where it goes is not settled
    tracked = _tracked(cls, parameter)
    for node in ast.walk(cls):
        if isinstance(node, ast.Call):
            if not _call_fine(node, tracked, resolve_class, depth):
                return False
        elif isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Return)):
            values = node.values if isinstance(node, ast.Dict) else _children(node)
            if any(_is_tracked(v, tracked) for v in values if v is not None):
                return False  # held in a container or returned: read elsewhere
    return True


def _children(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Return):
        return [node.value] if node.value is not None else []
    return list(getattr(node, "elts", []))


def _loader_like(cls: ast.ClassDef, resolve_class: Resolver, depth: int) -> bool:
    """A class deriving from a loader, or calling something named `...DataLoader` that is
    not a class of the run free of loaders itself (kospeech's `MultiDataLoader`, starting
    `threading.Thread` loaders, is free)."""
    if depth > MAX_DEPTH or any("loader" in ast.unparse(b).lower() for b in cls.bases):
        return True
    for node in ast.walk(cls):
        if not isinstance(node, ast.Call):
            continue
        callee = ast.unparse(node.func)
        if not callee.rsplit(".", 1)[-1].endswith("DataLoader"):
            continue
        found = resolve_class(callee)
        if found is None or found[0] is cls:
            return True
        other, resolver = found
        if _loader_like(other, resolver, depth + 1):  # type: ignore[arg-type]
            return True
    return False


def _tracked(cls: ast.ClassDef, parameter: str) -> set[str]:
    """`parameter` and the names and `self.` attributes bound to it as it is."""
    tracked = {parameter}
    for _ in range(3):
        before = len(tracked)
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and _is_tracked(node.value, tracked):
                for target in node.targets:
                    text = _name(target)
                    if text is not None:
                        tracked.add(text)
        if len(tracked) == before:
            break
    return tracked


def _name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}" if node.value.id == "self" else None
    return None


def _is_tracked(node: ast.AST, tracked: set[str]) -> bool:
    return _name(node) in tracked


def _call_fine(
    call: ast.Call,
    tracked: set[str],
    resolve_class: Resolver,
    depth: int,
) -> bool:
    handed: list[tuple[Optional[str], Optional[int]]] = []
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) and _is_tracked(arg.value, tracked):
            return False
        if _is_tracked(arg, tracked):
            handed.append((None, index))
    for keyword in call.keywords:
        if _is_tracked(keyword.value, tracked):
            if keyword.arg is None:
                return False
            handed.append((keyword.arg, None))
    if not handed:
        return True
    callee = ast.unparse(call.func)
    if callee in COUNTING:
        return True
    found = resolve_class(callee)
    if found is None:
        return False
    other, resolver = found
    return all(
        reaches_no_loader(other, parameter, position, resolver, depth + 1)  # type: ignore[arg-type]
        for parameter, position in handed
    )
