"""Which values of a TensorFlow custom loop are on the host and which on the device,
beyond what the step computes: a step returning `loss.numpy()` hands its caller NumPy
(formatting it reads nothing again), while a `tf.Variable` (but an int32 counter, kept in
host memory) and what the step computes with TensorFlow (`loss = tf.reduce_mean(...)`)
are device tensors, which a Python branch or a NumPy call reads back every step.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Union

from envcheck.scripts.index import module_nodes, own_nodes

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
NOT_TENSORS = {"int", "float", "bool", "len", "str", "range", "list", "tuple", "dict", "zip"}
# What copies a tensor to the host and returns a host value (`loss.numpy()`)
HOST_METHODS = ("numpy", "item", "tolist")
# ... and the builtins that give a Python value (`float(loss)`), not a container of tensors
HOST_BUILTINS = ("float", "int", "bool", "str", "len")


def host_results(steps: list[Function], names: set[str]) -> set[str]:
    """The steps (or iterations) among `names` that return only host values (`return
    loss.numpy(), acc.numpy()`): the caller receives NumPy, and formatting it reads
    nothing again."""
    host = {s.name for s in steps if s.name in names and _returns_host(s)}
    return host - {s.name for s in steps if s.name in names and not _returns_host(s)}


def _returns_host(function: Function) -> bool:
    returns = [n for n in own_nodes(function) if isinstance(n, ast.Return)]
    return bool(returns) and all(
        r.value is not None
        and all(
            host_value(v) for v in (r.value.elts if isinstance(r.value, ast.Tuple) else [r.value])
        )
        for r in returns
    )


def host_value(node: ast.expr) -> bool:
    """`x.numpy()`, `float(x)`, a literal: a value on the host."""
    if isinstance(node, ast.Constant):
        return True
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute):
        return node.func.attr in HOST_METHODS and not node.args
    return isinstance(node.func, ast.Name) and node.func.id in HOST_BUILTINS


def device_variables(walker: Walker, counters: set[str]) -> set[str]:
    """Names (`global_steps`, `self.step`) the file binds to a `tf.Variable`, on the GPU,
    but for the int32 counters kept in host memory."""
    return {
        ast.unparse(target)
        for node in module_nodes(walker.module)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and walker.qualname(node.value.func) == "tensorflow.Variable"
        for target in node.targets
        if isinstance(target, (ast.Name, ast.Attribute))
    } - counters


def device_names(
    walker: Walker, nodes: list[ast.AST], variables: set[str], seeds: set[str]
) -> set[str]:
    """Names the code assigns a TensorFlow computation (`loss = tf.reduce_mean(...)`,
    `lr = step / warmup * base` with `step` a tf.Variable), from `seeds` onwards; not
    what it converts (`x.numpy()`, `float(x)`, `np.array(x)`)."""
    found = set(seeds)
    for _ in range(2):
        for node in nodes:
            if not isinstance(node, ast.Assign) or _converted(walker, node.value):
                continue
            if any(
                (
                    isinstance(n, ast.Call)
                    and (walker.qualname(n.func) or "").startswith("tensorflow.")
                )
                or (isinstance(n, ast.Name) and n.id in found)
                or (isinstance(n, (ast.Name, ast.Attribute)) and ast.unparse(n) in variables)
                for n in ast.walk(node.value)
            ):
                for target in node.targets:
                    found.update(bound_names(target))
    return found


def _converted(walker: Walker, value: ast.expr) -> bool:
    """`x.numpy()`, `float(x)`, `len(x)`, `np.array(x)`: a value made on the host."""
    if host_value(value):
        return True
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Name) and value.func.id in NOT_TENSORS:
        return True
    return (walker.qualname(value.func) or "").startswith("numpy.")


def bound_names(target: ast.expr) -> set[str]:
    """The names an assignment binds (`a`, `a, b`, `*rest`), not the base of `self.x`."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {n for e in target.elts for n in bound_names(e)}
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return set()


# The Keras optimizer's step counter: an int64 variable, kept on the device
DEVICE_COUNTERS = ("iterations",)


def counter_property(function: Function) -> bool:
    """A `@property` returning the optimizer's step counter as a Python number (`return
    int(self.optimizer.iterations)`, `self.optimizer.iterations.numpy()`): each read of
    it copies the int64 device variable to the host, after the step that advances it."""
    if not any(isinstance(d, ast.Name) and d.id == "property" for d in function.decorator_list):
        return False
    returns = [n for n in own_nodes(function) if isinstance(n, ast.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return False
    value = returns[0].value
    if not isinstance(value, ast.Call) or value.keywords:
        return False
    if isinstance(value.func, ast.Name) and value.func.id in ("int", "float"):
        read = value.args[0] if len(value.args) == 1 else None
    elif isinstance(value.func, ast.Attribute) and value.func.attr == "numpy" and not value.args:
        read = value.func.value
    else:
        return False
    return isinstance(read, ast.Attribute) and read.attr in DEVICE_COUNTERS
