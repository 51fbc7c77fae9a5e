"""Host syncs inside a function another file of the run defines, called by a training step.

Training code keeps its per-step utilities in a module of the project: vits' train.py
calls `commons.clip_grad_value_(net_d.parameters(), None)`, whose loop runs
`param_norm.item()` for every parameter; hifi-gan's calls `mel_spectrogram(y_g_hat, ...)`
from meldataset.py, which branches on `torch.min(y) < -1.`; a tutorial's
`accuracy(scores, targets, 5)` (`from utils import *`) returns `correct.sum().item()`.
Each waits for the GPU on every step, at the step's call.

`first_sync` reads such a function in its own module (its imports name its calls), given
which of its parameters the step hands device tensors (or a model's `.parameters()`,
whose gradients live on the device), and answers with the first host read it makes on
every call: `.item()` / `.cpu()` / `.tolist()` / `.to("cpu")` of a device tensor,
`float(t)` / `int(t)` / `bool(t)`, a branch or loop test on a tensor's value, a slice
bounded by a device tensor (`x[i, :, start:end]` with `start = ids[i]`: each bound is an
`.item()`), a device tensor as a size (`torch.arange(lengths.max())`, `range(t)`),
printing a tensor, indexing with a boolean device mask (`output[output == target]`:
the result's size is the mask's count), `torch.cuda.synchronize()`. Only code run on
every call counts: the function's body, its loops and `with` / `try` blocks, not the body
of a branch (`if clip_value is not None:`, `if verbose:`), nested functions or lambdas. A
function handed no device tensor syncs nothing of the step's.

Its own calls of functions of its file, or of functions it imports from another file of
the run, are read the same way with the device tensors it hands them (get_F1 calling
get_sensitivity(SR, GT), which does `float(torch.sum(TP))`; a loss calling a helper that
slices by a CUDA length), down to MAX_DEPTH functions from the step's call. What it
cannot settle (a call of code out of sight) is not a sync: a finding is never a guess.

Methods too: `dice_loss = DiceLoss(n)` (`from utils import DiceLoss`) called as
`dice_loss(out, y)` runs `DiceLoss.forward` (or `__call__`), `metric_logger =
utils.MetricLogger()` ... `metric_logger.update(grad_norm=norm)` runs `update(self,
**kwargs)` with `kwargs` holding the norm. The method's own `self.f(...)` calls resolve to
the class's methods (of its file: its bases there too), read for the tensors they return
and for their syncs on every call. A type test that a device tensor passes
(`if isinstance(v, torch.Tensor): v = v.item()`) takes its branch; `assert` on a tensor's
value reads it.

A method reading the scale of a GradScaler the class holds (`self._scaler =
torch.cuda.amp.GradScaler()` in its constructor, not disabled by an `enabled=` the source
does not settle to True) syncs whatever it is handed: `get_scale()` returns
`self._scale.item()` and `state_dict()` calls `get_scale()` (torch/amp/grad_scaler.py;
"get_scale incurs a CPU-GPU sync"). timm-style `NativeScaler.state_dict()` wrappers,
read every step for logging (`loss_scaler.state_dict()["scale"]`), wait for the GPU so.

Size: one reader of helper bodies for every kind of per-step host read, so that a sync
found through a helper is found by the same rules as one in the step itself.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Union

from envcheck.scripts.index import is_cpu, keyword_arg, module_nodes, own_nodes, qualified_name
from envcheck.scripts.masks import boolean_expression, mask_names
from envcheck.scripts.tensors import DeviceTensors

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# tests a device tensor passes: `isinstance(v, torch.Tensor)`, `torch.is_tensor(v)`
TYPE_TESTS = ("isinstance", "torch.is_tensor")
MAX_FOLLOWED = 8  # the class's own methods read inside one another
MAX_DEPTH = 3  # functions read inside one another below the one the step calls
# (file, line, what, through) of a host read: the file is the function's, or that of the
# functions it calls, `through` them (their names, outermost first)
Sync = tuple[str, int, str, tuple[str, ...]]

# builtins a test filtering parameters may call: `len(p.shape) == 1`
FILTER_BUILTINS = frozenset({"len", "isinstance", "hasattr", "getattr", "any", "all"})
# tensor methods that copy to the host (`.numpy()` fails on a CUDA tensor: never a sync)
SYNC_METHODS = ("item", "cpu", "tolist")
CONVERSIONS = ("float", "int", "bool")
# GradScaler methods reading its scale tensor on the host (get_scale: `.item()`)
SCALE_READS = ("get_scale", "state_dict")
# calls whose arguments are sizes or bounds, Python numbers: a device tensor handed as one
# is read with an .item() (`torch.arange(lengths.max())`, `range(n)` with `n` a tensor)
SIZE_CALLS = (
    "range",
    "torch.arange",
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.rand",
    "torch.randn",
    "torch.randint",
)
SIZE_KEYWORDS = ("start", "end", "step", "size", "low", "high")


def sized_by_tensor(
    call: ast.Call,
    qualname: Callable[[ast.AST], Optional[str]],
    tensor: Callable[[ast.expr], bool],
) -> Optional[str]:
    """`torch.arange(lengths.max())`, `torch.zeros(n_max, 4)`, `range(t)`: the name of a
    call given a device tensor as a size or bound, which it reads on the host; else None."""
    name = qualname(call.func)
    if name not in SIZE_CALLS:
        return None
    sizes = [*call.args, *(k.value for k in call.keywords if k.arg in SIZE_KEYWORDS)]
    return name if any(tensor(s) for s in sizes) else None


@dataclass
class Foreign:
    """A top-level function of another file of the run: where it is, and the import
    aliases of its module (name -> module) that name its calls."""

    shown: str
    function: Function
    aliases: dict[str, str]
    # for a method: its class's methods by name (its bases' of the same file included),
    # which its `self.f(...)` calls run
    methods: dict[str, Function] = field(default_factory=dict)
    # the function a (qualified) name its file calls names: one of its file, or one it
    # imports from another file of the run; None when out of sight
    resolve: Optional[Callable[[str], Optional[Foreign]]] = None
    _found: dict[tuple[frozenset[str], int], Optional[Sync]] = field(default_factory=dict)
    _scalers: Optional[frozenset[str]] = None
    _host: dict[frozenset[str], bool] = field(default_factory=dict)  # see returns_host

    @property
    def scalers(self) -> frozenset[str]:
        """`self._scaler` where the class's methods assign it an enabled GradScaler."""
        if self._scalers is None:
            self._scalers = scaler_attributes(self.methods.values(), self.aliases)
        return self._scalers

    def first_sync(
        self, on_device: frozenset[str], depth: int = 0, enabled: frozenset[str] = frozenset()
    ) -> Optional[Sync]:
        """(file, line, what, through) of the first host read the function makes on
        every call when the parameters `on_device` hold device tensors (in another
        file when made by the functions `through` it calls, `depth` levels below the
        step's call) and the flags `enabled` are True (enabled_flags); None when none
        does."""
        if not on_device and not self.scalers and not enabled:
            return None
        key = (on_device | {f"{f}=True" for f in enabled}, depth)
        if key not in self._found:
            self._found[key] = None  # a function calling itself reads nothing more
            self._found[key] = _Reader(self, on_device, depth, enabled).first()
        return self._found[key]

    def enabled_flags(self, call: ast.Call) -> frozenset[str]:
        """The parameters defaulting to True that `call` leaves out (ijepa's
        `gpu_timer(closure, log_timings=True)` called as `gpu_timer(train_step)`), and
        that the function reassigns at most as `flag = flag and
        torch.cuda.is_available()` (True on a GPU node): `if flag:` runs on every call."""
        arguments = self.function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = list(
            zip(
                positional[len(positional) - len(arguments.defaults) :],
                arguments.defaults,
                strict=True,
            )
        )
        defaults += [
            (a, d)
            for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
            if d is not None
        ]
        given = {k.arg for k in call.keywords}
        skip = len(call.args) + (1 if self.methods and not _static(self.function) else 0)
        passed = {a.arg for a in positional[:skip]}
        flags = {
            a.arg
            for a, d in defaults
            if isinstance(d, ast.Constant) and d.value is True and a.arg not in given | passed
        }
        for node in own_nodes(self.function):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for name in (t.id for t in targets if isinstance(t, ast.Name) and t.id in flags):
                if not _cuda_guarded(node, name):
                    flags.discard(name)
        return frozenset(flags)

    def returns_host(self, on_device: frozenset[str]) -> bool:
        """Whether the function, handed device tensors as the parameters `on_device`,
        reads them on the host itself on every call (first_sync) and returns only what
        holds no device tensor (DBNet's `cal_text_score(preds, gt, mask, meter)` copies
        each to NumPy and returns the meter's scores): its results are host values, the
        sync is the call's own."""
        if not on_device or self.first_sync(on_device) is None:
            return False
        if on_device not in self._host:
            reader = _Reader(self, on_device)
            values = [n.value for n in own_nodes(self.function) if isinstance(n, ast.Return)]
            self._host[on_device] = bool(values) and all(
                v is not None and not reader.tensor(v) for v in values
            )
        return self._host[on_device]

    def parameters(self, call: ast.Call) -> dict[int, str]:
        """Position of each positional argument of `call` -> the parameter it binds (a
        method's instance, `self`, is not among them)."""
        arguments = self.function.args
        names = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
        if self.methods and not _static(self.function):
            names = names[1:]
        return dict(enumerate(names[: len(call.args)]))

    def keyword(self, name: str) -> Optional[str]:
        """The parameter the keyword argument `name` binds: its own, else `**kwargs`."""
        arguments = self.function.args
        if name in {a.arg for a in [*arguments.args, *arguments.kwonlyargs]}:
            return name
        return arguments.kwarg.arg if arguments.kwarg is not None else None


def _cuda_guarded(node: ast.AST, flag: str) -> bool:
    """`flag = flag and torch.cuda.is_available()`: still True on a GPU node."""
    value = node.value if isinstance(node, ast.Assign) else None
    return (
        isinstance(value, ast.BoolOp)
        and isinstance(value.op, ast.And)
        and all(
            (isinstance(v, ast.Name) and v.id == flag)
            or (
                isinstance(v, ast.Call)
                and ast.unparse(v.func).endswith("cuda.is_available")
                and not v.args
            )
            for v in value.values
        )
    )


def scaler_attributes(methods: Iterable[Function], aliases: dict[str, str]) -> frozenset[str]:
    """`self.x` that the methods assign a GradScaler enabled by default: made with no
    `enabled=`, or `enabled=True` (a flag the source does not settle may be False)."""
    found: set[str] = set()
    for method in methods:
        for node in own_nodes(method):
            if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
                continue
            func = node.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if isinstance(func, ast.Name):
                name = aliases.get(name, name).rpartition(".")[2]
            if name != "GradScaler":
                continue
            enabled = keyword_arg(node.value, "enabled")
            if enabled is not None and not (
                isinstance(enabled, ast.Constant) and enabled.value is True
            ):
                continue
            found.update(
                f"self.{t.attr}"
                for t in node.targets
                if isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
            )
    return frozenset(found)


def _static(function: Function) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)


def class_methods(module: ast.Module, cls: ast.ClassDef, depth: int = 0) -> dict[str, Function]:
    """The methods of `cls` by name, with those it inherits from classes of the same
    module (named as bases), its own first."""
    found: dict[str, Function] = {}
    if depth > 4:
        return found
    classes = {n.name: n for n in module.body if isinstance(n, ast.ClassDef)}
    for base in reversed(cls.bases):
        if isinstance(base, ast.Name) and base.id in classes and base.id != cls.name:
            found.update(class_methods(module, classes[base.id], depth + 1))
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[item.name] = item
    return found


def instances(
    module: ast.Module, qualname: Callable[[ast.AST], Optional[str]]
) -> dict[str, Optional[str]]:
    """`dice_loss = DiceLoss(n)`, `metric_logger = utils.MetricLogger()`: names the file
    binds, everywhere, to the result of calls of one name only (its qualified name), None
    for a name bound to anything else as well."""
    found: dict[str, Optional[str]] = {}

    def bind(name: str, built: Optional[str]) -> None:
        seen = found.get(name, built)
        found[name] = built if seen == built else None

    for node in module_nodes(module):
        if isinstance(node, ast.Assign):
            made = qualname(node.value.func) if isinstance(node.value, ast.Call) else None
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bind(name.id, made if name is target else None)
        elif isinstance(node, ast.arg):  # a parameter of that name holds what it is handed
            bind(node.arg, None)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.withitem)):
            bound = node.optional_vars if isinstance(node, ast.withitem) else node.target
            for name in ast.walk(bound) if bound is not None else []:
                if isinstance(name, ast.Name):
                    bind(name.id, None)
    return found


class _Reader:
    def __init__(
        self,
        foreign: Foreign,
        on_device: frozenset[str],
        depth: int = 0,
        enabled: frozenset[str] = frozenset(),
    ):
        self.enabled = enabled
        self.shown = foreign.shown
        self.resolve = foreign.resolve if depth < MAX_DEPTH else None
        self.depth = depth
        self.masks: dict[int, dict[str, ast.expr]] = {}  # per function read: its mask names
        self.function = foreign.function
        self.aliases = foreign.aliases
        self.methods = foreign.methods
        self.scalers = foreign.scalers if foreign.methods else frozenset()
        self.read: set[int] = set()  # the class's methods read for syncs, once each
        self.on_device = on_device
        # names a loop over the parameters handed on the device binds (`for n, p in
        # named_params:`): a test of them only filters which parameters (see _filters)
        self.per_parameter: set[str] = set()
        self.tensors = DeviceTensors(
            [(f, list(own_nodes(f))) for f in self._reached()],
            self.qualname,
            self._method,
            modules=frozenset(self.aliases),
            on_device=tuple((self.function, name) for name in sorted(on_device)),
        )

    def _method(self, call: ast.Call) -> Optional[Function]:
        """The class's own method `self.f(...)` runs (None for a function)."""
        func = call.func
        if (
            self.methods
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            return self.methods.get(func.attr)
        return None

    def _reached(self) -> list[Function]:
        """The function, and the methods of its class it runs through `self.f(...)`."""
        reached = [self.function]
        for function in reached:
            for node in own_nodes(function):
                found = self._method(node) if isinstance(node, ast.Call) else None
                if found is not None and all(found is not r for r in reached):
                    reached.append(found)
        return reached[:MAX_FOLLOWED]

    def qualname(self, node: ast.AST) -> Optional[str]:
        return qualified_name(node, self.aliases)

    def tensor(self, node: Optional[ast.AST]) -> bool:
        return node is not None and self.tensors.holds_in(node, self.function)

    def first(self) -> Optional[Sync]:
        self.read.add(id(self.function))
        return self._block(self.function.body)

    def _followed(self, root: ast.AST) -> Optional[Sync]:
        """The first sync of a method of the class `root` calls (`self._dice(p, t)`),
        read in its own names, each method once."""
        for node in [root, *own_nodes(root)]:
            method = self._method(node) if isinstance(node, ast.Call) else None
            if method is None or id(method) in self.read or len(self.read) >= MAX_FOLLOWED:
                continue
            self.read.add(id(method))
            outer, self.function = self.function, method
            try:
                found = self._block(method.body)
            finally:
                self.function = outer
            if found is not None:
                return found
        return None

    def _block(self, body: list[ast.stmt]) -> Optional[Sync]:
        for statement in body:
            found = self._statement(statement)
            if found is not None:
                return found
        return None

    def _statement(self, statement: ast.stmt) -> Optional[Sync]:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        if isinstance(statement, (ast.If, ast.While)):
            # the test runs on every call; a branch's body only when taken, as a type
            # test a device tensor passes is (`if isinstance(v, torch.Tensor):`)
            if self._tests_tensor(statement.test):
                return self.shown, statement.test.lineno, "tests a tensor's value", ()
            found = self._expression(statement.test)
            if found is None and (
                isinstance(statement, ast.While)
                or self._passes_type_test(statement.test)
                or self._filters(statement.test)
                or (isinstance(statement.test, ast.Name) and statement.test.id in self.enabled)
            ):
                found = self._block(statement.body)
            return found
        if isinstance(statement, ast.Assert) and self._tests_tensor(statement.test):
            return self.shown, statement.test.lineno, "asserts on a tensor's value", ()
        if isinstance(statement, ast.Assign) and self._converts_itself(statement):
            what = "copies a tensor to the host (converts it in place)"
            return self.shown, statement.lineno, what, ()
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            found = self._expression(statement.iter)
            if found is not None:
                return found
            outer = set(self.per_parameter)
            if isinstance(statement.iter, ast.Name) and statement.iter.id in self.on_device:
                self.per_parameter.update(
                    n.id for n in ast.walk(statement.target) if isinstance(n, ast.Name)
                )
            try:
                return self._block(statement.body)
            finally:
                self.per_parameter = outer
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                found = self._expression(item.context_expr)
                if found is not None:
                    return found
            return self._block(statement.body)
        if isinstance(statement, ast.Try):
            return self._block(statement.body) or self._block(statement.finalbody)
        return self._expression(statement)

    def _filters(self, test: ast.expr) -> bool:
        """`if p.grad is not None and not n.endswith(".bias"):` in a loop over the
        parameters handed on the device: a test of the loop's own names only (no flag,
        no tensor's value) picks some of the parameters on every call, so its body runs
        on every call."""
        if not self.per_parameter:
            return False
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        return names <= self.per_parameter | FILTER_BUILTINS and bool(names & self.per_parameter)

    def _passes_type_test(self, test: ast.expr) -> bool:
        """`isinstance(v, torch.Tensor)`, `torch.is_tensor(v)` of a device tensor `v`."""
        return (
            isinstance(test, ast.Call)
            and self.qualname(test.func) in TYPE_TESTS
            and bool(test.args)
            and (len(test.args) == 1 or "Tensor" in ast.unparse(test.args[1]))
            and self._held(test.args[0])
        )

    def _held(self, node: ast.expr) -> bool:
        """A device tensor, or a name that held one before the function made it a
        number (`v = v.item()`: flow-insensitive, `v` is a number)."""
        if self.tensor(node):
            return True
        key = self.tensors.key_in(node, self.function)
        return key is not None and key in self.tensors.converted

    def _converts_itself(self, statement: ast.Assign) -> bool:
        """`v = v.item()`, `x = float(x)`: the tensor the name held is read on the host."""
        value = statement.value
        if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
            return False
        if not isinstance(value, ast.Call) or value.keywords:
            return False
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in SYNC_METHODS and not value.args:
            read = func.value
        elif isinstance(func, ast.Name) and func.id in CONVERSIONS and len(value.args) == 1:
            read = value.args[0]
        else:
            return False
        return (
            isinstance(read, ast.Name) and read.id == statement.targets[0].id and self._held(read)
        )

    def _tests_tensor(self, test: ast.expr) -> bool:
        """`if torch.min(y) < -1.:`, `while norm > limit:`: bool() of a device tensor."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._tests_tensor(test.operand)
        if isinstance(test, ast.BoolOp):
            return self._tests_tensor(test.values[0])  # the first operand always runs
        return isinstance(test, (ast.Compare, ast.Call)) and self.tensor(test)

    def _expression(self, root: ast.AST) -> Optional[Sync]:
        for node in [root, *own_nodes(root)]:
            what = self._sync(node)
            if what is not None:
                return self.shown, getattr(node, "lineno", 0), what, ()
        found = self._followed(root) if self.methods else None
        return found or self._called(root)

    def _called(self, root: ast.AST) -> Optional[Sync]:
        """The first sync of a function of the run `root` calls (`get_sensitivity(SR,
        GT)` in get_F1), read with the device tensors it is handed."""
        if self.resolve is None:
            return None
        for node in [root, *own_nodes(root)]:
            if not isinstance(node, ast.Call) or self._method(node) is not None:
                continue
            name = self.qualname(node.func)
            callee = self.resolve(name) if name is not None else None
            if callee is None or callee.function is self.function:
                continue
            parameters = callee.parameters(node)
            on_device = {
                parameters[index]
                for index, argument in enumerate(node.args)
                if index in parameters and self.tensor(argument)
            }
            for keyword in node.keywords:
                bound = callee.keyword(keyword.arg) if keyword.arg else None
                if bound is not None and self.tensor(keyword.value):
                    on_device.add(bound)
            found = callee.first_sync(frozenset(on_device), self.depth + 1)
            if found is not None:
                shown, line, what, through = found
                return shown, line, what, (callee.function.name, *through)
        return None

    def _masked(self, node: ast.Subscript) -> bool:
        """`output[output == target]`, `x[keep]` with `keep = t > 0` read (not assigned
        through: `x[mask] = 0` fills in place) with a boolean device tensor."""
        if not isinstance(node.ctx, ast.Load):
            return False
        if id(self.function) not in self.masks:
            self.masks[id(self.function)] = mask_names(self.function)
        values = self.masks[id(self.function)]
        mask = node.slice
        named = values.get(mask.id, mask) if isinstance(mask, ast.Name) else mask
        return boolean_expression(named, values) and self.tensor(mask) and self.tensor(node.value)

    def _sync(self, node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Subscript):
            bounds = [
                part
                for index in (
                    node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                )
                if isinstance(index, ast.Slice)
                for part in (index.lower, index.upper, index.step)
            ]
            if any(self.tensor(b) for b in bounds) and self.tensor(node.value):
                return "slices with a device tensor as a bound (an .item() each)"
            if self._masked(node):
                return "indexes with a boolean mask tensor (its count is read on the host)"
            return None
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if self.qualname(func) == "torch.cuda.synchronize":
            return "waits for the GPU"
        if self.qualname(func) == "torch.cuda.empty_cache":
            return "waits for the GPU (cudaFree of the cache the next step re-allocates)"
        sized = sized_by_tensor(node, self.qualname, self.tensor)
        if sized is not None:
            return f"uses a device tensor as a size ({sized}(): an .item())"
        if (
            isinstance(func, ast.Attribute)
            and func.attr in SCALE_READS
            and _self_attribute(func.value) in self.scalers
        ):
            return f"reads the GradScaler's scale (.{func.attr}(): get_scale() calls .item())"
        if isinstance(func, ast.Attribute) and self.tensor(func.value):
            if func.attr in SYNC_METHODS and not node.args:
                return f"copies a tensor to the host (.{func.attr}())"
            target = node.args[0] if node.args else keyword_arg(node, "device")
            if func.attr == "to" and is_cpu(target):
                return 'copies a tensor to the host (.to("cpu"))'
        if isinstance(func, ast.Name) and func.id not in self.aliases:
            if func.id in CONVERSIONS and len(node.args) == 1 and self.tensor(node.args[0]):
                return f"converts a tensor ({func.id}())"
            if func.id == "print" and any(self.tensor(a) for a in node.args):
                return "prints a tensor"
        return None


def _self_attribute(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}" if node.value.id == "self" else None
    return None
