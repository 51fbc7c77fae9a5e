"""What the whole file says about each DataLoader once they are all found: a retry of
the same loader in an `except` handler (judged once), batches copied `non_blocking`, a
loader rebuilt on every call, one read for a single batch (`next(iter(loader))`), a
Lightning hook read once, a data module's `__main__` self-test. Marks only; the rules
judge (envcheck/checks/ec5xx_torch.py).

Size: the marks share one reading of each scope (`ScopeReads`: its names, loops and
calls indexed once, so a file of N loaders stays linear); it is loader-specific (which
wrappers count as iterating a loader), so it stays here rather than in index.py.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from typing import Any, Callable, Optional

from envcheck.scripts.host_passes import host_only
from envcheck.scripts.host_rebuilt import mark_host_rebuilt
from envcheck.scripts.index import module_nodes
from envcheck.scripts.periodic_reads import mark_read_periodically
from envcheck.scripts.resampled import mark_resampled

# (a call's function) -> the function another file of the run defines by that name
FunctionOf = Callable[[ast.expr], Optional[ast.AST]]


def mark_loaders(
    module: ast.Module,
    loaders: list[dict[str, Any]],
    function_of: Optional[FunctionOf] = None,
    called_elsewhere: Optional[Callable[[str], bool]] = None,
) -> None:
    """Every mark, in the order they build on each other. `function_of` finds the
    function a call runs when another file of the run defines it (`inference.inference`
    with `import inference`), else None; `called_elsewhere` tells whether another file of
    the run calls a function by that name."""
    _drop_fallbacks_mark_non_blocking(module, loaders)
    _mark_rebuilt(module, loaders)
    mark_resampled(module, loaders)
    _mark_one_batch(module, loaders)
    _mark_once(loaders)
    _mark_one_local_loop(module, loaders, function_of)
    _mark_built_once(module, loaders, function_of, called_elsewhere)
    mark_read_periodically(module, loaders)
    _mark_unused(module, loaders)
    _mark_stage_never_run(module, loaders)
    _mark_test_split(module, loaders)
    mark_host_rebuilt(module, loaders)


def _mark_one_batch(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """`one_batch`: the loader is built only to read one batch, `next(iter(DataLoader(...)))`
    (a sample for a plot or a callback), or over a list of one item written in the call
    (fastai's `predict(item)`: `test_dl([item], num_workers=0)`), so its workers and
    pinning would buy nothing."""
    if not loaders:
        return
    places = set()
    single: dict[tuple[int, int], str] = {}
    for node in module_nodes(module):
        if isinstance(node, ast.Call) and _one_item(node):
            single[(node.lineno, node.col_offset + 1)] = ast.unparse(node.args[0])
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "next"
            and node.args
            and isinstance(node.args[0], ast.Call)
            and isinstance(node.args[0].func, ast.Name)
            and node.args[0].func.id == "iter"
            and node.args[0].args
            and isinstance(node.args[0].args[0], ast.Call)
        ):
            inner = node.args[0].args[0]
            places.add((inner.lineno, inner.col_offset + 1))
    for loader in loaders:
        here = (loader["line"], loader["column"])
        items = single.get(here)
        loader["one_batch"] = (
            "one batch (next(iter(...)))"
            if here in places
            else f"a single item ({items})"
            if items
            else None
        )


def _one_item(call: ast.Call) -> bool:
    """Whether the call's data (its first argument) is a list or tuple of one item, as
    written: `DataLoader([sample])`. A maker handed a list of one dataset
    (`build_loader([train_ds])`, concatenated inside) serves all its samples."""
    data = call.args[0] if call.args else None
    if not isinstance(data, (ast.List, ast.Tuple)) or len(data.elts) != 1:
        return False
    item = data.elts[0]
    name = (item.attr if isinstance(item, ast.Attribute) else getattr(item, "id", "")).lower()
    return not isinstance(item, ast.Starred) and not name.endswith(DATASET_NAMES)


# names of a dataset, not an item: `dataset`, `train_set`, `val_ds`, `datasets`
DATASET_NAMES = ("dataset", "datasets", "set", "ds")


def _drop_fallbacks_mark_non_blocking(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """One walk for two facts. Leave out a DataLoader built in an `except` handler when
    the `try` body builds one: the same loader retried (timm's `except TypeError:`
    without persistent_workers for old PyTorch), judged once where the `try` builds it.
    And `non_blocking_copy`: the line of the file's first `.to(..., non_blocking=True)`
    (or `.cuda(non_blocking=True)`), or None; such a copy overlaps with compute only from
    pinned memory, so it makes pinning worth it even for small in-memory batches."""
    if not loaders:
        return
    fallbacks: set[int] = set()
    line = None
    for node in module_nodes(module):
        if isinstance(node, ast.Call) and any(
            k.arg == "non_blocking" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in node.keywords
        ):
            line = node.lineno if line is None else min(line, node.lineno)
        if not isinstance(node, ast.Try) or not node.handlers:
            continue
        start, end = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
        if not any(start <= x["line"] <= end for x in loaders):
            continue
        for handler in node.handlers:
            last = handler.end_lineno or handler.lineno
            fallbacks |= {id(x) for x in loaders if handler.lineno <= x["line"] <= last}
    loaders[:] = [x for x in loaders if id(x) not in fallbacks]
    for loader in loaders:
        loader["non_blocking_copy"] = line


# Lightning's hooks for loaders that trainer.test() / trainer.predict() read once
READ_ONCE_HOOKS = ("test_dataloader", "predict_dataloader")


def _mark_once(loaders: list[dict[str, Any]]) -> None:
    """`read_once`: why the loader is iterated a single time (a Lightning test or
    predict hook), or None. Workers kept alive after its one pass would serve nothing."""
    for loader in loaders:
        function = loader.get("function")
        loader["read_once"] = (
            f"it is returned by {function}(), which Lightning iterates once per "
            f"trainer.{function.split('_')[0]}()"
            if function in READ_ONCE_HOOKS
            else None
        )


def _mark_rebuilt(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """`rebuilt`: why a DataLoader is constructed anew again and again (inside a loop, or
    in a function called from one, such as `validate()` per epoch), or None. Its workers
    then cannot outlive it, persistent or not. A loader built under a latch in the loop
    (`if epoch >= F and not unfreeze_flag:` ... `unfreeze_flag = True`, `if loader is
    None:`) is built once, not rebuilt, and so is one kept in a collection made before
    the loop (`_kept_in_collections`)."""
    if not loaders:
        return
    in_loops: dict[str, int] = {}  # function name -> line of a call to it inside a loop
    loop_spans: list[tuple[int, int]] = []
    latches: list[tuple[int, int, int]] = []  # (if line, body start, body end)
    # a function of the module is called by its name: `model.train()` in a loop is not a
    # call of the file's `def train(...)`; a method is called on an object
    methods = {
        item.name
        for cls in module_nodes(module)
        if isinstance(cls, ast.ClassDef)
        for item in cls.body
        if isinstance(item, FUNCTIONS)
    }
    functions = {n.name for n in module.body if isinstance(n, FUNCTIONS)} - methods
    for node in module_nodes(module):
        if isinstance(node, ast.If) and _latch(node):
            last = node.body[-1].end_lineno or node.body[-1].lineno
            latches.append((node.lineno, node.body[0].lineno, last))
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            continue
        loop_spans.append((node.lineno, node.end_lineno or node.lineno))
        for inner in [n for statement in node.body for n in ast.walk(statement)]:
            if isinstance(inner, ast.Call):
                func = inner.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if isinstance(func, ast.Attribute) and name in functions:
                    continue
                if name is not None:
                    in_loops.setdefault(name, inner.lineno)
    in_loop = _span_finder(loop_spans)
    kept = _kept_in_collections(module, loop_spans)
    for loader in loaders:
        line = loader["line"]
        function = loader.get("function")
        if (
            in_loop(line)
            and not _latched(line, loop_spans, latches)
            and (line, loader["column"]) not in kept
        ):
            loader["rebuilt"] = "it is created inside a loop"
        elif function is not None and function in in_loops:
            loader["rebuilt"] = (
                f"it is created by {function}(), called inside a loop (line {in_loops[function]})"
            )
        else:
            loader["rebuilt"] = None


def _kept_in_collections(module: ast.Module, loops: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Places of calls built in a loop only to be kept, one per item, in a collection made
    before that loop (`loaders = []`, then `for name in sets: loader = DataLoader(...);
    loaders.append(loader)`): each is built once and read from the collection later, not
    rebuilt. The collection must be made (`[]`, `{}`, `list()`, `dict()`) in the same
    scope outside every loop around the call: one made anew inside an epoch loop is
    rebuilt with its loaders."""
    kept: set[tuple[int, int]] = set()
    scopes = [module, *(n for n in module_nodes(module) if isinstance(n, FUNCTIONS))]
    for scope in scopes:
        nodes = _own(scope)
        made: dict[str, list[int]] = {}  # collection name -> lines it is made empty
        calls_of: dict[str, list[ast.Call]] = {}  # name -> calls assigned to it
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and _empty_collection(node.value):
                    made.setdefault(target.id, []).append(node.lineno)
                if isinstance(target, ast.Name) and isinstance(node.value, ast.Call):
                    calls_of.setdefault(target.id, []).append(node.value)
        for node in nodes:
            stored = _stored_in(node)
            if stored is None or stored[0] not in made:
                continue
            collection, held = stored
            assigned = calls_of.get(held.id, []) if isinstance(held, ast.Name) else [held]
            value = assigned[0] if len(assigned) == 1 else None
            if not isinstance(value, ast.Call):
                continue
            around = [(s, e) for s, e in loops if s < value.lineno <= e]
            if around and not any(s < line <= e for s, e in around for line in made[collection]):
                kept.add((value.lineno, value.col_offset + 1))
    return kept


def _empty_collection(value: ast.expr) -> bool:
    """`[]`, `{}`, `list()`, `dict()`."""
    if isinstance(value, (ast.List, ast.Dict)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("list", "dict")
        and not value.args
        and not value.keywords
    )


def _stored_in(node: ast.AST) -> Optional[tuple[str, ast.expr]]:
    """(collection, value) of `collection.append(value)` or `collection[key] = value`."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
        and isinstance(node.func.value, ast.Name)
        and len(node.args) == 1
    ):
        return node.func.value.id, node.args[0]
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Subscript)
        and isinstance(node.targets[0].value, ast.Name)
    ):
        return node.targets[0].value.id, node.value
    return None


def _latch(branch: ast.If) -> bool:
    """`if loader is None:` / `if epoch >= F and not unfreeze_flag:` whose body then sets
    what it tests (`loader = ...`, `unfreeze_flag = True`): the branch runs once, however
    often the loop around it turns."""
    tests = branch.test.values if isinstance(branch.test, ast.BoolOp) else [branch.test]
    if isinstance(branch.test, ast.BoolOp) and isinstance(branch.test.op, ast.Or):
        return False  # another operand may hold on every turn
    for test in tests:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            latched, truthy = test.operand, True  # set to a true constant
        elif (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            latched, truthy = test.left, False  # set to anything but None
        else:
            continue
        if not isinstance(latched, ast.Name):
            continue
        for statement in branch.body:  # set in the branch itself, not in a nested block
            if not (
                isinstance(statement, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == latched.id for t in statement.targets)
            ):
                continue
            value = statement.value
            constant = value.value if isinstance(value, ast.Constant) else ...
            if (truthy and constant is not ... and bool(constant)) or (
                not truthy and constant is not None
            ):
                return True
    return False


def _latched(line: int, loops: list[tuple[int, int]], latches: list[tuple[int, int, int]]) -> bool:
    """Each loop around `line` holds a latch branch (`_latch`) whose body holds it: built
    once, not once per turn."""
    return all(
        any(start < test <= end and first <= line <= last for test, first, last in latches)
        for start, end in loops
        if start < line <= end
    )


def _span_finder(spans: list[tuple[int, int]]) -> Callable[[int], bool]:
    """A test of whether a line falls in some span (start, end], the line after the start:
    spans sorted once with the furthest end so far, each line a bisection (one scan per
    loader made a file of N loaders and N loops take N² time)."""
    spans = sorted(spans)
    starts = [start for start, _ in spans]
    furthest = list(itertools.accumulate((end for _, end in spans), max))

    def inside(line: int) -> bool:
        before = bisect.bisect_left(starts, line)  # spans starting strictly before the line
        return before > 0 and furthest[before - 1] >= line

    return inside


LOOP_WRAPPERS = ("enumerate", "iter", "tqdm", "track", "zip")


def _mark_one_local_loop(
    module: ast.Module, loaders: list[dict[str, Any]], function_of: Optional[FunctionOf] = None
) -> None:
    """A loader held in a local name whose only use is one `for` loop that does not
    train, itself in no loop (`get_mean_and_std(dataset)`, a `__main__` preview): it is
    iterated once, so
    `read_once`; when that loop breaks at a constant count (`if ii == 1: break`), it
    reads a few batches only, so `one_batch` too."""
    if not loaders:
        return
    scopes = [module, *(n for n in module_nodes(module) if isinstance(n, FUNCTIONS))]
    by_place: dict[tuple[int, int], dict[str, Any]] = {}
    for each in loaders:
        by_place.setdefault((each["line"], each["column"]), each)
    for scope in scopes:
        reads = scope_reads(scope)
        nodes = reads.nodes
        for node in nodes:
            if not (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
            ):
                continue
            place = (node.value.lineno, node.value.col_offset + 1)
            loader = by_place.get(place)
            if loader is None or loader.get("read_once") or loader.get("rebuilt"):
                continue
            if scope is module and _read_in_functions(module, node.targets[0].id):
                continue  # a global the file's functions also read (`fit(model, loader)`)
            loop = _only_loop(reads, node.targets[0].id)
            peek = _one_read(reads, node.targets[0].id)
            if loop is None and peek is not None:
                loader["read_once"] = f"it is read once, for one batch ({peek})"
                continue
            single = _one_iterator(reads, node.targets[0].id) if loop is None else None
            if single is not None:
                loader["read_once"] = f"its one iterator ({single}) is never made again"
                continue
            if loop is None:
                handed = _handed_once(module, scope, reads, node.targets[0].id, function_of)
                if handed is not None and not _trains(handed[1]):
                    name, loop = handed
                    loader["read_once"] = (
                        f"it is handed once to {name}(), which iterates it in one loop "
                        f"(line {loop.lineno})"
                    )
                continue
            if _trains(loop):
                continue  # a training pass may be repeated by code this reading misses
            loader["read_once"] = f"it is iterated by one loop (line {loop.lineno}), once"
            if isinstance(loop, ast.For):
                loader["host_only"] = host_only(loop)
            if loader.get("in_main_guard") and _only_prints(loop) and not _trains(module):
                loader["self_test"] = (
                    f"a self-test under the main guard of a file that never trains: the loop "
                    f"at line {loop.lineno} only prints what it reads"
                )
            count = _breaks_at(loop)
            if count is not None and not loader.get("one_batch"):
                batches = "one batch" if count == 1 else f"{count} batches"
                loader["one_batch"] = f"{batches} (the loop at line {loop.lineno} stops)"


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _mark_built_once(
    module: ast.Module,
    loaders: list[dict[str, Any]],
    function_of: Optional[FunctionOf] = None,
    called_elsewhere: Optional[Callable[[str], bool]] = None,
) -> None:
    """A loader a function of the module builds and returns (`def get_test_loader():
    return DataLoader(...)`, or `loader = DataLoader(...)` then `return loader,
    dataset.class_names`, a tuple), that function called once in the file, in no loop,
    its result read once: handed straight to a function of the module that iterates it in
    one loop that does not train (`inference(get_test_loader(), model)`), or held in a
    name (`loader, names = get_inference_utils(opt)`, unpacked from the returned tuple)
    iterated so, or handed once to such a function, of this module or of another file of
    the run (`inference.inference(loader, model)`, `function_of`). The loader makes one
    pass: `read_once`, as for a loader built in place. A builder another file of the run
    calls too (`called_elsewhere`: PyTorch-YOLOv3's train.py validating every epoch with
    test.py's `_create_validation_data_loader`) may serve any number of passes there."""
    if not loaders:
        return
    defined = {n.name: n for n in module.body if isinstance(n, FUNCTIONS)}
    scopes = [module, *(n for n in module_nodes(module) if isinstance(n, FUNCTIONS))]
    # calls by name in each scope, and names loaded anywhere, indexed once (not per loader)
    uses_of: dict[str, list[tuple[ast.AST, list[ast.AST], ast.Call]]] = {}
    for scope in scopes:
        nodes = scope_reads(scope).nodes
        for call in nodes:
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                uses_of.setdefault(call.func.id, []).append((scope, nodes, call))
    mentions: dict[str, int] = {}
    for n in module_nodes(module):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            mentions[n.id] = mentions.get(n.id, 0) + 1
    for loader in loaders:
        builder = defined.get(loader.get("function") or "")
        if builder is None or loader.get("read_once") or loader.get("rebuilt"):
            continue
        slot = _returned_at(builder, (loader["line"], loader["column"]))
        if slot is None:
            continue
        uses = uses_of.get(builder.name, [])
        if len(uses) != 1 or mentions.get(builder.name, 0) != 1:
            continue  # called again, or handed on as a value: any number of passes
        if called_elsewhere is not None and called_elsewhere(builder.name):
            continue
        used_in, nodes, call = uses[0]
        reads = scope_reads(used_in)
        if id(call) in reads.in_for_or_while or id(call) in reads.in_async_for:
            continue
        reason = _one_pass_of_call(module, used_in, call, slot, function_of)
        if reason is not None:
            loader["read_once"] = f"it is built by {builder.name}(), called once: {reason}"


# where a function's result holds the loader: the whole value (WHOLE), or one position
# of the tuple it returns (`return loader, names`: 0)
WHOLE = -1


def _returned_at(function: ast.AST, place: tuple[int, int]) -> Optional[int]:
    """Where the function returns the call at `place`: WHOLE for `return DataLoader(...)`
    or `loader = DataLoader(...)` ... `return loader`; its position for `return loader,
    names`; None when it does not return it (or the name is bound more than once)."""
    own = _own(function)
    held: Optional[str] = None
    stores: dict[str, int] = {}
    for n in own:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
        if (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Call)
            and (n.value.lineno, n.value.col_offset + 1) == place
        ):
            held = n.targets[0].id
    for n in own:
        if not isinstance(n, ast.Return) or n.value is None:
            continue
        value = n.value
        if isinstance(value, ast.Call) and (value.lineno, value.col_offset + 1) == place:
            return WHOLE
        if held is None or stores.get(held) != 1:
            continue
        if isinstance(value, ast.Name) and value.id == held:
            return WHOLE
        if isinstance(value, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in value.elts):
            for position, item in enumerate(value.elts):
                if isinstance(item, ast.Name) and item.id == held:
                    return position
    return None


def _one_pass_of_call(
    module: ast.Module,
    scope: ast.AST,
    call: ast.Call,
    slot: int = WHOLE,
    function_of: Optional[FunctionOf] = None,
) -> Optional[str]:
    """Why the loader that `call` returns (whole, or at position `slot` of the tuple it
    returns) is iterated once, or None: the call is an argument of a function of the
    module that loops over it once without training, or its loader is held in a name only
    looped over once, without training, or handed once to a function (of the module, or
    of another file of the run) that does."""
    reads = scope_reads(scope)
    for outer in reads.callers.get(id(call), []) if slot == WHOLE else []:
        if not isinstance(outer.func, ast.Name):
            continue
        function = next(
            (n for n in module.body if isinstance(n, FUNCTIONS) and n.name == outer.func.id),
            None,
        )
        if function is None or function is scope:
            return None
        position = next(i for i, a in enumerate(outer.args) if a is call)
        parameters = [*function.args.posonlyargs, *function.args.args]
        if position >= len(parameters):
            return None
        loop = _only_loop(scope_reads(function), parameters[position].arg)
        if loop is None or _trains(loop):
            return None
        return f"handed to {function.name}(), which iterates it in one loop (line {loop.lineno})"
    for statement in reads.assigns.get(id(call), []):
        if statement.value is not call or len(statement.targets) != 1:
            continue
        target = statement.targets[0]
        if slot != WHOLE and isinstance(target, ast.Tuple):
            items = target.elts
            if any(isinstance(e, ast.Starred) for e in items) or slot >= len(items):
                return None
            target = items[slot]
        elif slot != WHOLE:
            return None
        if not isinstance(target, ast.Name):
            return None
        name = target.id
        if scope is module and _read_in_functions(module, name):
            return None
        loop = _only_loop(reads, name)
        if loop is None:
            handed = _handed_once(module, scope, reads, name, function_of)
            if handed is None or _trains(handed[1]):
                return None
            callee, loop = handed
            return f"handed once to {callee}(), which iterates it in one loop (line {loop.lineno})"
        if _trains(loop):
            return None
        return f"iterated by one loop (line {loop.lineno})"
    return None


def _own(scope: ast.AST) -> list[ast.AST]:
    """Nodes of a function (or the module) outside nested functions and classes."""
    found: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return found


class ScopeReads:
    """One scope's own nodes with the names they read, the `for` loops by the name they
    iterate (through a progress bar wrapping it in a `with`: `with tqdm(loader) as bar:
    for batch in bar:`) and the nodes inside a loop, gathered in one pass: asking each loader's
    questions of the whole scope anew made a file of N loaders take N² time (1,000
    loaders and their loops: a minute)."""

    def __init__(self, scope: ast.AST):
        self.nodes = _own(scope)
        self.loads: dict[str, list[ast.Name]] = {}
        self.loops: dict[str, list[ast.For]] = {}
        self.callers: dict[int, list[ast.Call]] = {}  # id(argument) -> calls given it
        self.assigns: dict[int, list[ast.Assign]] = {}  # id(value) -> assignments of it
        self.in_for_or_while: set[int] = set()  # ids of nodes strictly inside a for/while
        self.in_async_for: set[int] = set()
        # id(a `for` over `bar` in `with tqdm(loader, ...) as bar:`) -> "loader": that
        # loop iterates the loader
        wrapped = {
            id(loop): item.context_expr.args[0].id
            for node in self.nodes
            if isinstance(node, ast.With)
            for item in node.items
            if isinstance(item.optional_vars, ast.Name)
            and isinstance(item.context_expr, ast.Call)
            and item.context_expr.args
            and isinstance(item.context_expr.args[0], ast.Name)
            for statement in node.body
            for loop in ast.walk(statement)
            if isinstance(loop, ast.For) and _iterated_name(loop.iter) == item.optional_vars.id
        }
        for node in self.nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.loads.setdefault(node.id, []).append(node)
            elif isinstance(node, ast.For):
                iterated = _iterated_name(node.iter)
                if iterated is not None:
                    self.loops.setdefault(wrapped.get(id(node), iterated), []).append(node)
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                for argument in node.args:
                    self.callers.setdefault(id(argument), []).append(node)
            if isinstance(node, ast.Assign):
                self.assigns.setdefault(id(node.value), []).append(node)
            if isinstance(node, (ast.For, ast.While)) and id(node) not in self.in_for_or_while:
                self.in_for_or_while.update(id(n) for n in ast.walk(node) if n is not node)
            if isinstance(node, ast.AsyncFor) and id(node) not in self.in_async_for:
                self.in_async_for.update(id(n) for n in ast.walk(node) if n is not node)


def scope_reads(scope: ast.AST) -> ScopeReads:
    """The scope's `ScopeReads`, built once per scope."""
    cached: Optional[ScopeReads] = scope.__dict__.get("_envcheck_reads")
    if cached is None:
        cached = ScopeReads(scope)
        setattr(scope, "_envcheck_reads", cached)  # noqa: B010 - AST nodes have no slot
    return cached


def _only_loop(reads: ScopeReads, name: str) -> Optional[ast.For]:
    """The one `for` over `name` (bare or wrapped: `enumerate(name)`), when `name` is read
    nowhere else (but for its length, `len(name)`, which starts no worker) and the loop
    is inside no other loop."""
    loops = reads.loops.get(name, [])
    if len(loops) != 1:
        return None
    loads = [
        n
        for n in reads.loads.get(name, [])
        if not any(_called(c) == "len" and len(c.args) == 1 for c in reads.callers.get(id(n), []))
    ]
    if len(loads) != 1:
        return None
    loop = loops[0]
    return None if id(loop) in reads.in_for_or_while else loop


def _read_in_functions(module: ast.Module, name: str) -> bool:
    """Whether a function of the module reads the module-level `name` (no local of that
    name there): a global loader may be iterated by it any number of times."""
    return name in _globals_read(module)


def _globals_read(module: ast.Module) -> set[str]:
    """Names some function (or lambda) of the module reads without binding them as a
    parameter or a local, once per module (asked once per module-level loader)."""
    cached: Optional[set[str]] = module.__dict__.get("_envcheck_globals_read")
    if cached is not None:
        return cached
    cached = set()
    for function in module_nodes(module):
        if not isinstance(function, (*FUNCTIONS, ast.Lambda)):
            continue
        arguments = function.args
        bound = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
        loads: set[str] = set()
        for n in _own(function):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                bound.add(n.id)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                loads.add(n.id)
        cached |= loads - bound
    setattr(module, "_envcheck_globals_read", cached)  # noqa: B010 - AST nodes have no slot
    return cached


# calls that take the first item of an iterable: monai.utils.first, more_itertools.first
FIRST_ITEM = "first"


def _one_read(reads: ScopeReads, name: str) -> Optional[str]:
    """`check_data = first(check_loader)`, `x, y = next(iter(loader))`: the loader's only
    use is one read of its first batch, in no loop, quoted with its line; else None."""
    loads = reads.loads.get(name, [])
    if len(loads) != 1 or id(loads[0]) in reads.in_for_or_while:
        return None
    for call in reads.callers.get(id(loads[0]), []):
        called = _called(call)
        if called == FIRST_ITEM and len(call.args) == 1:
            return f"{ast.unparse(call)}, line {call.lineno}"
        if called == "iter" and any(
            _called(outer) == "next" for outer in reads.callers.get(id(call), [])
        ):
            return f"next(iter({name})), line {call.lineno}"
    return None


def _one_iterator(reads: ScopeReads, name: str) -> Optional[str]:
    """`batch_iterator = iter(data_loader)` once, in no loop, then `next(batch_iterator)`
    per step (ssd.pytorch): the loader's only use is that one `iter()`, so it makes one
    pass however many steps read the iterator (an exhausted iterator is not restarted;
    code that restarts it calls `iter(data_loader)` again: FixMatch). Quoted with its
    line; else None."""
    loads = reads.loads.get(name, [])
    if len(loads) != 1 or id(loads[0]) in reads.in_for_or_while:
        return None
    for call in reads.callers.get(id(loads[0]), []):
        if _called(call) == "iter" and isinstance(call.func, ast.Name) and len(call.args) == 1:
            return f"iter({name}), line {call.lineno}"
    return None


def _called(call: ast.Call) -> str:
    """The name a call is made by: `first` of `first(x)` and of `monai.utils.first(x)`."""
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _handed_once(
    module: ast.Module,
    scope: ast.AST,
    reads: ScopeReads,
    name: str,
    function_of: Optional[FunctionOf] = None,
) -> Optional[tuple[str, ast.For]]:
    """`validation(model, loader)`: the loader's only use is one call, in no loop, to a
    function of the module (or, through `function_of`, of another file of the run:
    `inference.inference(loader, model)`) that iterates the matching parameter in one
    loop, itself in no loop; that function's name and loop, else None."""
    loads = reads.loads.get(name, [])
    if len(loads) != 1:
        return None
    calls = reads.callers.get(id(loads[0]), [])
    if len(calls) != 1:
        return None
    call = calls[0]
    if id(call) in reads.in_for_or_while or id(call) in reads.in_async_for:
        return None
    callee = call.func.id if isinstance(call.func, ast.Name) else None
    function: Optional[ast.AST] = next(
        (n for n in module.body if isinstance(n, FUNCTIONS) and n.name == callee), None
    )
    if function is None and function_of is not None and not _defined_here(module, call.func):
        function = function_of(call.func)
    if not isinstance(function, FUNCTIONS) or function is scope:
        return None
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    position = next(i for i, a in enumerate(call.args) if a is loads[0])
    parameters = [*function.args.posonlyargs, *function.args.args]
    if position >= len(parameters):
        return None
    loop = _only_loop(scope_reads(function), parameters[position].arg)
    return None if loop is None else (function.name, loop)


def _defined_here(module: ast.Module, func: ast.expr) -> bool:
    """Whether a call by this name runs something the module binds itself (a class, a
    function, a name assigned at its top level): not another file's function."""
    if not isinstance(func, ast.Name):
        return False
    return any(
        (isinstance(n, (*FUNCTIONS, ast.ClassDef)) and n.name == func.id)
        or (
            isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == func.id for t in n.targets)
        )
        for n in module.body
    )


# calls that only show what a loop reads (`print(point.shape)`, `len(batch)`)
SHOWING = {"print", "pprint", "len", "type", "str", "repr", "format", "size", "dim", "keys"}
SHOWING |= {"info", "debug", "log", "write"}


def _only_prints(loop: ast.For) -> bool:
    """Whether every call in the loop's body only shows what it reads."""
    return all(
        _called(n) in SHOWING
        for statement in loop.body
        for n in ast.walk(statement)
        if isinstance(n, ast.Call)
    )


def _trains(loop: ast.AST) -> bool:
    """Whether a backward pass or an optimizer step is under `loop` (or a whole file)."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("backward", "manual_backward", "step")
        for n in ast.walk(loop)
    )


def _iterated_name(iterable: ast.expr) -> Optional[str]:
    """The name a `for` iterates, bare or wrapped (`enumerate(name)`), else None."""
    if isinstance(iterable, ast.Name):
        return iterable.id
    if isinstance(iterable, ast.Call) and iterable.args:
        func = iterable.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return _iterated_name(iterable.args[0]) if called in LOOP_WRAPPERS else None
    return None


def _breaks_at(loop: ast.For) -> Optional[int]:
    """N when the loop body ends itself after N batches: `if i == N - 1: break` (or
    `>= N - 1`) on its enumerate index; 1 when its body ends in a plain `break` (a
    preview that prints one batch and stops)."""
    if any(isinstance(statement, ast.Break) for statement in loop.body):
        return 1
    target = loop.target
    index = (
        target.elts[0].id
        if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name)
        else None
    )
    if index is None:
        return None
    for statement in loop.body:
        if not isinstance(statement, ast.If) or not any(
            isinstance(s, ast.Break) for s in statement.body
        ):
            continue
        test = statement.test
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == index
            and isinstance(test.ops[0], (ast.Eq, ast.GtE))
            and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, int)
        ):
            return test.comparators[0].value + 1
    return None


def _mark_unused(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """`unused`: in a file that trains, a loader stored on the object (`self.valid_dl =
    cycle(DataLoader(...))`) or in a plain name (`test_loader = DataLoader(...)`) that
    nothing in the file ever reads: no worker starts for it, no batch is pinned (dalle2's
    VQGAN trainer validates on its train loader; a notebook builds a test loader it never
    iterates). A plain name counts as read wherever the file loads that name, in any
    scope; it holds the loader itself, not a call's result (`trainer = fit(DataLoader(
    ...))` hands the loader on)."""
    if not loaders or not any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in module_nodes(module)
    ):
        return
    read: set[str] = set()
    stored: dict[tuple[int, int], str] = {}
    for node in module_nodes(module):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
        ):  # `self.valid_dl`: a name's attribute is all a stored loader is compared with
            read.add(f"{node.value.id}.{node.attr}")
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            read.add(node.id)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            read.update(node.names)  # written for another scope: its reads are not sure
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            own = (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            )
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Call):
                place = (node.value.lineno, node.value.col_offset + 1)
                stored[place] = target.id
            elif own:
                for inner in ast.walk(node.value):
                    if isinstance(inner, ast.Call):
                        stored[(inner.lineno, inner.col_offset + 1)] = ast.unparse(target)
    for loader in loaders:
        name = stored.get((loader["line"], loader["column"]))
        if name is not None and name not in read and not loader.get("built_by"):
            loader["unused"] = f"it is stored in {name}, which nothing in this file reads"


# Lightning's hooks for stages a Trainer runs only when its method is called
STAGE_HOOKS = {"predict_dataloader": "predict", "test_dataloader": "test"}


def _mark_stage_never_run(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """`unused`: a loader returned by a Lightning `predict_dataloader` (or
    `test_dataloader`) hook, or by a method installed as one (`self.predict_dataloader =
    self._predict_dataloader`, or a `partial` of it), in a file that runs its Trainer
    itself (`trainer.fit(...)`) and never calls `.predict(` (`.test(`): that stage never
    runs, so no batch of it is read (latent-diffusion's main.py). A LightningCLI picks the
    stage from the command line: not marked there."""
    if not loaders:
        return
    calls: set[str] = set()
    installed: dict[str, str] = {hook: hook for hook in STAGE_HOOKS}
    for node in module_nodes(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            calls.add(node.func.attr)
        if isinstance(node, ast.Name) and node.id == "LightningCLI":
            return
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and node.targets[0].attr in STAGE_HOOKS
        ):
            value = node.value
            if isinstance(value, ast.Call) and _called(value) == "partial" and value.args:
                value = value.args[0]
            if isinstance(value, ast.Attribute):
                installed[value.attr] = node.targets[0].attr
    if "fit" not in calls:
        return
    for loader in loaders:
        hook = installed.get(loader.get("function") or "")
        stage = STAGE_HOOKS.get(hook or "")
        if stage is not None and stage not in calls and not loader.get("unused"):
            loader["unused"] = (
                f"it is returned by the {hook}() hook, and the file's Trainer never runs "
                f"trainer.{stage}()"
            )


# words of a name that make it a test split's (`test_loader`, `testloader`, `test_set`)
TEST_WORDS = re.compile(r"(?:^|[^a-z])test(?:ing)?(?:[^a-z]|loader|set|data|$)")


# Lightning hooks whose loaders serve training and validation, not the test split
SPLIT_HOOKS = ("train_dataloader", "val_dataloader")


def _mark_test_split(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """`test_split`: the name a loader is held in, or its dataset's, when it names the
    test split (`test_loader = DataLoader(test_set, ...)`), else None. A test set is read
    after training, by convention once; where the reading is out of sight (a data module
    whose importer evaluates), how often it is iterated is not known. A loader returned
    by a Lightning `train_dataloader()` / `val_dataloader()` hook serves that split,
    whatever its dataset is called."""
    if not loaders:
        return
    held: dict[tuple[int, int], str] = {}
    for node in module_nodes(module):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            place = (node.value.lineno, node.value.col_offset + 1)
            held[place] = " ".join(ast.unparse(t) for t in node.targets)
    for loader in loaders:
        if loader.get("function") in SPLIT_HOOKS:
            # Lightning reads what these hooks return for training or at every
            # validation, whatever the dataset is named (`self.test_dataset`)
            loader["test_split"] = None
            continue
        dataset = (loader.get("dataset") or {}).get("text")
        names = [held.get((loader["line"], loader["column"])), dataset]
        loader["test_split"] = next((n for n in names if n and TEST_WORDS.search(n.lower())), None)


# (class qualname) -> that class as another file of the run defines it, with its aliases
ClassElsewhere = Callable[[str], Optional[tuple[ast.ClassDef, dict[str, str]]]]


def mark_unread_in_class(
    module: ast.Module,
    loaders: list[dict[str, Any]],
    qualname: Callable[[ast.AST], Optional[str]],
    class_elsewhere: ClassElsewhere,
    read_elsewhere: Callable[[str], bool],
) -> None:
    """`unused` across files: a loader held in a plain name whose only use is one
    argument of a class another file of the run defines (`solver = Solver(config,
    train_loader, valid_loader, test_loader)`), whose `__init__` only stores that
    parameter on the object (`self.test_loader = test_loader`), an attribute that no file
    of the run reads (`read_elsewhere`: a `.test_loader` or a `'test_loader'` string
    anywhere): no worker starts for it. A subclass out of the run's sight could read it;
    the run's files are the project as far as it is read."""
    if not loaders:
        return
    held: dict[tuple[int, int], tuple[str, ast.AST]] = {}
    scopes: list[ast.AST] = [module, *(n for n in module_nodes(module) if isinstance(n, FUNCTIONS))]
    for each in scopes:
        for node in scope_reads(each).nodes:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
            ):
                place = (node.value.lineno, node.value.col_offset + 1)
                held[place] = (node.targets[0].id, each)
    for loader in loaders:
        found = held.get((loader["line"], loader["column"]))
        if found is None or loader.get("unused"):
            continue
        name, scope = found
        if scope is module and _read_in_functions(module, name):
            continue
        reads = scope_reads(scope)
        loads = reads.loads.get(name, [])
        calls = reads.callers.get(id(loads[0]), []) if len(loads) == 1 else []
        keyword = _keyword_of(reads, loads[0]) if len(loads) == 1 and not calls else None
        call = calls[0] if len(calls) == 1 else keyword[0] if keyword else None
        if call is None:
            continue
        cls_name = qualname(call.func)
        found_class = class_elsewhere(cls_name) if cls_name and "." in cls_name else None
        if found_class is None:
            continue
        kept = _stored_parameter(found_class[0], call, loads[0], keyword)
        if kept is not None and not read_elsewhere(kept):
            loader["unused"] = (
                f"it is handed to {found_class[0].name}(), which keeps it in self.{kept}, "
                "an attribute no file of the run reads"
            )


def _keyword_of(reads: ScopeReads, value: ast.Name) -> Optional[tuple[ast.Call, str]]:
    """The call that is handed `value` as a keyword argument (`Solver(test_loader=x)`)."""
    for node in reads.nodes:
        if isinstance(node, ast.Call):
            for k in node.keywords:
                if k.value is value and k.arg is not None:
                    return node, k.arg
    return None


def _stored_parameter(
    cls: ast.ClassDef,
    call: ast.Call,
    value: ast.Name,
    keyword: Optional[tuple[ast.Call, str]],
) -> Optional[str]:
    """The attribute the class's own `__init__` stores the argument `value` of `call` in,
    when that store (`self.x = param`) is the parameter's only use; else None."""
    init = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
    )
    if init is None:
        return None
    parameters = [*init.args.posonlyargs, *init.args.args][1:]  # past `self`
    if keyword is not None:
        names = {p.arg for p in parameters} | {p.arg for p in init.args.kwonlyargs}
        parameter = keyword[1] if keyword[1] in names else None
    else:
        if any(isinstance(a, ast.Starred) for a in call.args):
            return None
        position = next(i for i, a in enumerate(call.args) if a is value)
        parameter = parameters[position].arg if position < len(parameters) else None
    if parameter is None:
        return None
    uses = [n for n in ast.walk(init) if isinstance(n, ast.Name) and n.id == parameter]
    if len(uses) != 1:
        return None
    for statement in init.body:
        if (
            isinstance(statement, ast.Assign)
            and statement.value is uses[0]
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Attribute)
            and isinstance(statement.targets[0].value, ast.Name)
            and statement.targets[0].value.id == "self"
        ):
            return statement.targets[0].attr
    return None
