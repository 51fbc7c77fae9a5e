"""Tensors the source builds on the CPU, read without running it.

A `.tolist()` or `.to("cpu")` of a tensor that never left the host copies nothing from
the GPU and waits for nothing: `torch.randint(1, 10, (64,)).tolist()`, or `lengths` in
`lengths = torch.tensor([len(s) for s in seqs])` ... `lengths.to("cpu")`. `on_host`
answers whether an expression is such a tensor: a `torch` factory called without a
`device` (or with `device="cpu"`), `torch.from_numpy(...)`, what `.cpu()` or
`.to("cpu")` returns (the copy is reported where it is made), a method keeping its
receiver's device on one (a cast, a view, a reduction, a comparison) or an index into
one, or a local name every binding of which is one of those.
Anything it cannot settle is not on the host, so a sync is never hidden by a guess.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional

from envcheck.scripts.index import is_cpu, keyword_arg

# factories of `torch` that make a tensor on the default device (the CPU) unless told
FACTORIES = {
    "tensor",
    "as_tensor",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "linspace",
    "rand",
    "randn",
    "randint",
    "randperm",
    "LongTensor",
    "FloatTensor",
    "IntTensor",
    "BoolTensor",
}
# methods of a tensor whose result stays where the tensor is
SAME_DEVICE = {
    "float",
    "long",
    "int",
    "double",
    "half",
    "bool",
    "view",
    "reshape",
    "flatten",
    "squeeze",
    "unsqueeze",
    "clone",
    "detach",
    "contiguous",
    "sort",
    "flip",
    # reductions and comparisons: `pred.eq(target).cpu().sum()` sums on the CPU
    "sum",
    "mean",
    "max",
    "min",
    "argmax",
    "argmin",
    "eq",
    "ne",
    "abs",
}
DEPTH = 4


def on_host(
    node: ast.expr,
    scope: ast.AST,
    qualname: Callable[[ast.AST], Optional[str]],
    depth: int = 0,
) -> bool:
    """`node` is a tensor built on the CPU (see the module docstring); `scope` is the
    function (or module) whose local names `node` reads."""
    if depth > DEPTH:
        return False
    if isinstance(node, ast.Call):
        name = qualname(node.func) or ""
        if name == "torch.from_numpy":
            return True
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in FACTORIES:
            device = keyword_arg(node, "device")
            return device is None or is_cpu(device)
        func = node.func
        if isinstance(func, ast.Attribute) and (
            (func.attr == "cpu" and not node.args)
            or (
                func.attr == "to"
                and is_cpu(node.args[0] if node.args else keyword_arg(node, "device"))
            )
        ):
            return True  # the copy itself is reported where it is made
        if isinstance(func, ast.Attribute) and func.attr in SAME_DEVICE:
            return on_host(func.value, scope, qualname, depth + 1)
        return False
    if isinstance(node, ast.Subscript):  # `lengths[order]`, `t.sort()[0]`
        return on_host(node.value, scope, qualname, depth + 1)
    if isinstance(node, ast.Name):
        values = _bindings(node.id, scope)
        return bool(values) and all(
            v is not None and on_host(v, scope, qualname, depth + 1) for v in values
        )
    return False


def _bindings(name: str, scope: ast.AST) -> list[Optional[ast.expr]]:
    """The values bound to `name` in `scope` (None for a binding with no single value:
    a loop target, an unpacking, an augmented assignment, a parameter)."""
    found: list[Optional[ast.expr]] = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = scope.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        if any(a.arg == name for a in every):
            found.append(None)
    return found + _bound_in(scope).get(name, [])


def _bound_in(scope: ast.AST) -> dict[str, list[Optional[ast.expr]]]:
    """name -> the values its bindings in `scope` give it, in `ast.walk` order, gathered
    once per scope: walking the scope for each name read made a loop of N host
    reads take N² time."""
    cached: Optional[dict[str, list[Optional[ast.expr]]]] = scope.__dict__.get("_envcheck_bindings")
    if cached is not None:
        return cached
    found: dict[str, list[Optional[ast.expr]]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.value)
                else:
                    for inner in _names(target):
                        found.setdefault(inner, []).append(None)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.withitem)):
            bound = node.optional_vars if isinstance(node, ast.withitem) else node.target
            for inner in _names(bound):
                found.setdefault(inner, []).append(None)
        elif isinstance(node, ast.NamedExpr):
            found.setdefault(node.target.id, []).append(node.value)
    setattr(scope, "_envcheck_bindings", found)  # noqa: B010 - AST nodes have no slot
    return found


def _names(node: Optional[ast.AST]) -> list[str]:
    """The names in a binding target, each once, in the order first met."""
    if node is None:
        return []
    return list(dict.fromkeys(n.id for n in ast.walk(node) if isinstance(n, ast.Name)))
