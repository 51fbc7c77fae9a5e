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
`.item()`), printing a tensor, `torch.cuda.synchronize()`. Only code run on every call
counts: the function's body, its loops and `with` / `try` blocks, not the body of a
branch (`if clip_value is not None:`, `if verbose:`), nested functions or lambdas. A
function handed no device tensor syncs nothing of the step's. What it cannot settle
(its own calls of other functions) is not a sync: a finding is never a guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional, Union

from envcheck.scripts.index import is_cpu, keyword_arg, own_nodes
from envcheck.scripts.tensors import DeviceTensors

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# tensor methods that copy to the host (`.numpy()` fails on a CUDA tensor: never a sync)
SYNC_METHODS = ("item", "cpu", "tolist")
CONVERSIONS = ("float", "int", "bool")


@dataclass
class Foreign:
    """A top-level function of another file of the run: where it is, and the import
    aliases of its module (name -> module) that name its calls."""

    shown: str
    function: Function
    aliases: dict[str, str]
    _found: dict[frozenset[str], Optional[tuple[int, str]]] = field(default_factory=dict)

    def first_sync(self, on_device: frozenset[str]) -> Optional[tuple[int, str]]:
        """(line in its file, what) of the first host read the function makes on every
        call when the parameters `on_device` hold device tensors; None when none does."""
        if not on_device:
            return None
        if on_device not in self._found:
            self._found[on_device] = _Reader(self, on_device).first()
        return self._found[on_device]

    def parameters(self, call: ast.Call) -> dict[int, str]:
        """Position of each positional argument of `call` -> the parameter it binds."""
        arguments = self.function.args
        names = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
        return dict(enumerate(names[: len(call.args)]))


class _Reader:
    def __init__(self, foreign: Foreign, on_device: frozenset[str]):
        self.function = foreign.function
        self.aliases = foreign.aliases
        self.tensors = DeviceTensors(
            [(self.function, list(own_nodes(self.function)))],
            self.qualname,
            lambda _call: None,
            modules=frozenset(self.aliases),
            on_device=tuple((self.function, name) for name in sorted(on_device)),
        )

    def qualname(self, node: ast.AST) -> Optional[str]:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        return ".".join([self.aliases.get(node.id, node.id), *reversed(parts)])

    def tensor(self, node: Optional[ast.AST]) -> bool:
        return node is not None and self.tensors.holds_in(node, self.function)

    def first(self) -> Optional[tuple[int, str]]:
        return self._block(self.function.body)

    def _block(self, body: list[ast.stmt]) -> Optional[tuple[int, str]]:
        for statement in body:
            found = self._statement(statement)
            if found is not None:
                return found
        return None

    def _statement(self, statement: ast.stmt) -> Optional[tuple[int, str]]:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        if isinstance(statement, (ast.If, ast.While)):
            # the test runs on every call; a branch's body only when taken
            if self._tests_tensor(statement.test):
                return statement.test.lineno, "tests a tensor's value"
            found = self._expression(statement.test)
            if found is None and isinstance(statement, ast.While):
                found = self._block(statement.body)
            return found
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            return self._expression(statement.iter) or self._block(statement.body)
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                found = self._expression(item.context_expr)
                if found is not None:
                    return found
            return self._block(statement.body)
        if isinstance(statement, ast.Try):
            return self._block(statement.body) or self._block(statement.finalbody)
        return self._expression(statement)

    def _tests_tensor(self, test: ast.expr) -> bool:
        """`if torch.min(y) < -1.:`, `while norm > limit:`: bool() of a device tensor."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._tests_tensor(test.operand)
        if isinstance(test, ast.BoolOp):
            return self._tests_tensor(test.values[0])  # the first operand always runs
        return isinstance(test, (ast.Compare, ast.Call)) and self.tensor(test)

    def _expression(self, root: ast.AST) -> Optional[tuple[int, str]]:
        for node in [root, *own_nodes(root)]:
            what = self._sync(node)
            if what is not None:
                return getattr(node, "lineno", 0), what
        return None

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
            return None
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if self.qualname(func) == "torch.cuda.synchronize":
            return "waits for the GPU"
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
