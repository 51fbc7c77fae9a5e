"""PyTorch training-step loops, read from the source without running it.

`TorchLoopObserver.finish` runs once per file after the walk. It works out which names
hold a DataLoader (assigned from a DataLoader call, returned by a function of the file,
or handed to a function of the file as an argument), finds the loops over them that
train (their body, or a helper it calls, runs `backward`; or their own body runs the
optimizer step after a nested gradient-accumulation loop that runs it), and records what those loops
do every step:

- `host_sync`: `.item()`, `.cpu()`, `.tolist()`, `.to("cpu")`, `float(loss)`,
  printing / formatting a tensor, or a device tensor as a slice bound (`pred[:length]`
  with `length` an element of a lengths tensor on the device) or a size
  (`torch.arange(lengths.max())`): each makes the CPU wait for the GPU;
- `per_sample_copy`: `.to(device)` / `.cuda()` inside an inner loop over the batch's
  elements (or a part of one the loop takes: `y = waves[i][a:b]`), many small copies
  instead of one.

Calls under an `if` whose test uses `%` (`if step % 100 == 0:`, or calls a function of
the file returning only such a test: `if should_log(step):`) run periodically, which
is the recommended way to log, and are left out (a loop nested in a step loop is read
with it, never as a step loop of its own: under such a branch it is periodic too), as
are those under `if step == 0:`
(once) and the code after the loop; a `%` branch holding the optimizer step (gradient
accumulation) runs at every optimizer step and is read. Which values are device
tensors is `tensors.DeviceTensors`' answer; which function a call runs, `callees`'. A
function with a backward pass and an optimizer step outside any loop of its own (a
framework's per-iteration callback) is read as a step too (or its only caller, when that
runs it once outside any loop: a task's `train_step` handing the loss to
`self.run_optimizer(loss)`; or, when the file never calls it, its backward in an
accumulation loop or a helper and its optimizer step, `self.D_opt.step()`, after it), as
is a Lightning
`training_step(self, batch, batch_idx)` (a LightningModule's `training_step(self,
batch)` too), whose batch arrives on the device, and a Hugging
Face Trainer subclass's `compute_loss(self, model, inputs, ...)` / `training_step(self,
model, inputs, ...)` (trl's trainers too), which that Trainer calls for every batch, its
inputs already on the device, and its `_prepare_inputs(self, inputs)`, which the Trainer's
step calls first. A branch under `if self.x is None:` that sets `self.x` (a lazy one-off
stage) is read as run once, as is one under `if not self.flag:` whose body sets
`self.flag = True` (a latch); one under `if "z_variance" in out:` (a key of the step's
device outputs that no code of the file stores) as an optional output's, not run; one
under `if now - last_log > 60:` whose body resets `last_log = now` (`now` a
`time.time()` reading) as periodic.

It also records `dataset_cuda`: `.cuda()` / `.to("cuda")` inside `__getitem__` of a
`torch.utils.data.Dataset` subclass. Every observation is a plain JSON dict with `path`,
`line`, `column`, `code` and `function`; nothing here judges.

Size: finding the training-step loop (through wrappers, helpers, closures and called
epoch functions) and classifying each statement in it share one walk of the file's
functions; splitting them would walk twice or pass the walk's state between modules.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Optional, Union

from envcheck.scripts.callees import Callees
from envcheck.scripts.foreign_helpers import SCALE_READS, Foreign, sized_by_tensor
from envcheck.scripts.handed_instances import handed_class
from envcheck.scripts.host_numbers import number_entry
from envcheck.scripts.host_tensors import SAME_DEVICE, on_host
from envcheck.scripts.index import (
    FileIndex,
    code_at,
    derived,
    is_cpu,
    keyword_arg,
    module_nodes,
    own_nodes,
    parameter_defaults,
)
from envcheck.scripts.masks import boolean_expression, mask_names
from envcheck.scripts.parameters import handed_value
from envcheck.scripts.precision import lightning_hook
from envcheck.scripts.step_helpers import StepCallees, host_wrapper
from envcheck.scripts.tensors import (
    RENDERS_ON_HOST,
    DeviceTensors,
    dotted,
    moves_to_device,
    stringy,
    torch_host_function,
    unwrap_listing,
)
from envcheck.scripts.texts import clipped, text
from envcheck.scripts.training_calls import hidden_backward
from envcheck.scripts.values import resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import FileReport, Walker

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Loop = Union[ast.For, ast.AsyncFor, ast.While]
ForLoop = Union[ast.For, ast.AsyncFor]
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# The Hugging Face Trainer's per-step methods a subclass overrides: the Trainer calls
# them for every batch, with the inputs already on the device.
HF_TRAINER_HOOKS = ("compute_loss", "training_step")
# ... and the one its `training_step` calls first on every batch (trl's online trainers
# generate and score completions there), before the inputs are moved to the device.
HF_TRAINER_INPUT_HOOK = "_prepare_inputs"


def hf_trainer_hook(function: ast.AST) -> bool:
    """`compute_loss(self, model, inputs, ...)` or `training_step(self, model, inputs,
    ...)`: the signature of a Hugging Face Trainer's per-step methods (trl's trainers
    override them too)."""
    if not isinstance(function, FUNCTIONS) or function.name not in HF_TRAINER_HOOKS:
        return False
    names = [a.arg for a in function.args.args]
    return names[:3] == ["self", "model", "inputs"]


def _hf_input_hooks(module: ast.Module) -> list[Function]:
    """`_prepare_inputs(self, inputs)` of a class deriving from a `...Trainer`: the
    Trainer's `training_step` runs it on every batch before `compute_loss`, so what it
    does runs every step (its name alone is too common to trust outside a Trainer)."""
    found: list[Function] = []
    for node in module_nodes(module):
        if not isinstance(node, ast.ClassDef) or not any(
            (dotted(base) or "").endswith("Trainer") for base in node.bases
        ):
            continue
        found += [
            n
            for n in node.body
            if isinstance(n, FUNCTIONS)
            and n.name == HF_TRAINER_INPUT_HOOK
            and len(n.args.args) == 2
            and n.args.args[0].arg == "self"
        ]
    return found


def _short_lightning_hooks(module: ast.Module) -> list[Function]:
    """`training_step(self, batch)` of a class deriving from a `...LightningModule`:
    Lightning 2 made `batch_idx` optional. Only there: d2l's own `Module` has a
    `training_step(self, batch)` that its own loop calls."""
    return [
        method
        for node in module_nodes(module)
        if isinstance(node, ast.ClassDef)
        and any((dotted(base) or "").endswith("LightningModule") for base in node.bases)
        for method in node.body
        if isinstance(method, FUNCTIONS)
        and method.name == "training_step"
        and [a.arg for a in method.args.args] == ["self", "batch"]
    ]


# A Lightning Callback's hooks the Trainer runs on every training step (or every
# backward), with `(self, trainer, pl_module, ...)`
CALLBACK_STEP_HOOKS = (
    "on_after_backward",
    "on_before_backward",
    "on_before_optimizer_step",
    "on_train_batch_start",
    "on_train_batch_end",
)


def _callback_hooks(module: ast.Module) -> list[Function]:
    """The per-step hooks (`on_after_backward(self, trainer, pl_module)`, ...) of a class
    deriving from a `...Callback` when the file hands an instance of it to a
    `...Trainer(callbacks=[...])` (nougat's GradNormCallback: `param_norm.item()` per
    parameter after every backward): the Trainer runs them every step."""
    classes = {
        node.name: node
        for node in module_nodes(module)
        if isinstance(node, ast.ClassDef)
        and any((dotted(base) or "").endswith("Callback") for base in node.bases)
    }
    if not classes:
        return []
    built: dict[str, str] = {}  # name -> callback class of the instance it holds
    handed: list[ast.expr] = []
    for node in ast.walk(module):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in classes
        ):
            built.update(
                (t.id, node.value.func.id) for t in node.targets if isinstance(t, ast.Name)
            )
        elif isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("Trainer"):
            for keyword in node.keywords:
                if keyword.arg == "callbacks" and isinstance(keyword.value, (ast.List, ast.Tuple)):
                    handed += keyword.value.elts
    used: set[str] = set()
    for element in handed:
        if isinstance(element, ast.Name) and element.id in built:
            used.add(built[element.id])
        elif isinstance(element, ast.Call) and isinstance(element.func, ast.Name):
            used.add(element.func.id)
    return [
        method
        for name in sorted(used & set(classes))
        for method in classes[name].body
        if isinstance(method, FUNCTIONS)
        and method.name in CALLBACK_STEP_HOOKS
        and [a.arg for a in method.args.args][:1] == ["self"]
        and len(method.args.args) >= 3
    ]


def _hf_trainer_hooks(walker: Walker) -> list[Function]:
    """The per-step methods of Trainer subclasses in a file that uses transformers or trl."""
    roots = {qualified.split(".")[0] for qualified in walker.aliases.values()}
    if not roots & {"transformers", "trl"}:
        return []
    hooks = [
        n for n in module_nodes(walker.module) if isinstance(n, FUNCTIONS) and hf_trainer_hook(n)
    ]
    return hooks + _hf_input_hooks(walker.module)


SYNC_METHODS = ("item", "cpu", "tolist")
# Python or NumPy tests of one value: on a tensor they read it on the host first
VALUE_TESTS = {
    f"{root}.{name}" for root in ("math", "numpy") for name in ("isnan", "isinf", "isfinite")
}
CONVERSIONS = ("float", "int", "bool")
# wall-clock readings: `if now - last_log > 60:` throttles by time
CLOCKS = {f"time.{name}" for name in ("time", "perf_counter", "monotonic", "time_ns")}
# SummaryWriter methods that copy the tensor they log to NumPy on the spot (torch's
# tensorboard summary.image / histogram run make_np: `x.detach().cpu().numpy()`), with
# the keyword of that tensor; it is their second positional argument
TENSORBOARD_ARRAYS = {
    "add_image": "img_tensor",
    "add_images": "img_tensor",
    "add_histogram": "values",
}
# Lightning Fabric's loggers: `log_dict` runs convert_tensors_to_scalars (`.item()` on
# every tensor) on each call, loggers or none; `log(name, value)` calls log_dict. The
# position and keyword of what they log.
FABRIC_LOGS = {"log_dict": (0, "metrics"), "log": (1, "value")}
# helpers out of sight named for what they do (`from .torch_tools import to_numpy`): a
# device tensor handed to one comes back as a NumPy array, copied to the host
HOST_READERS = ("to_numpy", "tensor_to_numpy", "to_np")
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
    backward_in: dict[int, Function] = {}  # functions calling backward (innermost)
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
            if function is not None and _trains([node]):
                backward_in[id(function)] = function
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
    hooks = [
        n for n in module_nodes(walker.module) if isinstance(n, FUNCTIONS) and lightning_hook(n)
    ]
    hooks += _hf_trainer_hooks(walker) + _short_lightning_hooks(walker.module)
    hooks += _callback_hooks(walker.module)
    if (loops or backward_in or hooks) and (
        any(walker.qualname(c.func) in walker.loader_classes for c in calls)
        or any(_trains([c]) for c in calls)
        or hooks
    ):
        loaders = _Loaders(walker, files, assignments, calls, returns)
        callees = StepCallees(walker.module, files, assignments, calls)
        scalers = _scalers(walker) if any("GradScaler" in t for t in walker.lines) else set()
        seen: set[Any] = set()
        read: set[int] = set()  # helpers read as part of a step loop
        covered: set[int] = set()  # loops nested in a step loop already read
        by_loader: set[int] = set()  # functions with a step loop over a loader of theirs
        for loop, function in sorted(loops, key=lambda x: (x[0].lineno, x[0].col_offset)):
            if id(loop) in covered:
                # read with the step around it: its syncs are per step there, and those
                # under `if step % N == 0:` are periodic (not a loop of their own)
                continue
            loader = None
            if isinstance(loop, (ast.For, ast.AsyncFor)):
                loader = loaders.iterated(loop.iter)
            loader = loader or loaders.stepped(loop)
            body = [n for statement in loop.body for n in [statement, *own_nodes(statement)]]
            helpers = _helpers(body, callees, files, function)
            if loader is None:
                # batches from elsewhere (a loader passed in from another module, slices
                # of a tensor): a step loop when the step itself is in its body
                loader = _steps_itself(loop, helpers, loaders)
                if loader is None:
                    continue
                if _spread(loop, helpers):
                    # its optimizer step a few helpers down (`run_step` -> `optimize` ->
                    # `_log_grad_norm`): read them as deep as they were found
                    helpers = _helpers(body, callees, files, function, ACCUMULATING_DEPTH)
                elsewhere = _loader_elsewhere(loop, assignments)
                if elsewhere:  # its DataLoader settings are out of sight
                    found = walker.facts.setdefault("loaders_elsewhere", [])
                    if elsewhere not in found:
                        found.append(elsewhere)
            elif not _trains(body) and not any(_trains(list(own_nodes(h))) for h in helpers):
                continue
            else:
                by_loader.add(id(function))
            read.update(id(h) for h in helpers)
            covered.update(id(n) for n in body if isinstance(n, LOOPS))
            step = _StepLoop(walker, loop, loader, loaders, seen, function, body, helpers, callees)
            step.scalers = scalers
            report.torch_calls.extend(_one_per_place(step.read()))
        steps = _step_functions(list(backward_in.values()), read)
        steps = _step_callers(steps, walker.index().function_nodes, callees, read)
        skip = read | by_loader | {id(f) for f in steps}
        steps += _accumulating_steps(walker.index().function_nodes, skip, callees, files)
        for function in steps:
            body = [n for statement in function.body for n in [statement, *own_nodes(statement)]]
            if _on_xla(walker, body):
                continue  # a TPU step (`xm.optimizer_step(optimizer)`), not a CUDA one
            helpers = _helpers(body, callees, files)
            loader = f"the batches each call of {function.name}() gets"
            step = _StepLoop(
                walker, function, loader, loaders, seen, function, body, helpers, callees
            )
            step.scalers = scalers
            report.torch_calls.extend(_one_per_place(step.read()))
        for hook in hooks:
            if id(hook) in read:
                continue  # run by a step loop of the file (d2l's Trainer.fit_epoch)
            body = [n for statement in hook.body for n in [statement, *own_nodes(statement)]]
            helpers = _helpers(body, callees, files)
            hf = hf_trainer_hook(hook) or hook.name == HF_TRAINER_INPUT_HOOK
            framework = "the Hugging Face Trainer" if hf else "Lightning"
            loader = f"the batches {framework} hands {hook.name}()"
            if hook.name in CALLBACK_STEP_HOOKS:
                loader = f"the steps the Lightning Trainer runs {hook.name}() in"
            step = _StepLoop(
                walker, hook, loader, loaders, seen, hook, body, helpers, callees, _hook_batch(hook)
            )
            step.scalers = scalers
            report.torch_calls.extend(_one_per_place(step.read()))
    report.torch_calls.extend(_dataset_cuda(walker))


def _hook_batch(hook: Function) -> tuple[tuple[ast.AST, str], ...]:
    """The parameter holding a batch already on the device: Lightning's `(self, batch,
    batch_idx)`, the HF Trainer's `(self, model, inputs)`; none for `_prepare_inputs`,
    which gets the collated batch before the Trainer moves it."""
    if hook.name == HF_TRAINER_INPUT_HOOK or hook.name in CALLBACK_STEP_HOOKS:
        return ()  # a callback's batch, when it has one, is not what it mostly reads
    position = 2 if hf_trainer_hook(hook) else 1
    args = hook.args.args
    return ((hook, args[position].arg if len(args) > position else "batch"),)


# -- which names hold a DataLoader --------------------------------------------------------


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
            return dotted(expr) in self.names
        return False

    def iterated(self, iterable: ast.expr, depth: int = 0) -> Optional[str]:
        """The loader a `for` header iterates, through wrappers: `enumerate(loader)`,
        `tqdm(loader)`, `metric_logger.log_every(loader, 10)`, `zip(a_loader, b_loader)`."""
        if isinstance(iterable, (ast.Name, ast.Attribute)) and self.holds(iterable):
            return dotted(iterable)
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
            name = dotted(target)
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
                name = dotted(element)
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


def _helpers(
    body: list[ast.AST],
    callees: Callees,
    files: FileIndex,
    holder: Optional[Function] = None,
    depth: int = 2,
) -> list[Function]:
    """Functions of the file a step runs: called from the loop body (`step(model, batch)`,
    `self.training_step(batch)`, `metric.add(loss)` on an instance of a class of the
    file) or handed to a call (`optimizer.step(closure)`), followed two calls deep. Not
    `holder` (the function holding the step loop) nor a function calling it: that one is
    the epoch loop around the step loop (`train()` calling `self.train_epoch(data)` then
    `self.valid_epoch(data)`), so what it and its other callees do runs once an epoch.
    `depth` calls deep for a step spread over helpers (`_through_helpers`)."""
    found: list[Function] = []
    todo = list(body)
    for _ in range(depth):
        more: list[ast.AST] = []
        for node in todo:
            functions: list[Optional[Function]] = []
            if isinstance(node, ast.Call):
                functions.append(callees.function(node))
                names = [a.id for a in node.args if isinstance(a, ast.Name)]
                functions += [files.functions.get(name) for name in names]
            for function in functions:
                if function is None or function in found:
                    continue
                if holder is not None and _drives(function, holder, callees):
                    continue
                found.append(function)
                more.extend(own_nodes(function))
        todo = more
    return found


def _drives(function: Function, holder: Function, callees: Callees) -> bool:
    """`function` is `holder` or calls it: it runs the step loop, it does not run in it."""
    return function is holder or any(
        isinstance(n, ast.Call) and callees.function(n) is holder for n in own_nodes(function)
    )


def _trains(body: list[ast.AST]) -> bool:
    """A loop whose body (its nodes) runs a backward pass: `loss.backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)`."""
    return any(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr in ("backward", "manual_backward"))
            or hidden_backward(n)
        )
        for n in body
    )


def _steps_itself(loop: Loop, helpers: list[Function], loaders: _Loaders) -> Optional[str]:
    """What a loop over no known DataLoader iterates, when it is a training step loop all
    the same: the backward pass in its own body (not in a loop nested in it), or in a
    helper it calls that has no loop of its own (an epoch loop calling train() is not a
    step loop), or in a gradient-accumulation loop nested in it while the optimizer step
    is in its own body (see `_accumulates_inside`). None otherwise."""
    own = [n for statement in loop.body for n in _outside_loops(statement)]
    direct = _direct_helpers(own, helpers) + _handed_closures(loop, own, helpers)
    trains = _trains(own) or any(_runs_backward(h, helpers) for h in direct)
    if not trains and not _accumulates_inside(own, helpers, loaders):
        return None
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return _short(loop.iter)
    return f"while {_short(loop.test)}"


def _handed_closures(loop: Loop, own: list[ast.AST], helpers: list[Function]) -> list[Function]:
    """The helpers the loop body defines and hands to a call of its own (ijepa's `def
    train_step(): ...` then `gpu_timer(train_step)`): the call runs them in this step."""
    defined = {id(s) for s in loop.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    handed = {
        a.id for c in own if isinstance(c, ast.Call) for a in c.args if isinstance(a, ast.Name)
    }
    return [h for h in helpers if id(h) in defined and h.name in handed]


def _spread(loop: Loop, helpers: list[Function]) -> bool:
    """A step loop whose optimizer step is not in its own body nor in the helpers it
    calls directly, but deeper (`_through_helpers`)."""
    own = [n for statement in loop.body for n in _outside_loops(statement)]
    near = own + [n for h in _direct_helpers(own, helpers) for n in _outside_own_loops(h)]
    return not any(_optimizer_step(n) for n in near)


def _direct_helpers(own: list[ast.AST], helpers: list[Function]) -> list[Function]:
    """The helpers called by name (`train_step(...)`, `self.train_step(...)`) in `own`."""
    called = {c.func.id for c in own if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    called |= {
        c.func.attr for c in own if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
    }
    return [h for h in helpers if h.name in called]


def _accumulates_inside(own: list[ast.AST], helpers: list[Function], loaders: _Loaders) -> bool:
    """nanoGPT's and llm.c's step: `for step in range(N):` whose own body runs the
    optimizer step after `for micro_step in range(grad_accum_steps): ... loss.backward()`.
    Each pass of the outer loop is one optimizer step, so what its body does (a
    `torch.cuda.synchronize()`, `print(loss_accum.item())`) runs every step. Not when a
    nested loop updates the weights itself (the outer loop is then an epoch loop) or
    iterates a DataLoader (a pass over the data with one update at its end: that loop is
    the step loop)."""
    own = _through_helpers(own, helpers)
    if not any(_optimizer_step(n) for n in own):
        return False
    nested = [n for n in own if isinstance(n, LOOPS)]
    for inner in nested:
        nodes = list(own_nodes(inner))
        # the helpers it calls too (`train_minibatch(...)` stepping the optimizer)
        nodes += [n for h in _direct_helpers(nodes, helpers) for n in own_nodes(h)]
        if any(_optimizer_step(n) for n in nodes):
            return False
        if isinstance(inner, (ast.For, ast.AsyncFor)) and loaders.iterated(inner.iter):
            return False
        if loaders.stepped(inner) is not None:
            return False
    return any(
        _trains(list(own_nodes(inner)))
        or any(
            _trains(_outside_own_loops(h))
            for h in _direct_helpers([n for s in inner.body for n in _outside_loops(s)], helpers)
        )
        for inner in nested
    )


def _through_helpers(own: list[ast.AST], helpers: list[Function]) -> list[ast.AST]:
    """`own` with the nodes, outside their loops, of the helpers it calls by name, and
    of those they call in turn: improved-diffusion's `while ...: self.run_step(batch)`,
    whose `run_step` calls `forward_backward` (a micro-batch loop running backward) then
    `optimize_normal` (the optimizer step), is one optimizer step per pass, as if the
    helpers' statements were written in the loop."""
    found = list(own)
    todo = own
    done: set[int] = set()
    for _ in range(ACCUMULATING_DEPTH):
        more: list[ast.AST] = []
        for helper in _direct_helpers(todo, helpers):
            if id(helper) not in done:
                done.add(id(helper))
                more += _outside_own_loops(helper)
        found += more
        todo = more
    return found


# how many calls deep a loop's helpers are read as its own statements (_through_helpers)
ACCUMULATING_DEPTH = 3

# A field holding a boolean mask (PyG's `train_mask`, `val_mask`; `mask`)
MASK_FIELD = re.compile(r"(^|_)mask$")


@functools.lru_cache(maxsize=32)
def _augmented_targets(owner: ast.AST) -> frozenset[int]:
    """The subscripts an augmented assignment of `owner` updates (`l[mask] -= 1`), read
    before they are written (cached: asked for each subscript of the owner)."""
    return frozenset(
        id(node.target)
        for node in ast.walk(owner)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript)
    )


LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _runs_backward(helper: Function, helpers: list[Function]) -> bool:
    """The helper runs a backward pass outside its loops, itself or in a function it
    defines and calls there (mace's `take_step`: `def closure(): ... loss.backward()`,
    then `loss = closure()`, the closure an optimizer like LBFGS would call again)."""
    nodes = _outside_own_loops(helper)
    if _trains(nodes):
        return True
    defined = {id(n) for n in nodes if isinstance(n, FUNCTIONS)}
    return any(id(h) in defined and _trains(_outside_own_loops(h)) for h in helpers)


def _outside_own_loops(function: Function) -> list[ast.AST]:
    """A function's nodes outside its loops: a helper whose backward pass is there runs
    one step per call (a loop over its parameters does not make it an epoch)."""
    return [n for statement in function.body for n in _outside_loops(statement)]


def _optimizer_step(node: ast.AST) -> bool:
    """`optimizer.step()`, `scaler.step(optimizer)`, `self.optimizer_step()`,
    `self.optimizers_step()`: the weights are updated (not `scheduler.step()`)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    attr = node.func.attr
    if attr in ("optimizer_step", "optimizers_step"):
        return True
    texts = [text(node.func.value), *(text(a) for a in node.args)]
    if attr != "step":
        return False
    return any("optim" in t.lower() or _short_optimizer(t) for t in texts)


def _short_optimizer(name: str) -> bool:
    """`self.GAN.D_opt`, `opt_g`, `optG`, `opt`: an optimizer by its usual abbreviation."""
    last = name.rsplit(".", 1)[-1]
    return bool(re.fullmatch(r"opt(_\w*|[A-Z]\w*)?|\w*_opt", last, flags=re.IGNORECASE))


def _updates_weights(body: list[ast.stmt]) -> bool:
    """A block holding the optimizer step (`if (i + 1) % accumulation == 0:
    optimizer.step()`): it runs at every optimizer step, it is no periodic log."""
    return any(_optimizer_step(n) for statement in body for n in [statement, *own_nodes(statement)])


AMP_CALLS = ("autocast", "GradScaler")


def _mixed_precision(body: list[ast.stmt]) -> bool:
    """A block that runs the step in mixed precision (`with torch.autocast(...)`,
    `scaler.scale(loss)`): behind an opt-in flag it is still the path EC507 advises."""
    for statement in body:
        for node in [statement, *own_nodes(statement)]:
            if not isinstance(node, ast.Call):
                continue
            name = dotted(node.func) or ""
            if name.rsplit(".", 1)[-1] in AMP_CALLS or name.endswith("scaler.scale"):
                return True
    return False


# the words of a flag choosing mixed precision (`self.use_fp16`, `hps.train.fp16_run`)
PRECISION_WORDS = frozenset({"fp16", "bf16", "amp", "half"})


def _precision_flag(test: ast.expr) -> bool:
    """`if self.use_fp16:`, `if args.amp:`: a flag naming mixed precision, whose branch
    is the path EC507 advises (a hand-rolled one: master weights, loss scaling) however
    it is written."""
    name = _last(test) if isinstance(test, (ast.Name, ast.Attribute)) else ""
    words = set(name.lower().split("_"))
    return bool(words & PRECISION_WORDS) or {"mixed", "precision"} <= words


def _scalers(walker: Walker) -> set[str]:
    """Names assigned a GradScaler that is not disabled by default (`GradScaler()`, not
    `GradScaler(enabled=use_amp)` with use_amp False): its get_scale() calls .item()."""
    found: set[str] = set()
    owners: list[Optional[Function]] = [None, *walker.index().function_nodes]
    for owner in owners:
        nodes = own_nodes(owner if owner is not None else walker.module)
        for node in nodes:
            if not isinstance(node, ast.Assign):
                continue
            value = node.value  # `GradScaler() if use_amp else None`: the scaler branch
            made = [v for v in _branches(value) if isinstance(v, ast.Call)]
            made = [c for c in made if (walker.qualname(c.func) or "").endswith("GradScaler")]
            if not made:
                continue
            enabled = keyword_arg(made[0], "enabled")
            if enabled is not None and _false_by_default(enabled, walker, owner):
                continue
            found.update(t for t in map(dotted, node.targets) if t is not None)
    return found


def _branches(value: ast.expr) -> list[ast.expr]:
    if isinstance(value, ast.IfExp):
        return [*_branches(value.body), *_branches(value.orelse)]
    return [value]


def _false_by_default(node: ast.expr, walker: Walker, owner: Optional[Function]) -> bool:
    """`use_amp` or `use_amp and cuda` where use_amp defaults to False (a parameter's
    default, an argparse default, a constant)."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return any(_false_by_default(v, walker, owner) for v in node.values)
    if isinstance(node, ast.Name) and owner is not None:
        for argument, default in parameter_defaults(owner):
            if argument.arg == node.id and default is not None:
                return isinstance(default, ast.Constant) and default.value is False
    value = resolve(node, walker.scope_of(owner))
    return value.known and value.value is False


def _step_functions(candidates: list[Function], read: set[int]) -> list[Function]:
    """Functions that are one training step by themselves, called from outside the file
    (a framework's per-iteration callback: Ignite's `_iteration`, a trainer's
    `_train_batch`): a backward pass and an optimizer step outside any loop of theirs.
    Those already read as part of a step loop (`read`) are left out."""
    found = []
    for function in sorted(candidates, key=lambda f: f.lineno):
        if id(function) in read:
            continue
        outside = _outside_own_loops(function)
        if _trains(outside) and any(_optimizer_step(n) for n in outside):
            found.append(function)
    return found


def _accumulating_steps(
    functions: list[Function], skip: set[int], callees: Callees, files: FileIndex
) -> list[Function]:
    """Functions the file never calls that run one training step with the optimizer step
    outside any loop of theirs and the backward pass in a loop of theirs (gradient
    accumulation) or in a helper (`backwards = partial(loss_backwards, fp16)`): a
    trainer's `train(self)` that a command line calls once per step. Those with a step
    loop over a loader of their own, or read already (`skip`), are left out."""
    found = []
    for function in sorted(functions, key=lambda f: f.lineno):
        if id(function) in skip or callees.calls_of(function) != 0:
            continue
        if not any(_optimizer_step(n) for n in _outside_own_loops(function)):
            continue
        body = list(own_nodes(function))
        helpers = _helpers(body, callees, files)
        if _trains(body) or any(_trains(list(own_nodes(h))) for h in helpers):
            found.append(function)
    return found


def _step_callers(
    steps: list[Function], functions: list[Function], callees: Callees, read: set[int]
) -> list[Function]:
    """Each step function, or the function of the file that is its only caller and runs
    it once, outside any loop of its own (a task's `train_step(self)` that computes the
    loss, logs `loss.item()` and hands the loss to `self.run_optimizer(loss)`): the
    framework calls that one every batch, so all of it is the step. Up a few levels."""
    found: list[Function] = []
    for step in steps:
        current = step
        for _ in range(3):
            if callees.calls_of(current) != 1:
                break
            callers = [
                f
                for f in functions
                if f is not current
                and any(
                    isinstance(n, ast.Call) and callees.function(n) is current
                    for n in _outside_own_loops(f)
                )
            ]
            if len(callers) != 1 or id(callers[0]) in read:
                break
            current = callers[0]
        if all(current is not f for f in found):
            found.append(current)
    return found


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
    return any(modulus(n) for n in ast.walk(test))


def modulus(node: ast.AST) -> bool:
    """`step % 100` (not the string formatting `"%d" % x`)."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str))
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
        and dotted(last.value.func) in EXITS
    )


def _breaks(body: list[ast.stmt]) -> bool:
    """A block whose last statement is `break`: taken once, it ends the loop."""
    return bool(body) and isinstance(body[-1], ast.Break)


def _loop_level_ifs(body: list[ast.stmt]) -> set[int]:
    """The `if` statements of a loop body whose `break` ends that loop (not an inner one)."""
    found: set[int] = set()
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.If):
            found.add(id(node))
        todo.extend(
            n
            for n in ast.iter_child_nodes(node)
            if isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case))
        )
    return found


NONFINITE = ("isnan", "isinf")


def _nonfinite_guard(test: ast.expr) -> bool:
    """`if torch.isnan(loss):`, `if not torch.isfinite(norm):`, `if loss.isinf().any():`:
    a branch taken only when a value went bad."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inside = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    wanted = ("isfinite",) if negated else NONFINITE
    return any(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr in wanted)
            or (isinstance(n.func, ast.Name) and n.func.id in wanted)
        )
        for n in ast.walk(inside)
    )


def once_test(test: ast.expr, tensor: Callable[[ast.expr], bool] = lambda _: False) -> bool:
    """`if step == 0:`, `if epoch == 0 and i == 0:`: a counter compared with a number (not
    `rank == 0`, the main process, which runs every step, nor a size or a device tensor,
    `x.shape[0] == 1`, `counts[-1] == 0`, tested every step: `tensor` tells those)."""
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
        and not any(
            _process_index(side) or _size(side) or tensor(side)
            for side in (n.left, n.comparators[0])
        )
        for n in ast.walk(test)
    )


SIZES = ("shape", "size", "numel", "ndim", "dim", "len")


def _size(node: ast.expr) -> bool:
    """`x.shape[0]`, `x.size(0)`, `len(batch)`: a size, not a step counter."""
    return any(
        (isinstance(n, ast.Attribute) and n.attr in SIZES)
        or (isinstance(n, ast.Name) and n.id == "len")
        for n in ast.walk(node)
    )


def _targets(node: Union[ast.Assign, ast.AnnAssign, ast.AugAssign]) -> list[ast.expr]:
    """What an assignment sets."""
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _process_index(node: ast.expr) -> bool:
    """`rank`, `args.local_rank`, `dist.get_rank()`: which process, not which step."""
    return "rank" in text(node).lower()


# -- one training step loop ----------------------------------------------------------------


class _StepLoop:
    def __init__(
        self,
        walker: Walker,
        loop: Union[Loop, Function],
        loader: str,
        loaders: _Loaders,
        seen: set[Any],
        function: Optional[Function],
        body: list[ast.AST],
        helpers: list[Function],
        callees: Callees,
        on_device: tuple[tuple[ast.AST, str], ...] = (),
    ):
        self.walker = walker
        self.loop = loop
        self.loader = loader
        self.loaders = loaders
        self.seen = seen
        self.function = function
        self.helpers = {id(h): h for h in helpers or []}
        self.callees = callees
        self.followed: set[Any] = set()  # helpers read, or (helper, call) for shared ones
        nodes = [*body, *(n for h in helpers or [] for n in own_nodes(h))]
        # the statements around the loop too: `mloss = torch.zeros(3, device=device)`
        context = list(own_nodes(function if function is not None else walker.module))
        # a helper the loop body defines (`def train_step(): ...` handed to a runner) has
        # its own names: not those of the function holding the loop
        in_body = {id(n) for n in body}
        nested = {id(n) for h in helpers or [] if id(h) in in_body for n in own_nodes(h)}
        own_body = [n for n in body if id(n) not in nested] if nested else body
        groups: list[tuple[Optional[ast.AST], list[ast.AST]]] = [(function, own_body)]
        groups += [(h, list(own_nodes(h))) for h in helpers or []]
        modules = frozenset([*walker.aliases, *self.callees.itself])
        self.tensors = DeviceTensors(
            groups,
            walker.qualname,
            self.callees.function,
            (function, context),
            modules,
            on_device,
            _held_objects(walker.module),
            self._host_result,
        )
        self.via: Optional[tuple[ast.Call, str]] = None  # the step's call of a shared helper
        self.reading_helper = False
        self.scalers: set[str] = set()  # set by the caller, once per file: see _scalers
        self.flags = {  # names holding a periodic or once-only condition
            t.id
            for n in nodes
            if isinstance(n, ast.Assign) and (periodic_test(n.value) or once_test(n.value))
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        self.to_host = host_bound_names([*body, *(helpers or [])])
        self.body_names: Optional[tuple[set[str], set[str]]] = None  # see _body_names
        self.found: list[dict[str, Any]] = []
        self.masks: dict[int, dict[str, ast.expr]] = {}  # per function: name -> mask value
        self.place = 0  # first line of the statement being read: one finding per place
        self.loop_ifs = (
            _loop_level_ifs(loop.body)
            if isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
            else set()
        )

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
            every_n = self._every_n(statement.test) or self._periodic_flag(statement.test)
            # `if (i + 1) % accumulation == 0: optimizer.step()` is every optimizer step,
            # unless the step updates the weights outside it too (a lazy regulariser)
            accumulates = (
                every_n
                and _updates_weights(statement.body)
                and not self._updates_elsewhere(statement)
            )
            # `i % n == 0` is no `i == 0`
            once = not periodic_test(statement.test) and once_test(
                statement.test, lambda side: self._tensor(side) or _indexed_element(side, inner)
            )
            once = once or self._lazy_init(statement) or self._latch(statement)
            once = once or self._throttle(statement)
            seldom = periodic or (every_n and not accumulates) or once
            self._expression(statement.test, inner, seldom)
            self._truth(statement.test, inner, seldom)
            if self._optional_output(statement.test) or self._optional_key(statement.test):
                # `reg = outputs.get("reg_loss")` ... `if reg is not None:`: an optional
                # output of code out of sight, absent unless the caller's model returns it
                self._block(statement.orelse, inner, periodic)
                return
            if _evaluation_test(statement.test):
                # `elif self._model_state == ModelState.VALID:` in a method the training
                # step shares with evaluation, `if phase == "valid":` in a loop over
                # ["train", "valid"] phases: not the training step's path
                self._block(statement.orelse, inner, periodic)
                return
            if _stop_protocol(statement) and not self._on_by_default(statement.test):
                # `if distributed: all_reduce(done); if done.item() > 0: break`: the
                # uneven-input stop protocol of a multi-process run the file does not
                # choose by default
                self._block(statement.orelse, inner, periodic)
                return
            mixed = _mixed_precision(statement.body) or _precision_flag(statement.test)
            if self._off_by_default(statement.test) and not mixed:
                # `if args.synchronize_step:`; the AMP path EC507 recommends is read
                self._block(statement.orelse, inner, periodic)
                return
            # a branch that ends the run (`sys.exit(1)`, `raise`) is the error path, one
            # that ends the step loop (`break`) runs once, one taken on a non-finite value
            # (`if not torch.isfinite(norm): logging.warning(...)`) only on a bad step
            rare = _leaves(statement.body) or _nonfinite_guard(statement.test)
            rare = rare or (id(statement) in self.loop_ifs and _breaks(statement.body))
            self._block(statement.body, inner, seldom or rare)
            if not (statement.orelse and self._on_by_default(statement.test)):
                # the `else` of `if not args.disable_dp:` is the opt-out path: not run
                self._block(statement.orelse, inner, periodic)
            return
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            self._expression(statement.iter, inner, periodic)
            if _user_callbacks(statement, self.walker.module):
                return
            per_element = self._per_element(statement)
            self._block(statement.body, [*inner, statement] if per_element else inner, periodic)
            self._block(statement.orelse, inner, periodic)
            return
        if isinstance(statement, ast.While):
            self._expression(statement.test, inner, periodic)
            self._truth(statement.test, inner, periodic)
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

    def _updates_weights_in(self) -> list[ast.stmt]:
        return self.function.body if self.reading_helper and self.function else self.loop.body

    def _updates_elsewhere(self, branch: ast.If) -> bool:
        """An optimizer step of every step outside `branch` (not under another periodic
        branch): `branch` then adds an occasional one (a lazy regulariser)."""
        todo: list[ast.AST] = list(self._updates_weights_in())
        while todo:
            node = todo.pop()
            if node is branch or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, ast.If) and (
                self._every_n(node.test) or self._periodic_flag(node.test)
            ):
                todo.extend(node.orelse)
                continue
            if _optimizer_step(node):
                return True
            todo.extend(ast.iter_child_nodes(node))
        return False

    def _truth(self, test: ast.expr, inner: list[ForLoop], periodic: bool) -> None:
        """`if not torch.isfinite(loss):`, `if norm > theta:`: bool() of a device tensor
        waits for its value."""
        if periodic or self._key(test) in self.seen or not self._tests_tensor(test):
            return
        self.seen.add(self._key(test))
        outer = self.place
        if self.via is None:
            self.place = test.lineno
        self.found.append(self._record(test, "host_sync", _short(test), "tests a tensor's value"))
        self.place = outer

    def _tests_tensor(self, test: ast.expr) -> bool:
        """A comparison or a call giving a tensor (`norm > theta`, `torch.isfinite(x)`,
        `loss.isnan().any()`); not a bare name, which may hold a tuple of tensors."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._tests_tensor(test.operand)
        if isinstance(test, ast.BoolOp):
            return any(self._tests_tensor(v) for v in test.values)
        element = _any_or_all(test, self.walker.index().functions)
        if element is not None:
            # `any(torch.isnan(l) for l in (g_loss, d_loss))` takes bool() of each element
            return self._tests_tensor(element)
        return isinstance(test, (ast.Compare, ast.Call)) and self._tensor(test)

    def _lazy_init(self, branch: ast.If) -> bool:
        """`if self.values is None: self._estimate_values()`: the branch sets what it
        tests (itself or in a function of the file it calls), so only the first step
        takes it: a lazy one-off stage, not per-step work."""
        test = branch.test
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            return False
        name = dotted(test.left)
        if name is None:
            return False
        nodes = [n for statement in branch.body for n in ast.walk(statement)]
        nodes += [
            n
            for call in nodes
            if isinstance(call, ast.Call)
            for function in [self.callees.function(call)]
            if function is not None
            for n in own_nodes(function)
        ]
        return any(
            isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            and any(dotted(t) == name for t in _targets(n))
            for n in nodes
        )

    def _latch(self, branch: ast.If) -> bool:
        """`if not self.logged_images:` (alone or a conjunct of an `and`) whose body sets
        `self.logged_images = True`: the test is false from then on, so the branch runs at
        most once."""
        test = branch.test
        parts = (
            test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        )
        names = {
            dotted(part.operand)
            for part in parts
            if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not)
        } - {None}
        return any(
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and bool(node.value.value)
            and any(dotted(t) in names for t in node.targets)
            for statement in branch.body
            for node in [statement, *own_nodes(statement)]
        )

    def _throttle(self, branch: ast.If) -> bool:
        """`if now - last_logging > 60:` whose body sets `last_logging = now`, `now` a
        clock reading (`time.time()`, `time.perf_counter()`): taken once per interval of
        wall time, a periodic log like `if step % 100 == 0:`."""
        reset = {
            dotted(t)
            for statement in branch.body
            for node in [statement, *own_nodes(statement)]
            if isinstance(node, ast.Assign)
            for t in node.targets
        } - {None}
        for compare in ast.walk(branch.test):
            if not isinstance(compare, ast.Compare) or len(compare.ops) != 1:
                continue
            op = compare.ops[0]
            elapsed = (
                compare.left
                if isinstance(op, (ast.Gt, ast.GtE))
                else compare.comparators[0]
                if isinstance(op, (ast.Lt, ast.LtE))
                else None
            )
            if not (isinstance(elapsed, ast.BinOp) and isinstance(elapsed.op, ast.Sub)):
                continue
            names = {dotted(n) for n in (elapsed.left, elapsed.right)} - {None}
            if names & reset and any(self._clock(side) for side in (elapsed.left, elapsed.right)):
                return True
        return False

    def _clock(self, node: ast.expr) -> bool:
        """`time.time()`, or a name the step's function (or the module) assigns one."""
        if isinstance(node, ast.Call):
            return (self.walker.qualname(node.func) or "") in CLOCKS
        if not isinstance(node, ast.Name):
            return False
        scope: ast.AST = self.function if self.function is not None else self.walker.module
        return any(
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and (self.walker.qualname(n.value.func) or "") in CLOCKS
            and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets)
            for n in own_nodes(scope)
        )

    def _periodic_flag(self, test: ast.expr) -> bool:
        """`if regularize:` where `regularize = i % n == 0` (or `== 0`) in the step."""
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        return bool(names & self.flags)

    def _optional_output(self, test: ast.expr) -> bool:
        """`if x is not None:` (alone or first in an `and`) where the step's function
        sets `x = d.get("key")` with no default, and otherwise only from `x` or to None."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            test = test.values[0]
        if not (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.IsNot)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            return False
        name = test.left.id
        scope: ast.AST = self.function if self.function is not None else self.walker.module
        values = [
            node.value
            for node in ast.walk(scope)
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ]
        gets = [
            v
            for v in values
            if isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and v.func.attr == "get"
            and len(v.args) == 1
            and not v.keywords
        ]
        # the other assignments only derive from it (`reg = reg / n`) or clear it
        others = [v for v in values if v not in gets]
        return bool(gets) and all(
            (isinstance(v, ast.Constant) and v.value is None)
            or any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(v))
            for v in others
        )

    def _optional_key(self, test: ast.expr) -> bool:
        """`if "z_variance" in out:` (alone or first in an `and`): a key of a dict of
        device tensors that no code of the file stores (`out[...] = `, a dict display,
        `dict(key=...)`), an optional output of code out of sight, present only when
        that code chooses."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            test = test.values[0]
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.In)
            and isinstance(test.left, ast.Constant)
            and isinstance(test.left.value, str)
            and isinstance(test.comparators[0], (ast.Name, ast.Attribute, ast.Subscript))
        ):
            return False
        # of device tensors: `"weight" in name` of a parameter's name is a substring test
        held = test.comparators[0]
        scope: ast.AST = self.function if self.function is not None else self.walker.module
        looped = {
            n.id
            for node in ast.walk(scope)
            if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension))
            for n in ast.walk(node.target)
            if isinstance(n, ast.Name)
        }
        if (isinstance(held, ast.Name) and held.id in looped) or not self._tensor(held):
            return False
        return test.left.value not in _stored_keys(self.walker.module)

    def _every_n(self, test: ast.expr) -> bool:
        """A periodic test (`if step % log_interval == 0:`) whose period is not settled as
        1: `log_interval = 1` (a constant, an option's or a parameter's default) makes
        the branch run on every step."""
        if not periodic_test(test):
            return self._periodic_predicate(test)
        scope = self.walker.scope_of(self.function)
        for node in ast.walk(test):
            if isinstance(node, ast.BinOp) and modulus(node):
                period = resolve(node.right, scope)
                if not period.known:
                    period = handed_value(self.walker, self.function, node.right) or period
                if not (period.known and period.value == 1) or self._overridden(node.right):
                    return True
        return False

    def _periodic_predicate(self, test: ast.expr) -> bool:
        """`if should_run_eval(total_steps, 2, step):` (alone or in an `and`) where the
        file's function returns only periodic tests (`return step % (total // times) ==
        0`), none with a period settled as 1 in its own scope."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self._periodic_predicate(v) for v in test.values)
        if not isinstance(test, ast.Call):
            return False
        helper = self.callees.function(test)
        if helper is None:
            return False
        returns = [n.value for n in own_nodes(helper) if isinstance(n, ast.Return)]
        values = [v for v in returns if v is not None and periodic_test(v)]
        if not values or len(values) != len(returns):
            return False
        scope = self.walker.scope_of(helper)
        for value in values:
            for node in ast.walk(value):  # `return step % 1 == 0` is every step
                if isinstance(node, ast.BinOp) and modulus(node):
                    period = resolve(node.right, scope)
                    if period.known and period.value == 1:
                        return False
        return True

    def _overridden(self, period: ast.expr) -> bool:
        """`log_interval` set at module level in a file that then runs `exec(...)` at
        module level (nanoGPT's `exec(open('configurator.py').read())`, "overrides from
        command line or config file"): the exec may rebind any global, so a period of 1
        there is a default the run's config replaces, not a settled every-step log."""
        module = self.walker.module
        if not any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "exec"
            for n in own_nodes(module)
        ):
            return False
        names = {n.id for n in ast.walk(period) if isinstance(n, ast.Name)}
        return any(
            isinstance(statement, (ast.Assign, ast.AnnAssign))
            and any(isinstance(t, ast.Name) and t.id in names for t in _targets(statement))
            for statement in module.body
        )

    def _on_by_default(self, test: ast.expr) -> bool:
        value = resolve(test, self.walker.scope_of(self.function))
        return value.known and value.value is True

    def _off_by_default(self, test: ast.expr) -> bool:
        """A condition the source settles as false in a default run: an opt-in flag
        (`if args.synchronize_step:`), an int option defaulting to 0 as well (`if
        self.visdom_epoch and not cross_valid:`, `--visdom_epoch` default 0 in the entry
        point's parser) or "" as well; not None, which an attribute the file sets later
        holds at first (`self.writer = None` in `__init__`)."""
        value = resolve(test, self.walker.scope_of(self.function))
        found = value.value
        return value.known and isinstance(found, (bool, int, float, str)) and not found

    def _per_element(self, loop: ForLoop) -> bool:
        """An inner loop over the elements of something (samples of the batch), not over
        a dict's fields, a literal tuple of tensors, or another DataLoader."""
        return self._element_walk(loop.iter) and not _chunk_walk(loop)

    def _comprehended(self, call: ast.Call) -> Optional[ast.comprehension]:
        """The generator of the comprehension whose element `call` copies to the device,
        one element at a time, when it walks the elements of something:
        `[idx.cuda() for idx in input[3]]` (cgcnn: one index tensor per crystal, 256
        copies a step): a comprehension over one item of something. Not `[t.cuda() for t
        in batch]` or `batch[1:]` (the step's batch, a tuple of fields perhaps, as in `for
        x, y in loader`), nor a dict's fields."""
        generator = _comprehensions(self.walker.module).get(id(call))
        if generator is None or not isinstance(call.func, ast.Attribute):
            return None
        targets = {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
        names = {n.id for n in ast.walk(call.func.value) if isinstance(n, ast.Name)}
        if not names & targets:
            return None
        iterable = unwrap_listing(generator.iter)
        if not isinstance(iterable, ast.Subscript) or isinstance(iterable.slice, ast.Slice):
            # `batch`, `batch[1:]`: the step's fields perhaps, each copied whole
            return None
        return generator if self._element_walk(iterable) else None

    def _element_walk(self, iterable: ast.expr) -> bool:
        iterable = unwrap_listing(iterable)
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
            return False
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Attribute)
            and iterable.func.attr in FIELD_ITERATORS
        ):
            return False
        if self._field_walk(iterable):
            return False
        return self.loaders.iterated(iterable) is None

    def _field_walk(self, iterable: ast.expr) -> bool:
        """`for i in range(len(data)): data[i] = data[i].cuda()` where `data` is what the
        step loop yields, whole, and the step reads it by position (`label = data[0]`,
        `args = data[1:]`): a list of the batch's fields (label, token ids, masks), one
        copy per field, not per sample."""
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "range"
            and len(iterable.args) == 1
        ):
            iterable = iterable.args[0]
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "len"
            and len(iterable.args) == 1
        ):
            iterable = iterable.args[0]
        if not isinstance(iterable, ast.Name) or not isinstance(self.loop, (ast.For, ast.AsyncFor)):
            return False
        target, batches = self.loop.target, self.loop.iter
        if (
            isinstance(target, ast.Tuple)
            and len(target.elts) == 2
            and isinstance(batches, ast.Call)
            and isinstance(batches.func, ast.Name)
            and batches.func.id == "enumerate"
        ):
            target = target.elts[1]  # `for step, data in enumerate(loader)`
        if not isinstance(target, ast.Name) or target.id != iterable.id:
            return False
        return any(
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
            and node.value.id == iterable.id
            and _position(node.slice)
            for statement in self.loop.body
            for node in ast.walk(statement)
        )

    def _expression(self, root: ast.AST, inner: list[ForLoop], periodic: bool) -> None:
        if periodic:
            return
        outer = self.place
        if self.via is None:
            self.place = getattr(root, "lineno", 0)
        self._nodes(root, inner)
        self.place = outer

    def _key(self, node: ast.AST) -> Any:
        """What `seen` holds for a node: a shared helper's node once per call site."""
        return (id(self.via[0]), id(node)) if self.via is not None else id(node)

    def _nodes(self, root: ast.AST, inner: list[ForLoop]) -> None:
        if isinstance(root, ast.Assert) and self._tensor_test(root.test):
            if self._key(root) not in self.seen:
                self.seen.add(self._key(root))
                self.seen.update(self._key(n) for n in own_nodes(root))
                self.found.append(
                    self._record(root, "host_sync", _short(root), "checks a tensor's value")
                )
            return
        if isinstance(root, (ast.Assign, ast.AnnAssign)) and root.value is not None:
            targets = root.targets if isinstance(root, ast.Assign) else [root.target]
            if any(isinstance(t, ast.Name) and t.id in self.to_host for t in targets):
                # `action = q(obs).argmax(-1).cpu().numpy()` ... `env.step(action)`: the
                # value must reach the host every step, so the copy is no sync to avoid
                self.seen.update(self._key(n) for n in ast.walk(root.value))
        for node in [root, *own_nodes(root)]:
            if self._key(node) in self.seen:
                continue
            record: Optional[dict[str, Any]] = None
            if isinstance(node, ast.Call):
                for required in self._host_arguments(node):
                    # pack_padded_sequence wants its lengths on the CPU: no copy to avoid
                    self.seen.update(self._key(n) for n in ast.walk(required))
                record = self._call(node, inner) or self._elsewhere(node)
                self._follow(node)
                self._handed_lambdas(node, inner)
            elif self._formats_tensor(node):
                record = self._record(node, "host_sync", _short(node), "formats a tensor")
            elif self._masked(node):
                record = self._record(
                    node, "host_sync", _short(node), "indexes with a boolean mask tensor"
                )
            elif self._device_bound(node):
                record = self._record(
                    node, "host_sync", _short(node), "slices with a device tensor as a bound"
                )
            if record is not None:
                self.seen.add(self._key(node))
                self.found.append(record)

    def _handed_lambdas(self, call: ast.Call, inner: list[ForLoop]) -> None:
        """`apply_to_collection(out, Tensor, lambda t: t.item())`, `tree_map(lambda t:
        t.item(), out)`: the call runs the lambda it is handed, here, so a sync in its
        body is one of this statement."""
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(argument, ast.Lambda):
                self._nodes(argument.body, inner)

    def _host_arguments(self, call: ast.Call) -> list[ast.expr]:
        """Arguments a call requires on the CPU (`pack_padded_sequence(x, lengths=
        lengths.cpu())`: "must be on the CPU if provided as a tensor")."""
        if host_consumer(call):
            return [*call.args, *(k.value for k in call.keywords)]
        name = self.walker.qualname(call.func) or ""
        if not name.endswith(("pack_padded_sequence", "pack_sequence")):
            return []
        found = [k.value for k in call.keywords if k.arg == "lengths"]
        return found or call.args[1:2]

    def _follow(self, call: ast.Call) -> None:
        """Read a helper of the file the step calls (`step(model, batch)`, a closure
        handed to `optimizer.step`): its syncs run every step too."""
        functions = self.walker.index().functions
        targets = [self.callees.function(call)]
        targets += [functions.get(a.id) for a in call.args if isinstance(a, ast.Name)]
        for target in targets:
            helper = self.helpers.get(id(target))
            if helper is None:
                continue
            shared = self.via is None and self.callees.calls_of(helper) > max(
                1, self._calls_in_scope(helper)
            )
            shared = shared and not _own_method(call)
            # a shared helper's syncs are reported at each call of the step (`t1 =
            # time_wrap()` ... `t2 = time_wrap()` wait twice); one read in place, once
            key = (id(helper), id(call)) if shared else id(helper)
            if key in self.followed:
                continue
            self.followed.add(key)
            outer, self.function = self.function, helper
            reading, self.reading_helper = self.reading_helper, True
            via = self.via
            if shared:
                # a utility shared with other code (`metric.add(loss)`, `accuracy(pred, y)`):
                # its syncs are reported where this step calls it; one called only here
                # (twice: `with model.no_sync(): step(batch)` / `else: step(batch)`), or a
                # method of the trainer itself (`self._update_loss(loss)`, also run by
                # evaluation), is read in place: the sync statement is the thing to change
                self.via = (call, helper.name)
            self._block(helper.body, [], periodic=False)
            self.function, self.via, self.reading_helper = outer, via, reading

    def _elsewhere(self, call: ast.Call) -> Optional[dict[str, Any]]:
        """A call of a function another file of the run defines (`commons.clip_grad_value_(
        net_d.parameters(), None)`, `accuracy(scores, targets, 5)` from `utils`) that reads
        a device tensor the step hands it on the host on every call (foreign_helpers.py):
        a sync of this statement, reported here."""
        find = self.walker.function_elsewhere
        if find is None or self.callees.function(call) is not None:
            return None
        name = self.walker.qualname(call.func)
        foreign = find(name) if name is not None else None
        if foreign is None:
            foreign = self._method_elsewhere(call)
        if foreign is None:
            return None
        parameters = foreign.parameters(call)
        on_device = {
            parameters[index]
            for index, argument in enumerate(call.args)
            if index in parameters
            and (self._tensor(argument) or self._parameters_of(argument))
            and not self._maybe_none(argument)
        }
        for keyword in call.keywords:
            bound = foreign.keyword(keyword.arg) if keyword.arg else None
            tensor = self._tensor(keyword.value) and not self._maybe_none(keyword.value)
            if bound is not None and tensor:
                on_device.add(bound)
        found = foreign.first_sync(frozenset(on_device), enabled=foreign.enabled_flags(call))
        if found is None:
            return None
        shown, line, what, through = found
        if through:  # get_F1() -> get_sensitivity(): the function making the read
            what = f"{what} in {' -> '.join(f'{name}()' for name in through)}"
        return self._record(
            call, "host_sync", f"{_short(call.func)}()", f"{what} at {shown}:{line}"
        )

    def _host_result(self, call: ast.Call, tensor: Callable[[ast.expr], bool]) -> bool:
        """Whether `call` runs a function of another file of the run that reads the
        device tensors it is handed (`tensor` tells which arguments are) on the host and
        returns host values only (Foreign.returns_host): its results are no tensors."""
        find = self.walker.function_elsewhere
        if find is None or self.callees.function(call) is not None:
            return False
        name = self.walker.qualname(call.func)
        foreign = find(name) if name is not None else None
        if foreign is None:
            return False
        parameters = foreign.parameters(call)
        on_device = {
            parameters[index]
            for index, argument in enumerate(call.args)
            if index in parameters and tensor(argument)
        }
        for keyword in call.keywords:
            bound = foreign.keyword(keyword.arg) if keyword.arg else None
            if bound is not None and tensor(keyword.value):
                on_device.add(bound)
        return foreign.returns_host(frozenset(on_device))

    def _parameters_of(self, argument: ast.expr) -> bool:
        """`net.parameters()`, or apex's `amp.master_params(optimizer)` (the fp32 master
        copies of the weights amp keeps on the device): parameters whose gradients live
        on the device."""
        if _parameters_of(argument):
            return True
        return (
            isinstance(argument, ast.Call)
            and (self.walker.qualname(argument.func) or "") == "apex.amp.master_params"
        )

    def _maybe_none(self, argument: ast.expr) -> bool:
        """`class_acc` where the step's function also sets `class_acc = None` (in the
        branch not computing it): not surely a tensor when handed on, so a helper's sync
        on it is not one of every step."""
        owner = self.function if self.function is not None else self.walker.module
        return isinstance(argument, ast.Name) and any(
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and node.value.value is None
            and any(isinstance(t, ast.Name) and t.id == argument.id for t in node.targets)
            for node in own_nodes(owner)
        )

    def _method_elsewhere(self, call: ast.Call) -> Optional[Foreign]:
        """`metric_logger.update(...)`, `dice_loss(out, y)` where the file binds the name
        only to instances of a class another file of the run defines (`metric_logger =
        utils.MetricLogger()`): that method, or the instance's `__call__` / `forward`."""
        find = self.walker.method_elsewhere
        func = call.func
        methods: tuple[str, ...]
        if find is None:
            return None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            receiver, methods = func.value.id, (func.attr,)
        elif isinstance(func, ast.Name):
            receiver, methods = func.id, ("__call__", "forward")
        else:
            return None
        cls = self.walker.instances().get(receiver)
        if cls is not None:
            return find(cls, methods)
        return self._handed_method(receiver, methods)

    def _handed_method(self, receiver: str, methods: tuple[str, ...]) -> Optional[Foreign]:
        """`loss_scaler.state_dict()` where `loss_scaler` is a parameter of the step's
        top-level function: the method of the one class every call of that function
        hands it, in this file (`main()` building `NativeScaler()`) or in the files of
        the run importing it (handed_instances.py); None when that is not in sight."""
        function = self.function
        if function is None or self.walker.owner_class(function) is not None:
            return None
        if function not in self.walker.module.body:
            return None
        arguments = function.args
        positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
        keyword = [a.arg for a in arguments.kwonlyargs]
        if receiver not in positional and receiver not in keyword:
            return None
        position = positional.index(receiver) if receiver in positional else None
        name = function.name
        key = (id(function), receiver)
        classes: dict[tuple[int, str], Optional[str]] = self.walker.__dict__.setdefault(
            "_handed_classes", {}
        )
        if key not in classes:  # every call on the parameter in every step asks again
            classes[key] = handed_class(
                self.walker.module,
                lambda call: isinstance(call.func, ast.Name) and call.func.id == name,
                position,
                receiver,
                self.walker.qualname,
            )
        cls = classes[key]
        if cls is not None and self.walker.method_elsewhere is not None:
            return self.walker.method_elsewhere(cls, methods)
        handed = self.walker.handed_method_elsewhere
        return handed(name, position, receiver, methods) if handed is not None else None

    def _calls_in_scope(self, function: Function) -> int:
        """How many calls in the code being read (the loop, or the helper being read)
        run `function`."""
        scope = self.function if self.reading_helper and self.function else self.loop
        return sum(
            1
            for node in ast.walk(scope)
            if isinstance(node, ast.Call) and self.callees.function(node) is function
        )

    def _tensor_test(self, test: ast.expr) -> bool:
        """`assert torch.isfinite(loss)`, `assert not loss.isnan()`: bool() of a tensor
        (not `assert isinstance(x, dict)`)."""
        if self._tests_tensor(test):
            return True
        for node in ast.walk(test):
            name = self.walker.qualname(node.func) if isinstance(node, ast.Call) else None
            if name and name.startswith("torch.") and not torch_host_function(name):
                return True
        return False

    def _formats_tensor(self, node: ast.AST) -> bool:
        """f"{loss}", "%f" % loss, ("%11s" * 2 + "%11.4g" * 5) % (epoch, mem, *mloss)."""
        if isinstance(node, ast.JoinedStr):
            return any(
                isinstance(v, ast.FormattedValue) and self._tensor(v.value) for v in node.values
            )
        return (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and stringy(node.left)
            and self._tensor(node.right)
        )

    def _call(self, call: ast.Call, inner: list[ForLoop]) -> Optional[dict[str, Any]]:
        func = call.func
        if self.walker.qualname(func) == "torch.cuda.synchronize":
            return self._record(call, "host_sync", _short(call), "waits for the GPU")
        if self.walker.qualname(func) == "torch.cuda.empty_cache":
            what = "waits for the GPU (cudaFree of the cache the next step re-allocates)"
            return self._record(call, "host_sync", _short(call), what)
        if (
            isinstance(func, ast.Attribute)
            and func.attr in SCALE_READS
            and dotted(func.value) in self.scalers
        ):
            what = "reads the GradScaler's scale (an .item())"
            if func.attr != "get_scale":  # GradScaler.state_dict() calls get_scale()
                what = (
                    f"reads the GradScaler's scale (.{func.attr}() calls get_scale(): an .item())"
                )
            return self._method(call, "host_sync", what)
        if self.walker.qualname(func) in VALUE_TESTS and call.args and self._tensor(call.args[0]):
            return self._record(call, "host_sync", _short(call), "tests a tensor's value")
        sized = sized_by_tensor(call, self.walker.qualname, self._tensor)
        if sized is not None:
            what = f"uses a device tensor as a size ({sized}(): an .item())"
            return self._record(call, "host_sync", _short(call), what)
        if self._logged_tensor(call):
            what = f"{_short(call.func)}()"
            if isinstance(func, ast.Attribute) and func.attr in TENSORBOARD_ARRAYS:
                return self._record(call, "host_sync", what, "copies a tensor to the host")
            return self._record(call, "host_sync", what, "converts a tensor to a Python number")
        rendered = self.walker.qualname(func) == RENDERS_ON_HOST
        if rendered and call.args and self._tensor(call.args[0]):
            # `wandb.Image(grid)` renders a torch tensor with `.cpu().numpy()` on the spot
            return self._record(call, "host_sync", _short(call), "copies a tensor to the host")
        wrapper = host_wrapper(self.callees, call)
        if wrapper is not None and self._tensor(call.args[0]):
            return self._record(
                call, "host_sync", _short(call), f"copies a tensor to the host ({wrapper})"
            )
        default = self._default_host_read(call)
        if default is not None:
            return self._record(
                call, "host_sync", _short(call), f"copies a tensor to the host ({default})"
            )
        if isinstance(func, ast.Attribute):
            if (
                _sync_method(call)
                and not _numpy_chain(func.value, self.walker)
                and not self._module(func.value)
                and not self._on_host(func.value)
            ):
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
            generator = self._comprehended(call) if copy else None
            if generator is not None:
                record = self._method(call, "per_sample_copy", "copies one element")
                record["inner_loop_line"] = generator.iter.lineno
                record["inner_loop_code"] = (
                    f"for {ast.unparse(generator.target)} in {ast.unparse(generator.iter)}"
                )
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
        if (
            isinstance(func, ast.Name)
            and func.id in HOST_READERS
            and func.id not in self.walker.index().functions
            and call.args
            and self._tensor(call.args[0])
        ):
            return self._record(call, "host_sync", _short(call), "copies a tensor to the host")
        return None

    def _logged_tensor(self, call: ast.Call) -> bool:
        """`writer.add_scalar("loss", loss, step)`, `wandb.log({"loss": loss})`,
        `mlflow.log_metric("loss", loss)`, `fabric.log_dict({"loss": loss})`: the logger
        turns the device tensor into a Python number (`.item()`) on the spot; so do
        `writer.add_image("x", grid)` / `add_images` / `add_histogram` into a NumPy
        array (`.cpu().numpy()`)."""
        func = call.func
        name = self.walker.qualname(func) or ""
        values: list[ast.expr] = []
        if isinstance(func, ast.Attribute) and func.attr == "add_scalar":
            values = call.args[1:2] + [k.value for k in call.keywords if k.arg == "scalar_value"]
        elif isinstance(func, ast.Attribute) and func.attr == "add_scalars":
            values = call.args[1:2] + [k.value for k in call.keywords if k.arg == "tag_scalar_dict"]
        elif isinstance(func, ast.Attribute) and func.attr in TENSORBOARD_ARRAYS:
            keyword = TENSORBOARD_ARRAYS[func.attr]
            values = call.args[1:2] + [k.value for k in call.keywords if k.arg == keyword]
        elif name in ("wandb.log", "mlflow.log_metric", "mlflow.log_metrics"):
            values = call.args[:2] + [k.value for k in call.keywords]
        elif isinstance(func, ast.Attribute) and func.attr in FABRIC_LOGS and self._fabric(func):
            index, keyword = FABRIC_LOGS[func.attr]
            values = call.args[index : index + 1]
            values += [k.value for k in call.keywords if k.arg == keyword]
        for value in values:
            parts = value.values if isinstance(value, ast.Dict) else [value]
            if isinstance(value, ast.Call) and ast.unparse(value.func) == "dict":
                parts = [k.value for k in value.keywords]
            if any(part is not None and self._tensor(part) for part in parts):
                return True
        return False

    def _fabric(self, func: ast.Attribute) -> bool:
        """`fabric.log_dict(...)`, `self.fabric.log(...)`: a Lightning Fabric (a name
        `fabric`, or one assigned a `Fabric(...)`) in a file importing Lightning."""
        roots = {q.split(".")[0] for q in self.walker.aliases.values()}
        if not roots & {"lightning", "lightning_fabric"}:
            return False
        receiver = dotted(func.value)
        if receiver is None:
            return False
        if receiver.rsplit(".", 1)[-1].lower() == "fabric":
            return True
        return any(
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and (self.walker.qualname(node.value.func) or "").endswith("Fabric")
            and any(dotted(t) == receiver for t in node.targets)
            for node in module_nodes(self.walker.module)
        )

    def _default_host_read(self, call: ast.Call) -> Optional[str]:
        """`output_transform(x, y, y_pred, loss)` where `output_transform` is a parameter
        of the step's function (or of the factory enclosing it) left at a lambda default
        that reads that argument on the host (`lambda x, y, y_pred, loss: loss.item()`)."""
        func = call.func
        if not isinstance(func, ast.Name) or self.function is None:
            return None
        line = self.function.lineno
        enclosing = [
            f for f in self.walker.index().function_nodes if f.lineno <= line <= (f.end_lineno or 0)
        ]
        for outer in sorted(enclosing, key=lambda f: -f.lineno):  # the innermost first
            default = _parameter_default(outer, func.id)
            if default is False:
                continue  # not a parameter of this function
            if not isinstance(default, ast.Lambda):
                return None
            for index, parameter in enumerate(default.args.args):
                if (
                    index < len(call.args)
                    and _reads_on_host(default.body, parameter.arg)
                    and self._tensor(call.args[index])
                ):
                    return f"the default {func.id}: {_short(default, 50)}"
            return None
        return None

    def _tensor(self, node: ast.expr) -> bool:
        scope = self.function if self.function is not None else self.walker.module
        return self.tensors.holds_in(node, self.function) and not number_entry(node, scope)

    def _on_host(self, node: ast.expr) -> bool:
        """A tensor built on the CPU and never moved: its `.tolist()` waits for nothing."""
        scope = self.function if self.function is not None else self.walker.module
        return on_host(node, scope, self.walker.qualname) or self._unmoved_field(node)

    def _unmoved_field(self, node: ast.expr) -> bool:
        """`boxes` of `for image, gt, boxes in loader:` when the step moves the other fields
        itself (`image.to(device)`) but never this one: the loader yields host tensors, so
        `boxes.cpu().numpy()` copies nothing from the GPU."""
        while (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SAME_DEVICE
        ):
            node = node.func.value
        if not isinstance(node, ast.Name) or not isinstance(self.loop, (ast.For, ast.AsyncFor)):
            return False
        fields = _target_names(self.loop.target)
        if node.id not in fields or self.loaders.iterated(self.loop.iter) is None:
            return False
        moved, stored = self._body_names()
        return node.id not in stored and node.id not in moved and bool(moved & fields)

    def _body_names(self) -> tuple[set[str], set[str]]:
        """The names the loop body puts on a device and the names it binds, read once per
        loop: read again for each of N host reads, a step of N reads took N² work."""
        if self.body_names is None:
            body = self.loop.body
            stored = {
                n.id
                for statement in body
                for n in ast.walk(statement)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            self.body_names = (_moved_names(body), stored)
        return self.body_names

    def _masked(self, node: ast.AST) -> bool:
        """`x[keep]` read with a boolean device tensor (`keep = n <= limit`, `x[x > 0]`):
        the result's size is the mask's count, which the CPU must wait for; so is an
        in-place update through one (`l[mask] -= 1` reads `l[mask]` first)."""
        if not isinstance(node, ast.Subscript):
            return False
        owner = self.function if self.function is not None else self.walker.module
        if not isinstance(node.ctx, ast.Load) and id(node) not in _augmented_targets(owner):
            return False
        values = self.masks.get(id(owner))
        if values is None:
            values = self.masks[id(owner)] = mask_names(owner)
        mask = node.slice
        if isinstance(mask, ast.Name):
            mask = values.get(mask.id, mask)
        if isinstance(mask, ast.Attribute) and MASK_FIELD.search(mask.attr):
            # PyG's `out[data.train_mask]`: a boolean field of a batch or graph on the device
            return self._tensor(mask) and self._tensor(node.value)
        return boolean_expression(mask, values) and self._tensor(mask) and self._tensor(node.value)

    def _device_bound(self, node: ast.AST) -> bool:
        """`pred[:length]` of a device tensor with `length` one too (an element of a
        lengths tensor on the device): each bound is read with an .item()."""
        if not isinstance(node, ast.Subscript):
            return False
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        bounds = [
            bound
            for part in parts
            if isinstance(part, ast.Slice)
            for bound in (part.lower, part.upper, part.step)
            if bound is not None and not isinstance(bound, ast.Constant)
        ]
        return (
            bool(bounds) and any(self._bound_tensor(b) for b in bounds) and self._tensor(node.value)
        )

    def _bound_tensor(self, bound: ast.expr) -> bool:
        """A slice bound that is a device tensor, not what only may be one: a parameter
        of the function read (`x[:, -keep:]` with `keep` handed in, a count as often as a
        tensor) or a string-keyed entry of a batch (`inputs["n_keep"]`, an int riding with
        the tensors)."""
        if isinstance(bound, ast.UnaryOp):
            return self._bound_tensor(bound.operand)
        if isinstance(bound, ast.BinOp):
            return self._bound_tensor(bound.left) or self._bound_tensor(bound.right)
        if isinstance(bound, ast.Subscript) and stringy(bound.slice):
            return False
        if isinstance(bound, ast.Name) and self.function is not None:
            arguments = self.function.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            if bound.id in {a.arg for a in every}:
                return False
        return self._tensor(bound)

    def _module(self, node: ast.expr) -> bool:
        """An imported module or the file itself (`d2l.cpu()` is the file's function)."""
        return isinstance(node, ast.Name) and (
            node.id in self.walker.aliases or node.id in self.callees.itself
        )

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
        if self.via is not None:  # at the step's call of the shared helper
            site, name = self.via
            line, column, call = site.lineno, site.col_offset + 1, f"{call} in {name}()"
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


# Methods of host-side objects an RL step must feed every step: the environment's
# `step(action)` and a CPU replay buffer's new priorities (a sum-tree in NumPy)
PRIORITY_UPDATES = ("update_priority", "update_priorities")


def host_consumer(call: ast.Call) -> bool:
    """`env.step(action)`, `envs.step(actions)`, `self.train_env.step(a)`,
    `rb.update_priority(idx, prios)`: a call whose arguments the algorithm needs on the
    host every step, so copying them there is required, not a sync to avoid."""
    func = call.func
    if not isinstance(func, ast.Attribute) or not (call.args or call.keywords):
        return False
    if func.attr in PRIORITY_UPDATES:
        return True
    return func.attr == "step" and "env" in _last(func.value).lower()


def host_bound_names(nodes: Iterable[ast.AST]) -> set[str]:
    """Names handed to a `host_consumer` call in the step (`env.step(action)`)."""
    return {
        argument.id
        for root in nodes
        for node in ast.walk(root)
        if isinstance(node, ast.Call) and host_consumer(node)
        for argument in [*node.args, *(k.value for k in node.keywords)]
        if isinstance(argument, ast.Name)
    }


EVALUATION_WORDS = {"valid", "validation", "val", "eval", "evaluation", "test", "predict"}


CALLBACK_WORDS = ("callback", "hook")
FILLING = {"append", "extend", "insert", "add"}


def _user_callbacks(loop: ForLoop, module: ast.Module) -> bool:
    """`for callback in self.training_step_callbacks: callback(self, float(loss))`: a
    loop calling each of a collection of callbacks (its name says so) that the file never
    fills (no non-empty list literal bound to that name, no `.append(...)` or `+=` on
    it): it runs what a user registers, nothing by default."""
    target = loop.target
    name = (dotted(loop.iter) or "").rsplit(".", 1)[-1]
    if not (
        isinstance(target, ast.Name)
        and any(word in name.lower() for word in CALLBACK_WORDS)
        and any(
            isinstance(n, ast.Call)
            and (
                (isinstance(n.func, ast.Name) and n.func.id == target.id)
                or (
                    isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == target.id
                )
            )
            for statement in loop.body
            for n in ast.walk(statement)
        )
    ):
        return False

    def named(node: Optional[ast.AST]) -> bool:
        return node is not None and (dotted(node) or "").rsplit(".", 1)[-1] == name

    def filled(value: Optional[ast.AST]) -> bool:
        return (isinstance(value, (ast.List, ast.Tuple, ast.Set)) and bool(value.elts)) or (
            isinstance(value, (ast.ListComp, ast.SetComp))
        )

    for node in module_nodes(module):
        if isinstance(node, ast.Assign) and filled(node.value):
            if any(named(t) for t in node.targets):
                return False
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and named(node.target):
            if isinstance(node, ast.AugAssign) or filled(node.value):
                return False
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in FILLING and named(func.value):
                return False
            if any(k.arg == name and filled(k.value) for k in node.keywords):
                return False
    return True


def _chunk_walk(loop: ForLoop) -> bool:
    """`for i in range(0, batch.shape[0], self.microbatch):` slicing `batch[i : i +
    self.microbatch]`: a walk over micro-batches, each copied whole, not over samples."""
    iterable = loop.iter
    if not (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Name)
        and iterable.func.id == "range"
        and len(iterable.args) == 3
        and isinstance(loop.target, ast.Name)
    ):
        return False
    width = text(iterable.args[2])
    index = loop.target.id
    return any(
        isinstance(node, ast.Slice)
        and isinstance(node.lower, ast.Name)
        and node.lower.id == index
        and isinstance(node.upper, ast.BinOp)
        and isinstance(node.upper.op, ast.Add)
        and text(node.upper.left) == index
        and text(node.upper.right) == width
        for statement in loop.body
        for node in ast.walk(statement)
    )


def _evaluation_test(test: ast.expr) -> bool:
    """`state == ModelState.VALID`, `mode == "eval"`, `not self.training`: a branch
    taken only when evaluating."""
    if (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and isinstance(test.operand, ast.Attribute)
        and test.operand.attr == "training"
    ):
        return True
    if not isinstance(test, ast.Compare) or not all(
        isinstance(op, (ast.Eq, ast.Is)) for op in test.ops
    ):
        return False
    for side in (test.left, *test.comparators):
        word = (
            side.attr
            if isinstance(side, ast.Attribute)
            else side.value
            if isinstance(side, ast.Constant) and isinstance(side.value, str)
            else None
        )
        if word is not None and word.lower() in EVALUATION_WORDS:
            return True
    return False


def _stop_protocol(branch: ast.If) -> bool:
    """`if self._distributed:` (a test naming distributed) whose body reduces a flag
    across processes (`dist.all_reduce(done)`) to agree on stopping."""
    if "distributed" not in ast.unparse(branch.test).lower():
        return False
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, (ast.Attribute, ast.Name))
        and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id)
        in ("all_reduce", "all_gather", "broadcast")
        for statement in branch.body
        for n in [statement, *own_nodes(statement)]
    )


def _held_objects(module: ast.Module) -> frozenset[str]:
    """`self.x` attributes the file assigns (`self.model = model`): objects its classes
    hold, so that `self.model(x)` calls a model rather than a method out of sight."""
    found: set[str] = set()
    for node in module_nodes(module):
        targets = _targets(node) if isinstance(node, (ast.Assign, ast.AnnAssign)) else []
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                found.add(f"self.{target.attr}")
    return frozenset(found)


def _parameters_of(argument: ast.expr) -> bool:
    """`net.parameters()`, `net.named_parameters()`: a model's parameters, whose
    gradients live on the device."""
    return (
        isinstance(argument, ast.Call)
        and isinstance(argument.func, ast.Attribute)
        and argument.func.attr in ("parameters", "named_parameters")
        and not argument.args
    )


def _own_method(call: ast.Call) -> bool:
    """`self.helper(...)`: a method of the class whose step is being read."""
    return (
        isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "self"
    )


def _on_xla(walker: Walker, nodes: list[ast.AST]) -> bool:
    """A step that calls PyTorch/XLA (`xm.optimizer_step(...)`): it runs on a TPU."""
    return any(
        isinstance(n, ast.Call) and (walker.qualname(n.func) or "").startswith("torch_xla.")
        for n in nodes
    )


def _parameter_default(function: Function, name: str) -> Union[ast.expr, bool, None]:
    """The default of parameter `name` of `function`: None when it has none, False when
    `function` has no such parameter."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[Optional[ast.expr]] = [None] * (len(positional) - len(arguments.defaults))
    defaults += arguments.defaults
    pairs = [
        *zip(positional, defaults, strict=True),
        *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True),
    ]
    for argument, default in pairs:
        if argument.arg == name:
            return default
    return False


def _reads_on_host(body: ast.expr, name: str) -> bool:
    """`loss.item()`, `loss.detach().cpu().numpy()`, `loss.tolist()` of `name`."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("item", "tolist", "numpy", "cpu")
        and any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(n.func.value))
        for n in ast.walk(body)
    )


def _short(node: ast.AST, limit: int = 60) -> str:
    return clipped(node, limit)


def _position(index: ast.expr) -> bool:
    """`0`, `-1`, `1:`, `:2`: a constant position or slice of positions."""
    if isinstance(index, ast.Slice):
        parts = [p for p in (index.lower, index.upper, index.step) if p is not None]
        return bool(parts) and all(_position(p) for p in parts)
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        index = index.operand
    return isinstance(index, ast.Constant) and type(index.value) is int


def _target_names(target: ast.expr) -> set[str]:
    """The names a loop target unpacks (`step, (image, gt, boxes)`)."""
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _moved_names(body: list[ast.stmt]) -> set[str]:
    """Names a statement of `body` puts on a device (`image.to(device)`, `x.cuda()`,
    `batch_to_device(batch, device)`)."""
    found: set[str] = set()
    for statement in body:
        for node in ast.walk(statement):
            if not (isinstance(node, ast.Call) and moves_to_device(node)):
                continue
            parts = [node.func.value] if isinstance(node.func, ast.Attribute) else []
            found.update(p.id for p in [*parts, *node.args] if isinstance(p, ast.Name))
    return found


def _sync_method(call: ast.Call) -> bool:
    """`.item()`, `.cpu()`, `.tolist()`, `.to("cpu")`."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in SYNC_METHODS:
        return not call.args
    if func.attr == "to":
        target = call.args[0] if call.args else keyword_arg(call, "device")
        return is_cpu(target)
    return False


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
    target = call.args[0] if call.args else keyword_arg(call, "device")
    if target is None or is_cpu(target):
        return False
    if isinstance(target, ast.Attribute) and target.attr in DTYPES:
        return False
    return not (isinstance(target, ast.Constant) and not isinstance(target.value, str))


def _any_or_all(test: ast.expr, own: Collection[str]) -> Optional[ast.expr]:
    """The element of the builtin `any(...)` / `all(...)` over one comprehension (not a
    function of the file, `own`, by that name), whose truth value it takes for each
    element; None for anything else."""
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id in ("any", "all")
        and test.func.id not in own
        and len(test.args) == 1
        and not test.keywords
    ):
        return None
    argument = test.args[0]
    return argument.elt if isinstance(argument, (ast.GeneratorExp, ast.ListComp)) else None


def _indexed_element(side: ast.expr, inner: list[ForLoop]) -> bool:
    """`best_n_mask[ti]` in `for ti in range(n): if best_n_mask[ti] == 1:`: an element the
    per-element loop picks, a value of the data tested for each one, not a step counter."""
    if not isinstance(side, ast.Subscript):
        return False
    names = {n.id for n in ast.walk(side.slice) if isinstance(n, ast.Name)}
    return any(
        names & {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} for loop in inner
    )


def _element_of(receiver: ast.expr, inner: list[ForLoop]) -> Optional[ForLoop]:
    """The inner loop whose element the copied value comes from, or None: the receiver
    names the loop's target, or a name the loop's body assigns from it (`y =
    waves[i][a:b]` ... `torch.from_numpy(y).to(device)`).
    `for k in batch: batch[k].to(device)` walks a dict's fields and is not per sample."""
    names = {n.id for n in ast.walk(receiver) if isinstance(n, ast.Name)}
    for loop in reversed(inner):
        targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        targets |= _element_names(loop, targets)
        if not names & targets:
            continue
        if isinstance(receiver, ast.Subscript) and ast.unparse(receiver.value) == ast.unparse(
            loop.iter
        ):
            return None
        return loop
    return None


def _comprehensions(module: ast.Module) -> dict[int, ast.comprehension]:
    """Device copies (`.cuda()`, `.to(...)`) in the element of a comprehension of the
    file, by id, to the comprehension's generator whose target they may copy."""
    cached: Optional[dict[int, ast.comprehension]] = module.__dict__.get("_envcheck_comprehensions")
    if cached is not None:
        return cached
    found: dict[int, ast.comprehension] = {}
    for node in ast.walk(module):
        if not isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            continue
        if len(node.generators) != 1:
            continue
        for call in ast.walk(node.elt):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("cuda", "to")
            ):
                found.setdefault(id(call), node.generators[0])
    module.__dict__["_envcheck_comprehensions"] = found
    return found


def _stored_keys(module: ast.Module) -> frozenset[str]:
    """String keys the file stores in a dict: `d["k"] = v`, `{"k": v}`, `dict(k=v)`,
    `d.update(k=v)`, `d.setdefault("k", v)`."""
    cached: Optional[frozenset[str]] = module.__dict__.get("_envcheck_stored_keys")
    if cached is not None:
        return cached
    found: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                found.add(node.slice.value)
        elif isinstance(node, ast.Dict):
            found.update(
                k.value
                for k in node.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            )
        elif isinstance(node, ast.Call):
            found.update(k.arg for k in node.keywords if k.arg is not None)
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)  # setdefault("k", v), a logger's name
    stored = frozenset(found)
    module.__dict__["_envcheck_stored_keys"] = stored
    return stored


def _element_names(loop: ForLoop, targets: set[str]) -> set[str]:
    """Names the body of `loop` (not a nested function) assigns a part of its element
    (`y = waves[i][a:b]`), one assignment from another, in order; not a field of what the
    loop walks (`v = batch[k]`)."""
    iterated = ast.unparse(loop.iter)
    found: set[str] = set()
    for node in own_nodes(loop):
        if not isinstance(node, ast.Assign) or any(
            isinstance(v, ast.Subscript) and ast.unparse(v.value) == iterated
            for v in ast.walk(node.value)
        ):
            continue
        if not isinstance(node.value, ast.Subscript):
            continue  # `n = int(counts[i])` ... `torch.zeros(n).to(device)`: a size
        used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        if used & (targets | found):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


# -- CUDA in Dataset.__getitem__ -----------------------------------------------------------


def _dataset_cuda(walker: Walker) -> list[dict[str, Any]]:
    classes = [n for n in module_nodes(walker.module) if isinstance(n, ast.ClassDef)]
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
            target = call.args[0] if call.args else keyword_arg(call, "device")
            if target is not None and self.on_cuda(target, method):
                return f".to({ast.unparse(target)})"
            return None
        device = keyword_arg(call, "device")
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
            return text(node.func).endswith("device") and self.on_cuda(
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
