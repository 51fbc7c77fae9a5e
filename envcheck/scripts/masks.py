"""Boolean device masks in a training step: indexing a tensor with one (`x[keep]`)
gives a tensor whose size is the mask's count, so the CPU waits for the GPU to count."""

from __future__ import annotations

import ast
from typing import Optional

from envcheck.scripts.index import keyword_arg, own_nodes

BOOLEAN_FUNCTIONS = ("isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not")
# methods whose result keeps the receiver's dtype: a mask moved or reshaped is a mask
KEEPING_DTYPE = {"to", "cuda", "detach", "clone", "contiguous", "view", "reshape", "flatten"}
KEEPING_DTYPE |= {"squeeze", "unsqueeze", "expand", "expand_as", "repeat", "t", "transpose"}


def boolean_expression(node: ast.expr, masks: Optional[dict[str, ast.expr]] = None) -> bool:
    """An expression giving a boolean tensor when given tensors: a comparison,
    `~mask`, `a & b`, `(a > 0) * (b == c)`, `torch.isfinite(x)`, `x.bool()`, a tensor made with
    `dtype=torch.bool` (`torch.eye(n, dtype=torch.bool).to(device)`), or one of the
    names in `masks` (`x[~keep]` with `keep = x > 0`)."""
    if isinstance(node, ast.Name):
        return masks is not None and node.id in masks
    if isinstance(node, ast.Compare):
        return not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return boolean_expression(node.operand, masks)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        return boolean_expression(node.left, masks) or boolean_expression(node.right, masks)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        # `(u > 0) * (l == u)`: a product of boolean tensors is boolean (a logical and)
        return boolean_expression(node.left, masks) and boolean_expression(node.right, masks)
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        if name in BOOLEAN_FUNCTIONS or name == "bool" or _bool_dtype(node):
            return True
        return (
            isinstance(node.func, ast.Attribute)
            and name in KEEPING_DTYPE
            and not _dtype_argument(node)
            and boolean_expression(node.func.value, masks)
        )
    return False


def _bool_dtype(call: ast.Call) -> bool:
    """`dtype=torch.bool` (or `bool`) given to a call: a factory making a boolean tensor;
    or a conversion to it, `x.to(torch.bool)`, `x.to(device, torch.bool)`,
    `x.type(torch.bool)`."""
    dtype = keyword_arg(call, "dtype")
    if dtype is not None:
        return ast.unparse(dtype) in ("torch.bool", "bool")
    converts = isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "type")
    return converts and any(ast.unparse(a) == "torch.bool" for a in call.args)


def _dtype_argument(call: ast.Call) -> bool:
    """`.to(torch.float32)`, `.to(dtype=...)`: a conversion that may leave bool behind
    (not `.to(device)`)."""
    return keyword_arg(call, "dtype") is not None or any(
        isinstance(a, ast.Attribute) and ast.unparse(a).startswith("torch.") for a in call.args
    )


def mask_names(owner: ast.AST) -> dict[str, ast.expr]:
    """Names a function assigns boolean expressions to, every time it assigns them (a
    name assigned twice may hold an index list the second time; one re-assigned a mask
    in each branch, `keep = ~torch.isnan(e)` ... `keep = ~torch.isnan(f)`, is a mask)."""
    found: dict[str, ast.expr] = {}
    other: set[str] = set()
    for node in own_nodes(owner):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            if target.id not in other and boolean_expression(value):
                found.setdefault(target.id, value)
            else:
                other.add(target.id)
                found.pop(target.id, None)
    return found
