"""TensorFlow custom training loops, read from the source without running it.

A custom loop trains with `tf.GradientTape` and `optimizer.apply_gradients(...)` in a
step function called once per batch (`for x, y in dataset: train_step(x, y)`), or in
the body of the loop itself. `finish` records:

- the file fact `tf_custom_loop`: where the first `apply_gradients` is (`{"line",
  "column", "code", "function"}`), or None: Keras training outside `fit`, which the
  mixed-precision rule (EC522) judges as it judges `fit`;
- `host_sync` observations (in `torch_calls`, the per-step observations EC509 reads,
  with `"framework": "tensorflow"`) for what an *eager* step does every step that waits
  for the GPU: `.numpy()`, `float(t)`/`int(t)` of a tensor, `%`/f-string/`.format`
  formatting of a tensor. `tf.print` is not one (it runs as an op, asynchronously).

A step function compiled with `@tf.function` (or wrapped, `step = tf.function(step)`)
runs as a graph: there `.numpy()` is not even available and formatting sees symbolic
tensors, so nothing in it is a per-step sync and it is not read. Code under a periodic
or once-only branch (`if step % 100 == 0:`, `if step == 0:`) is left out, as for
PyTorch loops. Nothing here judges.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional, Union

from envcheck.scripts.index import code_at, module_nodes, own_nodes
from envcheck.scripts.keras import uses_tensorflow
from envcheck.scripts.torch_loops import once_test, periodic_test
from envcheck.scripts.values import resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Loop = Union[ast.For, ast.AsyncFor, ast.While]
COMPILERS = {"tensorflow.function", "tensorflow.compat.v1.function", "tf.function"}
CONVERSIONS = ("float", "int", "bool")


class TfLoopObserver:
    """The TensorFlow custom-loop family (see the module docstring)."""

    def call(self, walker: Walker, node: ast.Call, name: Optional[str]) -> None:
        return None  # loops need the whole file: read in finish

    def finish(self, walker: Walker) -> None:
        walker.facts["tf_custom_loop"] = None
        if not uses_tensorflow(walker) or not any(
            "apply_gradients" in line for line in walker.lines
        ):
            return
        functions = walker.index().function_nodes
        steps = [f for f in functions if _applies_gradients(list(own_nodes(f)))]
        first = _first_apply(walker.module)
        if first is not None:
            function = next((f for f in steps if _within(first, f)), None)
            walker.facts["tf_custom_loop"] = {
                "line": first.lineno,
                "column": first.col_offset + 1,
                "code": code_at(walker.lines, first.lineno),
                "function": getattr(function, "name", None),
            }
        compiled = _compiled(walker)
        parents = {
            id(child): node
            for node in module_nodes(walker.module)
            for child in ast.iter_child_nodes(node)
        }
        seen: set[int] = set()
        for loop in _loops(walker.module):  # innermost first: the loop over batches
            if _off_by_default(walker, loop, parents):
                continue  # `if FLAGS.mode == "eager_tf":` with the flag at another default
            body = [n for s in loop.body for n in _outside_loops(s)]
            called = {_callee(c) for c in body if isinstance(c, ast.Call)}
            stepped: list[Union[Function, Loop]] = [f for f in steps if f.name in called]
            if _applies_gradients(body):
                stepped.append(loop)  # the step is the loop's own body
            for step in stepped:
                if isinstance(step, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    step.name in compiled
                ):
                    continue
                reader = _Step(walker, loop, step, seen)
                walker.report.torch_calls.extend(reader.read())


def _outside_loops(node: ast.AST) -> list[ast.AST]:
    """`node` and the nodes under it, not inside nested loops or functions: what the
    loop itself runs once per iteration (an epoch loop does not step by its inner loop)."""
    found: list[ast.AST] = [node]
    nested = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)
    if isinstance(node, (*nested, ast.ClassDef, ast.Lambda)):
        return found
    for child in ast.iter_child_nodes(node):
        found += _outside_loops(child)
    return found


def _off_by_default(walker: Walker, loop: Loop, parents: dict[int, ast.AST]) -> bool:
    """The loop sits in a branch a default run does not take (a flag's default settles
    the test the other way)."""
    node: ast.AST = loop
    function: Optional[ast.AST] = None
    branches: list[tuple[ast.If, bool]] = []
    while id(node) in parents:
        parent = parents[id(node)]
        if isinstance(parent, ast.If) and node is not parent.test:
            branches.append((parent, node in parent.body))
        if function is None and isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = parent
        node = parent
    scope = walker.scope_of(function)
    for branch, in_body in branches:
        taken = resolve(branch.test, scope)
        if taken.known and bool(taken.value) != in_body:
            return True
    return False


def _applies_gradients(nodes: list[ast.AST]) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "apply_gradients"
        for n in nodes
    )


def _first_apply(module: ast.Module) -> Optional[ast.Call]:
    found = [
        n
        for n in module_nodes(module)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "apply_gradients"
    ]
    return min(found, key=lambda n: (n.lineno, n.col_offset)) if found else None


def _within(node: ast.AST, function: Function) -> bool:
    end = function.end_lineno or function.lineno
    return function.lineno <= getattr(node, "lineno", 0) <= end


def _compiled(walker: Walker) -> set[str]:
    """Functions run as graphs: decorated `@tf.function` (with or without arguments), or
    wrapped `step = tf.function(step)`."""
    found: set[str] = set()
    for function in walker.index().function_nodes:
        for decorator in function.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if walker.qualname(target) in COMPILERS:
                found.add(function.name)
    for node in module_nodes(walker.module):
        if (
            isinstance(node, ast.Call)
            and walker.qualname(node.func) in COMPILERS
            and node.args
            and isinstance(node.args[0], (ast.Name, ast.Attribute))
        ):
            found.add(_last(node.args[0]))
    return found


def _loops(module: ast.Module) -> list[Loop]:
    return sorted(
        (n for n in module_nodes(module) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))),
        key=lambda n: (-n.lineno, -n.col_offset),
    )


def _callee(call: ast.Call) -> Optional[str]:
    if isinstance(call.func, (ast.Name, ast.Attribute)):
        return _last(call.func)
    return None


def _last(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


class _Step:
    """The statements of one eager training step, read for per-step host syncs."""

    def __init__(self, walker: Walker, loop: Loop, step: Union[Function, Loop], seen: set[int]):
        self.walker = walker
        self.loop = loop
        self.step = step
        self.seen = seen
        named = isinstance(step, (ast.FunctionDef, ast.AsyncFunctionDef))
        self.function = step.name if named else None  # type: ignore[union-attr]
        nodes = [n for s in step.body for n in [s, *own_nodes(s)]]
        self.tensors = _computed_names(nodes)
        self.found: list[dict[str, Any]] = []

    def read(self) -> list[dict[str, Any]]:
        self._block(self.step.body)
        return self.found

    def _block(self, body: list[ast.stmt]) -> None:
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(statement, ast.If):
                if not (periodic_test(statement.test) or once_test(statement.test)):
                    self._block(statement.body)
                self._block(statement.orelse)
                continue
            if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
                self._block(statement.body)  # an inner loop of the step runs every step
                continue
            if isinstance(statement, (ast.With, ast.AsyncWith, ast.Try)):
                self._block(statement.body)
                for handler in getattr(statement, "handlers", []):
                    self._block(handler.body)
                continue
            self._statement(statement)

    def _statement(self, statement: ast.stmt) -> None:
        if id(statement) in self.seen:
            return
        reasons: list[tuple[str, str]] = []
        for node in [statement, *own_nodes(statement)]:
            why = self._sync(node)
            if why is not None and why[0] not in [r[0] for r in reasons]:
                reasons.append(why)
        if not reasons:
            return
        self.seen.add(id(statement))
        self.found.append(
            {
                "kind": "host_sync",
                "framework": "tensorflow",
                "path": self.walker.report.path,
                "line": statement.lineno,
                "column": statement.col_offset + 1,
                "code": code_at(self.walker.lines, statement.lineno),
                "function": self.function,
                "call": ", ".join(r[0] for r in reasons),
                "what": reasons[0][1],
                "loader": _short(self.loop.iter)
                if isinstance(self.loop, (ast.For, ast.AsyncFor))
                else f"while {_short(self.loop.test)}",
                "loop_line": self.loop.lineno,
                "loop_code": code_at(self.walker.lines, self.loop.lineno),
            }
        )

    def _sync(self, node: ast.AST) -> Optional[tuple[str, str]]:
        """(what, why) when `node` reads an eager tensor on the host."""
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args:
                return f"{_short(func.value, 30)}.numpy()", "copies an eager tensor to the host"
            if (
                isinstance(func, ast.Name)
                and func.id in CONVERSIONS
                and len(node.args) == 1
                and self._tensor(node.args[0])
            ):
                return _short(node), "converts an eager tensor"
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "format"
                and isinstance(func.value, ast.Constant)
                and any(self._tensor(a) for a in node.args)
            ):
                return "str.format(...)", "formats an eager tensor"
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and self._tensor(node.right)
        ):
            return "'...' % (...)", "formats an eager tensor"
        if isinstance(node, ast.JoinedStr) and any(
            isinstance(v, ast.FormattedValue) and self._tensor(v.value) for v in node.values
        ):
            return "f-string", "formats an eager tensor"
        return None

    def _tensor(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Tuple):
            return any(self._tensor(e) for e in node.elts)
        return False


def _computed_names(nodes: list[ast.AST]) -> set[str]:
    """Names the step assigns from a computation (a call or arithmetic on one: the model's
    outputs, losses), not only from literals."""
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            if not isinstance(node.value, ast.Constant):
                found.add(node.target.id)
        elif isinstance(node, ast.Assign) and not isinstance(node.value, ast.Constant):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found.add(name.id)
    return found


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."
