"""A layer's width as the file writes it, read through the constructor that builds it.

`nn.Linear(d_in, hidden)` in `class Net.__init__(self, d_in, hidden, d_out)` has the
widths the file's constructions pass (`Net(7, 16, 2)`), followed up through classes that
hand their own parameters on (`MLP(hidden_dim, hidden_dim)` inside `GIN(in_dim, 16,
out_dim)`), through simple arithmetic and through the items of a list passed
(`GATConv(hid_size * heads[0], ...)` with `heads=[8, 1]`). The toy-model test of the
precision reader (precision.py) reads them: a 16-unit net is a toy however its widths
reach its layers.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import TYPE_CHECKING, Any, Callable, Optional

from envcheck.scripts.parameters import handed_value, passed_expression
from envcheck.scripts.values import namespace_dict, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

# A model's input or output width, the data's (`input_dim`, `out_size`, `nclass`,
# `in_feats`, `num_classes`, `d_in`).
DATA_WIDTH = re.compile(
    r"^(d_|n_?|num_)?(in|input|out|output|feat|feats|features|class|classes|labels)"
    r"(_(dim|dims|size|channels|feats|features|units))?$"
)
MAX_DEPTH = 6  # expressions and constructors followed for one width
OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}


def width(
    walker: Walker, expr: ast.expr, function: Optional[ast.AST], depth: int = 0
) -> Optional[int]:
    """The int `expr` (a layer's size argument, inside `function`) has in the file's run,
    or None when the source does not show it (a width from the data: `features.shape[1]`)."""
    if depth > MAX_DEPTH:
        return None
    value = resolve(expr, walker.scope_of(function))
    if value.known:
        return _integer(value.value)
    if isinstance(expr, ast.Name):
        handed = handed_value(walker, function, expr)
        return _integer(handed.value) if handed is not None and handed.known else None
    if isinstance(expr, ast.BinOp) and type(expr.op) in OPERATORS:
        left = width(walker, expr.left, function, depth + 1)
        right = width(walker, expr.right, function, depth + 1)
        if left is None or right is None or (right == 0 and isinstance(expr.op, ast.FloorDiv)):
            return None
        return _integer(OPERATORS[type(expr.op)](left, right))
    if isinstance(expr, ast.Subscript):
        return _item(walker, expr, function, depth)
    return None


def data_widths(written: list[ast.expr], function: Optional[ast.AST]) -> bool:
    """Every width is a parameter of the function named for the model's input or output
    (`input_dim`, `out_size`, `nclass`, `in_feats`): the data's widths."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = function.args
    parameters = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    return all(
        isinstance(w, ast.Name) and w.id in parameters and DATA_WIDTH.match(w.id) for w in written
    )


def _item(
    walker: Walker, expr: ast.Subscript, function: Optional[ast.AST], depth: int
) -> Optional[int]:
    """`heads[0]` where the parameter `heads` is passed a list or tuple written out
    (`heads=[8, 1]`): that item's width, read where it is written; `variant["embed_dim"]`
    where the parameter `variant` is passed the options as a dict (`vars(args)`): the
    option's, as `args.embed_dim` there."""
    index = expr.slice
    if (
        isinstance(expr.value, ast.Name)
        and isinstance(index, ast.Constant)
        and isinstance(index.value, str)
    ):
        handed = passed_expression(walker, function, expr.value.id)
        if handed is None or not namespace_dict(handed[0]):
            return None
        holder = handed[0]
        namespace = holder.value if isinstance(holder, ast.Attribute) else holder.args[0]  # type: ignore[attr-defined]
        option = ast.copy_location(ast.Attribute(namespace, index.value, ast.Load()), expr)
        return width(walker, option, handed[1], depth + 1)
    if not (
        isinstance(expr.value, ast.Name)
        and isinstance(index, ast.Constant)
        and isinstance(index.value, int)
    ):
        return None
    passed = passed_expression(walker, function, expr.value.id)
    if passed is None or not isinstance(passed[0], (ast.List, ast.Tuple)):
        return None
    items, caller = passed[0].elts, passed[1]
    if not -len(items) <= index.value < len(items):
        return None
    return width(walker, items[index.value], caller, depth + 1)


def _integer(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
