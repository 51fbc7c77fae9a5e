"""The functions a tf.data `map` may run, read from the source: `ds.map(f)` names a
lambda, a function of the file, a method (`self.parse`, or `builder.parse` on an object
of a class the file defines and instantiates), a name bound to one of those (in each
branch that binds it), or `functools.partial(f, ...)` of one. Each comes with the names
that hold the element's data there: the function's parameters the element fills, not
those `partial` binds to settings nor `self`. Nothing here judges; structural_maps.py
and tf_data.py read the bodies.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Union

from envcheck.scripts.index import module_nodes

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker
    from envcheck.scripts.index import FileIndex
    from envcheck.scripts.values import Scope

PARTIALS = {"functools.partial"}
# a name bound to `partial(f)` bound to a name ...: how deep the bindings are followed
BINDING_DEPTH = 3
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass
class MapTarget:
    """A body the map may run (a function, or a lambda's expression) and the names in it
    that hold the element's data."""

    root: ast.AST
    element: set[str] = field(default_factory=set)


def map_targets(
    walker: Walker,
    files: FileIndex,
    func: Optional[ast.expr],
    scope: Optional[Scope] = None,
    partials: bool = True,
) -> list[MapTarget]:
    """The bodies `ds.map(func)` may run; empty when any of them is out of sight (the
    caller then keeps its verdict for unknown code). `partials`: follow
    `functools.partial(f, ...)` into f."""
    found = _targets(walker, files, func, scope, partials, BINDING_DEPTH)
    return found if found is not None else []


def _targets(
    walker: Walker,
    files: FileIndex,
    func: Optional[ast.expr],
    scope: Optional[Scope],
    partials: bool,
    depth: int,
) -> Optional[list[MapTarget]]:
    """None when some binding of `func` is out of sight."""
    if isinstance(func, ast.Lambda):
        return [MapTarget(func.body, _parameters(func.args))]
    if isinstance(func, ast.Call) and partials and walker.qualname(func.func) in PARTIALS:
        return _partial(walker, files, func, scope, depth)
    if isinstance(func, ast.Name) and func.id in files.functions:
        function = files.functions[func.id]
        return [MapTarget(function, _parameters(function.args))]
    local = _local_function(scope, func)
    if local is not None:
        return [MapTarget(local, _parameters(local.args))]
    if isinstance(func, ast.Name) and scope is not None and depth > 0:
        return _bound(walker, files, func.id, scope, partials, depth)
    if isinstance(func, ast.Attribute):
        method = method_of(walker, files, func)
        if method is not None:
            return [MapTarget(method, _parameters(method.args) - {"self", "cls"})]
    return None


def _local_function(scope: Optional[Scope], func: Optional[ast.expr]) -> Optional[Function]:
    """`def parse(record): ...` then `ds.map(parse)` in one function, the name defined by
    several functions of the file (each builder its own nested `_select_data_from_record`):
    the one this function defines (once, not inside a nested function or class)."""
    root = scope.counter_root if scope is not None else None
    if not isinstance(func, ast.Name) or not isinstance(
        root, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return None
    found = _local_definitions(root).get(func.id, [])
    return found[0] if len(found) == 1 else None


def _local_definitions(root: Function) -> dict[str, list[Function]]:
    """The functions `root` defines itself, by name, read once per function (a builder
    of N `ds = ds.map(f)` had walked its body N times); kept on the node."""
    cached: Optional[dict[str, list[Function]]] = root.__dict__.get("_envcheck_local_defs")
    if cached is not None:
        return cached
    found: dict[str, list[Function]] = {}
    todo: list[ast.stmt] = list(root.body)
    while todo:
        statement = todo.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(statement.name, []).append(statement)
            continue
        if isinstance(statement, ast.ClassDef):
            continue
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, ast.stmt):
                todo.append(child)
            elif isinstance(child, ast.ExceptHandler):
                todo.extend(child.body)
    setattr(root, "_envcheck_local_defs", found)  # noqa: B010 - AST nodes have no slot
    return found


def _bound(
    walker: Walker, files: FileIndex, name: str, scope: Scope, partials: bool, depth: int
) -> Optional[list[MapTarget]]:
    """`fn = partial(parse, hparams=h)` or, in two branches, `fn = a` / `fn = b`: what
    every binding of the name runs."""
    guarded = scope.local_guarded.get(name) or scope.module_guarded.get(name)
    values = [value for value, _ in guarded] if guarded else []
    if not values:
        single = scope.lookup(name)
        values = [single] if single is not None else []
    if not values:
        return None
    found: list[MapTarget] = []
    for value in values:
        targets = _targets(walker, files, value, scope, partials, depth - 1)
        if targets is None:
            return None
        found.extend(targets)
    return found


def _partial(
    walker: Walker, files: FileIndex, call: ast.Call, scope: Optional[Scope], depth: int
) -> Optional[list[MapTarget]]:
    """`partial(f, a, key=v)`: f's bodies, without the parameters partial fills."""
    if not call.args:
        return None
    targets = _targets(walker, files, call.args[0], scope, True, depth)
    if targets is None:
        return None
    bound = {k.arg for k in call.keywords if k.arg is not None}
    for target in targets:
        function = target.root
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            positional = [
                a.arg
                for a in [*function.args.posonlyargs, *function.args.args]
                if a.arg not in ("self", "cls")
            ]
            bound |= set(positional[: len(call.args) - 1])
        target.element -= bound
    return targets


def method_of(
    walker: Walker, files: FileIndex, func: ast.Attribute, instances: bool = True
) -> Optional[Function]:
    """The method `func` names: `self.m` / `cls.m` (a function of the file by that name),
    or, with `instances`, `obj.m` on a plain name where m is a method of exactly one
    class of the file and the file instantiates that class (`for b in builders:
    ds.map(b.parse)`). Not `np.m` (a module), nor `self.adapter.m` (an attribute's
    method, whose class is out of sight)."""
    owner = func.value
    if not isinstance(owner, ast.Name):
        return None
    if owner.id in ("self", "cls"):
        return files.functions.get(func.attr)
    if not instances or owner.id in walker.aliases:
        return None  # a module or a name imported from one
    function = files.functions.get(func.attr)
    if function is None:
        return None
    holders = [c for c in files.class_nodes if function in c.body]
    if len(holders) != 1 or not instantiated(walker, holders[0].name):
        return None
    return function


def instantiated(walker: Walker, name: str) -> bool:
    """Whether the file calls the class `name` (`Builder(...)`, `module.Builder(...)`)."""
    return name in _called_names(walker.module)


def _called_names(module: ast.Module) -> set[str]:
    """Every name the module calls, by its last part, listed once per module."""
    called: Optional[set[str]] = module.__dict__.get("_envcheck_called_names")
    if called is None:
        called = set()
        for node in module_nodes(module):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name):
                    called.add(func.id)
                elif isinstance(func, ast.Attribute):
                    called.add(func.attr)
        setattr(module, "_envcheck_called_names", called)  # noqa: B010 - AST nodes have no slot
    return called


def _parameters(arguments: ast.arguments) -> set[str]:
    """Every parameter name, `*args` and `**kwargs` included."""
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    return names
