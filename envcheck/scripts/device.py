"""Does this file train on a GPU? One three-valued answer that every EC5xx rule shares.

Read from the source, never run: `answer` returns `{"trains": "yes" | "no" | "unknown",
"reason": ..., "line": ...}`.

- **yes**: a CUDA device reaches the model or the data: `.cuda()`, `.cuda(args.gpu)`; a device
  value (`"cuda"`, `torch.device("cuda" if torch.cuda.is_available() else "cpu")`, a variable or
  an argparse default holding one) handed to `.to(...)`, a `device=` argument or a call;
  Hugging Face Accelerate (`Accelerator()`, `accelerator.prepare`); a Lightning
  `Trainer`/`Fabric` whose accelerator is gpu, cuda or auto (Lightning's default), or a
  Lightning 1.x `Trainer.from_argparse_args` (the script's --accelerator/--gpus flags);
  `torch.accelerator`; DDP (`init_process_group`, `DistributedDataParallel`,
  `torch.cuda.set_device`, `LOCAL_RANK`); `device_map=`; `DataParallel`; a Hugging
  Face `Trainer` (unless `TrainingArguments(use_cpu=True)`).
- **no**: the code says CPU (`Trainer(accelerator="cpu")`, `Accelerator(cpu=True)`, only
  CPU devices, a `device='cpu'` parameter default of library code, also handed on to
  the base class: `super().__init__(device=device)`; `'cuda' if use_cuda else 'cpu'`
  where `use_cuda` is fixed in code, read from a config the file builds with no
  arguments: `conf = Config()` whose `no_cuda` defaults to True, a device parameter every
  call of its function hands that CPU), or it runs a
  PyTorch training loop and never names a device (tensors then stay on the CPU), or it
  trains a model it builds itself and moves nothing anywhere (own_model.py). A
  device the file does not determine, handed to any call (`torch.ones(..., device=d)`,
  a project's `batch_to_device(batch, self._device)`), is no proof of CPU training: the
  answer is then unknown.
- **unknown**: anything else, with the reason (a data module with no training code, a
  LightningModule whose Trainer is elsewhere, a device passed in from elsewhere, a
  trainer that optimizes a model its caller hands in, `PPO(actor_critic)`, where that
  caller put it): the training machine then decides.

Not counted: a `torch.device("cuda")` that is created but never used, or used only after
the file's module-level training loops have finished (a tutorial that trains on the CPU
and shows the GPU afterwards); `torch.cuda.device_count()` or `is_available()` alone; a
copy of results to the host handed to NumPy or Python (`grid.to('cpu').numpy()` to save
an image), which is no CPU training.

Size: one reader of the evidence for a device and its counter-evidence; the cases weigh
against each other (a CPU default handed on to a base class, a device made but used only
after training), so they stay together.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

from envcheck.scripts.gpu_tests import cuda_available
from envcheck.scripts.index import calls_of, keyword_arg, module_nodes
from envcheck.scripts.own_model import handed_model, moves_anything, optimized_model
from envcheck.scripts.parameters import parameter_default
from envcheck.scripts.texts import clipped, text
from envcheck.scripts.training_calls import (
    base_init,
    hidden_backward,
    outside_step,
    preprocessing_fit,
    updates_parameters,
)
from envcheck.scripts.values import Scope, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

LIGHTNING_ROOTS = ("lightning.", "pytorch_lightning.", "lightning.pytorch.", "lightning_fabric.")
DDP_NAMES = {
    "torch.distributed.init_process_group": "init_process_group (one process per GPU)",
    "torch.nn.parallel.DistributedDataParallel": "DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": "DistributedDataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "DataParallel",
    "torch.nn.DataParallel": "DataParallel",
    "torch.nn.parallel.DataParallel": "DataParallel",
    "torch.cuda.set_device": "torch.cuda.set_device",
}
GPU_WORDS = ("cuda", "gpu", "auto")
HF_ROOTS = ("transformers.", "trl.")
MOVES = ("to", "cuda", "to_device")
HOST_READS = ("numpy", "tolist", "item")  # a tensor's values handed to NumPy or Python
QUIET = {"print", "info", "debug", "warning", "log", "format", "write", "set_description"}


@dataclass
class Evidence:
    # "yes" | "no" | "cpu" (a trainer told to use the CPU) | "opaque" | "handed" (a device
    # the file does not determine, handed to a call: no proof of CPU training)
    verdict: str
    reason: str
    line: int
    module_level: bool


def answer(walker: Walker) -> dict[str, Any]:
    """The file's answer, from everything it does (see the module docstring)."""
    reader = _Reader(walker)
    reader.read()
    return reader.verdict()


def trains(walker: Walker) -> Optional[dict[str, Any]]:
    """Where the file's training code is (`{"line", "column", "code"}` of the first backward
    pass, optimizer step, `training_step` or `fit`), or None for a file of data or model
    definitions only: the file-level precision rules judge files that train."""
    found: list[ast.AST] = []
    updates = updates_parameters(walker.module)
    for node in module_nodes(walker.module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in (
            "training_step",
            "train_step",
        ):
            found.append(node)
        if (
            isinstance(node, ast.Call)
            and (walker.qualname(node.func) or "").startswith(HF_ROOTS)
            and (walker.qualname(node.func) or "").endswith("Trainer")
        ):
            found.append(node)  # a Hugging Face Trainer runs the training loop
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            optimizer = attr == "step" and "optim" in text(node.func.value).lower()
            if attr == "fit" and preprocessing_fit(node.func.value):
                continue  # encoder.fit(column): a data transform learns its mapping
            if attr == "fit" and _scikit_learn(walker, node.func.value):
                continue  # LogisticRegression().fit(z, y): a probe on the CPU, no GPU step
            if attr in ("backward", "manual_backward") and not (updates or node.args):
                # `loss.backward()` with no update anywhere: gradients for an attack or a
                # timing table (a wrapper's `mp.backward(loss)` steps out of sight)
                continue
            if attr in ("backward", "manual_backward", "fit", "fit_generator") or optimizer:
                found.append(node)
        if isinstance(node, ast.Call) and (
            hidden_backward(node) or outside_step(walker.index(), node)
        ):
            found.append(node)  # loss_scaler(loss, optimizer), trainer.train_step(batch)
    if not found:
        return None
    first = min(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    line = getattr(first, "lineno", 0)
    code = walker.lines[line - 1].strip() if 0 < line <= len(walker.lines) else ""
    return {"line": line, "column": getattr(first, "col_offset", 0) + 1, "code": code}


def _scikit_learn(walker: Walker, receiver: ast.expr) -> bool:
    """`LogisticRegression(...)` (or a name assigned one) of scikit-learn."""
    if isinstance(receiver, ast.Name):
        assigned = walker.scope().lookup(receiver.id)
        receiver = assigned if assigned is not None else receiver
    return isinstance(receiver, ast.Call) and (walker.qualname(receiver.func) or "").startswith(
        "sklearn."
    )


def is_training_loop(node: ast.AST) -> bool:
    """A `for`/`while` whose body calls `backward` (or `optimizer.step`)."""
    if not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        return False
    return any(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr in ("backward", "manual_backward"))
            or hidden_backward(n)
        )
        for n in ast.walk(node)
    )


class _Reader:
    def __init__(self, walker: Walker):
        self.walker = walker
        self.found: list[Evidence] = []
        self.training_end: Optional[int] = None  # last line of module-level training loops
        self.trains_anywhere = False
        self.lightning_module = False
        self.builds_model: Optional[tuple[int, str]] = None  # line, model of its optimizer
        self.handed_model: Optional[tuple[int, str]] = None  # ... one a caller hands in
        self.host_reads: Optional[set[int]] = None

    # -- walk ---------------------------------------------------------------------------

    def read(self) -> None:
        module = self.walker.module
        for statement in module.body:
            if is_training_loop(statement):
                self.training_end = max(self.training_end or 0, statement.end_lineno or 0)
        stack: list[tuple[ast.AST, Optional[Function]]] = [(module, None)]
        while stack:
            node, function = stack.pop()
            if isinstance(node, ast.Call):
                self._call(node, function)
            elif isinstance(node, ast.Subscript):
                self._environ(node, function)
            elif isinstance(node, ast.ClassDef):
                self._class(node)
            if is_training_loop(node):
                self.trains_anywhere = True
            inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))

    def _scope(self, function: Optional[Function]) -> Scope:
        return self.walker.scope_of(function)

    def _add(self, verdict: str, reason: str, node: ast.AST, function: Optional[Function]) -> None:
        line = getattr(node, "lineno", 0)
        self.found.append(Evidence(verdict, reason, line, function is None))

    def _class(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            name = self.walker.qualname(base) or ""
            if name.startswith(LIGHTNING_ROOTS) and name.endswith("LightningModule"):
                self.lightning_module = True

    def _environ(self, node: ast.Subscript, function: Optional[Function]) -> None:
        key = node.slice
        if isinstance(key, ast.Constant) and key.value == "LOCAL_RANK":
            self._add("yes", "reads LOCAL_RANK (torchrun: one process per GPU)", node, function)

    def _call(self, node: ast.Call, function: Optional[Function]) -> None:
        name = self.walker.qualname(node.func) or ""
        func = node.func
        if name.startswith("torch.optim.") and self.builds_model is None:
            model = optimized_model(node, function, self._scope(function))
            self.builds_model = (node.lineno, model) if model else None
        if name.startswith("torch.optim.") and self.handed_model is None:
            handed = handed_model(node, function, self.walker.module)
            self.handed_model = (node.lineno, handed) if handed else None
        if name in DDP_NAMES:
            backend = keyword_arg(node, "backend") or (node.args[0] if node.args else None)
            value = resolve(backend, self._scope(function)) if backend is not None else None
            if value is not None and value.known and value.value in ("gloo", "mpi"):
                return  # CPU-capable backends: not evidence either way
            self._add("yes", DDP_NAMES[name], node, function)
            return
        if name.startswith("torch.accelerator."):
            self._add(
                "yes", f"{name} (the current accelerator, a GPU when present)", node, function
            )
            return
        if name.endswith("os.environ.get") or name.endswith("os.getenv"):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and first.value == "LOCAL_RANK":
                self._add("yes", "reads LOCAL_RANK (torchrun: one process per GPU)", node, function)
            return
        if name in ("accelerate.Accelerator",):
            cpu = keyword_arg(node, "cpu")
            value = resolve(cpu, self._scope(function)) if cpu is not None else None
            if value is not None and value.known and value.value is True:
                self._add("cpu", "Accelerator(cpu=True)", node, function)
            else:
                self._add(
                    "yes",
                    "Hugging Face Accelerate (Accelerator() uses a GPU when present)",
                    node,
                    function,
                )
            return
        if name.startswith(HF_ROOTS) and name.endswith("Trainer"):
            self._add(
                "yes",
                f"Hugging Face {name.rsplit('.', 1)[-1]} (a GPU when present)",
                node,
                function,
            )
            return
        if name.startswith(HF_ROOTS) and name.endswith("TrainingArguments"):
            for key in ("use_cpu", "no_cuda"):
                flag = keyword_arg(node, key)
                value = resolve(flag, self._scope(function)) if flag is not None else None
                if value is not None and value.known and value.value is True:
                    self._add("cpu", f"TrainingArguments({key}=True)", node, function)
            return
        if name.startswith(LIGHTNING_ROOTS) and name.rsplit(".", 1)[-1] in ("Trainer", "Fabric"):
            self._lightning(node, name.rsplit(".", 1)[-1], function)
            return
        if name.startswith(LIGHTNING_ROOTS) and name.endswith("Trainer.from_argparse_args"):
            # Lightning 1.x: Trainer.add_argparse_args gives the script --accelerator and
            # --gpus, a GPU behind an opt-in flag
            self._add(
                "yes",
                f"{_short(node)} (the script's --accelerator / --gpus flags choose the GPU)",
                node,
                function,
            )
            return
        if isinstance(func, ast.Attribute) and func.attr == "prepare" and node.args:
            receiver = text(func.value).lower()
            if "accelerator" in receiver:
                self._add(
                    "yes",
                    f"{text(func)}(...) (Accelerate places it on the GPU)",
                    node,
                    function,
                )
                return
        # `.cuda()`, `.cuda(0)`, `.cuda(args.gpu)`: a tensor's or module's move to a CUDA
        # device, whatever device index it is given (not a module's `cuda`: numba, cupy)
        cuda_method = isinstance(func, ast.Attribute) and func.attr == "cuda"
        if cuda_method and not name.startswith(("torch.cuda", "numba.", "cupy.")):
            self._add("yes", f"{_short(node)}", node, function)
            return
        device_map = keyword_arg(node, "device_map")
        if device_map is not None:
            value = resolve(device_map, self._scope(function))
            if not (value.known and value.value == "cpu"):
                self._add("yes", f"device_map={ast.unparse(device_map)}", node, function)
                return
        if name.startswith(("torch.cuda.amp.", "torch.cuda.graph", "torch.cuda.CUDAGraph")):
            self._add("yes", name, node, function)
            return
        if name == "torch.device" or (name.endswith(".device") and name.startswith("torch")):
            return  # creating a device is not using it
        if name in QUIET or name.rsplit(".", 1)[-1] in QUIET:
            return  # printing or logging a device is not using it
        moved = self._helper_move(name)
        if moved is not None:
            self._add("yes", f"{_short(node)} ({moved})", node, function)
            return
        self._arguments(node, function)

    def _helper_move(self, name: str) -> Optional[str]:
        """Where a project function of another file of the run (`prepare_input(...)` of
        lib/utils/general.py) moves what it returns to a CUDA device itself: its body
        calls `.cuda()` on a name it then returns (`input_tensor, target =
        input_tensor.cuda(), target.cuda()` ... `return input_tensor, target`), under
        a flag or not, as the file's own `.cuda()` would count; None otherwise."""
        find = self.walker.exported_elsewhere
        if find is None or "." not in name or name.startswith(("torch.", "numpy.")):
            return None
        helper = find(name)
        if helper is None:
            return None
        moved = {
            target.id
            for node in ast.walk(helper.function)
            if isinstance(node, ast.Assign)
            for target, value in _assigned_pairs(node)
            if isinstance(target, ast.Name) and _cuda_call(value)
        }
        returned = {
            n.id
            for node in ast.walk(helper.function)
            if isinstance(node, ast.Return) and node.value is not None
            for n in ast.walk(node.value)
            if isinstance(n, ast.Name)
        }
        direct = any(
            isinstance(node, ast.Return) and node.value is not None and _cuda_call(node.value)
            for node in ast.walk(helper.function)
        )
        if direct or moved & returned:
            return f"its .cuda() in {helper.shown}, line {helper.function.lineno}"
        return None

    def _lightning(self, node: ast.Call, kind: str, function: Optional[Function]) -> None:
        scope = self._scope(function)
        accelerator = keyword_arg(node, "accelerator")
        gpus = keyword_arg(node, "gpus")
        if gpus is not None:
            value = resolve(gpus, scope)
            if value.known and value.value in (0, None):
                self._add("cpu", f"{kind}(gpus={ast.unparse(gpus)})", node, function)
            else:
                self._add("yes", f"{kind}(gpus={ast.unparse(gpus)})", node, function)
            return
        if accelerator is None:
            self._add(
                "yes",
                f"Lightning {kind}() (accelerator defaults to 'auto': a GPU when present)",
                node,
                function,
            )
            return
        value = resolve(accelerator, scope)
        text = f"{kind}(accelerator={ast.unparse(accelerator)})"
        if not value.known:
            self._add("opaque", f"{text}: {value.source}", node, function)
        elif str(value.value).lower() in (*GPU_WORDS, "tpu", "mps"):
            if str(value.value).lower() in GPU_WORDS:
                self._add("yes", text, node, function)
        elif str(value.value).lower() == "cpu":
            self._add("cpu", text, node, function)

    def _arguments(self, node: ast.Call, function: Optional[Function]) -> None:
        """A device value handed to `.to(...)`, a `device=` argument or any call."""
        moving = _moves(node)
        arguments: list[ast.expr] = [*node.args]
        arguments += [k.value for k in node.keywords if k.arg in ("device", "device_type", None)]
        if not moving:
            # a plain call counts only with a device argument or a device=... keyword
            arguments = [a for a in node.args if _device_like(a)] + [
                k.value for k in node.keywords if k.arg in ("device", "device_type")
            ]
        scope = self._scope(function)
        for argument in arguments:
            device = self._device(argument, scope)
            default = None
            if isinstance(argument, ast.Name):
                default = parameter_default(function, argument.id, scope)
            if default is not None and self._device(default, scope) in ("cuda", "cpu"):
                device = self._device(default, scope)
            elif device == "opaque" and isinstance(argument, ast.Name):
                # handed the CPU by every call (handed CUDA, the call itself counts)
                device = "cpu" if self._handed(function, argument.id) == "cpu" else device
            if device == "cuda":
                self._add("yes", f"{_short(node)}", node, function)
                return
            if device == "cpu" and (moving or base_init(node)):
                if id(node) in self._host_reads():
                    return  # `grid.to('cpu').numpy()`: results read on the host, no training
                self._add("no", f"{_short(node)} (the CPU)", node, function)
                return
            if device == "opaque" and _device_like(argument):
                verdict = "opaque" if moving else "handed"
                self._add(
                    verdict, f"{_short(node)}: the device is not determined here", node, function
                )
                return

    def _host_reads(self) -> set[int]:
        """Ids of the calls whose result is handed straight to NumPy or Python
        (`grid.permute(1, 2, 0).to('cpu').numpy()` to save an image, `.tolist()`,
        `.item()`): a copy of results to the host, which chooses no training device.
        Gathered once per file."""
        if self.host_reads is None:
            self.host_reads = {
                id(n.func.value)
                for n in module_nodes(self.walker.module)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in HOST_READS
                and isinstance(n.func.value, ast.Call)
            }
        return self.host_reads

    def _device(self, node: ast.expr, scope: Scope, depth: int = 0) -> Optional[str]:
        """ "cuda", "cpu", "opaque" (a device whose value this file does not show), or
        None (not a device: a dtype, a tensor, a number)."""
        if depth > 6:
            return None
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                text = node.value.lower().lstrip("/")
                if text.startswith(("cuda", "gpu", "device:gpu")):
                    return "cuda"
                if text.startswith("cpu"):
                    return "cpu"
            return None
        if isinstance(node, ast.IfExp):
            chosen = self._fixed_test(node.test, scope)
            if chosen is not None:  # `'cuda' if use_cuda else 'cpu'`, use_cuda set in code
                return self._device(node.body if chosen else node.orelse, scope, depth + 1)
            body, orelse = (self._device(b, scope, depth + 1) for b in (node.body, node.orelse))
            if "cuda" in (body, orelse):
                return "cuda"
            taken = resolve(node.test, scope)
            if taken.known and (body if taken.value else orelse) is None:
                # `torch.device('cpu') if args.no_gpu else gpu_device()`: the run at the
                # defaults takes a helper's device, not the CPU of the other branch
                return "opaque"
            return body or orelse
        if isinstance(node, ast.Call):
            name = self.walker.qualname(node.func) or ""
            if name.startswith("torch.device") or name.endswith(".device"):
                if node.args:
                    return self._device(node.args[0], scope, depth + 1)
                return None
            if name.startswith("torch.accelerator."):
                return "cuda"
            if isinstance(node.func, ast.Attribute) and node.func.attr == "format":
                return self._device(node.func.value, scope, depth + 1)
            return "opaque" if _device_getter(node) else None
        if isinstance(node, ast.JoinedStr):
            head = node.values[0] if node.values else None
            return self._device(head, scope, depth + 1) if isinstance(head, ast.Constant) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            return self._device(node.left, scope, depth + 1)
        if isinstance(node, ast.Name):
            assigned = scope.lookup(node.id)
            if assigned is not None:
                return self._device(assigned, scope, depth + 1)
            return "opaque" if "device" in node.id.lower() else None
        if isinstance(node, ast.Attribute):
            value = resolve(node, scope)
            if value.known and isinstance(value.value, str):
                return self._device(ast.Constant(value.value), scope, depth + 1)
            if _self_attribute(node) and node.attr in scope.attributes:
                # `self.device = "cuda" if torch.cuda.is_available() else "cpu"` in __init__
                assigned, init = scope.attributes[node.attr]
                found = self._device(assigned, init, depth + 1)
                if found in ("cuda", "cpu"):
                    return found
            return "opaque" if "device" in node.attr.lower() else None
        return None

    def _handed(self, function: Optional[Function], name: str) -> Optional[str]:
        """ "cuda" or "cpu" when `name` is a parameter of `function`, never rebound, that
        every call of the function in the file hands the same device (`train(model,
        device, loader)` with `device = torch.device("cpu")`); None otherwise."""
        if function is None or name in self._scope(function).local_names:
            return None
        positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        if name not in positional:
            return None
        index = self.walker.index()
        method = positional[:1] in (["self"], ["cls"])
        found: set[Optional[str]] = set()
        for caller, call in calls_of(self.walker.module, index.function_nodes, function.name):
            if isinstance(call.func, ast.Attribute) is not method:
                continue  # `model.train()` is no call of the file's `def train(...)`
            offset = 1 if method else 0
            given = next((k.value for k in call.keywords if k.arg == name), None)
            at = positional.index(name) - offset
            if given is None and 0 <= at < len(call.args):
                given = call.args[at]
            if given is None or isinstance(given, ast.Starred):
                return None
            found.add(self._device(given, self._scope(caller)))
        return found.pop() if len(found) == 1 and found <= {"cuda", "cpu"} else None

    def _fixed_test(self, test: ast.expr, scope: Scope) -> Optional[bool]:
        """The value of a device test that no command line can change: one read from a
        config object the file builds with no arguments (`conf = Config()` ... `not
        conf.no_cuda and torch.cuda.is_available()`), so its defaults are the run's.
        None for anything else: a flag (`args.cuda`) is the user's choice, and a GPU
        behind an opt-in flag counts as one."""
        value = resolve(test, scope)
        if not value.known or not self._set_in_code(test, scope, 0):
            return None
        return bool(value.value)

    def _set_in_code(self, node: ast.expr, scope: Scope, depth: int) -> bool:
        """Whether `node` reads only constants, `torch.cuda.is_available()` and the
        attributes of a config the file builds with no arguments (through names)."""
        if depth > 6:
            return False
        if isinstance(node, ast.Constant) or cuda_available(node):
            return True
        if isinstance(node, ast.UnaryOp):
            return self._set_in_code(node.operand, scope, depth + 1)
        if isinstance(node, ast.BoolOp):
            return all(self._set_in_code(v, scope, depth + 1) for v in node.values)
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            return all(self._set_in_code(p, scope, depth + 1) for p in parts)
        if isinstance(node, ast.Name):
            assigned = scope.lookup(node.id)
            return assigned is not None and self._set_in_code(assigned, scope, depth + 1)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in scope.argparse:
                return False
            built = scope.lookup(node.value.id)
            return (
                isinstance(built, ast.Call)
                and isinstance(built.func, ast.Name)
                and built.func.id in self.walker.index().classes
                and not built.args
                and not built.keywords
            )
        return False

    # -- verdict ---------------------------------------------------------------------------

    def verdict(self) -> dict[str, Any]:
        counted = [e for e in self.found if not self._after_cpu_training(e)]
        declared = [e for e in counted if e.verdict == "cpu"]
        if declared:  # the trainer is told to use the CPU: its own GPU default does not apply
            first = min(declared, key=lambda e: e.line)
            return _answer("no", f"trains on the CPU: {first.reason}", first.line)
        for kind in ("yes", "no", "opaque"):
            chosen = [e for e in counted if e.verdict == kind]
            if not chosen:
                continue
            first = min(chosen, key=lambda e: e.line)
            if kind == "yes":
                return _answer("yes", first.reason, first.line)
            if kind == "no" and not [e for e in counted if e.verdict == "opaque"]:
                return _answer("no", f"trains on the CPU: {first.reason}", first.line)
            opaque = [e for e in counted if e.verdict == "opaque"]
            if opaque:
                first = min(opaque, key=lambda e: e.line)
                return _answer("unknown", first.reason, first.line)
        if self.lightning_module:
            return _answer(
                "unknown",
                "a LightningModule: the Trainer that runs it (not in this file) chooses the "
                "device; its default accelerator 'auto' takes a GPU when the machine has one",
                None,
            )
        if self.walker.facts.get("keras_fit") or self.walker.facts.get("tf_custom_loop"):
            return _answer(
                "unknown",
                "trains with Keras, which runs on a GPU when the machine has one",
                None,
            )
        handed = [e for e in counted if e.verdict == "handed"]
        at = self.walker.facts.get("train_at")
        owned = self.builds_model if at and not moves_anything(self.walker.module) else None
        if (self.trains_anywhere or owned) and handed:
            first = min(handed, key=lambda e: e.line)
            return _answer("unknown", first.reason, first.line)
        if self.trains_anywhere and self.handed_model and not self.builds_model:
            at, given = self.handed_model
            return _answer(
                "unknown",
                f"trains `{given}`, which the caller hands in (line {at}): the caller "
                "chooses its device",
                at,
            )
        if self.trains_anywhere or owned:
            line, model = owned if owned and not self.trains_anywhere else (None, "")
            why = f"trains `{model}`, built here with its optimizer (line {line})," if line else ""
            return _answer(
                "no",
                f"{why or 'runs a PyTorch training loop'} and never moves the model or data "
                "to a GPU",
                line,
            )
        if isinstance(at, dict) and at.get("code"):
            return _answer(
                "unknown",
                f"trains (`{at['code']}`) but names no device: the code that builds the "
                "trainer or model (out of this file) chooses it",
                at.get("line"),
            )
        return _answer(
            "unknown",
            "the file neither trains nor names a device (it may be imported by code that "
            "trains on a GPU)",
            None,
        )

    def _after_cpu_training(self, evidence: Evidence) -> bool:
        """GPU use at module level after every module-level training loop has run."""
        return (
            evidence.verdict == "yes"
            and evidence.module_level
            and self.training_end is not None
            and evidence.line > self.training_end
            and not any(
                e.verdict == "yes" and (not e.module_level or e.line <= self.training_end)
                for e in self.found
            )
        )


def _answer(trains: str, reason: str, line: Optional[int]) -> dict[str, Any]:
    return {"trains": trains, "reason": reason, "line": line}


def _device_like(node: ast.expr) -> bool:
    """An expression that looks like a device: a device string, `torch.device(...)`, a
    name or attribute called *device*."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.lower().lstrip("/").startswith(
            ("cuda", "gpu", "cpu", "device:")
        )
    if isinstance(node, ast.Name):
        return "device" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "device" in node.attr.lower()
    if isinstance(node, ast.Call):
        return text(node.func).endswith("device") or _device_getter(node)
    if isinstance(node, ast.IfExp):
        return _device_like(node.body) or _device_like(node.orelse)
    return False


def _assigned_pairs(node: ast.Assign) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) of `a = x.cuda()` and `a, b = x.cuda(), y.cuda()`."""
    pairs: list[tuple[ast.expr, ast.expr]] = []
    for target in node.targets:
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            if len(target.elts) == len(node.value.elts):
                pairs += list(zip(target.elts, node.value.elts, strict=True))
        else:
            pairs.append((target, node.value))
    return pairs


def _cuda_call(node: ast.expr) -> bool:
    """`x.cuda()`, `x.cuda(non_blocking=True)` on a name or attribute (not a module's
    `torch.cuda`)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "cuda"
        and isinstance(node.func.value, (ast.Name, ast.Attribute))
        and text(node.func.value) not in ("torch", "numba", "cupy")
    )


def _self_attribute(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id == "self"


def _moves(call: ast.Call) -> bool:
    """A call that moves a model or tensors to a device: `.to(...)`, `.cuda(...)`,
    `to_device(...)` and the projects' own `batch_to_device(...)`, `send_to_device(...)`."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in MOVES or name.endswith("_to_device")


def _device_getter(call: ast.Call) -> bool:
    """A project's own device helper: `dist_util.dev()`, `get_device()`, `utils.device()`
    (its value is decided elsewhere)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name.lower() in ("dev", "device", "get_device", "default_device")


def _short(node: ast.AST, limit: int = 60) -> str:
    return clipped(node, limit)
