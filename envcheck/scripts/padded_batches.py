"""Collate functions that pad each batch to its own longest sample.

`padding_collates(module)` names the file's top-level collate functions and classes whose
batches change shape from one batch to the next: a collate function (its name says so:
`_collate_fn`, `collate_batch`) or a collate class (`TextMelCollate`: its `__call__`)
that pads to the longest sample of the batch it is given (`max(x.size(0) for x in
batch)`, `max([len(t) for t in texts])`, `pad_sequence(...)`), itself or through a
function of the same file it calls (`pad_list(xs)`); and a DataLoader subclass installing
one (`self.collate_fn = _collate_fn` in its `__init__`). Such batches are as long as
their longest utterance or sentence: cuDNN autotuning would re-run for most new shapes,
so `cudnn.benchmark` buys little there (precision.py reads them through the run's other
files, run_options.py).

Size: one pass over the file's top-level definitions; a file whose text names neither a
collate nor a padding is not walked.
"""

from __future__ import annotations

import ast
import re
from typing import Optional, Union

from envcheck.scripts.index import module_nodes

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

COLLATE = re.compile(r"(?i)collate")
# Library padders of a list of variable-length tensors to the longest one.
PADDERS = ("pad_sequence",)
# What a batch's lengths are read with inside `max(...)`.
LENGTH = re.compile(r"\blen\(|\.size\(|\.shape\b")


def padding_collates(module: ast.Module, text: str) -> dict[str, str]:
    """Collate function or class name (or DataLoader subclass name) -> the line that pads
    to the batch's longest sample."""
    if not COLLATE.search(text) or not ("max(" in text or "pad_sequence" in text):
        return {}
    functions: dict[str, Function] = {
        n.name: n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    classes = [n for n in module.body if isinstance(n, ast.ClassDef)]
    found: dict[str, str] = {}
    for name, function in functions.items():
        if COLLATE.search(name):
            why = _pads(function, functions)
            if why:
                found[name] = why
    for cls in classes:
        call = _method(cls, "__call__")
        if COLLATE.search(cls.name) and call is not None:
            why = _pads(call, functions)
            if why:
                found[cls.name] = why
    for cls in classes:
        init = _method(cls, "__init__")
        loader = any(ast.unparse(b).endswith("DataLoader") for b in cls.bases)
        if init is None or not (loader or cls.name.endswith("DataLoader")):
            continue  # a DataLoader subclass, or a loader of the project's own (a thread)
        for node in ast.walk(init):
            if (
                isinstance(node, ast.Assign)
                and any(ast.unparse(t) == "self.collate_fn" for t in node.targets)
                and isinstance(node.value, ast.Name)
                and node.value.id in found
            ):
                found[cls.name] = found[node.value.id]
    return found


def _length_key(call: ast.Call, function: Function) -> bool:
    """`max(batch, key=...)` whose key reads a sample's length: a lambda, or a function
    nested in `function`, returning `len(p[0])` or `p[0].size(0)`."""
    key = next((k.value for k in call.keywords if k.arg == "key"), None)
    if isinstance(key, ast.Lambda):
        return bool(LENGTH.search(ast.unparse(key.body)))
    if not isinstance(key, ast.Name):
        return False
    nested = [
        n
        for n in ast.walk(function)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == key.id
    ]
    returns = [
        n.value
        for d in nested[:1]
        for n in ast.walk(d)
        if isinstance(n, ast.Return) and n.value is not None
    ]
    return bool(returns) and all(LENGTH.search(ast.unparse(r)) for r in returns)


def _method(cls: ast.ClassDef, name: str) -> Optional[Function]:
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
            return item
    return None


def _pads(function: Function, functions: dict[str, Function], depth: int = 0) -> Optional[str]:
    """Where `function` pads to the longest sample it is given (a `max(...)` over a
    comprehension of lengths, a library padder), itself or through a function of the
    file it calls (one level); None if nowhere."""
    for node in module_nodes(function):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else None
        name = func.id if isinstance(func, ast.Name) else name
        if name in PADDERS:
            return f"{name}(...) at line {node.lineno}"
        if (
            name == "max"
            and len(node.args) == 1
            and isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp))
            and LENGTH.search(ast.unparse(node.args[0].elt))
        ):
            return f"{ast.unparse(node)} at line {node.lineno}"
        if name == "max" and len(node.args) == 1 and _length_key(node, function):
            # `max(batch, key=seq_length_)` with `def seq_length_(p): return len(p[0])`
            return f"{ast.unparse(node)} at line {node.lineno}"
        if depth == 0 and isinstance(func, ast.Name) and func.id in functions:
            why = _pads(functions[func.id], functions, depth + 1)
            if why:
                return why
    return None
