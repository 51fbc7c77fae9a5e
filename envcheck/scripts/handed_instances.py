"""The class of the instance a function's callers hand one of its parameters.

A training step often gets its helpers as parameters: Swin-Transformer's
`train_one_epoch(config, model, ..., loss_scaler)` is called by `main()` with
`loss_scaler = NativeScalerWithGradNormCount()`, VideoMAE's `engine_for_finetuning.py`
by `run_class_finetuning.py` with `loss_scaler = NativeScaler()` (the class imported
from utils.py). Inside the step, `loss_scaler.state_dict()` runs that class's method.

`handed_class` answers with the one class every call of the function hands the
parameter: the argument at the parameter's position or keyword is a name the caller's
own code (its function, or the module's top level) binds only to instances of that class
(`x = Cls(...)`). A binding to `None` beside it (`loss_scaler = None` on the DeepSpeed
path) is left aside: a method called on the parameter runs only where it holds an
instance. Anything else (no call in sight, an argument that is not such a name, a name
bound to something else too, a parameter of the caller, two calls handing different
classes) leaves the class unknown: None.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional, Union

from envcheck.scripts.index import module_nodes, own_nodes

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def handed_class(
    module: ast.Module,
    calls_function: Callable[[ast.Call], bool],
    position: Optional[int],
    parameter: str,
    qualname: Callable[[ast.AST], Optional[str]],
) -> Optional[str]:
    """The qualified name of the one class the calls of the function (those
    `calls_function` accepts) in `module` hand the parameter (at `position`, None for
    keyword-only, or by keyword `parameter`); None when they hand anything else, or
    there is no such call."""
    found: set[Optional[str]] = set()
    for owner, node in _owned_calls(module):
        if not calls_function(node):
            continue
        argument = _argument(node, position, parameter)
        if argument is None:
            return None  # its default, or spread by *args / **kwargs: not in sight
        found.add(bound_class(owner, argument, qualname))
        if len(found) > 1 or None in found:
            return None
    return found.pop() if found else None


def _argument(call: ast.Call, position: Optional[int], parameter: str) -> Optional[ast.expr]:
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if position is not None and position < len(call.args):
        return call.args[position]
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    return None


def bound_class(
    owner: ast.AST, argument: ast.expr, qualname: Callable[[ast.AST], Optional[str]]
) -> Optional[str]:
    """The one class whose instances alone `owner`'s own code binds the name `argument`
    to (`None` bindings aside), else None."""
    if not isinstance(argument, ast.Name):
        return None
    name = argument.id
    if isinstance(owner, FUNCTIONS) and any(
        a.arg == name for a in ast.walk(owner.args) if isinstance(a, ast.arg)
    ):
        return None
    made: set[Optional[str]] = set()
    for node in _binding_nodes(owner):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for target in targets:
                if isinstance(target, ast.Name) and target.id == name:
                    if isinstance(value, ast.Constant) and value.value is None:
                        continue
                    call = value if isinstance(value, ast.Call) else None
                    made.add(qualname(call.func) if call is not None else None)
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                    made.add(None)  # unpacked: `scaler, x = ...`
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.withitem)):
            bound = node.optional_vars if isinstance(node, ast.withitem) else node.target
            if bound is not None and any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(bound)
            ):
                made.add(None)
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            made.add(None)
    return made.pop() if len(made) == 1 else None


def _owned_calls(module: ast.Module) -> list[tuple[ast.AST, ast.Call]]:
    """(the module or function whose own code holds it, the call) for every call of the
    module, listed once per module: each parameter asked about walked it all anew."""
    cached: Optional[list[tuple[ast.AST, ast.Call]]] = module.__dict__.get("_envcheck_owned_calls")
    if cached is None:
        owners: list[ast.AST] = [
            module,
            *(n for n in module_nodes(module) if isinstance(n, FUNCTIONS)),
        ]
        cached = [
            (owner, node)
            for owner in owners
            for node in own_nodes(owner)
            if isinstance(node, ast.Call)
        ]
        setattr(module, "_envcheck_owned_calls", cached)  # noqa: B010 - AST nodes have no slot
    return cached


BINDINGS = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.NamedExpr,
    ast.For,
    ast.AsyncFor,
    ast.comprehension,
    ast.withitem,
    ast.Global,
    ast.Nonlocal,
)


def _binding_nodes(owner: ast.AST) -> list[ast.AST]:
    """The statements and clauses of `owner`'s own code that bind names, listed once per
    owner: each name asked about walked the whole function anew."""
    cached: Optional[list[ast.AST]] = owner.__dict__.get("_envcheck_binding_nodes")
    if cached is None:
        cached = [n for n in own_nodes(owner) if isinstance(n, BINDINGS)]
        setattr(owner, "_envcheck_binding_nodes", cached)  # noqa: B010 - AST nodes have no slot
    return cached
