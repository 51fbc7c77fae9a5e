"""Boolean device masks in a training step: indexing a tensor with one (`x[keep]`)
gives a tensor whose size is the mask's count, so the CPU waits for the GPU to count."""

from __future__ import annotations

import ast

from envcheck.scripts.index import own_nodes

BOOLEAN_FUNCTIONS = ("isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not")


def boolean_expression(node: ast.expr) -> bool:
    """An expression giving a boolean tensor when given tensors: a comparison,
    `~mask`, `a & b`, `torch.isfinite(x)`, `x.bool()`."""
    if isinstance(node, ast.Compare):
        return not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return boolean_expression(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        return boolean_expression(node.left) or boolean_expression(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        return name in BOOLEAN_FUNCTIONS or name == "bool"
    return False


def mask_names(owner: ast.AST) -> dict[str, ast.expr]:
    """Names a function assigns boolean expressions to, once (a name assigned twice
    may hold an index list the second time)."""
    found: dict[str, ast.expr] = {}
    twice: set[str] = set()
    for node in own_nodes(owner):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            if target.id in found or target.id in twice:
                twice.add(target.id)
                found.pop(target.id, None)
            elif boolean_expression(value):
                found[target.id] = value
            else:
                twice.add(target.id)
    return found
