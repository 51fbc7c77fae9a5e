"""A function parameter's value, read from the file's calls to the function or its default.

Library loader code (`def provide_dataset(pattern, num_threads=1)`) is judged at the
values it is called with: what every call in the file passes for the parameter, or its
default where a call leaves it out (or where nothing in the file calls the function:
library code is judged at its defaults, as argparse defaults are). A parameter handed
on from a caller's own parameter (`f(x, num_threads=num_threads)`) is followed into
that caller. When the calls disagree, pass `*args`/`**kwargs`, or the parameter has no
default and no caller, the value is unknown, with the reason; so it is for a function
whose decorator fills its parameters from a config (detectron2's `@configurable`).

`parameter_default` is the plain default alone, for the GPU answer (device.py) and the
precision reader (precision.py): a trainer's `fit(self, ..., use_amp=False)` runs at it
unless a caller in sight passes another value (which counts on its own).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from envcheck.scripts.index import (
    Function,
    filled_by_decorator,
    function_owners,
    keyword_arg,
    module_nodes,
)
from envcheck.scripts.values import Scope, Value, namespace_dict, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

MAX_DEPTH = 4  # callers followed up the chain of parameters handed on
MAX_CALLS = 64  # calls read to answer one question, callers of callers included


def parameter_value(
    walker: Walker,
    function: Optional[ast.AST],
    name: str,
    depth: int = 0,
    chain: tuple[int, ...] = (),
    budget: Optional[list[int]] = None,
) -> Optional[Value]:
    """The value of parameter `name` of `function` over the file's calls to it; None when
    `name` is not a parameter of `function`. `chain` holds the functions whose parameter
    is being handed on: a call from one of them passing its own parameter back (a
    method `fit` calling `model.fit(workers=workers)`, two wrappers of the same name)
    brings no value of its own and is not counted. `budget` counts down the calls one
    question may read, over every caller followed: callers of callers fan out (w calls
    each, MAX_DEPTH levels up: w**4 calls), and past MAX_CALLS the value is unknown."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    keyword_only = [a.arg for a in function.args.kwonlyargs]
    if name not in positional and name not in keyword_only:
        return None
    filled = filled_by_decorator(function)
    if filled is not None:
        return Value(False, None, name, f"{function.name}() takes {name} from {filled}")
    default = _default(function, name)
    if depth > MAX_DEPTH:
        return Value(False, None, name, "passed through too many callers")
    method = bool(positional) and positional[0] in ("self", "cls")
    found: list[Value] = []
    chain = (*chain, id(function))
    budget = [MAX_CALLS] if budget is None else budget
    for caller, call in _calls(walker, _called_as(walker, function), method):
        budget[0] -= 1
        if budget[0] < 0:
            return Value(False, None, name, "passed through too many calls to follow")
        given: Optional[ast.expr] = None
        if name in positional:
            index = positional.index(name) - (1 if method else 0)
            # a position before any `*args` is the argument's, whatever follows
            starred = [isinstance(a, ast.Starred) for a in call.args[: index + 1]]
            if 0 <= index < len(call.args) and not any(starred):
                given = call.args[index]
        # `main(use_wandb=args.wandb, **config)`: a keyword written out is the value (the
        # `**config` cannot pass it again: Python raises "multiple values")
        given = next((k.value for k in call.keywords if k.arg == name), given)
        if given is None and (
            any(k.arg is None for k in call.keywords)
            or any(isinstance(a, ast.Starred) for a in call.args)
        ):
            if _uncalled_alias(walker, caller, call):
                continue  # `def fit_generator(self, *args, **kwargs): return self.fit(...)`
            return Value(False, None, name, f"{function.name}() is called with *args/**kwargs")
        if given is None:
            if default is None:
                return Value(False, None, name, f"{name} has no default")
            found.append(_at_default(walker, function, name, default))
            continue
        value = resolve(given, walker.scope_of(caller))
        if not value.known and isinstance(given, ast.Name):
            if id(caller) in chain and _is_parameter(caller, given.id):
                continue  # its own parameter handed back round the chain
            handed = parameter_value(walker, caller, given.id, depth + 1, chain, budget)
            value = handed if handed is not None else value
        found.append(value)
    if not found:
        # nothing here calls it: the calls of the run's other files, `f(**vars(args))`
        splatted = _splatted(walker, function, name, method)
        if splatted is not None:
            return splatted
        if default is None:
            return Value(False, None, name, f"{name} has no default and no caller in the file")
        return _at_default(walker, function, name, default)
    if all(v.known for v in found) and len({repr(v.value) for v in found}) == 1:
        return found[0]
    unknown = next((v for v in found if not v.known), None)
    if unknown is not None:
        return Value(False, None, name, unknown.source)
    return Value(False, None, name, f"the calls to {function.name}() pass different values")


def _splatted(walker: Walker, function: Function, name: str, method: bool) -> Optional[Value]:
    """`name` as the run's other files hand it, by `f(**vars(args))` alone
    (RunOptions.splatted_option), to `function`, which nothing in this file calls."""
    called = _called_as(walker, function)
    if walker.splatted_elsewhere is None or _calls(walker, called, method):
        return None
    return walker.splatted_elsewhere(called.removeprefix("class "), name)


def _is_parameter(function: Optional[ast.AST], name: str) -> bool:
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    args = function.args
    return name in {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}


def _uncalled_alias(walker: Walker, caller: Optional[ast.AST], call: ast.Call) -> bool:
    """A deprecated alias that only forwards its own `*args, **kwargs` (`return
    self.fit(*args, **kwargs)`) and that nothing in the file calls: it passes no value,
    and library code is judged at its defaults."""
    if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    star = caller.args.vararg.arg if caller.args.vararg else None
    double = caller.args.kwarg.arg if caller.args.kwarg else None
    forwards = all(
        isinstance(a, ast.Starred) and isinstance(a.value, ast.Name) and a.value.id == star
        for a in call.args
        if isinstance(a, ast.Starred)
    ) and all(
        isinstance(k.value, ast.Name) and k.value.id == double
        for k in call.keywords
        if k.arg is None
    )
    positional = [a.arg for a in [*caller.args.posonlyargs, *caller.args.args]]
    method = bool(positional) and positional[0] in ("self", "cls")
    return forwards and not _calls(walker, _called_as(walker, caller), method)


def handed_value(walker: Walker, function: Optional[ast.AST], expr: ast.expr) -> Optional[Value]:
    """The value of `expr` when it is a bare parameter of `function` that the body never
    rebinds (`DataLoader(ds, num_workers=workers)` in `def __init__(self, workers=4)`):
    what the file's calls pass, or its default; None for anything else."""
    if not isinstance(expr, ast.Name) or not isinstance(
        function, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return None
    return None if _rebound(function, expr.id) else parameter_value(walker, function, expr.id)


def _rebound(function: Function, name: str) -> bool:
    """The body assigns `name` (a parameter it does not keep as passed)."""
    return any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
        for statement in function.body
        for node in ast.walk(statement)
    )


def with_handed_values(
    walker: Walker, call: ast.Call, values: dict[str, Value], names: tuple[str, ...]
) -> None:
    """Fill in `values` (a call's keyword values) where the source wrote a bare parameter
    of the enclosing function or method the resolver could not settle
    (`DataLoader(ds, num_workers=workers)`, `model.fit(gen, workers=workers)`): what the
    file's calls pass for it, or its default."""
    function = walker.functions[-1] if walker.functions else None
    for name in names:
        written = keyword_arg(call, name)
        if name in values and not values[name].known and written is not None:
            handed = handed_value(walker, function, written)
            if handed is not None:
                values[name] = handed


def passed_expression(
    walker: Walker, function: Optional[ast.AST], name: str
) -> Optional[tuple[ast.expr, Optional[ast.AST]]]:
    """The expression the file passes for parameter `name` of `function` (`heads=[8, 1]`
    in `GAT(in_size, 8, out_size, heads=[8, 1])`), with the function that passes it;
    the default where no call does. None when calls pass different text or `*args`,
    and where the body rebinds the parameter."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    if not _is_parameter(function, name) or _rebound(function, name):
        return None
    method = bool(positional) and positional[0] in ("self", "cls")
    default = _default(function, name)
    found: dict[str, tuple[ast.expr, Optional[ast.AST]]] = {}
    for caller, call in _calls(walker, _called_as(walker, function), method):
        if any(k.arg is None for k in call.keywords) or any(
            isinstance(a, ast.Starred) for a in call.args
        ):
            return None
        given: Optional[ast.expr] = None
        index = positional.index(name) - (1 if method else 0) if name in positional else -1
        if 0 <= index < len(call.args):
            given = call.args[index]
        given = next((k.value for k in call.keywords if k.arg == name), given)
        if given is not None:
            found[ast.unparse(given)] = (given, caller)
        elif default is not None:
            found[ast.unparse(default)] = (default, None)  # read at the module's level
        else:
            return None
    if not found:
        return (default, None) if default is not None else None
    return next(iter(found.values())) if len(found) == 1 else None


def handed_namespaces(
    walker: Walker, function: ast.FunctionDef
) -> dict[str, tuple[ast.expr, list[ast.expr]]]:
    """Parameters of `function` read as option dicts (`config['deep_supervision']`) that
    the file's calls hand the parsed command line as a dict (`train(config, ...)` in a
    `main` whose `config = vars(parse_args())`) -> that dict's expression and what the
    caller merged into it first (`config['name'] = ...`): the keys then read at their
    argparse defaults, as `args.deep_supervision` is in a function handed `args`."""
    read = {
        node.value.id
        for node in ast.walk(function)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    }
    found: dict[str, tuple[ast.expr, list[ast.expr]]] = {}
    for name in sorted(read):
        if not _is_parameter(function, name):
            continue
        passed = passed_expression(walker, function, name)
        if passed is None or passed[1] is None or passed[1] is function:
            continue
        given, caller = passed
        if not isinstance(given, ast.Name):
            continue
        there = walker.scope_of(caller)
        assigned = there.lookup(given.id)
        if assigned is not None and namespace_dict(assigned):
            found[name] = (assigned, there.updates(given.id))
    return found


def parameter_default(function: Optional[ast.AST], name: str, scope: Scope) -> Optional[ast.expr]:
    """The default of `function`'s parameter `name` when the function does not reassign
    it (`def forward(self, X, device='cpu')`). Reassigned under a test counts too
    (`precision = precision or default_precision()`, then `precision = None` under `if
    quantize:`): what the parameter holds where it is read is then not its default."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if name in scope.local_names or name in scope.local_guarded:
        return None
    return _default(function, name)


def _at_default(walker: Walker, function: Function, name: str, default: ast.expr) -> Value:
    value = resolve(default, walker.scope_of(None))
    source = f"{name} defaults to {ast.unparse(default)} in {function.name}()"
    return Value(value.known, value.value, name, source)


def _default(function: Function, name: str) -> Optional[ast.expr]:
    positional = [*function.args.posonlyargs, *function.args.args]
    with_default = positional[len(positional) - len(function.args.defaults) :]
    for arg, default in zip(with_default, function.args.defaults, strict=True):
        if arg.arg == name:
            return default
    for arg, kw_default in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True):
        if arg.arg == name:
            return kw_default
    return None


def _called_as(walker: Walker, function: Function) -> str:
    """The name the file calls `function` by: its own, or for an `__init__` its class's
    (`ImageDataManager(workers=8)` calls ImageDataManager.__init__; a subclass's
    `super().__init__(...)` is not counted as such a call)."""
    if function.name != "__init__":
        return function.name
    owner = walker.owner_class(function)
    return f"class {owner.name}" if owner is not None else function.name


def _calls(walker: Walker, name: str, method: bool) -> list[tuple[Optional[ast.AST], ast.Call]]:
    """Calls of a function `name(...)`, or of a method `x.name(...)`, in the file, each
    with its enclosing function; for "class NAME", the constructions `NAME(...)` and
    `module.NAME(...)`. Read from the file's calls indexed by name once (scanning the
    file for each parameter followed took N² time over N functions)."""
    if name.startswith("class "):
        kind, name = "both", name[len("class ") :]
    else:
        kind = "method" if method else "plain"
    return _calls_by_name(walker).get((name, kind), [])


CallsByName = dict[tuple[str, str], list[tuple[Optional[ast.AST], ast.Call]]]


def _calls_by_name(walker: Walker) -> CallsByName:
    """(name, "plain" | "method" | "both") -> (enclosing function, call) of every
    `name(...)`, `x.name(...)` or either, in the order of the file's nodes; built once per
    file (a list to filter for each question cost N² over N functions of one name)."""
    module = walker.module
    cached: Optional[CallsByName] = module.__dict__.get("_envcheck_calls_by_owner")
    if cached is None:
        cached = {}
        owners = function_owners(module, walker.index().function_nodes)
        for node in module_nodes(module):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name):
                name, kind = func.id, "plain"
            elif isinstance(func, ast.Attribute):
                name, kind = func.attr, "method"
            else:
                continue
            found = (owners.get(id(node)), node)
            cached.setdefault((name, kind), []).append(found)
            cached.setdefault((name, "both"), []).append(found)
        setattr(module, "_envcheck_calls_by_owner", cached)  # noqa: B010 - AST nodes have no slot
    return cached
