"""Loop counters: names bound only as the index of a loop that counts up from zero or a
non-negative start (`for epoch in range(num_epochs)`, `for i, batch in
enumerate(loader)`). Such a name is never negative, so a comparison of it with a bound
the source settles at or below zero is settled too: `if epoch < opt.warm_epoch:` with
`--warm_epoch` 0 by default never holds in a default run (a warm-up left off), and
`epoch >= args.start` with a start of 0 always does."""

from __future__ import annotations

import ast
from typing import Optional

Counters = frozenset[str]


def loop_counters(root: Optional[ast.AST]) -> Counters:
    """The names under `root` (a function or module) whose every binding is the counter
    of such a loop; a name also assigned, passed as a parameter or bound otherwise
    anywhere under `root` is left out."""
    if root is None:
        return frozenset()
    counted: set[str] = set()
    other: set[str] = set()
    loop_targets: set[int] = set()
    for node in ast.walk(root):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            name = _counter(node.target, node.iter)
            if name is not None:
                counted.add(name.id)
                loop_targets.add(id(name))
        elif isinstance(node, ast.arg):
            other.add(node.arg)
    for node in ast.walk(root):
        if (
            isinstance(node, ast.Name)
            and not isinstance(node.ctx, ast.Load)
            and id(node) not in loop_targets
        ):
            other.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            other.update(node.names)
    return frozenset(counted - other)


def _counter(target: ast.expr, iterable: ast.expr) -> Optional[ast.Name]:
    """The counter `target` takes from `iterable`: `range(n)`, `range(a, n)` or `range(a,
    n, step)` with `a` and `step` non-negative literals, and the first name of `for i, x
    in enumerate(...)` (no start, or a non-negative literal one)."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)):
        return None
    if iterable.func.id == "range" and isinstance(target, ast.Name) and not iterable.keywords:
        if not 1 <= len(iterable.args) <= 3:
            return None
        fixed = iterable.args[:1] if len(iterable.args) >= 2 else []
        fixed += iterable.args[2:]
        return target if all(_non_negative(a) for a in fixed) else None
    if (
        iterable.func.id == "enumerate"
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
        and isinstance(target.elts[0], ast.Name)
    ):
        start = [*iterable.args[1:], *(k.value for k in iterable.keywords if k.arg == "start")]
        return target.elts[0] if all(_non_negative(a) for a in start) else None
    return None


def _non_negative(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
        and node.value >= 0
    )


def settled_comparison(
    left: ast.expr, op: ast.cmpop, right: ast.expr, counters: Counters, bound: object
) -> Optional[bool]:
    """`counter < bound` (or `bound > counter`, `<=`, `>=`) with the counter never
    negative and `bound` the other side's known value: False or True where that alone
    settles it, else None."""
    if not isinstance(bound, (int, float)) or isinstance(bound, bool):
        return None
    flipped = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
    if isinstance(right, ast.Name) and right.id in counters:
        kind = flipped.get(type(op))  # `bound > counter` reads as `counter < bound`
    elif isinstance(left, ast.Name) and left.id in counters:
        kind = type(op)
    else:
        return None
    if kind is ast.Lt and bound <= 0:
        return False
    if kind is ast.LtE and bound < 0:
        return False
    if kind is ast.GtE and bound <= 0:
        return True
    if kind is ast.Gt and bound < 0:
        return True
    return None
