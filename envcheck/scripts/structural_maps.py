"""tf.data map functions that visibly do only structural work: `lambda r: (r, 0)`,
`lambda features, _: features`, a synthetic input returning `tf.zeros(...)`, a function
that stacks, casts or compares tensors. Such a map costs next to nothing per element, so
running it on one core is no bottleneck (EC511 is not worth a finding). A function that
decodes, resizes, augments, calls Python, calls anything else, computes on the element's
values (`x + 1`: the tf.data guide's scalar map before batch) or is out of sight is not
structural: it stays judged. Arithmetic inside a comparison (`tf.equal(n[-1] - n[0],
k - 1)`) is bookkeeping and allowed.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker
    from envcheck.scripts.index import FileIndex

# TensorFlow operations (after `tensorflow.`, `tensorflow.math.`, `tensorflow.compat.v1.`)
# that repack, select, cast, reshape, stack, build constants or compare: no decoding.
STRUCTURAL_TF = {
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "fill",
    "constant",
    "cast",
    "reshape",
    "stack",
    "unstack",
    "concat",
    "expand_dims",
    "squeeze",
    "identity",
    "transpose",
    "shape",
    "size",
    "rank",
    "gather",
    "one_hot",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "tuple",
}
# Comparisons: arithmetic in their arguments (`tf.equal(n[-1] - n[0], k - 1)`) is
# bookkeeping on a few scalars, not work on the element's data.
COMPARISONS = {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"}
BOOKKEEPING_TF = {"add", "subtract", "mod", "floormod"}
TF_PREFIXES = ("tensorflow.compat.v1.", "tensorflow.math.", "tensorflow.")
# Logging inside the function: no per-element work worth a core.
TF_LOGGING = ("tensorflow.logging.", "tensorflow.compat.v1.logging.", "tensorflow.debugging.")
BUILTINS = {"range", "len", "list", "tuple", "dict", "zip", "enumerate", "isinstance", "int"}
# Container methods on the element's structure (`features.keys()`, `d.get("label")`).
CONTAINER_METHODS = {"keys", "values", "items", "get", "copy"}


def structural_only(walker: Walker, files: FileIndex, func: Optional[ast.expr]) -> bool:
    """The map function is a lambda or a function of this file (`self._method` included)
    whose every call, followed into the file's own functions, is structural."""
    function = _visible(files, func)
    if function is None:
        return False
    todo: list[ast.AST] = [function]
    seen: set[int] = set()
    while todo:
        root = todo.pop()
        if id(root) in seen:
            continue
        seen.add(id(root))
        compared = _compared(walker, root)
        for node in ast.walk(root):
            if isinstance(node, ast.BinOp) and id(node) not in compared:
                return False
            if not isinstance(node, ast.Call):
                continue
            own = _visible(files, node.func)
            if own is not None and not isinstance(node.func, ast.Lambda):
                todo.append(own)
            elif not _structural_call(walker, node, id(node) in compared):
                return False
    return True


def _compared(walker: Walker, root: ast.AST) -> set[int]:
    """ids of the nodes inside a comparison (`a == b`, `tf.equal(a, b)`)."""
    inside: set[int] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.Compare) or (
            isinstance(node, ast.Call) and _tf_name(walker, node) in COMPARISONS
        ):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
    return inside


def _tf_name(walker: Walker, node: ast.Call) -> Optional[str]:
    """`tf.math.equal` -> "equal"; None for anything outside TensorFlow."""
    name = walker.qualname(node.func) or ""
    for prefix in TF_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return None


def _visible(files: FileIndex, func: Optional[ast.expr]) -> Optional[ast.AST]:
    if isinstance(func, ast.Lambda):
        return func.body
    if isinstance(func, ast.Name):
        return files.functions.get(func.id)
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("self", "cls")
    ):
        return files.functions.get(func.attr)
    return None


def _structural_call(walker: Walker, node: ast.Call, compared: bool) -> bool:
    name = walker.qualname(node.func) or ""
    if name.startswith(TF_LOGGING):
        return True
    operation = _tf_name(walker, node)
    if operation in STRUCTURAL_TF or operation in COMPARISONS:
        return True
    if compared and operation in BOOKKEEPING_TF:
        return True
    if isinstance(node.func, ast.Name) and node.func.id in BUILTINS and name == node.func.id:
        return True
    return isinstance(node.func, ast.Attribute) and node.func.attr in CONTAINER_METHODS
