"""DataLoader observations: every `torch.utils.data.DataLoader` (or subclass of the file,
or a public thin subclass: MONAI's, PyG's) constructed in a file, with its argument values
followed as far as the source allows (values.py), where it is built (function, module
level, under the main guard), what dataset it reads, and whether it is rebuilt again and
again. Nothing here judges.

Size: one observer for every way a file hands worker settings to a DataLoader (its own
call, a maker out of sight, a wrapper of the file forwarding **kwargs), kept together
because each reads the same call's keywords and the file's callers of it.
"""

from __future__ import annotations

import ast
import functools
from typing import TYPE_CHECKING, Any, Optional

from envcheck.scripts.arrays import fitted_arrays, keyword_arrays, wrapped_arrays
from envcheck.scripts.class_tables import table_classes
from envcheck.scripts.configs import KEYWORD_HOLDERS, keyword_classes
from envcheck.scripts.datasets import (
    LAZY_STORES,
    in_memory,
    library_in_memory,
    memoised,
    record_class,
    tensor_file,
)
from envcheck.scripts.default_run import off_by_default
from envcheck.scripts.foreign_datasets import returned_elsewhere
from envcheck.scripts.hf_trainers import trainer_loaders
from envcheck.scripts.index import (
    Function,
    calls_of,
    code_at,
    function_owners,
    keyword_arg,
    module_nodes,
)
from envcheck.scripts.inference_loaders import mark_inference_only
from envcheck.scripts.iteration_samplers import iteration_sampler
from envcheck.scripts.lightning_runner import validated_once
from envcheck.scripts.loader_marks import mark_loaders, mark_unread_in_class
from envcheck.scripts.parameters import MAX_CALLS, with_handed_values
from envcheck.scripts.resampled import mark_changed_by_callbacks
from envcheck.scripts.text_datasets import assigned_calls, tokenised_text
from envcheck.scripts.tokenised_maps import tokenised_by_callers, tokenised_map
from envcheck.scripts.values import Value, keyword_expressions, keyword_values, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

# torch's DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
# num_workers=0, collate_fn=None, pin_memory=False, ...): positional use beyond the
# dataset is rare; the documented order of the ones rules need.
TORCH_POSITIONAL = (
    "dataset",
    "batch_size",
    "shuffle",
    "sampler",
    "batch_sampler",
    "num_workers",
    "collate_fn",
    "pin_memory",
)
# Public subclasses of torch's DataLoader that keep its defaults for what the rules read
# (num_workers=0, pin_memory=False, persistent_workers=False) and hand every other
# keyword to it, with their own positional parameters: MONAI's `DataLoader(dataset,
# num_workers=0, **kwargs)` (monai/data/dataloader.py, only collate_fn and
# worker_init_fn get its own defaults) and PyG's `DataLoader(dataset, batch_size=1,
# shuffle=False, follow_batch=None, exclude_keys=None, **kwargs)`
# (torch_geometric/loader/dataloader.py, torch_geometric.data.DataLoader before 2.0).
THIN_SUBCLASSES = {
    "monai.data.DataLoader": ("dataset", "num_workers"),
    "monai.data.dataloader.DataLoader": ("dataset", "num_workers"),
    "torch_geometric.loader.DataLoader": ("dataset", "batch_size", "shuffle"),
    "torch_geometric.loader.dataloader.DataLoader": ("dataset", "batch_size", "shuffle"),
    "torch_geometric.data.DataLoader": ("dataset", "batch_size", "shuffle"),
}
DATALOADERS = {
    "torch.utils.data.DataLoader",
    "torch.utils.data.dataloader.DataLoader",
    *THIN_SUBCLASSES,
}
LOADER_ARGS = ("batch_size", "num_workers", "pin_memory", "persistent_workers", "prefetch_factor")


class DataLoaderObserver:
    """The DataLoader family (see the module docstring)."""

    def call(self, walker: Walker, node: ast.Call, name: Optional[str]) -> None:
        if name is not None and (
            name in walker.loader_classes or _subclass_out_of_sight(walker, node, name)
        ):
            _loader(walker, node, name)
        elif name is not None:
            _maker(walker, node, name)

    def finish(self, walker: Walker) -> None:
        mark_loaders(
            walker.module,
            walker.report.loaders,
            functools.partial(_function_of, walker),
            walker.module_scope.called_elsewhere,
        )
        mark_changed_by_callbacks(
            walker.module, walker.report.loaders, functools.partial(_class_of, walker)
        )
        if walker.class_elsewhere is not None and walker.attribute_read_elsewhere is not None:
            mark_unread_in_class(
                walker.module,
                walker.report.loaders,
                walker.qualname,
                walker.class_elsewhere,
                walker.attribute_read_elsewhere,
            )
        _mark_validated_once(walker, walker.report.loaders)
        mark_inference_only(walker.module, walker.index(), walker.report.loaders)
        # a Hugging Face Trainer's own loader, judged by EC501 only (its kind differs)
        walker.report.loaders.extend(trainer_loaders(walker))


def _class_of(walker: Walker, func: ast.expr) -> Optional[ast.ClassDef]:
    """The class a call by `func` builds: the file's own, or one another file of the
    run defines (`train_callback` from `src.trainer`), else None."""
    if isinstance(func, ast.Name) and func.id in walker.index().classes:
        return walker.index().classes[func.id]
    name = walker.qualname(func)
    found = None if name is None or walker.class_elsewhere is None else walker.class_elsewhere(name)
    return None if found is None else found[0]


def _function_of(walker: Walker, func: ast.expr) -> Optional[ast.AST]:
    """The function a call by `func` runs when another file of the run defines it
    (`inference.inference` with `import inference`), else None."""
    name = walker.qualname(func)
    if name is None or walker.function_elsewhere is None:
        return None
    found = walker.function_elsewhere(name)
    return None if found is None else found.function


def _mark_validated_once(walker: Walker, loaders: list[dict[str, Any]]) -> None:
    """`read_once` for a `val_dataloader()` hook the file's Trainer validates with once
    per fit (lightning_runner.validated_once)."""
    hooks = [x for x in loaders if x.get("function") == "val_dataloader" and not x.get("read_once")]
    if not hooks:
        return
    once = validated_once(walker)
    for loader in hooks if once is not None else []:
        loader["read_once"] = f"it is returned by val_dataloader(), and {once}"


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
    if off_by_default(walker, node, choices_taken=True):
        return  # built only in a branch the default run does not take (`if use_targets:`)
    values, opaque = keyword_values(node, walker.scope())
    opaque, forwarded = _from_makers_callers(walker, values, opaque)
    positional = THIN_SUBCLASSES.get(name, TORCH_POSITIONAL)
    for index, arg in enumerate(node.args[: len(positional)]):
        values.setdefault(positional[index], resolve(arg, walker.scope()))
    with_handed_values(walker, node, values, LOADER_ARGS)
    function = walker.functions[-1] if walker.functions else None
    _zero_ruled_out(function, node, values)
    iteration = iteration_sampler(walker, node)
    walker.report.loaders.append(
        {
            "kind": "torch.DataLoader",
            "callee": name,
            "path": walker.report.path,
            "line": node.lineno,
            "column": node.col_offset + 1,
            "code": code_at(walker.lines, node.lineno),
            "function": getattr(function, "name", None),
            "module_level": function is None,
            "in_main_guard": walker.in_main_guard,
            "args": {k: values[k].to_json() for k in LOADER_ARGS if k in values},
            "dataset": _dataset(walker, node),
            "endless": _endless(walker, node),
            "iteration_sampler": iteration[0],
            "iteration_sampler_if": iteration[1],
            "raw_items": _raw_items(node),
            "opaque_kwargs": opaque,
            "caller_kwargs": forwarded,
            "class_out_of_sight": None if name in walker.loader_classes else name,
        }
    )


DIVISIONS = (ast.Div, ast.FloorDiv, ast.Mod)


def _zero_ruled_out(function: Optional[ast.AST], call: ast.Call, values: dict[str, Value]) -> None:
    """A worker count of 0 (an argparse default handed to a parameter) that the enclosing
    function divides by (`num_train_examples / (global_batch_size * num_workers)`, a
    WebDataset pipeline sized per worker): at 0 the run dies with ZeroDivisionError
    before the loader is read, so every run that trains passes a count of its own, which
    the source does not show: the count is unknown."""
    written = keyword_arg(call, "num_workers")
    found = values.get("num_workers")
    if (
        function is None
        or not isinstance(written, ast.Name)
        or found is None
        or not found.known
        or found.value != 0
    ):
        return
    if _tested(function, written.id):
        return  # `n // workers if workers else n`: 0 may be meant
    for node in ast.walk(function):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, DIVISIONS)
            and written.id in _factors(node.right)
        ):
            values["num_workers"] = Value(
                False,
                None,
                found.text,
                f"{found.source}, but `{ast.unparse(node)}` (line {node.lineno}) divides by "
                "it: at 0 the run stops with ZeroDivisionError, so a run passes its own count",
            )
            return


def _tested(function: ast.AST, name: str) -> bool:
    """Whether `function` tests `name` anywhere (an `if`, a conditional expression, a
    comparison, `and`/`or`, `max(1, name)`): a guard that may let 0 through."""
    for node in ast.walk(function):
        tests: list[ast.AST] = []
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            tests = [node.test]
        elif isinstance(node, (ast.Compare, ast.BoolOp)):
            tests = [node]
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("max", "min"):
            tests = list(node.args)
        if any(isinstance(n, ast.Name) and n.id == name for t in tests for n in ast.walk(t)):
            return True
    return False


def _factors(node: ast.expr) -> set[str]:
    """The plain names multiplied together in `node` (`a * (b * n)`: a, b, n)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) | _factors(node.right)
    return set()


def _raw_items(call: ast.Call) -> Optional[str]:
    """`collate_fn=list` (or `lambda batch: batch`), as written: each batch is the dataset's
    items as they are, in a Python list that the loop takes apart itself (raw prompt
    records it then tokenises). A loader of decoded samples would collate them into
    tensors. None for any other collate."""
    collate = next((k.value for k in call.keywords if k.arg == "collate_fn"), None)
    if isinstance(collate, ast.Name) and collate.id == "list":
        return "collate_fn=list"
    if (
        isinstance(collate, ast.Lambda)
        and len(collate.args.args) == 1
        and isinstance(collate.body, ast.Name)
        and collate.body.id == collate.args.args[0].arg
    ):
        return f"collate_fn={ast.unparse(collate)}"
    return None


def _from_makers_callers(
    walker: Walker, values: dict[str, Any], opaque: list[str]
) -> tuple[list[str], list[str]]:
    """`def make_loader(ds, **kwargs): return DataLoader(ds, **kwargs)`: the settings its
    callers in the file hand it (`make_loader(ds, num_workers=4)`, `**loader_kwargs`), when
    every call hands the same; the `**kwargs` stays opaque otherwise. Returns the opaque
    names left and the function's `**kwargs` that only a caller out of sight fills (no
    call in the run hands it anything): DataLoader's defaults stand, unless that caller
    passes a setting."""
    function = walker.functions[-1] if walker.functions else None
    kwarg = getattr(getattr(function, "args", None), "kwarg", None)
    if function is None or kwarg is None or kwarg.arg not in opaque:
        return opaque, []
    handed = _handed_to(walker, function, 0) if _only_passed_on(function, kwarg.arg) else None
    if handed is None:
        return opaque, []
    calls, forwarded = handed
    if any(h != calls[0] for h in calls) or (not calls and not forwarded):
        return opaque, []
    params = {a.arg for a in [*function.args.args, *function.args.kwonlyargs]}  # type: ignore[attr-defined]
    for key, value in (calls[0] if calls else {}).items():
        if key not in params:
            values.setdefault(key, value)
    left = [o for o in opaque if o != kwarg.arg]
    return left, [kwarg.arg] if forwarded else []


def _only_passed_on(function: Any, name: str) -> bool:
    """Whether `function` uses its `**name` only to pass it on whole (`**name` in a
    call): one that reads or fills it (`kwargs["num_workers"] = ...`,
    `kwargs.get("pin_memory", cuda)`, `kwargs = {**defaults, **kwargs}`) chooses
    settings of its own, which the source does not settle."""
    passed = {
        id(k.value)
        for n in ast.walk(function)
        if isinstance(n, ast.Call)
        for k in n.keywords
        if k.arg is None
    }
    return all(
        id(n) in passed for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
    )


def _handed_to(
    walker: Walker, function: Any, depth: int
) -> Optional[tuple[list[dict[str, Any]], bool]]:
    """What each call of the file hands `function`'s `**kwargs`, and whether a caller out
    of sight may add to it: true when nothing in the run calls the function (a library's
    `get_dataloader(ds, **kwargs)`), or a call forwards its own caller's `**kwargs` that
    nothing fills either. None when a call hands a `**dict` the source does not show,
    or another file of the run linked by imports calls it (train.py's
    `make_data_loader(args, **kwargs)`). A class's `__init__` forwarding `**kwargs` to
    DataLoader is a wrapper whose settings are its users': None."""
    name = _called_by(walker, function)
    if depth > 3 or name is None:
        return None
    calls = calls_of(walker.module, walker.index().function_nodes, name)
    if not calls:
        elsewhere = walker.module_scope.called_elsewhere
        if getattr(function, "name", None) == "__init__" or (elsewhere and elsewhere(name)):
            return None
        return [], True
    handed, forwarded = [], False
    for caller, call in calls:
        found, hidden = keyword_values(call, walker.scope_of(caller))
        if hidden:
            own = getattr(getattr(caller, "args", None), "kwarg", None)
            if own is None or hidden != [own.arg]:
                return None
            upstream = _handed_to(walker, caller, depth + 1)
            if upstream is None or upstream[0]:
                return None
            forwarded = True
        handed.append(found)
    return handed, forwarded


def _called_by(walker: Walker, function: Any) -> Optional[str]:
    """The name the file calls `function` by: for an `__init__` its class's (the wrapper
    is built as `InfiniteDataLoader(ds, num_workers=4)`; a `super().__init__()` in
    another class of the file runs that class's parent, not this one)."""
    name = getattr(function, "name", None)
    if name != "__init__":
        return name
    owner = next((c for c in walker.index().class_nodes if function in c.body), None)
    return owner.name if owner is not None else None


# torch.utils.data.DataLoader's constructor parameters: the positional ones, then the rest
DATALOADER_PARAMETERS = {
    *TORCH_POSITIONAL,
    "drop_last",
    "timeout",
    "worker_init_fn",
    "multiprocessing_context",
    "generator",
    "prefetch_factor",
    "persistent_workers",
    "pin_memory_device",
    "in_order",
}


def _subclass_out_of_sight(walker: Walker, node: ast.Call, name: str) -> bool:
    """An imported class named like a loader (`AtomsLoader`, `AudioDataLoader`,
    `wds.WebLoader`), handed a worker count and nothing but DataLoader's own keywords: a
    DataLoader subclass that passes them on, so what it is not given is DataLoader's
    default (`persistent_workers=False`), unlike a maker function (`create_loader`) whose
    own defaults are out of sight."""
    short = name.rsplit(".", 1)[-1]
    if not (short[:1].isupper() and short.endswith("Loader")) or name.startswith(NOT_MAKERS):
        return False
    index = walker.index()
    if short in index.functions or any(c.name == short for c in index.class_nodes):
        return False  # the file's own: read where it is defined
    named = [k.arg for k in node.keywords if k.arg is not None]
    handed = "num_workers" in named or len(named) < len(node.keywords)
    return handed and all(k in DATALOADER_PARAMETERS for k in named)


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
    by_parameter = _worker_argument(walker, node, name)
    if by_parameter is None and not any(k.arg in ("num_workers", None) for k in node.keywords):
        return  # no worker count handed over, nor a **dict that may hold one
    short = name.rsplit(".", 1)[-1]
    if name.startswith(NOT_MAKERS) or short in walker.index().functions or name in BUILTINS:
        return  # a library's own meaning, or a function of the file (its loader is seen)
    if _builds_loader_itself(walker, short):
        return  # a class of the file wrapping a DataLoader: that loader is read in sight
    if walker.threads_elsewhere is not None and walker.threads_elsewhere(name):
        return  # a class of the run whose count starts threads, not DataLoader workers
    if short.endswith("Dataset"):
        return  # MONAI's CacheDataset(num_workers=4): threads that fill its cache once
    if short in KEYWORD_HOLDERS or short in keyword_classes(walker.module):
        return  # `EasyDict(num_workers=3)`: settings kept, read where a loader is built
    if id(node) in walker.index().discarded_calls and "loader" not in short.lower():
        return  # `show_config(num_workers=4)`: a result nobody reads is no loader
    written = keyword_expressions(node, walker.scope()).get("num_workers") or by_parameter
    if written is None or off_by_default(walker, node, choices_taken=True):
        return
    if _other_arm_builds(walker, node, written):
        return  # one loader built one of two ways: judged at the DataLoader in sight
    line = node.lineno
    built_by, args = _maker_settings(walker, node, name, written)
    walker.report.loaders.append(
        {
            "kind": "torch.DataLoader",
            "callee": name,
            "built_by": built_by,
            "path": walker.report.path,
            "line": line,
            "column": node.col_offset + 1,
            "code": code_at(walker.lines, line),
            "function": getattr(walker.functions[-1] if walker.functions else None, "name", None),
            "module_level": not walker.functions,
            "in_main_guard": walker.in_main_guard,
            "args": args,
            "dataset": _handed_dataset(walker, node, name),
            "endless": None,
            "opaque_kwargs": [],
            "gpu_sampling": gpu_sampling(walker, node, name),
        }
    )


def _worker_argument(walker: Walker, node: ast.Call, name: str) -> Optional[ast.expr]:
    """The argument a call hands a loader maker of another file of the run as the
    parameter that maker passes its DataLoaders as `num_workers=`, positionally or by
    name (YOLOv3's `_create_validation_data_loader(path, bs, size, args.n_cpu)`, test.py
    building `DataLoader(..., num_workers=n_cpu)`); None when there is none."""
    if walker.workers_elsewhere is None or "." not in name:
        return None
    found = walker.workers_elsewhere(name)
    if found is None:
        return None
    _, position, parameter = found
    named = next((k.value for k in node.keywords if k.arg == parameter), None)
    if named is not None:
        return named
    if 0 <= position < len(node.args) and not any(
        isinstance(a, ast.Starred) for a in node.args[: position + 1]
    ):
        return node.args[position]
    return None


def _maker_settings(
    walker: Walker, node: ast.Call, name: str, written: ast.expr
) -> tuple[str, dict[str, Any]]:
    """(built_by, args) of a maker's loaders. Out of sight, only the worker count is
    known. A maker another file of the run defines, building its DataLoaders from the
    caller's `**kwargs` alone (run_options.forwarding_makers), gets what the call hands
    it, and DataLoader's default for a setting neither hands nor the maker sets
    (deeplab's `make_data_loader(args, **kwargs)` with `kwargs = {'num_workers': ...,
    'pin_memory': True}`: no persistent workers)."""
    short = name.rsplit(".", 1)[-1]
    workers = {"num_workers": resolve(written, walker.scope()).to_json()}
    found = walker.maker_elsewhere(name) if walker.maker_elsewhere is not None else None
    values, opaque = keyword_values(node, walker.scope())
    if found is None or opaque:
        builder = walker.workers_elsewhere(name) if walker.workers_elsewhere is not None else None
        where = f" in {builder[0]}" if builder is not None else ", out of this file"
        return f"{short}(){where}", workers
    where, sets_itself = found
    args = {k: v.to_json() for k, v in values.items() if k in DATALOADER_PARAMETERS}
    for setting, default in (("pin_memory", False), ("persistent_workers", False)):
        if setting not in args and setting not in sets_itself:
            args[setting] = Value(
                True, default, repr(default), "not handed over, nor set there: DataLoader's default"
            ).to_json()
    return f"{short}() in {where}", args


def _other_arm_builds(walker: Walker, node: ast.Call, written: ast.expr) -> bool:
    """`if hasattr(module, "process_train_dataset"): loader = module.process_train_dataset(ds,
    num_workers=self.num_workers) else: loader = DataLoader(ds, num_workers=self.num_workers)`:
    the maker out of sight and the DataLoader in the other arm of the same `if` build one
    loader with the same worker count, so it is judged once, at the DataLoader."""
    owner: ast.AST = walker.functions[-1] if walker.functions else walker.module
    count = ast.unparse(written)
    for branch in ast.walk(owner):
        if not isinstance(branch, ast.If) or not branch.orelse:
            continue
        for here, there in ((branch.body, branch.orelse), (branch.orelse, branch.body)):
            if _holds(here, node) and _loader_with_workers(walker, there, count):
                return True
    return False


def _holds(statements: list[ast.stmt], node: ast.AST) -> bool:
    return any(n is node for s in statements for n in ast.walk(s))


def _loader_with_workers(walker: Walker, statements: list[ast.stmt], count: str) -> bool:
    """Whether `statements` build a DataLoader handed `num_workers=<count>`, as written."""
    return any(
        isinstance(n, ast.Call)
        and walker.qualname(n.func) in walker.loader_classes
        and any(k.arg == "num_workers" and ast.unparse(k.value) == count for k in n.keywords)
        for s in statements
        for n in ast.walk(s)
    )


def _builds_loader_itself(walker: Walker, name: str) -> bool:
    """`name` is a class of the file whose own code builds a DataLoader
    (`class InfiniteDataLoader: def __init__(self, ds, **kwargs): DataLoader(ds, **kwargs)`):
    the worker count handed to it is judged at that DataLoader, not again at the call."""
    for cls in walker.index().class_nodes:
        if cls.name == name:
            return any(
                isinstance(n, ast.Call) and ast.unparse(n.func).endswith("DataLoader")
                for n in ast.walk(cls)
            )
    return False


def gpu_sampling(walker: Walker, node: ast.Call, name: str) -> Optional[dict[str, Any]]:
    """DGL's `DataLoader(..., use_uva=True)`: the sampler runs on the GPU, and DGL raises
    "num_workers must be 0 if UVA sampling is enabled" (CUDA allows no worker processes
    in the same context; DGL user guide 6.8), so no worker count is missing there.
    `{"known": True, "text": ...}` when UVA is on at the defaults, `known` False when
    the source does not settle it, None when it is off or not DGL's."""
    uva = keyword_expressions(node, walker.scope()).get("use_uva")
    if not name.startswith("dgl.") or uva is None:
        return None
    value = resolve(uva, walker.scope())
    if value.known and not value.value:
        return None
    return {"known": value.known, "text": f"use_uva={ast.unparse(uva)}"}


def _dataset(walker: Walker, call: ast.Call) -> Optional[dict[str, Any]]:
    """The class a DataLoader's dataset is built from, where the source shows it:
    {"class": "TensorDataset", "text": "TensorDataset(x, y)"}."""
    node: Optional[ast.expr] = call.args[0] if call.args else None
    for keyword in call.keywords:
        if keyword.arg == "dataset":
            node = keyword.value
    return _dataset_of(walker, node)


def _handed_dataset(walker: Walker, call: ast.Call, name: str) -> Optional[dict[str, Any]]:
    """The dataset a call hands a loader maker of another file of the run that builds
    every one of its DataLoaders over the parameter it binds to (cgcnn's
    `get_train_val_test_loader(dataset=dataset, ...)`, data.py building each
    `DataLoader(dataset, ...)`), when that dataset is known to serve samples from memory
    (`CIFData`, whose `__getitem__` is memoised in data.py); None otherwise (the maker's
    loaders stay out of sight)."""
    maker = walker.function_elsewhere(name) if walker.function_elsewhere is not None else None
    if maker is None or "." not in name:
        return None
    arguments = maker.function.args
    positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
    loaders = [
        n
        for n in ast.walk(maker.function)
        if isinstance(n, ast.Call) and ast.unparse(n.func).rsplit(".", 1)[-1] == "DataLoader"
    ]
    handed = {_loader_dataset(n) for n in loaders}
    if len(handed) != 1:
        return None
    (parameter,) = handed
    if parameter is None or parameter not in positional + [a.arg for a in arguments.kwonlyargs]:
        return None
    given = next((k.value for k in call.keywords if k.arg == parameter), None)
    if given is None and parameter in positional:
        position = positional.index(parameter)
        if position < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[: position + 1]
        ):
            given = call.args[position]
    found = _dataset_of(walker, given) if given is not None else None
    if found is None or not (found.get("in_memory") or found.get("class") == "TensorDataset"):
        return None
    return found


def _loader_dataset(call: ast.Call) -> Optional[str]:
    """The name a DataLoader call is handed as its dataset, or None."""
    node = call.args[0] if call.args else None
    node = next((k.value for k in call.keywords if k.arg == "dataset"), node)
    return node.id if isinstance(node, ast.Name) else None


def _dataset_of(walker: Walker, node: Optional[ast.expr]) -> Optional[dict[str, Any]]:
    """`_dataset` for the dataset expression `node` itself."""
    tokenised = tokenised_map(walker, node) or tokenised_by_callers(walker, node)
    if tokenised is not None:
        return {"class": "pre-tokenised", "qualname": None, "text": _clip(tokenised)}
    function = walker.functions[-1] if walker.functions else None
    arrays = _arrays_every_branch(node, function)
    if arrays is not None:
        return arrays
    index = walker.index()
    text = tokenised_text(node, function, index.function_nodes, index.class_nodes)
    if text is not None:
        built, up_front = text
        return {
            "class": "tokenised-text",
            "qualname": None,
            "text": _clip(built),
            "up_front": up_front,
        }
    if isinstance(node, ast.Name) and node.id == "self":
        return _self_dataset(walker, function)
    maker = _built_by(walker, node, function, 0)
    if not isinstance(maker, ast.Call):
        return _callers_dataset(walker, node, function)
    node = maker
    owners = function_owners(walker.module, walker.index().function_nodes)
    returned = returned_elsewhere(walker, node, owners.get(id(node)))
    if returned is not None:  # a helper of another file of the run returns a TensorDataset
        return {"class": returned[0], "qualname": returned[1], "text": _clip(returned[2], 200)}
    name = walker.qualname(node.func) or ""
    short = name.rsplit(".", 1)[-1]
    if not short:
        return None
    found: dict[str, Any] = {"class": short, "qualname": name, "text": _clip(ast.unparse(node))}
    held = _class_held(walker, name)
    if held is None and isinstance(node.func, ast.Name):
        held = _table_held(walker, node.func.id, owners.get(id(node)))
    if fitted_arrays(node, owners.get(id(node))):
        found["handed_arrays"] = True  # TensorDataset(X, y) in an estimator's fit(X, y)
    if held is None:
        held = wrapped_arrays(node, owners.get(id(node))) or keyword_arrays(
            node, owners.get(id(node))
        )
        if held is not None:
            found["handed_arrays"] = True  # an estimator's fit(X, y): feature rows
        elif not any(c.name == short for c in walker.index().class_nodes):
            held = tensor_file(node, walker.scope_of(owners.get(id(node))))
    if held is not None:
        found["in_memory"] = held
    return found


def _self_dataset(walker: Walker, function: Optional[ast.AST]) -> Optional[dict[str, Any]]:
    """`DataLoader(self, ...)` in a method of a Dataset class (trlx's `create_loader`):
    the dataset is that class. Its samples come from memory when its own `__getitem__`
    only indexes what it holds (datasets.in_memory), or, with no `__getitem__` of its
    own, when the one it inherits from a base class (the file's, or one another file of
    the run defines) does; a class that opens a lazy store is not read so."""
    owner = next(
        (c for c in walker.index().class_nodes if any(f is function for f in c.body)), None
    )
    if owner is None:
        return None
    found: dict[str, Any] = {"class": owner.name, "qualname": None, "text": "self"}
    held = in_memory(owner, walker.module, _records(walker, owner))
    defines = any(isinstance(f, ast.FunctionDef) and f.name == "__getitem__" for f in owner.body)
    if held is None and not defines and not any(w in ast.unparse(owner) for w in LAZY_STORES):
        for base in owner.bases:
            name = walker.qualname(base) or ast.unparse(base)
            held = _class_held(walker, name)
            if held is not None:
                held = f"{owner.name} inherits __getitem__: {held}"
                break
    if held is not None:
        found["in_memory"] = held
    return found


def _records(walker: Walker, cls: ast.ClassDef) -> frozenset[str]:
    """The classes `cls.__getitem__` calls by name that are plain records (a dataclass
    of fields only, datasets.record_class), the file's or another file's of the run."""
    found = set()
    own = {c.name: c for c in walker.index().class_nodes}
    for method in cls.body:
        if not (isinstance(method, ast.FunctionDef) and method.name == "__getitem__"):
            continue
        for node in ast.walk(method):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            definition: Optional[ast.ClassDef] = own.get(node.func.id)
            name = walker.qualname(node.func) or ""
            if definition is None and walker.class_elsewhere is not None and "." in name:
                there = walker.class_elsewhere(name)
                definition = there[0] if there is not None else None
            if definition is not None and record_class(definition):
                found.add(node.func.id)
    return frozenset(found)


def _class_held(walker: Walker, name: str) -> Optional[str]:
    """Why the Dataset class `name` (a qualified name) serves samples from memory: the
    file's own, a library's, or one another file of the run defines; else None."""
    held = _held_in_memory(walker, name.rsplit(".", 1)[-1]) or library_in_memory(name)
    if held is None and walker.held_elsewhere is not None and "." in name:
        held = walker.held_elsewhere(name)  # a Dataset class of another file of the run
    return held


def _table_held(walker: Walker, local: str, function: Optional[ast.AST]) -> Optional[str]:
    """`Data = data_dict[args.data]; Data(...)` (class_tables.py): in memory when every
    class the table (and the name's other assignments) may pick serves samples from
    memory; None when one does not, or is not known to."""
    classes = table_classes(local, function, walker.module, walker.scope_of(function))
    if classes is None:
        return None
    reasons: dict[str, str] = {}
    for cls in classes:
        name = walker.qualname(cls) or ast.unparse(cls)
        held = reasons.get(name) or _class_held(walker, name)
        if held is None:
            return None
        reasons[name] = held
    first = next(iter(reasons.values()))
    return _clip(f"{local} is one of {', '.join(reasons)}, each in memory: {first}", 200)


def _callers_dataset(
    walker: Walker, node: Optional[ast.expr], function: Optional[ast.AST]
) -> Optional[dict[str, Any]]:
    """`def get_loader(dataset, ...): return DataLoader(dataset, ...)`, which nothing in the
    file calls: the dataset is the caller's, and the file's Dataset classes that build no
    loader of their own are the ones such a helper is for. When each of those memoises its
    `__getitem__` (`@functools.cache`), the helper serves cached samples: held in memory
    as that class's own loader would be."""
    if not isinstance(node, ast.Name) or not isinstance(
        function, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return None
    params = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    calls = _calls_by_name(walker.module, walker.index().function_nodes)
    if node.id not in {a.arg for a in params} or calls.get(function.name):
        return None
    index = walker.index()
    served = [
        c
        for c in index.class_nodes
        if c.name in index.derived_from(TORCH_DATASETS) and not _loader_in(walker, c)
    ]
    cached = [_memoised_getitem(c) for c in served]
    if not served or any(c is None for c in cached):
        return None
    names = ", ".join(c.name for c in served)
    return {
        "class": None,
        "qualname": None,
        "text": node.id,
        "in_memory": f"{node.id} is the caller's, and the file's Dataset classes for it "
        f"({names}) memoise __getitem__ ({cached[0]}): samples stay in the training process, "
        "a cache worker processes would discard every epoch",
    }


def _loader_in(walker: Walker, cls: ast.ClassDef) -> bool:
    """Whether `cls` builds a DataLoader of its own (a `get_train_val_test_loader` method)."""
    return any(
        isinstance(n, ast.Call) and walker.qualname(n.func) in walker.loader_classes
        for n in ast.walk(cls)
    )


def _memoised_getitem(cls: ast.ClassDef) -> Optional[str]:
    getitem = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__getitem__"),
        None,
    )
    return memoised(getitem) if getitem is not None else None


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
        "handed_arrays": True,
    }


TORCH_DATASETS = {"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"}


def _held_in_memory(walker: Walker, name: str) -> Optional[str]:
    """Why the file's Dataset class `name` serves samples from memory (datasets.py), or
    None (not the file's, defined twice, or reading per sample)."""
    classes = [c for c in walker.index().class_nodes if c.name == name]
    if len(classes) != 1 or name not in walker.index().derived_from(TORCH_DATASETS):
        return None
    return in_memory(classes[0], walker.module)


def _built_by(
    walker: Walker,
    node: Optional[ast.expr],
    function: Optional[ast.AST],
    depth: int,
    budget: Optional[list[int]] = None,
) -> Optional[ast.expr]:
    """The call that builds a dataset: through assignments, a parameter of the loader's
    function from the calls to it (`prepare(dataset, ...)` called with `get_data()`), and
    the return value of a function of the file (`get_data()` returning a TensorDataset)."""
    if depth > 6 or node is None:
        return None
    budget = [MAX_CALLS] if budget is None else budget
    if isinstance(node, ast.Name):
        assigned = walker.scope_of(function).lookup(node.id) or _split_of(walker, function, node.id)
        if assigned is not None:
            return _built_by(walker, assigned, function, depth + 1, budget)
        return _from_callers(walker, node.id, function, depth, budget)
    if isinstance(node, ast.Call) and walker.qualname(node.func) in SUBSETS and node.args:
        return _built_by(
            walker, node.args[0], function, depth + 1, budget
        )  # Subset(dataset, indices)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        own = walker.index().functions.get(node.func.id)
        if own is not None:
            returned = [
                r.value for r in ast.walk(own) if isinstance(r, ast.Return) and r.value is not None
            ]
            if len(returned) == 1:
                return _built_by(walker, returned[0], own, depth + 1, budget)
    return node


SPLITS = {"torch.utils.data.random_split", "torch.utils.data.dataset.random_split"}
SUBSETS = {"torch.utils.data.Subset", "torch.utils.data.dataset.Subset"}


def _split_of(walker: Walker, function: Optional[ast.AST], name: str) -> Optional[ast.expr]:
    """`train_set, val_set = random_split(dataset, [n - 2000, 2000])`: each part serves
    samples of `dataset` (its first argument, returned), so it is read as that dataset."""
    owner = function if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    calls = assigned_calls(owner or walker.module, name)  # type: ignore[arg-type]
    if len(calls) != 1 or walker.qualname(calls[0].func) not in SPLITS or not calls[0].args:
        return None
    return calls[0].args[0]


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
    walker: Walker, parameter: str, function: Optional[ast.AST], depth: int, budget: list[int]
) -> Optional[ast.expr]:
    """What every call to `function` in the file passes as `parameter`, when they agree.
    `budget` counts down the calls one question reads over every caller followed
    (callers of callers fan out as w**6 up six levels): past it, not known."""
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
        budget[0] -= 1
        if budget[0] < 0:
            return None
        found = _built_by(walker, given, caller, depth + 1, budget)
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
    endless = _endless_class(walker, sampler.func)
    if endless is not None:
        return f"its sampler {endless}"
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


def _endless_class(walker: Walker, func: ast.expr) -> Optional[str]:
    """Why the sampler class `func` names (the file's, or another file's of the run; a
    name bound to one, `Sampler = BalancedTrainSampler`, followed) yields without end:
    its own `__iter__` is a generator whose `while True:` has no `break` and which has no
    `return` (audioset_tagging_cnn's training samplers); None otherwise."""
    if isinstance(func, ast.Name):
        bound = walker.scope().lookup(func.id)
        if isinstance(bound, (ast.Name, ast.Attribute)):
            func = bound
    cls: Optional[ast.ClassDef] = None
    if isinstance(func, ast.Name):
        own = [c for c in walker.index().class_nodes if c.name == func.id]
        cls = own[0] if len(own) == 1 else None
    if cls is None and walker.class_elsewhere is not None:
        qualname = walker.qualname(func) or ""
        found = walker.class_elsewhere(qualname) if "." in qualname else None
        cls = found[0] if found is not None else None
    if cls is None:
        return None
    method = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__iter__"), None
    )
    if method is None or any(isinstance(n, ast.Return) for n in ast.walk(method)):
        return None
    if not any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(method)):
        return None
    for statement in method.body:
        if (
            isinstance(statement, ast.While)
            and isinstance(statement.test, ast.Constant)
            and statement.test.value is True
            and not statement.orelse
            and not _breaks(statement.body)
        ):
            return (
                f"{cls.name}(...) yields without end (a `while True:` in its __iter__ it "
                "never leaves): one endless pass"
            )
    return None


def _breaks(statements: list[ast.stmt]) -> bool:
    """Whether a `break` in `statements` (outside loops and functions nested in them)
    leaves the loop they are the body of."""
    todo: list[ast.AST] = list(statements)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            todo.extend(node.orelse)  # a break in a nested loop's else leaves ours
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


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
