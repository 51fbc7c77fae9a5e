"""A file that builds the model it trains: the optimizer is given `model.parameters()`
of a model constructed here (`model = Policy()`), not one a caller handed in (which the
caller may have moved to a GPU). With nothing moved anywhere in the file, such a
training runs on the CPU (device.py); one that trains a model a caller hands in (`PPO(
actor_critic, ...)` optimizing `actor_critic.parameters()`) runs where that caller put
it (`handed_model`)."""

from __future__ import annotations

import ast
from typing import Optional, Union

from envcheck.scripts.index import is_cpu, keyword_arg, module_nodes
from envcheck.scripts.values import Scope

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
DEVICE_GETTERS = ("dev", "device", "get_device", "default_device")


def optimized_model(node: ast.Call, function: Optional[Function], scope: Scope) -> Optional[str]:
    """The name of the model a `torch.optim.*(model.parameters())` call optimizes when
    this file builds that model; None otherwise."""
    first = node.args[0] if node.args else keyword_arg(node, "params")
    if not (
        isinstance(first, ast.Call)
        and isinstance(first.func, ast.Attribute)
        and first.func.attr == "parameters"
        and isinstance(first.func.value, ast.Name)
    ):
        return None
    model = first.func.value.id
    if function is not None and model in {
        a.arg for a in [*function.args.posonlyargs, *function.args.args]
    }:
        return None
    built = scope.lookup(model)
    if not isinstance(built, ast.Call):
        return None
    func = built.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return None if name.lower() in DEVICE_GETTERS else model


def handed_model(node: ast.Call, function: Optional[Function], module: ast.Module) -> Optional[str]:
    """The model a `torch.optim.*(...)` call optimizes when a caller hands it in: a
    parameter of the enclosing function (`def __init__(self, actor_critic)`), or
    `self.model` that a method of the class sets from one of its parameters; None
    otherwise."""
    first = node.args[0] if node.args else keyword_arg(node, "params")
    if not (
        isinstance(first, ast.Call)
        and isinstance(first.func, ast.Attribute)
        and first.func.attr == "parameters"
        and function is not None
    ):
        return None
    model = first.func.value
    if isinstance(model, ast.Name):
        return model.id if model.id in _parameters(function) else None
    if not (
        isinstance(model, ast.Attribute)
        and isinstance(model.value, ast.Name)
        and model.value.id == "self"
    ):
        return None
    owner = next(
        (c for c in module_nodes(module) if isinstance(c, ast.ClassDef) and function in c.body),
        None,
    )
    methods = [m for m in owner.body if isinstance(m, FUNCTIONS)] if owner is not None else []
    for method in methods:
        for assign in ast.walk(method):
            if (
                isinstance(assign, ast.Assign)
                and any(ast.unparse(t) == ast.unparse(model) for t in assign.targets)
                and isinstance(assign.value, ast.Name)
                and assign.value.id in _parameters(method)
            ):
                return ast.unparse(model)
    return None


def _parameters(function: Function) -> set[str]:
    arguments = function.args
    return {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}


def moves_anything(module: ast.Module) -> bool:
    """Any `.cuda()` or `.to(x)` (not to a dtype or "cpu") in the file: a device may be
    chosen where this reading cannot follow it (`model.to(gpu_id)`)."""
    for node in module_nodes(module):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == "cuda":
            return True
        if node.func.attr == "to":
            first = node.args[0] if node.args else keyword_arg(node, "device")
            if first is None:
                continue
            text = ast.unparse(first)
            dtype = "dtype" in text or text.startswith(("torch.float", "torch.int"))
            if not (is_cpu(first) or dtype):
                return True
    return False
