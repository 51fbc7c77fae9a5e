"""Entries of a dict the step has made Python numbers, read without running it.

`for k, v in losses.items(): losses[k] = v.item()` rebinds every entry of `losses` to a
host number: what the step reads of the dict afterwards (`losses[k]` later in that loop,
`losses["total"]` or `for k, v in losses.items(): writer.add_scalar(k, v)` after it) is
no device tensor, and formatting or logging it waits for nothing. The tensor reader is
flow-insensitive (a name holds a tensor anywhere if it does somewhere), so the reads
after such a conversion are answered here, in source order:

- the conversion is a `for` over the dict's items or keys (`enumerate(...)` of them too)
  whose body, as a statement of its own, assigns `d[k] = <x.item(), float(x), ...>`
  with the loop's own key, so every entry is converted;
- a read counts when it comes after the conversion loop (or, inside it, after the
  assignment and with the same key), within every `if` holding the conversion, and the
  dict is not rebound in between.

Anything else is left to the tensor reader, so a sync is never hidden by a guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Union

from envcheck.scripts.tensors import converted, dotted, unwrap_listing

ForLoop = Union[ast.For, ast.AsyncFor]


@dataclass(frozen=True)
class _Conversion:
    """`for key, ... in d.items(): d[key] = x.item()`."""

    loop: ForLoop
    assignment: ast.Assign
    container: str  # `d`, `self.losses`
    key: str


def number_entry(node: ast.expr, scope: ast.AST) -> bool:
    """`node` (read in `scope`, a function or the module) is an entry of a dict that the
    step converted to numbers before reading it, or the value variable of a loop over
    such a dict's items or values (see the module docstring)."""
    conversions = _conversions(scope)
    if not conversions:
        return False
    parents = _parents(scope)
    if isinstance(node, ast.Subscript):
        container = dotted(node.value)
        return container is not None and any(
            c.container == container and _read_after(c, node, parents, scope) for c in conversions
        )
    if isinstance(node, ast.Name):
        loop = _value_loop(node, parents)
        if loop is None:
            return False
        container = _iterated_dict(loop, values=True)
        return container is not None and any(
            c.container == container and c.loop is not loop and _after_loop(c, loop, parents, scope)
            for c in conversions
        )
    return False


def _conversions(scope: ast.AST) -> list[_Conversion]:
    """The converting loops of `scope`, found once per scope."""
    cached: Optional[list[_Conversion]] = scope.__dict__.get("_envcheck_conversions")
    if cached is not None:
        return cached
    found: list[_Conversion] = []
    for loop in ast.walk(scope):
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        container = _iterated_dict(loop, values=False)
        key = _key_name(loop)
        if container is None or key is None:
            continue
        for statement in loop.body:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Subscript)
                and dotted(statement.targets[0].value) == container
                and isinstance(statement.targets[0].slice, ast.Name)
                and statement.targets[0].slice.id == key
                and converted(statement.value)
            ):
                found.append(_Conversion(loop, statement, container, key))
                break
    setattr(scope, "_envcheck_conversions", found)  # noqa: B010 - AST nodes have no slot
    return found


def _split(loop: ForLoop) -> tuple[ast.expr, ast.expr]:
    """The loop's iterable and target, through `enumerate(...)` and `list(...)`."""
    iterable, target = unwrap_listing(loop.iter), loop.target
    if (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Name)
        and iterable.func.id == "enumerate"
        and len(iterable.args) == 1
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
    ):
        iterable, target = unwrap_listing(iterable.args[0]), target.elts[1]
    return iterable, target


def _iterated_dict(loop: ForLoop, values: bool) -> Optional[str]:
    """`d` of `for k, v in d.items()` (or, unless `values`, of `for k in d` / `d.keys()`;
    with `values`, of `for v in d.values()` too)."""
    iterable, target = _split(loop)
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
        method = iterable.func.attr
        pair = isinstance(target, ast.Tuple) and len(target.elts) == 2
        if (method == "items" and pair) or (
            method == ("values" if values else "keys") and isinstance(target, ast.Name)
        ):
            return dotted(iterable.func.value)
        return None
    return None if values or not isinstance(target, ast.Name) else dotted(iterable)


def _key_name(loop: ForLoop) -> Optional[str]:
    _, target = _split(loop)
    if isinstance(target, ast.Tuple):
        target = target.elts[0]
    return target.id if isinstance(target, ast.Name) else None


def _value_loop(node: ast.Name, parents: dict[int, ast.AST]) -> Optional[ForLoop]:
    """The innermost loop holding `node` whose target binds its name as the value of a
    dict's items (`v` of `for k, v in d.items()`), when its body never rebinds it."""
    child: ast.AST = node
    parent = parents.get(id(child))
    while parent is not None:
        if isinstance(parent, (ast.For, ast.AsyncFor)) and any(child is s for s in parent.body):
            _, target = _split(parent)
            value = target.elts[1] if isinstance(target, ast.Tuple) and target.elts else target
            if isinstance(value, ast.Name) and value.id == node.id:
                rebound = any(
                    isinstance(n, ast.Name) and n.id == node.id and isinstance(n.ctx, ast.Store)
                    for statement in parent.body
                    for n in ast.walk(statement)
                )
                return None if rebound else parent
        child, parent = parent, parents.get(id(parent))
    return None


def _read_after(
    conversion: _Conversion, node: ast.Subscript, parents: dict[int, ast.AST], scope: ast.AST
) -> bool:
    """`d[k]` later in the converting loop with its key, or any `d[...]` after it."""
    assignment = conversion.assignment
    if _holds(conversion.loop, node):
        return (
            isinstance(node.slice, ast.Name)
            and node.slice.id == conversion.key
            and (assignment.end_lineno or assignment.lineno) < node.lineno
        )
    return _after_loop(conversion, node, parents, scope)


def _after_loop(
    conversion: _Conversion, node: ast.AST, parents: dict[int, ast.AST], scope: ast.AST
) -> bool:
    """`node` comes after the converting loop, inside every `if` around the loop, with
    no binding of the dict itself in between."""
    end = conversion.loop.end_lineno or conversion.loop.lineno
    if node.lineno <= end:  # type: ignore[attr-defined]
        return False
    around = parents.get(id(conversion.loop))
    while around is not None and around is not scope:
        if isinstance(around, (ast.If, ast.Try)) and not _holds(around, node):
            return False
        around = parents.get(id(around))
    return not any(
        isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        and end < n.lineno < node.lineno  # type: ignore[attr-defined]
        and any(
            dotted(t) == conversion.container
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        )
        for n in ast.walk(scope)
    )


def _holds(outer: ast.AST, node: ast.AST) -> bool:
    start: int = getattr(outer, "lineno", 0)
    end: int = getattr(outer, "end_lineno", None) or start
    line: int = getattr(node, "lineno", 0)
    return start <= line <= end


def _parents(scope: ast.AST) -> dict[int, ast.AST]:
    """id(node) -> its parent under `scope`, once per scope."""
    cached: Optional[dict[int, ast.AST]] = scope.__dict__.get("_envcheck_parents")
    if cached is None:
        cached = {id(c): n for n in ast.walk(scope) for c in ast.iter_child_nodes(n)}
        setattr(scope, "_envcheck_parents", cached)  # noqa: B010 - AST nodes have no slot
    return cached
