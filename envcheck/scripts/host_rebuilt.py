"""A loader whose batches the training loop rebuilds on the host before copying them.

PointNet's loop turns each batch into NumPy for augmentation, then builds a new tensor
for the copy: `points = points.data.numpy()` ... `points = torch.Tensor(points)` ...
`points.cuda()`. Pinned memory serves only the tensor the loader hands over; the copy
reads a fresh pageable one, so `pin_memory=True` would gain nothing there. Whether the
other fields it copies as handed (`target.cuda()`, labels) would gain is not in sight:
the mark makes EC502 unknown, not clear.
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from envcheck.scripts.index import module_nodes

LOOP_WRAPPERS = ("enumerate", "iter", "tqdm", "track")


def mark_host_rebuilt(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """`host_rebuilt`: every loop over the name a loader is held in (read nowhere else,
    but by `len(name)`) turns a field of its batch into NumPy (`x = x.numpy()`, `x =
    x.data.numpy()`), the reason; loaders held otherwise keep no mark."""
    if not loaders:
        return
    by_place = {(each["line"], each["column"]): each for each in loaders}
    held: dict[str, list[dict[str, Any]]] = {}
    nodes = list(module_nodes(module))
    for node in nodes:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            loader = by_place.get((node.value.lineno, node.value.col_offset + 1))
            if loader is not None:
                held.setdefault(node.targets[0].id, []).append(loader)
    if not held:
        return
    loops: dict[str, list[ast.For]] = {}
    iterated: set[int] = set()  # the Name nodes the loops (and len()) read
    for node in nodes:
        if isinstance(node, ast.For):
            name = _iterated(node.iter, iterated)
            if name in held:
                loops.setdefault(name, []).append(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "len"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Name)
        ):
            iterated.add(id(node.args[0]))
    for name, found in loops.items():
        reads = [
            n
            for n in nodes
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        ]
        if any(id(n) not in iterated for n in reads):
            continue  # handed on, or read some other way: its batches may be copied as made
        why = [_rebuilt(loop) for loop in found]
        if not all(why):
            continue
        for loader in held[name]:
            loader["host_rebuilt"] = why[0]


def _iterated(iterable: ast.expr, seen: set[int]) -> Optional[str]:
    """The name a `for` iterates, bare or wrapped (`tqdm(enumerate(name, 0))`), noting
    the Name node read."""
    if isinstance(iterable, ast.Name):
        seen.add(id(iterable))
        return iterable.id
    if isinstance(iterable, ast.Call) and iterable.args:
        func = iterable.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return _iterated(iterable.args[0], seen) if called in LOOP_WRAPPERS else None
    return None


def _rebuilt(loop: ast.For) -> Optional[str]:
    """Why the loop rebuilds a field of its batch on the host (`points = points.data.
    numpy()`), or None."""
    fields = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    for statement in loop.body:
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id in fields
        ):
            continue
        value = statement.value
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "numpy"
            and not value.args
        ):
            continue
        receiver = value.func.value
        while isinstance(receiver, ast.Attribute) and receiver.attr == "data":
            receiver = receiver.value
        if isinstance(receiver, ast.Name) and receiver.id == statement.targets[0].id:
            return (
                f"the loop at line {loop.lineno} turns each batch's {receiver.id} into NumPy "
                f"({ast.unparse(statement)}, line {statement.lineno}) before the copy"
            )
    return None
