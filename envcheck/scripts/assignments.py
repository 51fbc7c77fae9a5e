"""Plain assignments of a body, read on the path a Linux training node takes.

Shared by the value resolver (values.py) and the config-object reader (configs.py): the
statements of a body and its nested blocks, and the names assigned exactly one
expression there.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional

from envcheck.scripts.platforms import other_platform_only


def simple_assignments(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """name -> the expression of its only plain assignment in this body (walked into
    if/with/for/try blocks, not into nested functions). A name assigned twice with
    different expressions is left out: which one applies depends on the run."""
    found: dict[str, ast.expr] = {}
    ambiguous: set[str] = set()
    for node in statements(body):
        targets: list[ast.expr] = []
        value: Optional[ast.expr] = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            # `try: import wandb` / `except ImportError: wandb = None`: the name is the
            # module where it is installed, None only where it is missing
            ambiguous.update((a.asname or a.name).split(".")[0] for a in node.names)
        for target in targets:
            if isinstance(target, ast.Name) and value is not None:
                previous = found.get(target.id)
                if previous is not None and ast.dump(previous) != ast.dump(value):
                    ambiguous.add(target.id)
                found[target.id] = value
            elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
                # `dataset_val, _ = build(False)` beside `dataset_val = None`: bound to a
                # value the unpacking gives too, so the plain one is not its only value
                ambiguous.update(_names(target))
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            ambiguous.add(node.target.id)  # `n = 0` then `n += k`: not that constant
        grown = _grown(node)
        if grown is not None:
            ambiguous.add(grown)
    return {k: v for k, v in found.items() if k not in ambiguous}


# list and set methods that change the collection in place (not dict's: a dict's
# `update` and `d[k] = v` are read as its updates by the resolver)
_GROWING = {"append", "extend", "insert", "remove", "add", "discard"}


def _grown(node: ast.stmt) -> Optional[str]:
    """The name a statement grows or shrinks in place (`gpu_ids.append(gid)`): bound to
    `[]` and filled from the command line in a loop, it is not the empty list, so
    `if len(gpu_ids) > 0:` is not settled false by the literal."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    func = node.value.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr in _GROWING
        and isinstance(func.value, ast.Name)
    ):
        return func.value.id
    return None


def _names(target: ast.expr) -> set[str]:
    """The names an unpacking target binds (`a, (b, *c)`)."""
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def own_attribute_assignments(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """attribute -> the expression of its only `self.<attribute> = ...` in this body: what
    a method stores on the object and then reads back (`self._dl_kwargs = kwargs` ...
    `DataLoader(**self._dl_kwargs)`)."""
    found: dict[str, ast.expr] = {}
    ambiguous: set[str] = set()
    for node in statements(body):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            if target.attr in found:
                ambiguous.add(target.attr)
            found[target.attr] = node.value
    return {k: v for k, v in found.items() if k not in ambiguous}


def statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a body and of its nested blocks (not of nested functions or
    classes), skipping the bodies of Windows- and macOS-only branches."""
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        out.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            if field == "body" and isinstance(node, ast.If) and other_platform_only(node.test):
                continue  # a Windows or macOS branch: not the Linux training node's path
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                out.extend(statements([n for n in inner if isinstance(n, ast.stmt)]))
            if field == "handlers" and isinstance(inner, list):
                for handler in inner:
                    out.extend(statements(list(getattr(handler, "body", []))))
    return out


# (test, taken when True?) for each `if` around an assignment; UNSURE marks a block that
# may run any number of times (a loop body, an except handler)
Guard = tuple[Optional[ast.expr], bool]
UNSURE: Guard = (None, True)


Candidates = dict[str, list[tuple[ast.expr, list[Guard]]]]


def guarded_assignments(body: list[ast.stmt]) -> Candidates:
    """name -> its plain assignments in source order, each with the `if` tests it sits
    under, for the names `simple_assignments` leaves out (assigned different expressions):
    `workers = args.workers` then `if args.distributed and ...: workers = min(2, ...)`
    is decided by whether that test holds at the defaults."""
    found: Candidates = {}
    _collect(body, [], found, _plain_name)
    return _several(found)


def guarded_self_assignments(body: list[ast.stmt]) -> Candidates:
    """attribute -> its `self.<attribute> = ...` assignments as `guarded_assignments`
    gives a name's: a constructor's fallback (`self.num_val_workers = self.num_workers`,
    then `if num_val_workers is not None: self.num_val_workers = num_val_workers`)."""
    found: Candidates = {}
    _collect(body, [], found, _self_attribute)
    return _several(found)


def attribute_assignments(body: list[ast.stmt]) -> Candidates:
    """`args.num_workers` -> every assignment of that attribute of a name (not `self`) in
    this body, in source order, each with the `if` tests it sits under: what a script
    sets on its parsed command line after parsing (`args.num_workers = 4 * args.gpus if
    args.gpus else 8`) overrides the option's default. `args.x += ...` counts as `args.x
    = args.x + ...`; a tuple target (`args.a, args.b = ...`) sets it to a value not in
    sight. `if __name__ == "__main__":` holds for a script that is run."""
    found: Candidates = {}
    _collect(body, [], found, _name_attribute, augmented=True)
    for candidates in found.values():
        for _, guards in candidates:
            guards[:] = [g for g in guards if not (g[1] and main_guard(g[0]))]
    return found


def _name_attribute(target: ast.expr) -> Optional[str]:
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id != "self"
    ):
        return f"{target.value.id}.{target.attr}"
    return None


def main_guard(test: Optional[ast.expr]) -> bool:
    """`__name__ == "__main__"` (either way round): the block a script runs when run."""
    if not isinstance(test, ast.Compare) or len(test.comparators) != 1:
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    strings = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return bool(names and strings and isinstance(test.ops[0], ast.Eq))


# what a tuple target's element is set to: a name no scope binds, so unknown
UNPACKED = "<unpacked>"


def _several(found: Candidates) -> Candidates:
    return {
        name: candidates
        for name, candidates in found.items()
        if len({ast.dump(expr) for expr, _ in candidates}) > 1
    }


def _plain_name(target: ast.expr) -> Optional[str]:
    return target.id if isinstance(target, ast.Name) else None


def _self_attribute(target: ast.expr) -> Optional[str]:
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ):
        return target.attr
    return None


def _collect(
    body: list[ast.stmt],
    guards: list[Guard],
    found: Candidates,
    key: Callable[[ast.expr], Optional[str]],
    augmented: bool = False,
) -> None:
    """`augmented`: `x += v` counts as `x = x + v`, and an element of a tuple target as
    set to a value not in sight (UNPACKED)."""
    for node in body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = key(target)
                if name is not None:
                    found.setdefault(name, []).append((node.value, list(guards)))
                elif augmented and isinstance(target, (ast.Tuple, ast.List)):
                    for element in ast.walk(target):
                        inner = key(element) if isinstance(element, ast.expr) else None
                        if inner is not None:
                            unpacked = ast.copy_location(
                                ast.Name(id=UNPACKED, ctx=ast.Load()), node
                            )
                            found.setdefault(inner, []).append((unpacked, list(guards)))
        elif augmented and isinstance(node, ast.AugAssign):
            name = key(node.target)
            if name is not None:
                read = ast.parse(ast.unparse(node.target), mode="eval").body  # read, not stored
                value = ast.copy_location(ast.BinOp(read, node.op, node.value), node)
                found.setdefault(name, []).append((value, list(guards)))
        elif isinstance(node, ast.If):
            if not other_platform_only(node.test):
                _collect(node.body, [*guards, (node.test, True)], found, key, augmented)
            _collect(node.orelse, [*guards, (node.test, False)], found, key, augmented)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            _collect(node.body, [*guards, UNSURE], found, key, augmented)
            _collect(node.orelse, [*guards, UNSURE], found, key, augmented)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            _collect(node.body, guards, found, key, augmented)
        elif isinstance(node, ast.Try):
            _collect(node.body, guards, found, key, augmented)
            _collect(node.orelse, guards, found, key, augmented)
            _collect(node.finalbody, guards, found, key, augmented)
            for handler in node.handlers:
                _collect(handler.body, [*guards, UNSURE], found, key, augmented)
        elif isinstance(node, ast.Match):
            for case in node.cases:
                _collect(case.body, [*guards, UNSURE], found, key, augmented)
