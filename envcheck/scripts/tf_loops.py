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
  formatting of a tensor (a Keras metric's `.result()` included). `tf.print` is not one
  (it runs as an op, asynchronously), nor is reading an int32 step counter
  (`ckpt.step.numpy()` of a `tf.Variable(0)` the loop advances: kept in host memory,
  it waits for no GPU work; one the step function advances is still read after the step).
  The functions and methods of the file the step calls are read too, two calls deep
  (`grad_clipping(grads)`, `self.model.training_step(batch)` -> `self.plot("loss", l)`,
  resolved by `step_helpers`), with the parameters the step hands tensors to; a helper
  the file also calls elsewhere is reported at the call that hands it the tensor.

A step function compiled with `@tf.function` (or wrapped, `step = tf.function(step)`)
runs as a graph: there `.numpy()` is not even available and formatting sees symbolic
tensors, so nothing in it is a per-step sync and it is not read; what it returns to the
eager loop (`loss = train_step(x, y)`) is an EagerTensor, and reading that on the host
in the loop (`print(f"{loss}")`, `loss.numpy()`) is, as it is for what an eager step
returns (`batch_loss = self.train_step(x, y)` then `batch_loss.numpy()`). Code under a
periodic or once-only branch (`if step % 100 == 0:`, `if step == 0:`) is left out, as for
PyTorch loops. Nothing here judges.

Size: one observer, one walk: finding the step (compiled or eager, function or method),
reading its body and the eager loop around it share the step's facts; the step counter
and the helpers it calls are split out (step_helpers) where they stand alone.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional, Union

from envcheck.scripts.callees import Callees
from envcheck.scripts.index import code_at, function_owners, keyword_arg, module_nodes, own_nodes
from envcheck.scripts.keras import uses_tensorflow
from envcheck.scripts.step_helpers import StepHelpers
from envcheck.scripts.torch_loops import once_test, periodic_test
from envcheck.scripts.values import resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Loop = Union[ast.For, ast.AsyncFor, ast.While]
LOOPS = (ast.For, ast.AsyncFor, ast.While)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
NOT_TENSORS = {"int", "float", "bool", "len", "str", "range", "list", "tuple", "dict", "zip"}
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
        seen: set[Any] = set()
        nodes = module_nodes(walker.module)
        assignments = [(t, n.value) for n in nodes if isinstance(n, ast.Assign) for t in n.targets]
        calls = [n for n in nodes if isinstance(n, ast.Call)]
        files = walker.index()
        helpers = StepHelpers(
            walker.module, files, Callees(walker.module, files, assignments, calls)
        )
        owners = function_owners(walker.module, files.function_nodes)
        for loop in _loops(walker.module):  # innermost first: the loop over batches
            if _off_by_default(walker, loop, parents):
                continue  # `if FLAGS.mode == "eager_tf":` with the flag at another default
            body = [n for s in loop.body for n in _outside_loops(s)]
            called = {_callee(c) for c in body if isinstance(c, ast.Call)}
            stepped: list[Union[Function, Loop]] = [f for f in steps if f.name in called]
            if _applies_gradients(body):
                stepped.append(loop)  # the step is the loop's own body
            named = {f.name for f in stepped if isinstance(f, FUNCTIONS)}
            if named and loop not in stepped:
                # `loss = train_step(x, y)`, then `print(f"{loss}")` in the eager loop: what
                # the step returns, compiled or eager, is an EagerTensor read on the host here
                reader = _Step(walker, loop, loop, seen)
                reader.tensors = _graph_results(body, named)
                walker.report.torch_calls.extend(_one_per_line(reader.read()))
            for step in stepped:
                if isinstance(step, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    step.name in compiled
                ):
                    continue
                reader = _Step(walker, loop, step, seen)
                reader.helpers, reader.compiled = helpers, compiled
                caller = step if not isinstance(step, LOOPS) else owners.get(id(loop))
                reader.caller = caller if isinstance(caller, FUNCTIONS) else None
                walker.report.torch_calls.extend(_one_per_line(reader.read()))


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

    def __init__(self, walker: Walker, loop: Loop, step: Union[Function, Loop], seen: set[Any]):
        self.walker = walker
        self.loop = loop
        self.step = step
        self.seen = seen
        named = isinstance(step, (ast.FunctionDef, ast.AsyncFunctionDef))
        self.function = step.name if named else None  # type: ignore[union-attr]
        nodes = [n for s in step.body for n in [s, *own_nodes(s)]]
        self.tensors = _computed_names(nodes)
        self.found: list[dict[str, Any]] = []
        self.helpers: Optional[StepHelpers] = None  # set by the caller: helpers are followed
        self.compiled: set[str] = set()
        self.caller: Optional[Function] = None  # the function whose code is read
        self.site: Optional[tuple[ast.stmt, str]] = None  # a shared helper's call in the step
        self.depth = 0
        self.chain: tuple[int, ...] = ()
        self.metrics = _keras_metrics(walker)
        self.counters = _host_counters(walker)

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
        key: Any = (id(self.site[0]), id(statement)) if self.site else id(statement)
        if key in self.seen:
            return
        reasons: list[tuple[str, str]] = []
        for node in [statement, *own_nodes(statement)]:
            why = self._sync(node)
            if why is not None and why[0] not in [r[0] for r in reasons]:
                reasons.append(why)
        if self.helpers is not None and self.depth < 2:
            for node in [statement, *own_nodes(statement)]:
                if isinstance(node, ast.Call):
                    self._follow(node, statement)
        if not reasons:
            return
        self.seen.add(key)
        place = self.site[0] if self.site else statement
        call = ", ".join(r[0] for r in reasons)
        self.found.append(
            {
                "kind": "host_sync",
                "framework": "tensorflow",
                "path": self.walker.report.path,
                "line": place.lineno,
                "column": place.col_offset + 1,
                "code": code_at(self.walker.lines, place.lineno),
                "function": self.function,
                "call": f"{call} in {self.site[1]}()" if self.site else call,
                "what": reasons[0][1],
                "loader": _short(self.loop.iter)
                if isinstance(self.loop, (ast.For, ast.AsyncFor))
                else f"while {_short(self.loop.test)}",
                "loop_line": self.loop.lineno,
                "loop_code": code_at(self.walker.lines, self.loop.lineno),
            }
        )

    def _follow(self, call: ast.Call, statement: ast.stmt) -> None:
        """Read a function of the file the step calls (`grad_clipping(grads)`,
        `self.model.training_step(batch)`, `metric.add(loss)`) with the parameters the
        step hands tensors to: its host reads run every step too. A helper shared with
        other code is reported where the step calls it, since the tensor comes from there."""
        assert self.helpers is not None
        target = self.helpers.function(call, self.caller)
        if (
            target is None
            or target is self.step
            or id(target) in self.chain
            or target.name in self.compiled
        ):
            return
        reader = _Step(self.walker, self.loop, target, self.seen)
        reader.helpers, reader.compiled, reader.caller = self.helpers, self.compiled, target
        reader.depth, reader.chain = self.depth + 1, (*self.chain, id(target))
        reader.site = self.site
        if self.site is None and self.helpers.callees.calls_of(target) > 1:
            reader.site = (statement, target.name)
        reader.tensors = _helper_tensors(
            target, self._bound(call, target, id(target) in self.helpers.owner)
        )
        self.found.extend(reader.read())

    def _bound(self, call: ast.Call, target: Function, method: bool) -> set[str]:
        """The parameters of `target` the call hands a tensor to."""
        params = [*target.args.posonlyargs, *target.args.args]
        if method and params and isinstance(call.func, ast.Attribute):
            params = params[1:]  # self
        found: set[str] = set()
        for index, argument in enumerate(call.args):
            if not self._tensorish(argument):
                continue
            if index < len(params):
                found.add(params[index].arg)
            elif target.args.vararg is not None:
                found.add(target.args.vararg.arg)
        names = {a.arg for a in [*params, *target.args.kwonlyargs]}
        for keyword in call.keywords:
            if keyword.arg in names and self._tensorish(keyword.value):
                found.add(keyword.arg)
        return found

    def _tensorish(self, node: ast.expr) -> bool:
        """A name the step computes, a TensorFlow call, or arithmetic on either."""
        if isinstance(node, ast.Call):
            name = self.walker.qualname(node.func) or ""
            return name.startswith("tensorflow.") or (
                isinstance(node.func, ast.Attribute) and self._tensorish(node.func.value)
            )
        if isinstance(node, ast.BinOp):
            return self._tensorish(node.left) or self._tensorish(node.right)
        return self._tensor(node)

    def _sync(self, node: ast.AST) -> Optional[tuple[str, str]]:
        """(what, why) when `node` reads an eager tensor on the host."""
        if isinstance(node, ast.Call):
            func = node.func
            lambda_name = self.helpers.host_read(node) if self.helpers is not None else None
            if lambda_name is not None and self._tensor(node.args[0]):
                return _short(node), f"copies an eager tensor to the host ({lambda_name})"
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "numpy"
                and not node.args
                and ast.unparse(func.value) not in self.counters
            ):
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
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "result"
            and not node.args
        ):  # `train_loss.result()` of a Keras metric: an EagerTensor
            return ast.unparse(node.func.value) in self.metrics
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


def _keras_metrics(walker: Walker) -> set[str]:
    """Names (`train_loss`, `self.acc`) the file assigns a Keras metric
    (`tf.keras.metrics.Mean(...)`), whose `.result()` is an EagerTensor."""
    found: set[str] = set()
    for node in module_nodes(walker.module):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            name = walker.qualname(node.value.func) or ""
            if name.startswith(("tensorflow.keras.metrics.", "keras.metrics.")):
                found.update(ast.unparse(t) for t in node.targets)
    return found


def _host_counters(walker: Walker) -> set[str]:
    """Step counters kept in host memory: names (`step`, `self.step`) the file binds to an
    int32 `tf.Variable(0)`, or passes as one by keyword (`ckpt =
    tf.train.Checkpoint(step=tf.Variable(0))` gives `ckpt.step`). TensorFlow keeps int32
    tensors of a GPU device in host memory, so reading such a counter (`ckpt.step.numpy()`)
    does not wait for the GPU's queued work; one the training step advances is left out."""
    found: set[str] = set()
    for node in module_nodes(walker.module):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        targets = [ast.unparse(t) for t in node.targets]
        if _int32_variable(walker, node.value):
            found.update(targets)
        for keyword in node.value.keywords:
            if keyword.arg is not None and _int32_variable(walker, keyword.value):
                found.update(f"{t}.{keyword.arg}" for t in targets)
    # a counter the training step itself advances (`self._global_step.assign_add(1)` in
    # the compiled step) is read after that step has run: not a host-only counter
    for function in walker.index().function_nodes:
        if not _applies_gradients(list(own_nodes(function))):
            continue
        for node in own_nodes(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr.startswith("assign")
            ):
                found.discard(ast.unparse(node.func.value))
    return found


def _int32_variable(walker: Walker, node: ast.expr) -> bool:
    """`tf.Variable(0)` (an int constant: int32) or `tf.Variable(0, dtype=tf.int32)`."""
    if not (isinstance(node, ast.Call) and walker.qualname(node.func) == "tensorflow.Variable"):
        return False
    value = node.args[0] if node.args else keyword_arg(node, "initial_value")
    dtype = keyword_arg(node, "dtype")
    integer = (
        isinstance(value, ast.Constant)
        and isinstance(value.value, int)
        and not isinstance(value.value, bool)
    )
    return integer and (dtype is None or walker.qualname(dtype) == "tensorflow.int32")


def _graph_results(body: list[ast.AST], graphs: set[str]) -> set[str]:
    """Names the loop assigns from a call of a compiled step (`loss = train_step(x)`,
    `loss, acc = step(x)`), and what it computes from them."""
    found: set[str] = set()
    for _ in range(2):
        for node in body:
            if not isinstance(node, ast.Assign):
                continue
            value = node.value
            from_graph = isinstance(value, ast.Call) and _callee(value) in graphs
            mentions = any(isinstance(n, ast.Name) and n.id in found for n in ast.walk(value))
            converted = isinstance(value, ast.Call) and _callee(value) in NOT_TENSORS
            if (from_graph or mentions) and not converted:
                for target in node.targets:
                    found.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return found


def _helper_tensors(function: Function, bound: set[str]) -> set[str]:
    """Names of a helper holding tensors: the parameters the step hands tensors to, what
    is computed from them, and results of calls (a loss, the model's outputs), not of
    builtins (`n = int(...)`)."""
    found = set(bound)
    nodes = list(own_nodes(function))
    for _ in range(2):
        for node in nodes:
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                pairs = [(node.target, node.iter)]
            for target, value in pairs:
                mentions = any(isinstance(n, ast.Name) and n.id in found for n in ast.walk(value))
                called = (
                    isinstance(value, ast.Call)
                    and not (isinstance(value.func, ast.Name) and value.func.id in NOT_TENSORS)
                    and not isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension))
                )
                if mentions or called:
                    found.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return found


def _one_per_line(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per line: a shared helper's host reads meet at its call in the step."""
    kept: dict[int, dict[str, Any]] = {}
    for record in records:
        first = kept.setdefault(record["line"], record)
        if first is not record and record["call"] not in first["call"]:
            first["call"] += f", {record['call']}"
    return list(kept.values())


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."
