"""DataLoader observations: every `torch.utils.data.DataLoader` (or subclass of the file)
constructed in a file, with its argument values followed as far as the source allows
(values.py), where it is built (function, module level, under the main guard), what
dataset it reads, and whether it is rebuilt again and again. Nothing here judges.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional

from envcheck.scripts.arrays import keyword_arrays, wrapped_arrays
from envcheck.scripts.datasets import in_memory
from envcheck.scripts.default_run import off_by_default
from envcheck.scripts.index import Function, calls_of, function_owners, module_nodes
from envcheck.scripts.loader_marks import mark_loaders
from envcheck.scripts.parameters import with_handed_values
from envcheck.scripts.text_datasets import assigned_calls, tokenised_text
from envcheck.scripts.tokenised_maps import tokenised_by_callers, tokenised_map
from envcheck.scripts.values import keyword_expressions, keyword_values, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

DATALOADERS = {
    "torch.utils.data.DataLoader",
    "torch.utils.data.dataloader.DataLoader",
}
LOADER_ARGS = ("batch_size", "num_workers", "pin_memory", "persistent_workers", "prefetch_factor")


class DataLoaderObserver:
    """The DataLoader family (see the module docstring)."""

    def call(self, walker: Walker, node: ast.Call, name: Optional[str]) -> None:
        if name is not None and name in walker.loader_classes:
            _loader(walker, node, name)
        elif name is not None:
            _maker(walker, node, name)

    def finish(self, walker: Walker) -> None:
        mark_loaders(walker.module, walker.report.loaders)


def loader_classes(module: ast.Module, aliases: dict[str, str]) -> set[str]:
    """The DataLoader classes of a file: torch's, the file's own subclasses, and names
    only ever bound to one of those (`loader_class = torch.utils.data.DataLoader`, then
    `if multi_epochs: loader_class = MultiEpochsDataLoader`; `loader_class(dataset)`)."""
    nodes: list[ast.AST] = [
        n for n in module_nodes(module) if isinstance(n, (ast.ClassDef, ast.Assign))
    ]
    classes = set(DATALOADERS) | _subclasses(nodes, aliases, DATALOADERS)
    return classes | _bound_to(nodes, aliases, classes)


def _bound_to(nodes: list[ast.AST], aliases: dict[str, str], classes: set[str]) -> set[str]:
    """Plain names every assignment (of `nodes`) of which binds one of `classes`."""
    bound: dict[str, bool] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    is_class = isinstance(node.value, (ast.Name, ast.Attribute)) and (
                        _qualified(node.value, aliases) in classes
                    )
                    bound[target.id] = bound.get(target.id, True) and is_class
    return {name for name, only in bound.items() if only}


def _qualified(node: ast.expr, aliases: dict[str, str]) -> str:
    text = ast.unparse(node)
    head, _, rest = text.partition(".")
    return aliases.get(head, head) + (f".{rest}" if rest else "")


def _loader(walker: Walker, node: ast.Call, name: str) -> None:
    if off_by_default(walker, node):
        return  # built only in a branch the default run does not take (`if use_targets:`)
    values, opaque = keyword_values(node, walker.scope())
    opaque = _from_makers_callers(walker, values, opaque)
    # DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
    #            num_workers=0, ...): positional use beyond the dataset is rare; map the
    # documented order for the ones rules need.
    positional = [
        "dataset",
        "batch_size",
        "shuffle",
        "sampler",
        "batch_sampler",
        "num_workers",
        "collate_fn",
        "pin_memory",
    ]
    for index, arg in enumerate(node.args[: len(positional)]):
        values.setdefault(positional[index], resolve(arg, walker.scope()))
    with_handed_values(walker, node, values, LOADER_ARGS)
    function = walker.functions[-1] if walker.functions else None
    walker.report.loaders.append(
        {
            "kind": "torch.DataLoader",
            "callee": name,
            "path": walker.report.path,
            "line": node.lineno,
            "column": node.col_offset + 1,
            "code": walker.lines[node.lineno - 1].strip()
            if node.lineno <= len(walker.lines)
            else "",
            "function": getattr(function, "name", None),
            "module_level": function is None,
            "in_main_guard": walker.in_main_guard,
            "args": {k: values[k].to_json() for k in LOADER_ARGS if k in values},
            "dataset": _dataset(walker, node),
            "endless": _endless(walker, node),
            "opaque_kwargs": opaque,
        }
    )


def _from_makers_callers(walker: Walker, values: dict[str, Any], opaque: list[str]) -> list[str]:
    """`def make_loader(ds, **kwargs): return DataLoader(ds, **kwargs)`: the settings its
    callers in the file hand it (`make_loader(ds, num_workers=4)`, `**loader_kwargs`), when
    every call hands the same; the `**kwargs` stays opaque otherwise."""
    function = walker.functions[-1] if walker.functions else None
    kwarg = getattr(getattr(function, "args", None), "kwarg", None)
    if function is None or kwarg is None or kwarg.arg not in opaque:
        return opaque
    calls = calls_of(walker.module, walker.index().function_nodes, getattr(function, "name", None))
    handed = []
    for caller, call in calls:
        found, hidden = keyword_values(call, walker.scope_of(caller))
        if hidden:
            return opaque
        handed.append(found)
    if not handed or any(h != handed[0] for h in handed):
        return opaque
    params = {a.arg for a in [*function.args.args, *function.args.kwonlyargs]}  # type: ignore[attr-defined]
    for key, value in handed[0].items():
        if key not in params:
            values.setdefault(key, value)
    return [o for o in opaque if o != kwarg.arg]


# Libraries whose `num_workers=` is not a DataLoader's (or is read in sight).
NOT_MAKERS = ("torch.", "tensorflow.", "keras.", "sklearn.", "joblib.", "datasets.")
BUILTINS = {"dict", "print", "partial", "functools.partial", "setattr", "getattr"}


def _maker(walker: Walker, node: ast.Call, name: str) -> None:
    """A call out of sight handed DataLoader worker settings (`create_loader(ds,
    num_workers=args.workers)`, `make_data_loader(args, **kwargs)` with `kwargs =
    {'num_workers': ...}`): a loader built elsewhere with this file's worker count. Only
    `num_workers` is recorded; the maker's other settings (pinning, persistent workers,
    its own device transfer) are out of sight, so `built_by` makes them unknown. Placed
    at the call, as a DataLoader's findings are. A call whose result is thrown away
    (`show_config(num_workers=4)`, printing the settings) builds no loader, unless its
    name says it does."""
    if not any(k.arg in ("num_workers", None) for k in node.keywords):
        return  # no worker count handed over, nor a **dict that may hold one
    short = name.rsplit(".", 1)[-1]
    if name.startswith(NOT_MAKERS) or short in walker.index().functions or name in BUILTINS:
        return  # a library's own meaning, or a function of the file (its loader is seen)
    if id(node) in walker.index().discarded_calls and "loader" not in short.lower():
        return  # `show_config(num_workers=4)`: a result nobody reads is no loader
    written = keyword_expressions(node, walker.scope()).get("num_workers")
    if written is None or off_by_default(walker, node):
        return
    line = node.lineno
    walker.report.loaders.append(
        {
            "kind": "torch.DataLoader",
            "callee": name,
            "built_by": f"{short}(), out of this file",
            "path": walker.report.path,
            "line": line,
            "column": node.col_offset + 1,
            "code": walker.lines[line - 1].strip() if line <= len(walker.lines) else "",
            "function": getattr(walker.functions[-1] if walker.functions else None, "name", None),
            "module_level": not walker.functions,
            "in_main_guard": walker.in_main_guard,
            "args": {"num_workers": resolve(written, walker.scope()).to_json()},
            "dataset": None,
            "endless": None,
            "opaque_kwargs": [],
        }
    )


def _dataset(walker: Walker, call: ast.Call) -> Optional[dict[str, Any]]:
    """The class a DataLoader's dataset is built from, where the source shows it:
    {"class": "TensorDataset", "text": "TensorDataset(x, y)"}."""
    node: Optional[ast.expr] = call.args[0] if call.args else None
    for keyword in call.keywords:
        if keyword.arg == "dataset":
            node = keyword.value
    tokenised = tokenised_map(walker, node) or tokenised_by_callers(walker, node)
    if tokenised is not None:
        return {"class": "pre-tokenised", "qualname": None, "text": _clip(tokenised)}
    function = walker.functions[-1] if walker.functions else None
    arrays = _arrays_every_branch(node, function)
    if arrays is not None:
        return arrays
    text = tokenised_text(node, function, walker.index().function_nodes)
    if text is not None:
        built, up_front = text
        return {
            "class": "tokenised-text",
            "qualname": None,
            "text": _clip(built),
            "up_front": up_front,
        }
    node = _built_by(walker, node, function, 0)
    if not isinstance(node, ast.Call):
        return None
    name = walker.qualname(node.func) or ""
    short = name.rsplit(".", 1)[-1]
    if not short:
        return None
    found = {"class": short, "qualname": name, "text": _clip(ast.unparse(node))}
    held = _held_in_memory(walker, short)
    if held is None:
        owners = function_owners(walker.module, walker.index().function_nodes)
        held = wrapped_arrays(node, owners.get(id(node))) or keyword_arrays(
            node, owners.get(id(node))
        )
    if held is not None:
        found["in_memory"] = held
    return found


def _arrays_every_branch(
    node: Optional[ast.expr], function: Optional[ast.AST]
) -> Optional[dict[str, Any]]:
    """A dataset name assigned in several branches (`test_set = Dataset(**X_test)` or
    `Dataset(**load_dict)`), every one over arrays the function was handed."""
    if not isinstance(node, ast.Name) or not isinstance(
        function, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return None
    calls = assigned_calls(function, node.id)
    if len(calls) < 2:
        return None
    reasons = [keyword_arrays(c, function) or wrapped_arrays(c, function) for c in calls]
    if any(r is None for r in reasons):
        return None
    name = ast.unparse(calls[0].func)
    return {
        "class": name.rsplit(".", 1)[-1],
        "qualname": name,
        "text": _clip(ast.unparse(calls[0])),
        "in_memory": _clip("; ".join(r for r in reasons if r), 200),
    }


TORCH_DATASETS = {"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"}


def _held_in_memory(walker: Walker, name: str) -> Optional[str]:
    """Why the file's Dataset class `name` serves samples from memory (datasets.py), or
    None (not the file's, defined twice, or reading per sample)."""
    classes = [c for c in walker.index().class_nodes if c.name == name]
    if len(classes) != 1 or name not in walker.index().derived_from(TORCH_DATASETS):
        return None
    return in_memory(classes[0])


def _built_by(
    walker: Walker, node: Optional[ast.expr], function: Optional[ast.AST], depth: int
) -> Optional[ast.expr]:
    """The call that builds a dataset: through assignments, a parameter of the loader's
    function from the calls to it (`prepare(dataset, ...)` called with `get_data()`), and
    the return value of a function of the file (`get_data()` returning a TensorDataset)."""
    if depth > 6 or node is None:
        return None
    if isinstance(node, ast.Name):
        assigned = walker.scope_of(function).lookup(node.id)
        if assigned is not None:
            return _built_by(walker, assigned, function, depth + 1)
        return _from_callers(walker, node.id, function, depth)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        own = walker.index().functions.get(node.func.id)
        if own is not None:
            returned = [
                r.value for r in ast.walk(own) if isinstance(r, ast.Return) and r.value is not None
            ]
            if len(returned) == 1:
                return _built_by(walker, returned[0], own, depth + 1)
    return node


def _calls_by_name(
    module: ast.Module, functions: list[Function]
) -> dict[str, list[tuple[Optional[Function], ast.Call]]]:
    """(caller, call) of each `name(...)` call, by name, in the order `_from_callers`
    reads them (the module's statements outside its top-level functions and classes,
    then each function's body whole), indexed once per file: walking every caller for
    each loader's parameter made N loaders take N² time."""
    cached: Optional[dict[str, list[tuple[Optional[Function], ast.Call]]]] = module.__dict__.get(
        "_envcheck_calls_by_name"
    )
    if cached is not None:
        return cached
    cached = {}
    for caller in [None, *functions]:
        body = module.body if caller is None else caller.body
        for statement in body:
            if caller is None and isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
                continue
            for call in ast.walk(statement):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                    cached.setdefault(call.func.id, []).append((caller, call))
    setattr(module, "_envcheck_calls_by_name", cached)  # noqa: B010 - AST nodes have no slot
    return cached


def _from_callers(
    walker: Walker, parameter: str, function: Optional[ast.AST], depth: int
) -> Optional[ast.expr]:
    """What every call to `function` in the file passes as `parameter`, when they agree."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    if parameter not in params:
        return None
    position = params.index(parameter)
    index = walker.index()
    built: list[ast.expr] = []
    for caller, call in _calls_by_name(walker.module, index.function_nodes).get(function.name, []):
        given = call.args[position] if position < len(call.args) else None
        given = next((k.value for k in call.keywords if k.arg == parameter), given)
        found = _built_by(walker, given, caller, depth + 1)
        if found is None:
            return None
        built.append(found)
    texts = {ast.dump(b) for b in built}
    return built[0] if len(texts) == 1 else None


# A sampler drawing this many samples is one pass that never ends in practice
# (minGPT: RandomSampler(ds, replacement=True, num_samples=int(1e10))).
ENDLESS_SAMPLES = 10**9


def _endless(walker: Walker, call: ast.Call) -> Optional[str]:
    """Why the loader's sampler never runs out (an `Infinite*` sampler, or `num_samples`
    of a billion or more), or None: such a loader is iterated once, its workers never
    restarted."""
    sampler = next((k.value for k in call.keywords if k.arg in ("sampler", "batch_sampler")), None)
    if isinstance(sampler, ast.Name):
        sampler = walker.scope().lookup(sampler.id) or sampler
    if not isinstance(sampler, ast.Call):
        return None
    name = ast.unparse(sampler.func)
    if "infinite" in name.lower():
        return f"its sampler {name}(...) never runs out"
    for keyword in sampler.keywords:
        if keyword.arg == "num_samples":
            value = resolve(keyword.value, walker.scope())
            if (
                value.known
                and isinstance(value.value, (int, float))
                and value.value >= ENDLESS_SAMPLES
            ):
                return f"its sampler draws {ast.unparse(keyword.value)} samples: one endless pass"
    return None


def _subclasses(nodes: list[ast.AST], aliases: dict[str, str], bases: set[str]) -> set[str]:
    """Classes (of `nodes`, the file's) that derive from one of `bases` (by local name)."""
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                text = ast.unparse(base)
                head, _, rest = text.partition(".")
                qualified = aliases.get(head, head) + (f".{rest}" if rest else "")
                if qualified in bases:
                    found.add(node.name)
    return found


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
