"""A loader an object reads one batch at a time, now and then: `self.val_iter =
iter(self.val_loader)` made once, `next(self.val_iter)` (made again only at
StopIteration) in a method the training loop calls under a periodic branch (`if step %
2000 == 0: self.val()`, monodepth2). The iterator stays open between reads, so its
workers live as long as it does; one pass over the loader spans many training epochs,
and its workers restart only at the end of such a pass. Marks only; EC503 judges
(envcheck/checks/ec5xx_torch.py).
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from envcheck.scripts.index import module_nodes

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def mark_read_periodically(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """`read_periodically`: why a loader held in `self.A` is read only through an
    iterator attribute now and then, or None (see the module docstring). Every read of
    `.A` in the file must be `self.B = iter(self.A)`, one attribute `B`; every read of
    `.B` a `next(self.B)` (or `self.B.next()`, `self.B.__next__()`) in a method of a
    class with no base (no framework's hook), named in the file only by its calls
    (`self.val()`, not handed on as a value or to getattr), each call of that
    method `self.m()` under a periodic test of the function it is in (`if step % N ==
    0:`, or a name that function sets only from such a test; an `or` counts when all
    its parts are periodic, an `and` when one is)."""
    if not loaders:
        return
    stored = _stored_attributes(module)
    tree: Optional[_Tree] = None  # read once per file, only when a loader is stored
    for loader in loaders:
        attribute = stored.get((loader["line"], loader["column"]))
        if attribute and tree is None:
            tree = _Tree(module)
        reason = _periodic_reads(tree, attribute) if attribute and tree else None
        loader["read_periodically"] = reason


class _Tree:
    """A file's parents, owning functions and nodes by the name they carry, read once:
    each stored loader asks (a file of N classes each storing a loader had walked the
    file N times)."""

    def __init__(self, module: ast.Module):
        self.parents: dict[int, ast.AST] = {}
        self.owners: dict[int, ast.AST] = {}  # id(node) -> the function it is in
        self.named: dict[str, list[ast.AST]] = {}  # attribute or name -> its nodes
        for function in module_nodes(module):
            if isinstance(function, FUNCTIONS):
                for node in ast.walk(function):
                    self.owners[id(node)] = function  # inner functions overwrite later
        for node in module_nodes(module):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, ast.Attribute):
                self.named.setdefault(node.attr, []).append(node)
            elif isinstance(node, ast.Name):
                self.named.setdefault(node.id, []).append(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.named.setdefault(node.value, []).append(node)


def _stored_attributes(module: ast.Module) -> dict[tuple[int, int], str]:
    """The attribute a call is stored in (`self.val_loader = DataLoader(...)`), by place."""
    found: dict[tuple[int, int], str] = {}
    for node in module_nodes(module):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            attribute = _own_attribute(node.targets[0])
            if attribute is not None and isinstance(node.value, ast.Call):
                found[(node.value.lineno, node.value.col_offset + 1)] = attribute
    return found


def _own_attribute(node: ast.AST) -> Optional[str]:
    """`x` of `self.x`, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == "self" else None
    return None


def _periodic_reads(tree: _Tree, loader: str) -> Optional[str]:
    parents, owners = tree.parents, tree.owners
    iterators: set[str] = set()
    for node in tree.named.get(loader, []):
        if not isinstance(node, ast.Attribute):
            continue
        if not isinstance(node.ctx, ast.Load):
            continue
        call = parents.get(id(node))
        assign = parents.get(id(call)) if call is not None else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "iter"
            and call.args == [node]
            and isinstance(assign, ast.Assign)
            and len(assign.targets) == 1
            and _own_attribute(node) is not None
        ):
            return None
        target = _own_attribute(assign.targets[0])
        if target is None:
            return None
        iterators.add(target)
    if len(iterators) != 1:
        return None
    iterator = iterators.pop()
    readers: set[str] = set()
    for node in tree.named.get(iterator, []):
        if not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)):
            continue
        if not _next_of(node, parents):
            return None
        method = owners.get(id(node))
        if not isinstance(method, FUNCTIONS) or not _plain_method(method, parents):
            return None
        readers.add(method.name)
    if not readers:
        return None
    places: list[int] = []
    for reader in sorted(readers):
        named = tree.named.get(reader, [])
        calls = [
            call
            for n in named
            if isinstance(n, ast.Attribute)
            and _own_attribute(n) is not None
            and isinstance(call := parents.get(id(n)), ast.Call)
            and call.func is n
        ]
        mentions = [
            n
            for n in named
            if isinstance(n, (ast.Attribute, ast.Name))
            or (
                isinstance(call := parents.get(id(n)), ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in ("getattr", "hasattr", "setattr")
                and any(a is n for a in call.args)
            )
        ]
        if not calls or len(mentions) != len(calls):
            return None  # never called here (a framework's hook), or handed on as a value
        for call in calls:
            branch = _periodic_branch(call, parents, owners.get(id(call)))
            if branch is None:
                return None
            places.append(branch)
    names = ", ".join(f"{r}()" for r in sorted(readers))
    lines = ", ".join(str(line) for line in sorted(set(places)))
    return (
        f"it is read one batch at a time through self.{iterator}, by {names}, called only "
        f"under a periodic branch (line {lines}): the iterator stays open between reads, "
        "and one pass over the loader spans many training steps"
    )


def _plain_method(function: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """A method of a class with no base class (`class Trainer:`): no framework's hook,
    which the framework would call on its own schedule."""
    owner = parents.get(id(function))
    return (
        isinstance(owner, ast.ClassDef)
        and all(isinstance(b, ast.Name) and b.id == "object" for b in owner.bases)
        and not owner.keywords
    )


def _next_of(node: ast.Attribute, parents: dict[int, ast.AST]) -> bool:
    """`next(self.it)`, `self.it.next()`, `self.it.__next__()`."""
    parent = parents.get(id(node))
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id == "next"
        and parent.args
        and parent.args[0] is node
    ):
        return True
    call = parents.get(id(parent)) if parent is not None else None
    return (
        isinstance(parent, ast.Attribute)
        and parent.attr in ("next", "__next__")
        and isinstance(call, ast.Call)
        and call.func is parent
        and not call.args
    )


def _periodic_branch(
    node: ast.AST, parents: dict[int, ast.AST], function: Optional[ast.AST]
) -> Optional[int]:
    """The line of the innermost `if` around `node` (in its function) whose test is
    periodic while `node` is in its body, else None."""
    child, parent = node, parents.get(id(node))
    while parent is not None and parent is not function:
        if (
            isinstance(parent, ast.If)
            and any(child is s for s in parent.body)
            and _periodic(parent.test, function)
        ):
            return parent.lineno
        if isinstance(parent, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            return None
        child, parent = parent, parents.get(id(parent))
    return None


def _periodic(test: ast.expr, function: Optional[ast.AST], depth: int = 0) -> bool:
    """`step % 100 == 0`; `a or b` when both are; `a and b` when one is; a name the
    function only ever sets to such a test."""
    if isinstance(test, ast.BoolOp):
        parts = [_periodic(v, function, depth) for v in test.values]
        return all(parts) if isinstance(test.op, ast.Or) else any(parts)
    if isinstance(test, ast.Name) and function is not None and depth < 2:
        values = [
            n.value
            for n in ast.walk(function)
            if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            and any(
                isinstance(t, ast.Name) and t.id == test.id
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
        ]
        return bool(values) and all(
            v is not None and _periodic(v, function, depth + 1) for v in values
        )
    if isinstance(test, ast.Compare):
        return any(_modulus(n) for n in ast.walk(test))
    return False


def _modulus(node: ast.AST) -> bool:
    """`step % 100` (not the string formatting `"%d" % x`)."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str))
    )
