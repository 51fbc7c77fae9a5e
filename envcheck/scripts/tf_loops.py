"""TensorFlow custom training loops, read from the source without running it.

A custom loop trains with `tf.GradientTape` and `optimizer.apply_gradients(...)` in a
step function called once per batch (`for x, y in dataset: train_step(x, y)`), or in
the body of the loop itself. `finish` records:

- the file fact `tf_custom_loop`: where the first `apply_gradients` is (`{"line",
  "column", "code", "function", "session"}`), or None: Keras training outside `fit`, which
  the mixed-precision rule (EC522) judges as it judges `fit`. `session` is True when the
  op it returns is run by a TF1 session (`train_op = opt.apply_gradients(...)`, then
  `sess.run([train_op, loss])`): a graph built once and run, not an eager Keras loop, and
  no Keras policy casts a `tf.contrib.slim` or raw-op graph;
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

A loop calling a `train_step` method of an object whose class is out of sight
(`losses = trainer.train_step(dataset_iter)`) steps the training too: what it returns is
read as a compiled step's results are (the values of `for k, v in losses.items()`
included), and a `while` condition comparing a value the file reads with `.numpy()`
(`while trainer.step < num_steps:`) is a read before every step. Opt-in branches a
default run does not take (`if report_loss:` with the parameter defaulting to False)
are left out.

A step function compiled with `@tf.function` (or wrapped, `step = tf.function(step)`)
runs as a graph: there `.numpy()` is not even available and formatting sees symbolic
tensors, so nothing in it is a per-step sync and it is not read; what it returns to the
eager loop (`loss = train_step(x, y)`) is an EagerTensor, and reading that on the host
in the loop (`print(f"{loss}")`, `loss.numpy()`) is, as it is for what an eager step
returns (`batch_loss = self.train_step(x, y)` then `batch_loss.numpy()`). Code under a
periodic or once-only branch (`if step % 100 == 0:`, `if step == 0:`) is left out, as for
PyTorch loops, but not its test, which runs every step (`if opt.iterations.numpy() % 100
== 0:`) up to the operand an opt-in test settles. NumPy on an eager tensor (`np.mean(loss)`)
is a host read, and so, in an eager step, is a branch comparing a device tensor (`if
global_steps < warmup_steps:` on a `tf.Variable`, or on `loss = tf.reduce_mean(...)`). A
function of the file that runs the step once outside any loop of its own and that a loop
calls (`while ...: model.train()`), or hands it to a distribution strategy once
(`strategy.run(train_step, args=...)`, or `strategy.run(fn=self.step, ...)`), is read as that
loop's body; one that runs the step again in a loop of its own (steps_per_execution) is
not. An eager step method the file never calls (another file's loop runs it, once per
iteration: ravens' `Attention.train()` returning `np.float32(loss)`) is read as a step,
and a loop calling a method of a project class of another file of the run that is such a
step there (an overridden `mt.train_on_batch(x, y)` returning `loss.numpy()`) syncs at that
call. A bare flag with no `else` around the only loop (`if args.do_train:`) is the
script's mode, not an opt-in left off. Not reported: what the
step must hand the host (`env.step(action)`, shared with the PyTorch loops), formatting
what an eager step already returned as NumPy (`return loss.numpy()`), and an unused read
in a loop timing each step (a benchmark's barrier). Nothing here judges.

Size: one observer, one walk: finding the step (compiled or eager, function or method,
or the iteration running it), reading its body and the eager loop around it share the
step's facts (its tensors, device values, counters); the helpers it calls are split out
(step_helpers) where they stand alone.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional, Union

from envcheck.scripts.callees import Callees
from envcheck.scripts.index import code_at, function_owners, keyword_arg, module_nodes, own_nodes
from envcheck.scripts.keras import uses_tensorflow
from envcheck.scripts.step_helpers import StepHelpers
from envcheck.scripts.tf_values import (
    HOST_METHODS,
    NOT_TENSORS,
    bound_names,
    device_names,
    device_variables,
    host_results,
)
from envcheck.scripts.torch_loops import host_bound_names, host_consumer, once_test, periodic_test
from envcheck.scripts.values import resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Loop = Union[ast.For, ast.AsyncFor, ast.While]
LOOPS = (ast.For, ast.AsyncFor, ast.While)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPILERS = {"tensorflow.function", "tensorflow.compat.v1.function", "tf.function"}
CONVERSIONS = ("float", "int", "bool")
# A step method out of sight that a loop calls once per batch: Keras's `Model.train_step`
# and the custom-loop convention (`losses = trainer.train_step(dataset_iter)`)
STEP_METHODS = ("train_step",)
# Model methods Keras itself runs in fit, compiled unless run_eagerly: not eager steps
KERAS_RUN = ("train_step", "test_step", "predict_step", "call")
# methods of a tf.distribute strategy that run the function handed to them on each replica
REPLICA_RUNS = ("run", "experimental_run_v2")
# Clocks a loop reads to time each step (`timestamps.append(time())`)
CLOCKS = {
    "time.time",
    "time.time_ns",
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.monotonic",
    "timeit.default_timer",
}


class TfLoopObserver:
    """The TensorFlow custom-loop family (see the module docstring)."""

    def call(self, walker: Walker, node: ast.Call, name: Optional[str]) -> None:
        return None  # loops need the whole file: read in finish

    def finish(self, walker: Walker) -> None:
        walker.facts["tf_custom_loop"] = None
        if not uses_tensorflow(walker) or not (
            (walker.method_elsewhere is not None and bool(walker.instances()))
            or any("apply_gradients" in line or _calls_step_method(line) for line in walker.lines)
        ):
            return  # no step in sight (nor a project model's, in another file of the run)
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
                "session": _session_op(walker.module, first),
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
            # `while ...: model.train()`, where train() runs the step once: its body is
            # the eager loop's, every pass, and what it returns is the step's results
            iterations = _iterations(files.function_nodes, steps, called)
            named = {f.name for f in stepped if isinstance(f, FUNCTIONS)}
            named |= {iteration.name for iteration, _ in iterations}
            named |= _steps_out_of_sight(body, {f.name for f in files.function_nodes})
            returning = [*steps, *(iteration for iteration, _ in iterations)]
            foreign = _foreign_steps(walker, body)
            if foreign and not named and loop not in stepped and not iterations:
                # `mt.train_on_batch(x, y)` of a project model whose override (another
                # file) is an eager step reading the loss on the host: the loop steps it
                reader = _Step(walker, loop, loop, seen)
                owner = owners.get(id(loop))
                reader.caller = owner if isinstance(owner, FUNCTIONS) else None
                reader.tensors, reader.results, reader.foreign = set(), True, foreign
                walker.report.torch_calls.extend(_one_per_line(reader.read()))
            if named and loop not in stepped:
                # `loss = train_step(x, y)`, then `print(f"{loss}")` in the eager loop: what
                # the step returns, compiled or eager, is an EagerTensor read on the host here
                reader = _Step(walker, loop, loop, seen)
                owner = owners.get(id(loop))
                reader.caller = owner if isinstance(owner, FUNCTIONS) else None
                reader.tensors = _graph_results(body, named - host_results(returning, named))
                reader.results = True
                reader.counter_reads = _counter_reads(walker, body, functions)
                reader.foreign = foreign
                walker.report.torch_calls.extend(_one_per_line(reader.read()))
            for iteration, runs in iterations:
                if iteration.name in compiled:
                    continue  # `dist_step = tf.function(dist_step)`: its steps run as a graph
                stepped += [s for s in runs if s not in stepped]
                reader = _Step(walker, loop, iteration, seen)
                reader.caller = iteration
                names = {s.name for s in runs}
                own = [n for s in iteration.body for n in _outside_loops(s)]
                reader.tensors = _graph_results(own, names - host_results(steps, names))
                reader.results = True
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
        # an eager step method the file never calls, applying gradients outside any loop
        # of its own (`def train(self, img, p): ... apply_gradients ... return
        # np.float32(loss)`): its caller, another file, runs it once per iteration
        referenced = {
            node.attr if isinstance(node, ast.Attribute) else node.id
            for node in nodes
            if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load)
        }
        for step in steps:
            if (
                step.name in referenced
                or step.name in compiled
                or step.name in KERAS_RUN
                or not _applies_gradients([n for s in step.body for n in _outside_loops(s)])
            ):
                continue
            reader = _Step(walker, step, step, seen)  # its own reads: helpers not followed
            reader.compiled, reader.caller = compiled, step
            walker.report.torch_calls.extend(_one_per_line(reader.read()))


def _calls_step_method(line: str) -> bool:
    """A source line calling a step method on an object: `.train_step(`."""
    return any(f".{name}(" in line for name in STEP_METHODS)


def _steps_out_of_sight(body: list[ast.AST], functions: set[str]) -> set[str]:
    """The step methods the loop calls on an object whose class is out of sight
    (`trainer.train_step(dataset_iter)`, no function of the file by that name): the
    loop steps the training, and what the step returns is an EagerTensor."""
    return {
        node.func.attr
        for node in body
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in STEP_METHODS
        and node.func.attr not in functions
    }


def _counter_reads(walker: Walker, body: list[ast.AST], functions: list[Function]) -> set[str]:
    """`model.step` where the loop calls `model.train_step(...)` of a class out of sight
    that another file of the run defines with a `step` property converting the
    optimizer's device step counter (`int(self.optimizer.iterations)`): every read of the
    attribute copies that counter to the host after the step that advances it."""
    own = {f.name for f in functions}
    objects = {
        ast.unparse(node.func.value)
        for node in body
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in STEP_METHODS
        and node.func.attr not in own
    }
    if not objects or walker.counters_elsewhere is None:
        return set()
    properties = walker.counters_elsewhere(STEP_METHODS)
    return {f"{o}.{p}" for o in objects for p in properties}


def _iterations(
    functions: list[Function], steps: list[Function], called: set[Optional[str]]
) -> list[tuple[Function, list[Function]]]:
    """Functions the loop calls that run a training step once, outside any loop of their
    own (`def train(self): a, d = self.train_step(...); ...`), with the steps they run:
    called once per pass of the loop, each is one iteration of the training. One that
    runs the step again in a loop of its own (`strategy.run(step, ...)`, then `for _ in
    tf.range(n - 1): strategy.run(step, ...)`: steps_per_execution) is not: the loop
    calling it reads the host once per n steps."""
    names = {s.name for s in steps}
    found: list[tuple[Function, list[Function]]] = []
    for function in functions:
        if function.name not in called or function in steps:
            continue
        own = [n for s in function.body for n in _outside_loops(s)]
        calls = [n for n in own if isinstance(n, ast.Call)]
        runs = ({_callee(n) for n in calls} | {_replicated(n) for n in calls}) & names
        looped = [n for n in own_nodes(function) if isinstance(n, ast.Call) and n not in calls]
        if runs & ({_callee(n) for n in looped} | {_replicated(n) for n in looped}):
            continue  # it runs the step again in a loop of its own: several steps per call
        if runs:
            found.append((function, [s for s in steps if s.name in runs]))
    return found


def _replicated(call: ast.Call) -> Optional[str]:
    """The step function a distribution strategy runs on each replica:
    `strategy.run(train_step, args=(x, y))` (`experimental_run_v2` in TF 2.0/2.1), also
    by keyword and as a method (`strategy.run(fn=self.d_train_step, args=(x,))`)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in REPLICA_RUNS):
        return None
    handed = call.args[0] if call.args else keyword_arg(call, "fn")
    if isinstance(handed, ast.Name):
        return handed.id
    if (
        isinstance(handed, ast.Attribute)
        and isinstance(handed.value, ast.Name)
        and handed.value.id == "self"
    ):
        return handed.attr
    return None


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
    the test the other way). A bare flag with no `else` around the loop (`if
    args.do_train:`, off by default) picks the mode the script exists for, not a feature
    left off, as for the PyTorch loops (default_run): the loop is read."""
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
        if in_body and not branch.orelse and isinstance(branch.test, (ast.Name, ast.Attribute)):
            continue  # `if args.do_train:` around the only training loop: the script's mode
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


def _session_op(module: ast.Module, apply: ast.Call) -> bool:
    """The op `apply_gradients` returns is bound to a name (`train_op = opt.apply_gradients(
    ...)`, `self.train_op = ...`, maybe wrapped again: `train_op = tf.group(apply_op, ...)`)
    that a session runs: `sess.run([train_op, loss], feed_dict=...)`, `sess.run(model.
    train_op)`, the TF1 graph loop."""
    nodes = module_nodes(module)
    assigns = [n for n in nodes if isinstance(n, ast.Assign)]
    ops: set[str] = set()
    for node in assigns:
        if any(n is apply for n in ast.walk(node.value)):
            ops.update(_op_names(node.targets))
    for _ in range(2):  # `train_op = tf.group(apply_op, update_ops)`
        for node in assigns:
            if any(_op_name(n) in ops for n in ast.walk(node.value)):
                ops.update(_op_names(node.targets))
    return bool(ops) and any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "run"
        and any(_op_name(m) in ops for a in n.args for m in ast.walk(a))
        for n in nodes
    )


def _op_name(node: ast.AST) -> Optional[str]:
    """`train_op` of a name or of an attribute (`self.train_op`, `model.train_op`)."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _op_names(targets: list[ast.expr]) -> set[str]:
    found: set[str] = set()
    for target in targets:
        elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        found.update(n for n in map(_op_name, elements) if n)
    return found


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

    def __init__(
        self,
        walker: Walker,
        loop: Union[Loop, Function],
        step: Union[Function, Loop],
        seen: set[Any],
    ):
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
        self.numpy_read = _numpy_read(walker)
        # the values an RL step hands the host every step (`env.step(action)`)
        self.to_host = host_bound_names(step.body)
        self.results = False  # set by the caller: `tensors` are what a step returned
        # `model.step` properties reading the device step counter (set by the caller)
        self.counter_reads: set[str] = set()
        # id(call) -> why: calls of a project model's eager step in another file that
        # reads a tensor on the host (`mt.train_on_batch(x, y)`; set by the caller)
        self.foreign: dict[int, str] = {}
        self.variables = device_variables(walker, self.counters)
        self.device = device_names(walker, nodes, self.variables, set())

    def read(self) -> list[dict[str, Any]]:
        if isinstance(self.step, ast.While):
            self._loop_test(self.step)
        self._block(self.step.body)
        return self.found

    def _loop_test(self, loop: ast.While) -> None:
        """`while trainer.step < num_steps:`: the loop's condition compares an eager
        tensor (the file reads it with `.numpy()`), so Python reads its value on the host
        before every step."""
        test = loop.test
        if id(test) in self.seen or not any(
            isinstance(node, ast.Compare)
            and any(self._eager(side) for side in [node.left, *node.comparators])
            for node in ast.walk(test)
        ):
            return
        self.seen.add(id(test))
        self.found.append(
            self._record(loop, "its condition", "compares an eager tensor (bool() reads its value)")
        )

    def _eager(self, node: ast.expr) -> bool:
        """A tensor of the step, or a value the file reads with `.numpy()` (not a host
        step counter)."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "numpy"
            and not node.args
        ):  # `while step_in_epoch.numpy() < n:` reads it explicitly
            node = node.func.value
        text = ast.unparse(node)
        return self._tensor(node) or (text in self.numpy_read and text not in self.counters)

    def _block(self, body: list[ast.stmt]) -> None:
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(statement, ast.If):
                self._test(statement)  # `if step.numpy() % 100 == 0:` reads every step
                if not (
                    periodic_test(statement.test)
                    or once_test(statement.test)
                    or self._off_by_default(statement.test)
                ):
                    self._block(statement.body)
                self._block(statement.orelse)
                continue
            if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
                if isinstance(statement, ast.While):
                    self._test(statement)
                self._block(statement.body)  # an inner loop of the step runs every step
                continue
            if isinstance(statement, (ast.With, ast.AsyncWith, ast.Try)):
                self._block(statement.body)
                for handler in getattr(statement, "handlers", []):
                    self._block(handler.body)
                continue
            self._statement(statement)

    def _off_by_default(self, test: ast.expr) -> bool:
        """`if report_loss_to_hypertune:` with the parameter defaulting to False: an
        opt-in branch a default run does not take."""
        taken = resolve(test, self.walker.scope_of(self.caller))
        return taken.known and not taken.value

    def _test(self, statement: Union[ast.If, ast.While]) -> None:
        """The test of a branch runs every step, even when its body is periodic: a host
        read in it (`if opt.iterations.numpy() % 100 == 0:`), or bool() of a device
        tensor it compares (`if global_steps < warmup_steps:`)."""
        test = self._evaluated(statement.test)
        reasons = []
        if self._truth(test):
            reasons.append((_short(test), "tests an eager tensor's value (bool() reads it)"))
        self._read(statement, [test, *own_nodes(test)], reasons)

    def _evaluated(self, test: ast.expr) -> ast.expr:
        """What a default run evaluates of the test: `opt is not None and loss <= opt`
        stops at its first operand when `opt` defaults to None (`and`/`or` short-circuit)."""
        if not isinstance(test, ast.BoolOp):
            return test
        scope = self.walker.scope_of(self.caller)
        stop = isinstance(test.op, ast.Or)  # the value that ends the evaluation
        for index, operand in enumerate(test.values):
            value = resolve(operand, scope)
            if value.known and bool(value.value) == stop:
                return ast.BoolOp(op=test.op, values=test.values[: index + 1])
        return test

    def _truth(self, test: ast.expr) -> bool:
        """A comparison in the test with a device tensor on one side."""
        return any(
            isinstance(node, ast.Compare)
            and any(self._device(side) for side in [node.left, *node.comparators])
            for node in ast.walk(test)
        )

    def _statement(self, statement: ast.stmt) -> None:
        if self._times_step(statement):
            return
        self._read(statement, [statement, *own_nodes(statement)], [])

    def _read(
        self, statement: ast.stmt, nodes: list[ast.AST], reasons: list[tuple[str, str]]
    ) -> None:
        """Record the host reads among `nodes` (the statement, or a branch's test) with
        `reasons` already found, and follow the functions of the file they call."""
        key: Any = (id(self.site[0]), id(statement)) if self.site else id(statement)
        if key in self.seen:
            return
        needed = self._handed_to_host(statement, nodes)
        for node in nodes:
            why = self._sync(node) if id(node) not in needed else None
            if why is not None and why[0] not in [r[0] for r in reasons]:
                reasons.append(why)
        if self.helpers is not None and self.depth < 2:
            for node in nodes:
                if isinstance(node, ast.Call):
                    self._follow(node, statement)
        if not reasons:
            return
        self.seen.add(key)
        place = self.site[0] if self.site else statement
        call = ", ".join(r[0] for r in reasons)
        call = f"{call} in {self.site[1]}()" if self.site else call
        self.found.append(self._record(place, call, reasons[0][1]))

    def _handed_to_host(self, statement: ast.stmt, nodes: list[ast.AST]) -> set[int]:
        """ids of the nodes computing what the step must hand the host (the action of
        `action = tf.argmax(q[0]).numpy()` ... `env.step(action)`, or inline): no sync
        to avoid (as in the PyTorch loops)."""
        roots: list[ast.AST] = [
            argument
            for node in nodes
            if isinstance(node, ast.Call) and host_consumer(node)
            for argument in [*node.args, *(k.value for k in node.keywords)]
        ]
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in self.to_host for t in statement.targets
        ):
            roots.append(statement.value)
        return {id(n) for root in roots for n in ast.walk(root)}

    def _times_step(self, statement: ast.stmt) -> bool:
        """`loss = train_step(x).numpy()` with `loss` never used, in a loop taking a
        timestamp every step (`timestamps.append(time())`): the read is a barrier that
        makes the clock time the step rather than its dispatch (a benchmark), needed."""
        if isinstance(statement, ast.Expr):
            value, targets = statement.value, []
        elif isinstance(statement, ast.Assign):
            value, targets = statement.value, statement.targets
        else:
            return False
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in HOST_METHODS
        ):
            return False
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if any(not isinstance(t, (ast.Name, ast.Tuple)) for t in targets):
            return False
        used = {
            n.id
            for n in own_nodes(self.step)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        return not (names & used) and any(
            isinstance(n, ast.Call) and self.walker.qualname(n.func) in CLOCKS
            for n in own_nodes(self.loop)
        )

    def _record(self, place: ast.stmt, call: str, what: str) -> dict[str, Any]:
        """The host_sync observation at `place` (the statement, or a shared helper's
        call in the step)."""
        return {
            "kind": "host_sync",
            "framework": "tensorflow",
            "path": self.walker.report.path,
            "line": place.lineno,
            "column": place.col_offset + 1,
            "code": code_at(self.walker.lines, place.lineno),
            "function": self.function,
            "call": call,
            "what": what,
            "loader": _short(self.loop.iter)
            if isinstance(self.loop, (ast.For, ast.AsyncFor))
            else f"while {_short(self.loop.test)}"
            if isinstance(self.loop, ast.While)
            else f"the batches each call of {self.loop.name}() gets",
            "loop_line": self.loop.lineno,
            "loop_code": code_at(self.walker.lines, self.loop.lineno),
        }

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
        bound = self._bound(call, target, id(target) in self.helpers.owner)
        reader.tensors = _helper_tensors(target, bound)
        reader.device = device_names(self.walker, list(own_nodes(target)), reader.variables, bound)
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
            if id(node) in self.foreign:
                return f"{_short(func)}()", self.foreign[id(node)]
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
            if (self.walker.qualname(func) or "").startswith("numpy.") and any(
                self._device(a) for a in node.args
            ):  # `np.mean(loss)`, `np.isnan(a)`: NumPy converts the tensor first
                return _short(node), "copies an eager tensor to the host (NumPy)"
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "format"
                and isinstance(func.value, ast.Constant)
                and any(self._tensor(a) for a in node.args)
            ):
                return "str.format(...)", "formats an eager tensor"
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and ast.unparse(node) in self.counter_reads
        ):
            return (
                _short(node),
                "converts the optimizer's device step counter (a property reading"
                " optimizer.iterations)",
            )
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

    def _device(self, node: ast.expr) -> bool:
        """A value surely on the device: what a step returned (in the loop reading its
        results), else a tf.Variable of the file (not a host counter) or a name the step
        computes with TensorFlow (`loss = tf.reduce_mean(...)`), or an element of one."""
        if isinstance(node, (ast.Subscript, ast.Starred)):
            return self._device(node.value)
        if isinstance(node, ast.BinOp):
            return self._device(node.left) or self._device(node.right)
        if self.results:
            return self._tensor(node)
        if isinstance(node, ast.Name) and node.id in self.device:
            return True
        return isinstance(node, (ast.Name, ast.Attribute)) and ast.unparse(node) in self.variables

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
        if (
            isinstance(node, ast.Subscript)
            and self.results
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):  # `float(output["loss"])` of the dict of tensors a step returned
            return self._tensor(node.value)
        if isinstance(node, ast.Tuple):
            return any(self._tensor(e) for e in node.elts)
        return False


def _foreign_steps(walker: Walker, body: list[ast.AST]) -> dict[int, str]:
    """The calls in a loop's body of a method of a project class another file of the run
    defines (`mt.train_on_batch(x, y)` with `mt = MusicTransformerDecoder(...)` from
    model.py) that is an eager training step there reading a tensor on the host on every
    call (`return [loss.numpy()] + metrics`): id(call) -> why (`_eager_step_read`)."""
    find = walker.method_elsewhere
    if find is None:
        return {}
    found: dict[int, str] = {}
    for node in body:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            continue
        cls = walker.instances().get(node.func.value.id)
        foreign = find(cls, (node.func.attr,)) if cls is not None else None
        read = _eager_step_read(foreign.function, foreign.methods) if foreign else None
        if foreign is not None and read is not None:
            line, what = read
            found[id(node)] = (
                "runs an eager training step that copies an eager tensor to the host"
                f" ({what} at {foreign.shown}:{line})"
            )
    return found


def _eager_step_read(method: Function, methods: dict[str, Function]) -> Optional[tuple[int, str]]:
    """(line, `x.numpy()`) of the first `.numpy()` `method` makes on every call (not in
    the body of a branch), when it trains eagerly: it, or a method of its class it calls
    (`self.__train_step(...)`, also handed to `strategy.run`), applies gradients, and
    nothing compiles it (`@tf.function`, `tf.function(self.method)`)."""
    if any(
        _last(d.func if isinstance(d, ast.Call) else d) == "function" for d in method.decorator_list
    ):
        return None
    for other in methods.values():
        for node in own_nodes(other):
            if (
                isinstance(node, ast.Call)
                and _last(node.func) == "function"
                and any(_last(a) == method.name for a in node.args if isinstance(a, ast.Attribute))
            ):
                return None  # `self.train_on_batch = tf.function(self.train_on_batch)`
    nodes = list(own_nodes(method))
    called = {
        name
        for n in nodes
        if isinstance(n, ast.Call)
        for name in (_self_method(n.func), *(_self_method(a) for a in n.args))
        if name in methods
    }
    if not _applies_gradients(nodes) and not any(
        _applies_gradients(list(own_nodes(methods[name]))) for name in called
    ):
        return None
    for node in _every_call(method.body):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "numpy"
            and not node.args
        ):
            return node.lineno, f"{_short(node.func.value, 30)}.numpy()"
    return None


def _self_method(node: ast.AST) -> Optional[str]:
    """`f` of `self.f`."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def _every_call(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of `body` run on every call: not inside a branch's body (its test is),
    nested functions, classes or lambdas."""
    found: list[ast.AST] = []
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.If):
            found += [statement.test, *own_nodes(statement.test)]
            continue
        found.append(statement)
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, ast.stmt):
                found += _every_call([child])
            elif not isinstance(child, ast.Lambda):
                found += [child, *own_nodes(child)]
    return found


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


def _numpy_read(walker: Walker) -> set[str]:
    """What the file reads with `.numpy()` (`trainer.step.numpy()`, `step.numpy()` after
    `step = trainer.step`): eager tensors, whatever builds them out of sight."""
    nodes = module_nodes(walker.module)
    found = {
        ast.unparse(n.func.value)
        for n in nodes
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "numpy"
        and not n.args
    }
    for node in nodes:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, (ast.Name, ast.Attribute))
            and any(ast.unparse(t) in found for t in node.targets)
        ):
            found.add(ast.unparse(node.value))
    return found


# Keras metric classes, also through TF2's `tf.metrics` alias of `tf.keras.metrics`
KERAS_METRICS = ("tensorflow.keras.metrics.", "keras.metrics.", "tensorflow.metrics.")


def _keras_metrics(walker: Walker) -> set[str]:
    """Names (`train_loss`, `self.acc`) the file assigns a Keras metric
    (`tf.keras.metrics.Mean(...)`), whose `.result()` is an EagerTensor."""
    found: set[str] = set()
    for node in module_nodes(walker.module):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            name = walker.qualname(node.value.func) or ""
            if name.startswith(KERAS_METRICS):
                found.update(ast.unparse(t) for t in node.targets)
    return found


def _host_counters(walker: Walker) -> set[str]:
    """Step counters kept in host memory: names (`step`, `self.step`) the file binds to an
    int32 `tf.Variable(0)`, or passes as one by keyword (`ckpt =
    tf.train.Checkpoint(step=tf.Variable(0))` gives `ckpt.step`, and so does a local
    alias of it, `ckpt = self.checkpoint`). TensorFlow keeps int32
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
    # a local alias of the object holding one (`ckpt = self.checkpoint`: `ckpt.step`)
    for node in module_nodes(walker.module):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.Name, ast.Attribute))
        ):
            held = ast.unparse(node.value) + "."
            alias = node.targets[0].id
            found.update(alias + "." + c[len(held) :] for c in list(found) if c.startswith(held))
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
            if isinstance(node, (ast.For, ast.AsyncFor)):
                found.update(_dict_values(node, found))
                continue
            if not isinstance(node, ast.Assign):
                continue
            value = node.value
            from_graph = isinstance(value, ast.Call) and _callee(value) in graphs
            mentions = any(isinstance(n, ast.Name) and n.id in found for n in ast.walk(value))
            converted = isinstance(value, ast.Call) and _callee(value) in NOT_TENSORS
            if (from_graph or mentions) and not converted:
                for target in node.targets:
                    found.update(bound_names(target))
    return found


def _dict_values(loop: Union[ast.For, ast.AsyncFor], tensors: set[str]) -> set[str]:
    """The names a loop over a dict of tensors binds to its values: `v` of `for k, v in
    losses.items()`, `loss` of `for loss in losses.values()` (the keys are strings)."""
    iterable = loop.iter
    if not (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Attribute)
        and isinstance(iterable.func.value, ast.Name)
        and iterable.func.value.id in tensors
        and not iterable.args
    ):
        return set()
    target = loop.target
    if iterable.func.attr == "values":
        return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    if iterable.func.attr == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        return {n.id for n in ast.walk(target.elts[1]) if isinstance(n, ast.Name)}
    return set()


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
