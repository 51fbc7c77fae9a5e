"""PyTorch training-step loops, read from the source without running it.

`TorchLoopObserver.finish` runs once per file after the walk. It works out which names
hold a DataLoader (assigned from a DataLoader call, returned by a function of the file,
or handed to a function of the file as an argument), finds the loops over them that
train (their body, or a helper it calls, runs `backward`), and records what those loops
do every step:

- `host_sync`: `.item()`, `.cpu()`, `.tolist()`, `.to("cpu")`, `float(loss)`, or
  printing / formatting a tensor: each makes the CPU wait for the GPU;
- `per_sample_copy`: `.to(device)` / `.cuda()` inside an inner loop over the batch's
  elements, many small copies instead of one.

Calls under an `if` whose test uses `%` (`if step % 100 == 0:`) run periodically, which
is the recommended way to log, and are left out, as are those under `if step == 0:`
(once) and the code after the loop.

It also records `dataset_cuda`: `.cuda()` / `.to("cuda")` inside `__getitem__` of a
`torch.utils.data.Dataset` subclass. Every observation is a plain JSON dict with `path`,
`line`, `column`, `code` and `function`; nothing here judges.

Size: finding the training-step loop (through wrappers, helpers, closures and called
epoch functions) and classifying each statement in it share one walk of the file's
functions; splitting them would walk twice or pass the walk's state between modules.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from envcheck.scripts.index import FileIndex, code_at, derived, own_nodes
from envcheck.scripts.values import resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import FileReport, Walker

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Loop = Union[ast.For, ast.AsyncFor, ast.While]
ForLoop = Union[ast.For, ast.AsyncFor]

SYNC_METHODS = ("item", "cpu", "tolist")
# Python or NumPy tests of one value: on a tensor they read it on the host first
VALUE_TESTS = {
    f"{root}.{name}" for root in ("math", "numpy") for name in ("isnan", "isinf", "isfinite")
}
# calls that return a tensor on the model's device (not a Python number)
TENSOR_RETURNS = ("clip_grad_norm_", "clip_grad_norm")
CONVERSIONS = ("float", "int", "bool")
# Wrappers of a loader in a `for` header: `enumerate(loader)`, `tqdm(loader)`, ...
WRAPPERS = {"enumerate", "iter"}
WRAPPER_SUFFIXES = ("tqdm", "track")
# Calls that take a loader without iterating it.
NOT_ITERATING = {"len", "isinstance", "print", "type", "id", "getattr", "hasattr"}
DATASET_BASES = {
    "torch.utils.data.Dataset",
    "torch.utils.data.dataset.Dataset",
    "torch.utils.data.IterableDataset",
    "torch.utils.data.dataset.IterableDataset",
    "torchvision.datasets.VisionDataset",
    "torchvision.datasets.vision.VisionDataset",
}
SAMPLE_METHODS = ("__getitem__", "__getitems__", "__iter__")
DTYPES = {
    "float",
    "float16",
    "float32",
    "float64",
    "half",
    "double",
    "bfloat16",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "long",
    "uint8",
    "bool",
    "complex64",
}
FIELD_ITERATORS = ("items", "keys", "values")


class TorchLoopObserver:
    """The PyTorch training-loop family (see the module docstring)."""

    def call(self, walker: Walker, node: ast.Call, name: Optional[str]) -> None:
        return None  # loops need the whole file: read in finish

    def finish(self, walker: Walker) -> None:
        _finish(walker, walker.report, walker.index())


def _finish(walker: Walker, report: FileReport, files: FileIndex) -> None:
    assignments: list[tuple[ast.expr, ast.expr]] = []
    calls: list[ast.Call] = []
    loops: list[tuple[Loop, Optional[Function]]] = []
    returns: dict[str, list[ast.expr]] = {}
    # one pass over the tree, knowing the function each node belongs to
    stack: list[tuple[ast.AST, Optional[Function]]] = [(walker.module, None)]
    while stack:
        node, function = stack.pop()
        if isinstance(node, ast.Assign):
            assignments += [(target, node.value) for target in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            assignments.append((node.target, node.value))
        elif isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            loops.append((node, function))
        elif isinstance(node, ast.Return) and node.value is not None and function is not None:
            returns.setdefault(function.name, []).append(node.value)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner: Optional[Function] = node
        elif isinstance(node, (ast.ClassDef, ast.Lambda)):
            inner = None
        else:
            inner = function
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    if loops and (
        any(walker.qualname(c.func) in walker.loader_classes for c in calls)
        or any(_trains([c]) for c in calls)
    ):
        loaders = _Loaders(walker, files, assignments, calls, returns)
        seen: set[int] = set()
        for loop, function in sorted(loops, key=lambda x: (x[0].lineno, x[0].col_offset)):
            loader = None
            if isinstance(loop, (ast.For, ast.AsyncFor)):
                loader = loaders.iterated(loop.iter)
            loader = loader or loaders.stepped(loop)
            body = [n for statement in loop.body for n in [statement, *own_nodes(statement)]]
            helpers = _helpers(body, loaders, files)
            if loader is None:
                # batches from elsewhere (a loader passed in from another module, slices
                # of a tensor): a step loop when the step itself is in its body
                loader = _steps_itself(loop, helpers)
                if loader is None:
                    continue
                elsewhere = _loader_elsewhere(loop, assignments)
                if elsewhere:  # its DataLoader settings are out of sight
                    found = walker.facts.setdefault("loaders_elsewhere", [])
                    if elsewhere not in found:
                        found.append(elsewhere)
            elif not _trains(body) and not any(_trains(list(own_nodes(h))) for h in helpers):
                continue
            step = _StepLoop(walker, loop, loader, loaders, seen, function, body, helpers)
            report.torch_calls.extend(_one_per_place(step.read()))
    report.torch_calls.extend(_dataset_cuda(walker))


# -- which names hold a DataLoader --------------------------------------------------------


def _dotted(node: ast.AST) -> Optional[str]:
    """`loader` or `self.train_loader`; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


class _Loaders:
    """Names (and `self.x` attributes) that hold a DataLoader, flow-insensitively: a name
    assigned a DataLoader anywhere in the file, or a parameter that receives one."""

    def __init__(
        self,
        walker: Walker,
        files: FileIndex,
        assignments: list[tuple[ast.expr, ast.expr]],
        calls: list[ast.Call],
        returns: dict[str, list[ast.expr]],
    ):
        self.walker = walker
        self.functions = files.functions
        self.names: set[str] = set()
        self.factories: set[str] = set()  # functions of the file returning a loader
        self.tuple_factories: dict[str, set[int]] = {}  # ... returning loaders in a tuple
        own_calls = [c for c in calls if self._callee(c) is not None]
        for _ in range(4):
            before = self._size()
            for target, value in assignments:
                self._assigned(target, value)
            for name, values in returns.items():
                self._returns(name, values)
            for call in own_calls:
                self._arguments(call)
            if self._size() == before:
                break

    def _size(self) -> int:
        return (
            len(self.names)
            + len(self.factories)
            + sum(len(p) for p in self.tuple_factories.values())
        )

    def holds(self, expr: Optional[ast.AST]) -> bool:
        if isinstance(expr, ast.Call):
            if self.walker.qualname(expr.func) in self.walker.loader_classes:
                return True
            if expr.args and self._wrapper(expr):  # pbar = tqdm(loader)
                return self.holds(expr.args[0])
            return self._callee(expr) in self.factories
        if isinstance(expr, (ast.Name, ast.Attribute)):
            return _dotted(expr) in self.names
        return False

    def iterated(self, iterable: ast.expr, depth: int = 0) -> Optional[str]:
        """The loader a `for` header iterates, through wrappers: `enumerate(loader)`,
        `tqdm(loader)`, `metric_logger.log_every(loader, 10)`, `zip(a_loader, b_loader)`."""
        if isinstance(iterable, (ast.Name, ast.Attribute)) and self.holds(iterable):
            return _dotted(iterable)
        if depth > 4 or not isinstance(iterable, ast.Call):
            return None
        if self.walker.qualname(iterable.func) in NOT_ITERATING:
            return None
        for argument in iterable.args:
            found = self.iterated(argument, depth + 1)
            if found is not None:
                return found
        return None

    def stepped(self, loop: ast.AST) -> Optional[str]:
        """The loader a loop draws from with `next(it)` (`it = iter(loader)`)."""
        for node in own_nodes(loop):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "next"
                and node.args
            ):
                found = self.iterated(node.args[0])
                if found is not None:
                    return found
        return None

    def callee(self, call: ast.Call) -> Optional[str]:
        return self._callee(call)

    def _wrapper(self, call: ast.Call) -> bool:
        name = self.walker.qualname(call.func) or ""
        return name in WRAPPERS or name.rsplit(".", 1)[-1] in WRAPPER_SUFFIXES

    def _callee(self, call: ast.Call) -> Optional[str]:
        """The function of this file a call reaches: `f(...)` or `self.f(...)`."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.functions:
            return func.id
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
            and func.attr in self.functions
        ):
            return func.attr
        return None

    def _assigned(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, (ast.Name, ast.Attribute)):
            name = _dotted(target)
            if name is not None and name not in self.names and self.holds(value):
                self.names.add(name)
            return
        if not isinstance(target, (ast.Tuple, ast.List)):
            return
        elements = target.elts
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elements):
            for element, part in zip(elements, value.elts, strict=True):
                self._assigned(element, part)
        elif isinstance(value, ast.Call):
            positions = self.tuple_factories.get(self._callee(value) or "", set())
            for index, element in enumerate(elements):
                # `model, loader = accelerator.prepare(model, loader)`: a passthrough
                passthrough = len(value.args) == len(elements) and self.holds(value.args[index])
                name = _dotted(element)
                if (index in positions or passthrough) and name is not None:
                    self.names.add(name)

    def _returns(self, function: str, values: list[ast.expr]) -> None:
        for value in values:
            if self.holds(value):
                self.factories.add(function)
            elif isinstance(value, ast.Tuple):
                positions = {i for i, e in enumerate(value.elts) if self.holds(e)}
                if positions:
                    self.tuple_factories.setdefault(function, set()).update(positions)

    def _arguments(self, call: ast.Call) -> None:
        callee = self._callee(call)
        if callee is None:
            return
        function = self.functions[callee]
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
            params = params[1:]
        for index, arg in enumerate(call.args):
            if index < len(params) and self.holds(arg):
                self.names.add(params[index])
        keywords = {a.arg for a in [*function.args.args, *function.args.kwonlyargs]}
        for keyword in call.keywords:
            if keyword.arg in keywords and self.holds(keyword.value):
                self.names.add(keyword.arg)


def _one_per_place(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One observation per kind and statement: `print(f"{loss} {loss.item()}")`, or a
    `write("..." % (a.item(), b.item()))` spread over five lines, is one place."""
    kept: dict[tuple[str, int], dict[str, Any]] = {}
    for record in records:
        key = (record["kind"], record.pop("place", None) or record["line"])
        first = kept.get(key)
        if first is None:
            kept[key] = record
        elif record["call"] not in first["call"]:
            first["call"] = f"{first['call']}, {record['call']}"
    return list(kept.values())


def _helpers(body: list[ast.AST], loaders: _Loaders, files: FileIndex) -> list[Function]:
    """Functions of the file a step runs: called from the loop body (`step(model, batch)`,
    `self.training_step(batch)`) or handed to a call (`optimizer.step(closure)`), followed
    two calls deep."""
    found: list[Function] = []
    todo = list(body)
    for _ in range(2):
        more: list[ast.AST] = []
        for node in todo:
            names: list[str] = []
            if isinstance(node, ast.Call):
                callee = loaders.callee(node)
                if callee is not None:
                    names.append(callee)
                names += [a.id for a in node.args if isinstance(a, ast.Name)]
            for name in names:
                function = files.functions.get(name)
                if function is not None and function not in found:
                    found.append(function)
                    more.extend(own_nodes(function))
        todo = more
    return found


def _trains(body: list[ast.AST]) -> bool:
    """A loop whose body (its nodes) runs a backward pass: `loss.backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)`."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("backward", "manual_backward")
        for n in body
    )


def _steps_itself(loop: Loop, helpers: list[Function]) -> Optional[str]:
    """What a loop over no known DataLoader iterates, when it is a training step loop all
    the same: the backward pass in its own body (not in a loop nested in it), or in a
    helper it calls that has no loop of its own (an epoch loop calling train() is not a
    step loop). None otherwise."""
    own = [n for statement in loop.body for n in _outside_loops(statement)]
    simple = [h for h in helpers if not any(isinstance(n, LOOPS) for n in own_nodes(h))]
    called = {c.func.id for c in own if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    called |= {
        c.func.attr for c in own if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
    }
    direct = [h for h in simple if h.name in called]
    if not _trains(own) and not any(_trains(list(own_nodes(h))) for h in direct):
        return None
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return _short(loop.iter)
    return f"while {_short(loop.test)}"


LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _loader_elsewhere(loop: Loop, assignments: list[tuple[ast.expr, ast.expr]]) -> Optional[str]:
    """The text of a loader a training loop iterates that the file does not build
    (`for batch in tqdm(self.train_loader)`, `tbar = tqdm(self.train_loader)`): its
    DataLoader settings are out of sight. None when the loop iterates no such name."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return None
    sources: list[ast.expr] = [loop.iter]
    for name in {n.id for n in ast.walk(loop.iter) if isinstance(n, ast.Name)}:
        before = [  # the name's last assignment before the loop
            v
            for t, v in assignments
            if isinstance(t, ast.Name) and t.id == name and v.lineno < loop.lineno
        ]
        sources += sorted(before, key=lambda v: v.lineno)[-1:]
    for source in sources:
        for node in ast.walk(source):
            if isinstance(node, (ast.Name, ast.Attribute)) and "loader" in _last(node).lower():
                return ast.unparse(node)
    return None


def _last(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _outside_loops(node: ast.AST) -> list[ast.AST]:
    """`node` and the nodes under it, not descending into nested loops or functions."""
    found: list[ast.AST] = [node]
    if isinstance(node, (*LOOPS, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return found
    for child in ast.iter_child_nodes(node):
        found += _outside_loops(child)
    return found


def periodic_test(test: ast.expr) -> bool:
    """`if step % 100 == 0:`, `if (i + 1) % args.log_every == 0:` (not `"%d" % x`)."""
    return any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mod)
        and not (isinstance(n.left, ast.Constant) and isinstance(n.left.value, str))
        for n in ast.walk(test)
    )


EXITS = {"sys.exit", "exit", "quit", "os._exit"}


def _leaves(body: list[ast.stmt]) -> bool:
    """A block that ends the run: its last statement raises or calls sys.exit() (the
    `if not math.isfinite(loss.item()): print(...); sys.exit(1)` error path)."""
    last = body[-1] if body else None
    if isinstance(last, ast.Raise):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and _dotted(last.value.func) in EXITS
    )


def once_test(test: ast.expr) -> bool:
    """`if step == 0:`, `if epoch == 0 and i == 0:`: a counter compared with a number (not
    `rank == 0`, the main process, which runs every step)."""
    return any(
        isinstance(n, ast.Compare)
        and len(n.ops) == 1
        and isinstance(n.ops[0], ast.Eq)
        and any(
            isinstance(side, ast.Constant)
            and isinstance(side.value, int)
            and not isinstance(side.value, bool)
            for side in (n.left, n.comparators[0])
        )
        and not any(_process_index(side) for side in (n.left, n.comparators[0]))
        for n in ast.walk(test)
    )


def _process_index(node: ast.expr) -> bool:
    """`rank`, `args.local_rank`, `dist.get_rank()`: which process, not which step."""
    return "rank" in ast.unparse(node).lower()


# -- one training step loop ----------------------------------------------------------------


class _StepLoop:
    def __init__(
        self,
        walker: Walker,
        loop: Loop,
        loader: str,
        loaders: _Loaders,
        seen: set[int],
        function: Optional[Function],
        body: list[ast.AST],
        helpers: Optional[list[Function]] = None,
    ):
        self.walker = walker
        self.loop = loop
        self.loader = loader
        self.loaders = loaders
        self.seen = seen
        self.function = function
        self.helpers = {h.name: h for h in helpers or []}
        self.followed: set[str] = set()
        nodes = [*body, *(n for h in helpers or [] for n in own_nodes(h))]
        self.tensors = _tensor_names(nodes)
        self.flags = {  # names holding a periodic or once-only condition
            t.id
            for n in nodes
            if isinstance(n, ast.Assign) and (periodic_test(n.value) or once_test(n.value))
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        self.found: list[dict[str, Any]] = []
        self.place = 0  # first line of the statement being read: one finding per place

    def read(self) -> list[dict[str, Any]]:
        self._block(self.loop.body, [], periodic=False)
        return self.found

    def _block(self, body: list[ast.stmt], inner: list[ForLoop], periodic: bool) -> None:
        for statement in body:
            self._statement(statement, inner, periodic)

    def _statement(self, statement: ast.stmt, inner: list[ForLoop], periodic: bool) -> None:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(statement, ast.If):
            seldom = (
                periodic
                or periodic_test(statement.test)
                or once_test(statement.test)
                or self._periodic_flag(statement.test)
            )
            self._expression(statement.test, inner, seldom)
            if self._off_by_default(statement.test):  # `if args.synchronize_step:`
                self._block(statement.orelse, inner, periodic)
                return
            # a branch that ends the run (`sys.exit(1)`, `raise`) is the error path
            self._block(statement.body, inner, seldom or _leaves(statement.body))
            self._block(statement.orelse, inner, periodic)
            return
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            self._expression(statement.iter, inner, periodic)
            per_element = self._per_element(statement)
            self._block(statement.body, [*inner, statement] if per_element else inner, periodic)
            self._block(statement.orelse, inner, periodic)
            return
        if isinstance(statement, ast.While):
            self._expression(statement.test, inner, periodic)
            self._block(statement.body, inner, periodic)
            self._block(statement.orelse, inner, periodic)
            return
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                self._expression(item.context_expr, inner, periodic)
            self._block(statement.body, inner, periodic)
            return
        if isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
            self._block(getattr(statement, "body", []), inner, periodic)
            for handler in getattr(statement, "handlers", []):
                self._block(handler.body, inner, periodic)
            self._block(getattr(statement, "orelse", []), inner, periodic)
            self._block(getattr(statement, "finalbody", []), inner, periodic)
            return
        if isinstance(statement, ast.Match):
            for case in statement.cases:
                self._block(case.body, inner, periodic)
            return
        self._expression(statement, inner, periodic)

    def _periodic_flag(self, test: ast.expr) -> bool:
        """`if regularize:` where `regularize = i % n == 0` (or `== 0`) in the step."""
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        return bool(names & self.flags)

    def _off_by_default(self, test: ast.expr) -> bool:
        """A condition the source settles as false in a default run: an opt-in flag."""
        value = resolve(test, self.walker.scope_of(self.function))
        return value.known and value.value is False

    def _per_element(self, loop: ForLoop) -> bool:
        """An inner loop over the elements of something (samples of the batch), not over
        a dict's fields, a literal tuple of tensors, or another DataLoader."""
        iterable = loop.iter
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
            return False
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Attribute)
            and iterable.func.attr in FIELD_ITERATORS
        ):
            return False
        return self.loaders.iterated(iterable) is None

    def _expression(self, root: ast.AST, inner: list[ForLoop], periodic: bool) -> None:
        if periodic:
            return
        outer, self.place = self.place, getattr(root, "lineno", 0)
        self._nodes(root, inner)
        self.place = outer

    def _nodes(self, root: ast.AST, inner: list[ForLoop]) -> None:
        if isinstance(root, ast.Assert) and self._tensor_test(root.test):
            if id(root) not in self.seen:
                self.seen.add(id(root))
                self.seen.update(id(n) for n in own_nodes(root))
                self.found.append(
                    self._record(root, "host_sync", _short(root), "checks a tensor's value")
                )
            return
        for node in [root, *own_nodes(root)]:
            if id(node) in self.seen:
                continue
            record: Optional[dict[str, Any]] = None
            if isinstance(node, ast.Call):
                record = self._call(node, inner)
                self._follow(node)
            elif self._formats_tensor(node):
                record = self._record(node, "host_sync", _short(node), "formats a tensor")
            if record is not None:
                self.seen.add(id(node))
                self.found.append(record)

    def _follow(self, call: ast.Call) -> None:
        """Read a helper of the file the step calls (`step(model, batch)`, a closure
        handed to `optimizer.step`): its syncs run every step too."""
        names = [self.loaders.callee(call)] + [a.id for a in call.args if isinstance(a, ast.Name)]
        for name in names:
            helper = self.helpers.get(name or "")
            if helper is None or helper.name in self.followed:
                continue
            self.followed.add(helper.name)
            outer, self.function = self.function, helper
            self._block(helper.body, [], periodic=False)
            self.function = outer

    def _tensor_test(self, test: ast.expr) -> bool:
        """`assert torch.isfinite(loss)`, `assert not loss.isnan()`: bool() of a tensor."""
        for node in ast.walk(test):
            if isinstance(node, ast.Name) and node.id in self.tensors:
                return True
            if isinstance(node, ast.Call) and (self.walker.qualname(node.func) or "").startswith(
                "torch."
            ):
                return True
        return False

    def _formats_tensor(self, node: ast.AST) -> bool:
        """f"{loss}" or "%f" % loss."""
        if isinstance(node, ast.JoinedStr):
            return any(
                isinstance(v, ast.FormattedValue) and self._tensor(v.value) for v in node.values
            )
        return (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and self._tensor(node.right)
        )

    def _call(self, call: ast.Call, inner: list[ForLoop]) -> Optional[dict[str, Any]]:
        func = call.func
        if self.walker.qualname(func) == "torch.cuda.synchronize":
            return self._record(call, "host_sync", _short(call), "waits for the GPU")
        if self.walker.qualname(func) in VALUE_TESTS and call.args and self._tensor(call.args[0]):
            return self._record(call, "host_sync", _short(call), "tests a tensor's value")
        if isinstance(func, ast.Attribute):
            if _sync_method(call) and not _numpy_chain(func.value, self.walker):
                if _sync_below(func.value):
                    return None  # `x.cpu().tolist()`: reported once, at .cpu()
                return self._method(call, "host_sync", "copies a result to the host")
            copy = func.attr == "cuda" or (func.attr == "to" and _device_argument(call))
            if copy and inner:
                owner = _element_of(func.value, inner)
                if owner is not None:
                    record = self._method(call, "per_sample_copy", "copies one element")
                    record["inner_loop_line"] = owner.lineno
                    record["inner_loop_code"] = code_at(self.walker.lines, owner.lineno)
                    return record
            arguments = [*call.args, *(k.value for k in call.keywords)]
            if (
                func.attr == "format"
                and isinstance(func.value, ast.Constant)
                and any(self._tensor(a) for a in arguments)
            ):
                return self._record(call, "host_sync", _short(call), "formats a tensor")
            return None
        if isinstance(func, ast.Name) and self.walker.qualname(func) == func.id:
            if func.id in CONVERSIONS and len(call.args) == 1 and self._tensor(call.args[0]):
                return self._record(call, "host_sync", _short(call), "converts a tensor")
            if func.id == "print" and any(self._tensor(a) for a in call.args):
                return self._record(call, "host_sync", _short(call), "prints a tensor")
        return None

    def _tensor(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Tuple):
            return any(self._tensor(e) for e in node.elts)
        return False

    def _method(self, call: ast.Call, kind: str, what: str) -> dict[str, Any]:
        assert isinstance(call.func, ast.Attribute)
        attr = call.func.attr
        line = call.func.end_lineno or call.lineno
        column = (call.func.end_col_offset or 0) - len(attr) + 1
        arguments = ", ".join(
            [ast.unparse(a) for a in call.args]
            + [f"{k.arg}={ast.unparse(k.value)}" if k.arg else "**..." for k in call.keywords]
        )
        return self._record(call, kind, f".{attr}({arguments})", what, line, column)

    def _record(
        self,
        node: ast.AST,
        kind: str,
        call: str,
        what: str,
        line: Optional[int] = None,
        column: Optional[int] = None,
    ) -> dict[str, Any]:
        line = line if line is not None else getattr(node, "lineno", 0)
        column = column if column is not None else getattr(node, "col_offset", 0) + 1
        return {
            "kind": kind,
            "path": self.walker.report.path,
            "line": line,
            "column": column,
            "code": code_at(self.walker.lines, line or 0),
            "function": getattr(self.function, "name", None),
            "call": call,
            "what": what,
            "loader": self.loader,
            "loop_line": self.loop.lineno,
            "loop_code": code_at(self.walker.lines, self.loop.lineno),
            "place": self.place,
        }


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _sync_method(call: ast.Call) -> bool:
    """`.item()`, `.cpu()`, `.tolist()`, `.to("cpu")`."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in SYNC_METHODS:
        return not call.args
    if func.attr == "to":
        target = call.args[0] if call.args else _keyword(call, "device")
        return _is_cpu(target)
    return False


def _is_cpu(node: Optional[ast.expr]) -> bool:
    if isinstance(node, ast.Call) and node.args:  # torch.device("cpu")
        node = node.args[0]
    return isinstance(node, ast.Constant) and node.value == "cpu"


def _keyword(call: ast.Call, name: str) -> Optional[ast.expr]:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def _chain(node: ast.expr) -> Iterable[ast.expr]:
    """The receivers below a method call: `a.b(c).d` -> a.b(c).d, a.b(c), a.b, a."""
    while True:
        yield node
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return


def _numpy_chain(receiver: ast.expr, walker: Walker) -> bool:
    """The receiver is NumPy, a constant or a literal, not a tensor: `np.mean(x).item()`,
    `x.numpy().tolist()` (a CPU tensor, or `.numpy()` would have failed)."""
    for node in _chain(receiver):
        if isinstance(node, (ast.Constant, ast.List, ast.Dict, ast.Tuple, ast.JoinedStr)):
            return True
        if isinstance(node, ast.Call):
            name = walker.qualname(node.func) or ""
            if name.startswith("numpy."):
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr == "numpy":
                return True
    return False


def _sync_below(receiver: ast.expr) -> bool:
    return any(isinstance(n, ast.Call) and _sync_method(n) for n in _chain(receiver))


def _device_argument(call: ast.Call) -> bool:
    """`.to(device)`, `.to("cuda")`, `.to(device=...)`; not `.to(torch.float16)`,
    `.to(dtype=...)` or `.to("cpu")`."""
    target = call.args[0] if call.args else _keyword(call, "device")
    if target is None or _is_cpu(target):
        return False
    if isinstance(target, ast.Attribute) and target.attr in DTYPES:
        return False
    return not (isinstance(target, ast.Constant) and not isinstance(target.value, str))


def _element_of(receiver: ast.expr, inner: list[ForLoop]) -> Optional[ForLoop]:
    """The inner loop whose element the copied value comes from, or None.
    `for k in batch: batch[k].to(device)` walks a dict's fields and is not per sample."""
    names = {n.id for n in ast.walk(receiver) if isinstance(n, ast.Name)}
    for loop in reversed(inner):
        targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        if not names & targets:
            continue
        if isinstance(receiver, ast.Subscript) and ast.unparse(receiver.value) == ast.unparse(
            loop.iter
        ):
            return None
        return loop
    return None


def _tensor_names(nodes: list[ast.AST]) -> set[str]:
    """Names known to hold tensors inside a loop (given its body's nodes): what
    `backward` is called on, and names assigned from expressions of those without a
    conversion to a number."""
    tensors: set[str] = set()
    for node in nodes:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "backward"
        ):
            continue
        if node.args:  # accelerator.backward(loss), torch.autograd.backward(loss)
            losses: list[ast.expr] = [node.args[0]]
            if ast.unparse(node.func.value).endswith("dist_autograd") and len(node.args) > 1:
                # dist_autograd.backward(context_id, [loss]): the losses are in the list
                second = node.args[1]
                losses = list(second.elts) if isinstance(second, (ast.List, ast.Tuple)) else []
            tensors |= {a.id for a in losses if isinstance(a, ast.Name)}
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Call):  # scaler.scale(loss).backward()
            tensors |= {a.id for a in receiver.args if isinstance(a, ast.Name)}
            continue
        while isinstance(receiver, ast.BinOp):  # (loss / accumulation).backward()
            receiver = receiver.left
        if isinstance(receiver, ast.Name):  # loss.backward()
            tensors.add(receiver.id)
    numbers: set[str] = set()
    for _ in range(3):
        for node in nodes:
            target: Optional[ast.expr] = None
            value: Optional[ast.expr] = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                target, value = node.target, node.value
            if not isinstance(target, ast.Name) or value is None:
                continue
            if _converted(value):
                numbers.add(target.id)
            elif isinstance(value, ast.Call) and _last_name(value.func) in TENSOR_RETURNS:
                tensors.add(target.id)  # norm = clip_grad_norm_(...): a 0-d device tensor
            elif _mentions_tensor(value, tensors):
                tensors.add(target.id)
    return tensors - numbers


def _last_name(func: ast.expr) -> Optional[str]:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _converted(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    if _sync_method(value):
        return True
    return isinstance(value.func, ast.Name) and value.func.id in CONVERSIONS


def _mentions_tensor(node: ast.AST, tensors: set[str]) -> bool:
    if isinstance(node, ast.Call) and _converted(node):
        return False
    if isinstance(node, ast.Name):
        return node.id in tensors
    return any(_mentions_tensor(child, tensors) for child in ast.iter_child_nodes(node))


# -- CUDA in Dataset.__getitem__ -----------------------------------------------------------


def _dataset_cuda(walker: Walker) -> list[dict[str, Any]]:
    classes = [n for n in ast.walk(walker.module) if isinstance(n, ast.ClassDef)]
    datasets = derived(classes, walker.aliases, DATASET_BASES)
    found: list[dict[str, Any]] = []
    for cls in classes:
        if cls.name not in datasets:
            continue
        devices = _Devices(walker, cls)
        for method in cls.body:
            if not (
                isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
                and method.name in SAMPLE_METHODS
            ):
                continue
            for node in own_nodes(method):
                if not isinstance(node, ast.Call):
                    continue
                call = devices.cuda_call(node, method)
                if call is None:
                    continue
                func = node.func
                if isinstance(func, ast.Attribute):
                    line = func.end_lineno or node.lineno
                    column = (func.end_col_offset or 0) - len(func.attr) + 1
                else:
                    line, column = node.lineno, node.col_offset + 1
                found.append(
                    {
                        "kind": "dataset_cuda",
                        "path": walker.report.path,
                        "line": line,
                        "column": column,
                        "code": code_at(walker.lines, line),
                        "function": method.name,
                        "class": cls.name,
                        "call": call,
                    }
                )
    return sorted(found, key=lambda r: (r["line"], r["column"]))


class _Devices:
    """Whether an expression inside a Dataset's method names a CUDA device."""

    def __init__(self, walker: Walker, cls: ast.ClassDef):
        self.walker = walker
        # `self.x = value` in the class's methods (the last one wins), with its method
        self.attributes: dict[str, tuple[ast.expr, Function]] = {}
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in own_nodes(method):
                if not isinstance(node, ast.Assign):
                    continue
                for target in node.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        self.attributes[target.attr] = (node.value, method)

    def cuda_call(self, call: ast.Call, method: Function) -> Optional[str]:
        """How a call puts data on a GPU (".cuda()", ".to('cuda')", "device='cuda'")."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "cuda":
            return ".cuda()"
        if isinstance(func, ast.Attribute) and func.attr == "to":
            target = call.args[0] if call.args else _keyword(call, "device")
            if target is not None and self.on_cuda(target, method):
                return f".to({ast.unparse(target)})"
            return None
        device = _keyword(call, "device")
        if device is not None and self.on_cuda(device, method):
            return f"{ast.unparse(func)}(..., device={ast.unparse(device)})"
        return None

    def on_cuda(self, node: ast.expr, method: Function, depth: int = 0) -> bool:
        """A CUDA device: "cuda", "cuda:0", torch.device("cuda"), or a constant or
        `self.device` set to one (either branch of a conditional counts: it is the branch
        taken on a GPU)."""
        if depth > 4:
            return False
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str) and node.value.startswith("cuda")
        if isinstance(node, ast.Call) and node.args:
            return ast.unparse(node.func).endswith("device") and self.on_cuda(
                node.args[0], method, depth + 1
            )
        if isinstance(node, ast.IfExp):
            return any(self.on_cuda(b, method, depth + 1) for b in (node.body, node.orelse))
        if isinstance(node, ast.Name):
            parameters = {a.arg for a in ast.walk(method.args) if isinstance(a, ast.arg)}
            if node.id in parameters:
                return False  # passed in: not known here
            assigned = self.walker.scope_of(method).lookup(node.id)
            return assigned is not None and self.on_cuda(assigned, method, depth + 1)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in self.attributes
        ):
            value, owner = self.attributes[node.attr]
            return self.on_cuda(value, owner, depth + 1)
        return False
