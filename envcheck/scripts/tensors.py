"""Which expressions of a training step hold tensors on the training device, read from the
source: what reading them on the host (formatting, `float(t)`, `if t > x:`) would wait for.

Flow-insensitive over the nodes it is given (the step's body, the helpers it runs and the
statements of its function): a name or `self.x` attribute holds a device tensor when

- `backward` is called on it (`loss.backward()`, `l.sum().backward()`,
  `scaler.scale(self.loss).backward()`, `self.losses["total"].backward()`);
- it is made on a device (`x.to(device)`, `x.cuda()`, `batch_to_device(batch, device)`,
  `torch.zeros(3, device=device)`) or handed to a collective (`dist.all_reduce(t)`);
- it is computed from one of those without a conversion to a number (arithmetic, a
  comparison, a method that keeps a tensor, a `torch.*` function, a container of them,
  a tensor method combining another tensor with one: `pred.eq(targets)`);
- its name says it holds losses and it is unpacked from one call together with a tensor
  (`loss, loss_items = model(x)`; not `loss, count = ...`, which may be a number);
- it is a parameter of a helper called with a tensor (not with a name the step makes a
  number, `loss = loss.item()` ... `log_stats(loss)`), or what a helper returns, or a
  parameter of a lambda handed to a call together with tensors (`tree_map(lambda t: ...,
  out)`), or of a gradient hook registered on one (`loss.register_hook(raise_if_nan)`:
  backward hands it the gradient); a comprehension's or lambda's own names are kept
  apart from the function's;
- a context manager scales it into a tensor (`with amp.scale_loss(loss, opt) as s:`).

`.item()`, `float(t)`, `.cpu()`, `.numpy()`, `.shape`, `.size()` and the like give
numbers or host data: what they return is not a device tensor (nor is arithmetic on such
a number with values that are not tensors, nor what a call handed a function making such
numbers returns: `apply_to_collection(out, Tensor, lambda t: t.item())`).

Size: one fixpoint over assignments, calls and returns; its rules feed each other (a
helper's return makes a name a tensor, which binds the next helper's parameter), so they
stay in one class.
"""

from __future__ import annotations

import ast
import builtins
from typing import Callable, Optional, Union

from envcheck.scripts.index import is_cpu, keyword_arg, own_nodes, qualified_name
from envcheck.scripts.scopes import local_scopes

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# attributes of a tensor that are tensors too (others are metadata: shape, dtype, device)
TENSOR_ATTRIBUTES = {"T", "mT", "H", "data", "grad", "real", "imag"}
# attributes of a tensor (or a batch object) that describe it on the host
METADATA = {"shape", "dtype", "device", "ndim", "layout", "names", "requires_grad", "itemsize"}
METADATA |= {"nbytes", "grad_fn", "output_nr", "keys", "values", "items"}
# methods whose result is a tensor only when called on one: `self.loss = loss.sum()`
KEEPING_METHODS = {
    "sum",
    "mean",
    "detach",
    "float",
    "half",
    "clone",
    "contiguous",
    "squeeze",
    "unsqueeze",
    "view",
    "reshape",
    "flatten",
}
# methods of a tensor (or dict of them) returning host data, not tensors
HOST_METHODS = {
    "item",
    "tolist",
    "numpy",
    "cpu",
    "size",
    "numel",
    "dim",
    "nelement",
    "element_size",
    "get_device",
    "data_ptr",
    "stride",
    "is_contiguous",
    "is_floating_point",
    "keys",
    "__len__",
}
NUMBERS = {"float", "int", "bool", "len", "str", "repr", "isinstance", "type", "id", "hash"}
# builtins that keep a tensor (sum of tensors is a tensor)
KEEPING = {"sum", "max", "min", "abs"}
# torch functions returning no tensor
TORCH_HOST = ("is_tensor", "numel", "is_floating_point", "is_complex", "typename", "get_")
# (torch.optim builds optimizers and LR schedulers: `Adam(model.parameters())` is no tensor,
# nor is what its scheduler's get_last_lr() returns, a list of floats)
TORCH_HOST_ROOTS = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.utils.",
    "torch.optim.",
)
COLLECTIVES = ("all_reduce", "all_gather", "reduce", "broadcast", "reduce_scatter")
FACTORY_DEVICE = "device"
MAX_HELPERS = 32  # helpers returning one another's result, followed one inside another
BUILTINS = set(dir(builtins))
HOST_ROOTS = ("numpy.", "math.", "builtins.", "time.", "logging.", "os.", "sys.", "json.")
# calls that return a tensor on the model's device (not a Python number)
TENSOR_RETURNS = ("clip_grad_norm_", "clip_grad_norm")
# library objects built from a tensor that hold a host copy of it: no tensor, whatever
# they get. wandb.Image renders a torch tensor with `.cpu().numpy()` in its constructor
# (RENDERS_ON_HOST: a sync when given a device tensor); wandb.Histogram runs
# np.histogram on its sequence (a CPU one: NumPy cannot read a CUDA tensor)
RENDERS_ON_HOST = "wandb.Image"
HOST_MEDIA = {RENDERS_ON_HOST, "wandb.Histogram"}
# tensor methods combining the receiver with another tensor element by element (or as
# matrices): given a device tensor, the receiver is a tensor too (CUDA and CPU tensors
# do not mix) and the result is on the device: `pred.eq(targets.view(1, -1))`
COMBINING = {"eq", "ne", "lt", "le", "gt", "ge", "mul", "div", "sub", "matmul", "mm", "bmm"}
# library functions that return a tensor on the device of the tensors they are given
# (torchvision's make_grid tiles a batch of images into one image tensor with torch ops)
DEVICE_KEEPING = {"torchvision.utils.make_grid"}
FLOWS = (
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.For,
    ast.AsyncFor,
    ast.comprehension,
    ast.Call,
    ast.withitem,
)
Resolver = Callable[[ast.Call], Optional[Function]]
HostResult = Callable[[ast.Call, Callable[[ast.expr], bool]], bool]


def dotted(node: ast.AST) -> Optional[str]:
    """`loss`, `self.loss`; None for anything else."""
    return qualified_name(node, {})


def moves_to_device(call: ast.Call) -> bool:
    """`.to(device)`, `.cuda()`, `batch_to_device(batch, device)`: data put on a device
    (not `.to("cpu")`, not `.to(torch.float16)`)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name == "cuda":
        return True
    if name.endswith("to_device"):
        return True
    if name != "to" or not isinstance(func, ast.Attribute):
        return False
    target = call.args[0] if call.args else keyword_arg(call, "device")
    if target is None or is_cpu(target):
        return False
    if isinstance(target, ast.Constant):
        return isinstance(target.value, str)
    return "device" in ast.unparse(target).lower() or "cuda" in ast.unparse(target).lower()


class DeviceTensors:
    """The device tensors of one training step (see the module docstring)."""

    def __init__(
        self,
        groups: list[tuple[Optional[ast.AST], list[ast.AST]]],
        qualname: Callable[[ast.AST], Optional[str]],
        resolve_call: Resolver,
        context: tuple[Optional[ast.AST], list[ast.AST]] = (None, []),
        modules: frozenset[str] = frozenset(),
        on_device: tuple[tuple[ast.AST, str], ...] = (),
        held: frozenset[str] = frozenset(),
        host_result: Optional[HostResult] = None,
    ):
        """`groups`: the nodes of the step, each with the function they belong to (None
        for the module): a local name is one function's, `self.x` is shared. `context`:
        the statements around the step (`mloss = torch.zeros(3, device=device)` before
        the loop), read for values but not for the helpers they call. `on_device`:
        parameters (function, name) a framework hands over on the device (the `batch`
        of a Lightning `training_step`). `held`: the `self.x` attributes the file
        assigns (`self.model = model`), objects a trainer holds, not methods.
        `host_result`: whether a call of code out of the file, given which expressions
        hold device tensors, returns host values only (foreign_helpers.returns_host)."""
        self.qualname = qualname
        self.host_result = host_result
        self.resolve_call = resolve_call
        self.modules = modules  # names of imported modules (and of the file itself)
        self.held = held
        self.keys: set[str] = set()
        self.moved: set[str] = set()  # names assigned an object moved to the device
        self.numbers: set[str] = set()
        self._returns: dict[int, bool] = {}
        self._scope = 0
        # names a comprehension or lambda binds itself: `{k: v.item() for k, v in ...}`
        self.local = local_scopes(n for _, nodes in [*groups, context] for n in nodes)
        self._helpers = 0  # helpers whose returns are being read, one inside another
        # only the nodes that can carry a tensor from one name to another
        groups = [(owner, [n for n in nodes if isinstance(n, FLOWS)]) for owner, nodes in groups]
        context = (context[0], [n for n in context[1] if isinstance(n, FLOWS)])
        self.keys.update(f"{id(owner)}:{name}" for owner, name in on_device)
        # names the step makes numbers (`loss = reduce(loss).item()`): flow-insensitive,
        # they are numbers in the end (see `converted` below), so a helper they are handed
        # to (`log_stats(pbar, loss)` after that line) is not handed a tensor
        self._made_numbers: set[str] = set()
        for owner, nodes in [*groups, context]:
            self._scope = id(owner) if owner is not None else 0
            self._seed(nodes)
            self._made_numbers.update(
                key
                for n in nodes
                if isinstance(n, ast.Assign) and _converted(n.value)
                for t in n.targets
                if isinstance(t, ast.Name) and (key := self._key(t)) is not None
            )
        self._binding = True
        for _ in range(4):
            before = len(self.keys)
            self._returns.clear()  # a helper's parameters may have been bound since
            self.numbers.clear()  # decided again with the tensors known by now
            for owner, nodes in [*groups, context]:
                self._scope = id(owner) if owner is not None else 0
                self._binding = nodes is not context[1]
                self._propagate(nodes)
            if len(self.keys) == before:
                break
        # names that held a tensor and were made numbers (`v = v.item()`): flow-insensitive,
        # they are numbers; the conversion itself read the tensor
        self.converted = frozenset(self.keys & self.numbers)
        self.keys -= self.numbers

    def _key(self, node: ast.AST, scope: Optional[int] = None) -> Optional[str]:
        """`12345:loss` for a local name of one function, `self.loss` for an attribute."""
        key = dotted(node)
        if key is None or key == "self":
            return None
        if "." in key:
            return key
        if scope is None and id(node) in self.local:
            scope = self.local[id(node)]  # the comprehension's own `v`, the lambda's `t`
        return f"{self._scope if scope is None else scope}:{key}"

    def key_in(self, node: ast.AST, owner: Optional[ast.AST]) -> Optional[str]:
        """`_key`, reading local names as those of function `owner`."""
        outer, self._scope = self._scope, id(owner) if owner is not None else 0
        try:
            return self._key(node)
        finally:
            self._scope = outer

    def holds_in(self, node: Optional[ast.AST], owner: Optional[ast.AST]) -> bool:
        """`holds`, reading local names as those of function `owner`."""
        outer, self._scope = self._scope, id(owner) if owner is not None else 0
        try:
            return self.holds(node)
        finally:
            self._scope = outer

    # -- seeds ---------------------------------------------------------------------------

    def _seed(self, nodes: list[ast.AST]) -> None:
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("backward", "manual_backward"):
                if ast.unparse(func.value).endswith("dist_autograd") and len(node.args) > 1:
                    # dist_autograd.backward(context_id, [loss]): the losses are in the list
                    second = node.args[1]
                    for loss in second.elts if isinstance(second, (ast.List, ast.Tuple)) else []:
                        self._mark(loss)
                elif node.args:  # accelerator.backward(loss)
                    self._mark(node.args[0])
                else:
                    self._mark(func.value)
            elif isinstance(func, (ast.Name, ast.Attribute)) and moves_to_device(node):
                name = func.attr if isinstance(func, ast.Attribute) else func.id
                if name.endswith("to_device") and node.args:  # moved in place
                    self._add(node.args[0])
            name = self.qualname(func) or ""
            collective = name.startswith("torch.distributed.") and name.endswith(COLLECTIVES)
            if collective and node.args:
                self._add(node.args[0])

    def _mark(self, receiver: ast.expr) -> None:
        """What a backward pass is called on, through `scaler.scale(x)`, `x.sum()`,
        `(x / n)`, `x["total"]`."""
        for _ in range(6):
            if isinstance(receiver, ast.BinOp):
                receiver = receiver.left
            elif isinstance(receiver, ast.Subscript):
                receiver = receiver.value
            elif isinstance(receiver, ast.Call):
                func = receiver.func
                if isinstance(func, ast.Attribute) and not receiver.args and dotted(func.value):
                    receiver = func.value  # l.sum().backward()
                elif receiver.args:
                    receiver = receiver.args[0]  # scaler.scale(loss).backward()
                else:
                    return
            else:
                break
        self._add(receiver)

    def _add(self, node: ast.expr) -> None:
        key = self._key(node)
        if key is not None:
            self.keys.add(key)

    # -- propagation ---------------------------------------------------------------------

    def _propagate(self, nodes: list[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._assign(target, node.value)
            elif isinstance(node, ast.AugAssign):
                self._accumulate(node.target, node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._assign(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                if not (isinstance(node, (ast.For, ast.AsyncFor)) and keys_loop(node)):
                    self._iterate(node.target, unwrap_listing(node.iter))
            elif isinstance(node, ast.Call) and self._binding:
                self._bind(node)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._scaled(node.context_expr, node.optional_vars)

    def _accumulate(self, target: ast.expr, value: ast.expr) -> None:
        """`total += x.item() / n`: adding a number leaves the target what it was (a CUDA
        `total = torch.tensor(0.).cuda()` stays on the device); adding a tensor does not."""
        if _converted(value) or self._number_arithmetic(value):
            return
        self._assign(target, value)

    def _assign(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, (ast.Name, ast.Attribute)):
            key = self._key(target)
            if key is None:
                return
            if _converted(value) or self._number_arithmetic(value):
                self.numbers.add(key)
            elif self.holds(value):
                self.keys.add(key)
                if isinstance(value, ast.Call) and moves_to_device(value):
                    self.moved.add(key)
            elif key in self.keys:
                self._reverse(value)
            return
        if isinstance(target, ast.Subscript):  # d["loss"] = tensor: a container of them
            if self.holds(value):
                self._add(target.value)
            return
        if not isinstance(target, (ast.Tuple, ast.List)):
            return
        elements = target.elts
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elements):
            for element, part in zip(elements, value.elts, strict=True):
                self._assign(element, part)
            return
        if isinstance(value, ast.Call):
            helper = self.resolve_call(value)
            if helper is not None:  # position by position from the helper's returns
                for index, element in enumerate(elements):
                    if self._returns_at(helper, index):
                        self._add(element)
                return
        if self.holds(value):
            for element in elements:
                self._add(element)
        elif isinstance(value, ast.Call) and any(self._key(e) in self.keys for e in elements):
            for element in elements:  # loss, loss_items = compute_loss(pred, y)
                if "loss" in (dotted(element) or "").lower():
                    self._add(element)

    def _number_arithmetic(self, value: ast.expr) -> bool:
        """`gather(l).sum().item() / (n * steps)`: arithmetic on a host number with values
        that are not device tensors gives a host number (not `t.item() / device_count`)."""
        if not isinstance(value, ast.BinOp):
            return False
        sides = (value.left, value.right)
        converted = [_converted(side) or self._number_arithmetic(side) for side in sides]
        return any(converted) and not any(
            self.holds(side) for side, done in zip(sides, converted, strict=True) if not done
        )

    def _reverse(self, value: ast.expr) -> None:
        """`self.loss = loss.sum()` with self.loss a tensor: `loss` is one too; `loss =
        self.model.training_step(batch)` with loss a tensor: what the helper returns is."""
        helper = self.resolve_call(value) if isinstance(value, ast.Call) else None
        if helper is not None:
            for node in ast.walk(helper):
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
                    self.keys.add(f"{id(helper)}:{node.value.id}")
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in KEEPING_METHODS
        ):
            self._add(value.func.value)

    def _scaled(self, context: ast.expr, target: ast.expr) -> None:
        """`with amp.scale_loss(loss, optimizer) as scaled_loss: scaled_loss.backward()`:
        what the context manager scales is a tensor too."""
        if isinstance(context, ast.Call) and context.args and self.holds(target):
            self._add(context.args[0])

    def _iterate(self, target: ast.expr, iterable: ast.expr) -> None:
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
            if iterable.func.attr == "items" and self.holds(iterable.func.value):
                if isinstance(target, ast.Tuple) and len(target.elts) == 2:
                    self._add(target.elts[1])
                return
            if iterable.func.attr == "keys":
                return
        if (
            isinstance(iterable, ast.Call)
            and getattr(iterable.func, "id", None) == "zip"
            and isinstance(target, ast.Tuple)
            and len(target.elts) == len(iterable.args)
        ):
            for element, part in zip(target.elts, iterable.args, strict=True):
                if self.holds(part):
                    self._add(element)
            return
        if self.holds(iterable):
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    self._add(node)

    def _bind(self, call: ast.Call) -> None:
        """A helper called with a tensor: its parameter holds one."""
        self._bind_lambdas(call)
        self._bind_hook(call)
        helper = self.resolve_call(call)
        if helper is None:
            return
        params = [a.arg for a in [*helper.args.posonlyargs, *helper.args.args]]
        # `self.f(x)`, or `criterion(out, y)` running `forward(self, xin, labels)` of the
        # instance it calls: the instance is `self`, the arguments bind the rest
        instance = isinstance(call.func, ast.Name) and call.func.id != helper.name
        if (
            params
            and params[0] in ("self", "cls")
            and (isinstance(call.func, ast.Attribute) or instance)
        ):
            params = params[1:]
        scope = id(helper)
        for index, argument in enumerate(call.args):
            if not self.holds(argument) or self._number(argument):
                continue
            if index < len(params):
                self.keys.add(f"{scope}:{params[index]}")
            elif helper.args.vararg is not None:
                self.keys.add(f"{scope}:{helper.args.vararg.arg}")
        for keyword in call.keywords:
            if keyword.arg and self.holds(keyword.value) and not self._number(keyword.value):
                self.keys.add(f"{scope}:{keyword.arg}")

    def _number(self, argument: ast.expr) -> bool:
        """A name the step makes a host number (`loss = loss.item()`)."""
        return isinstance(argument, ast.Name) and self._key(argument) in self._made_numbers

    def _bind_hook(self, call: ast.Call) -> None:
        """`loss.register_hook(raise_if_nan)`: backward calls the hook with the tensor's
        gradient, which lives on the tensor's device, so the hook's parameter holds one."""
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == "register_hook"
            and len(call.args) == 1
            and isinstance(call.args[0], (ast.Name, ast.Lambda))
            and self.holds(func.value)
        ):
            return
        hook = call.args[0]
        function = (
            hook
            if isinstance(hook, ast.Lambda)
            else self.resolve_call(ast.Call(func=hook, args=[], keywords=[]))
        )
        parameters = [*function.args.posonlyargs, *function.args.args] if function else []
        if function is not None and parameters:
            self.keys.add(f"{id(function)}:{parameters[0].arg}")

    def _bind_lambdas(self, call: ast.Call) -> None:
        """`apply_to_collection(out, Tensor, lambda t: ...)`, `tree_map(lambda t: ...,
        out)`, `max(losses, key=lambda l: ...)`: a lambda handed to a call together with
        tensors is applied to them, so its parameters hold tensors."""
        arguments = [*call.args, *(k.value for k in call.keywords)]
        lambdas = [a for a in arguments if isinstance(a, ast.Lambda)]
        if not lambdas or not any(
            self.holds(a) for a in arguments if not isinstance(a, ast.Lambda)
        ):
            return
        for function in lambdas:
            parameters = [*function.args.posonlyargs, *function.args.args]
            self.keys.update(f"{id(function)}:{p.arg}" for p in parameters)

    def _converts(self, argument: ast.expr) -> bool:
        """A function handed over that turns what it gets into a host number: `lambda t:
        t.item()`, or a function of the file whose every return is one (`def to_float(t):
        return t.item()`)."""
        if isinstance(argument, ast.Lambda):
            return _converted(argument.body)
        if not isinstance(argument, ast.Name):
            return False
        function = self.resolve_call(ast.Call(func=argument, args=[], keywords=[]))
        if function is None:
            return False
        values = [n.value for n in own_nodes(function) if isinstance(n, ast.Return)]
        return bool(values) and all(v is not None and _converted(v) for v in values)

    def _stepped_closure(self, call: ast.Call) -> Optional[Function]:
        """The closure of `optimizer.step(closure)` (LBFGS and other optimizers that
        re-evaluate the loss): the step returns what the closure returns."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "step" and len(call.args) == 1):
            return None
        argument = call.args[0]
        if not isinstance(argument, ast.Name):
            return None
        return self.resolve_call(ast.Call(func=argument, args=[], keywords=[]))

    def _returns_at(self, helper: Function, index: Optional[int] = None) -> bool:
        """Whether `helper` returns a device tensor (at `index` of the tuple it returns).
        Past MAX_HELPERS helpers returning one another's result, not known to: a chain of
        a thousand such functions recursed past Python's limit and cost the file."""
        if self._helpers >= MAX_HELPERS:
            return False
        outer, self._scope = self._scope, id(helper)
        self._helpers += 1
        try:
            return self._returned(helper, index)
        finally:
            self._scope = outer
            self._helpers -= 1

    def _returned(self, helper: Function, index: Optional[int]) -> bool:
        for node in ast.walk(helper):
            if not isinstance(node, ast.Return) or node.value is None:
                continue
            value = node.value
            if index is not None:
                if not isinstance(value, ast.Tuple) or index >= len(value.elts):
                    continue
                value = value.elts[index]
            if self.holds(value, depth=3):
                return True
        return False

    # -- the question ----------------------------------------------------------------------

    def holds(self, node: Optional[ast.AST], depth: int = 0) -> bool:
        """Whether `node` evaluates to a device tensor (or a container of them)."""
        if node is None or depth > 6:
            return False
        deeper = depth + 1
        if isinstance(node, (ast.Name, ast.Attribute)):
            key = self._key(node)
            if key is not None and key in self.keys:
                return True
            if isinstance(node, ast.Attribute) and node.attr == "grad":
                return True  # p.grad: gradients live with the parameters, on the device
            if isinstance(node, ast.Attribute) and node.attr in TENSOR_ATTRIBUTES:
                return self.holds(node.value, deeper)  # loss.data, x.T
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                # `batch = batch.to(device)` ... `batch.y`: a field of an object moved to
                # the device (a PyG Batch) is on it; not its metadata
                return not metadata_attribute(node.attr) and self._key(node.value) in self.moved
            return False
        if isinstance(node, (ast.Subscript, ast.Starred)):
            return self.holds(node.value, deeper)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Mod) and _stringy(node.left):
                return False  # "%f" % x is a string
            return self.holds(node.left, deeper) or self.holds(node.right, deeper)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and self.holds(node.operand, deeper)
        if isinstance(node, ast.Compare):
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return False
            return any(self.holds(n, deeper) for n in [node.left, *node.comparators])
        if isinstance(node, ast.IfExp):
            return self.holds(node.body, deeper) or self.holds(node.orelse, deeper)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.holds(e, deeper) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.holds(v, deeper) for v in node.values)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.holds(node.elt, deeper)
        if isinstance(node, ast.DictComp):
            return self.holds(node.value, deeper)
        if isinstance(node, ast.Call):
            return self._call(node, deeper)
        return False

    def _call(self, call: ast.Call, depth: int) -> bool:
        func = call.func
        if _converted(call):
            return False
        if any(self._converts(a) for a in call.args):
            # `apply_to_collection(out, Tensor, lambda t: t.item())`, `tree_map(to_float,
            # out)`: the function handed over makes every tensor a Python number
            return False
        if moves_to_device(call):
            return True
        typed_as = isinstance(func, ast.Attribute) and func.attr == "type_as" and call.args
        if typed_as and self.holds(call.args[0], depth):
            return True  # `z.type_as(imgs)`: cast to the type, and moved to the device, of imgs
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if isinstance(func, ast.Name) and func.id in NUMBERS:
            return False
        if isinstance(func, ast.Name) and func.id in KEEPING:
            return any(self.holds(a, depth) for a in arguments)
        name = self.qualname(func) or ""
        if name.rsplit(".", 1)[-1] in TENSOR_RETURNS:
            return True  # norm = clip_grad_norm_(...): a 0-d device tensor
        if name in HOST_MEDIA:
            return False
        if name in DEVICE_KEEPING:
            return any(self.holds(a, depth) for a in call.args)
        if name.startswith("torch."):
            if torch_host_function(name):
                return False
            device = keyword_arg(call, FACTORY_DEVICE)
            if device is not None and not is_cpu(device):
                return True  # torch.zeros(3, device=device)
            return any(self.holds(a, depth) for a in arguments)
        stepped = self._stepped_closure(call)
        if stepped is not None:
            return self._returns_at(stepped)  # `loss = optimizer.step(closure)`
        helper = self.resolve_call(call)
        if helper is not None:
            key = id(helper)
            if key not in self._returns:
                self._returns[key] = False  # no recursion through itself
                self._returns[key] = self._returns_at(helper)
            return self._returns[key]
        if (
            isinstance(func, ast.Attribute)
            and func.attr not in HOST_METHODS
            and self.holds(func.value, depth)
        ):
            return True  # loss.detach(), losses.values()
        if name.startswith(HOST_ROOTS) or (isinstance(func, ast.Name) and func.id in BUILTINS):
            return False
        if (
            isinstance(func, ast.Attribute)
            and func.attr in COMBINING
            and len(call.args) == 1
            and self.holds(call.args[0], depth)
        ):
            return True  # pred.eq(y) with `y` on the device: `pred` is a tensor there too
        # model(x), criterion(out, y), F.softmax(t): a function out of sight given a
        # tensor returns one (or has read one on the host itself); not a method of some
        # object (`augment.tune(pred)` may keep a float), but an object the trainer holds
        # and calls (`self.model(x)`, `self.criterion(out, y)`: `self.model = model`)
        plain = isinstance(func, ast.Name) or (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and (func.value.id in self.modules or dotted(func) in self.held)
        )
        if not plain or not any(self.holds(a, depth) for a in arguments):
            return False
        # a helper of another file of the run that copies what it is handed to the host
        # and returns only host values (`cal_text_score(preds, ...)` returning NumPy scores)
        return self.host_result is None or not self.host_result(
            call, lambda a: self.holds(a, depth)
        )


LISTINGS = {"list", "tuple", "sorted", "set"}


def unwrap_listing(iterable: ast.expr) -> ast.expr:
    """`batch.keys()` of `list(batch.keys())`: a builtin copying what it is given into a
    sequence iterates the same elements."""
    while (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Name)
        and iterable.func.id in LISTINGS
        and len(iterable.args) == 1
        and not iterable.keywords
    ):
        iterable = iterable.args[0]
    return iterable


def keys_loop(loop: Union[ast.For, ast.AsyncFor]) -> bool:
    """`for k in batch: ... batch[k]`: the loop indexes what it iterates with its own
    variable, so it walks a mapping's keys (strings), not tensors."""
    if not isinstance(loop.target, ast.Name):
        return False
    iterated = ast.unparse(unwrap_listing(loop.iter))
    return any(
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Name)
        and node.slice.id == loop.target.id
        and ast.unparse(node.value) == iterated
        for statement in loop.body
        for node in ast.walk(statement)
    )


def metadata_attribute(name: str) -> bool:
    """`x.shape`, `x.dtype`, `batch.num_graphs`, `batch.batch_size`: what an attribute
    of a tensor or batch object says about it on the host, not a tensor."""
    return (
        name in METADATA
        or name.startswith(("num_", "n_", "is_", "_"))
        or name.endswith(("size", "_count", "_len"))
    )


def torch_host_function(name: str) -> bool:
    """A `torch.*` function answering about the host or the build, not computing a
    tensor: `torch.cuda.is_available()`, `torch.is_tensor(x)`, private
    `torch._C._get_cudnn_enabled()`."""
    last = name.rsplit(".", 1)[-1]
    return (
        name.startswith(TORCH_HOST_ROOTS)
        or last.startswith(TORCH_HOST)
        or any(part.startswith("_") for part in name.split(".")[1:])
    )


def _stringy(node: ast.expr) -> bool:
    """A string expression: "%d", "%11s" * 2 + "%11.4g" * 5, f"..."."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        return _stringy(node.left) or _stringy(node.right)
    return False


def stringy(node: ast.expr) -> bool:
    return _stringy(node)


def converted(value: ast.expr) -> bool:
    """`x.item()`, `float(x)`: see `_converted`."""
    return _converted(value)


def _converted(value: ast.expr) -> bool:
    """`x.item()`, `x.tolist()`, `float(x)`: a number on the host."""
    if isinstance(value, ast.IfExp):
        # `t.item() if isinstance(t, torch.Tensor) else t`: a number either way
        tensor_test = (
            isinstance(value.test, ast.Call)
            and isinstance(value.test.func, ast.Name)
            and value.test.func.id == "isinstance"
            and "Tensor" in ast.unparse(value.test)
        )
        return _converted(value.body) and (
            tensor_test or _converted(value.orelse) or isinstance(value.orelse, ast.Constant)
        )
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in ("item", "tolist") and not value.args:
        return True
    return isinstance(func, ast.Name) and func.id in ("float", "int", "bool")
