"""A DataLoader whose dataset the training process changes between passes.

NCF's `train_loader.dataset.ng_sample()` before each epoch draws new negative samples
into the dataset object; an epoch-dependent `dataset.set_epoch(epoch)` or `dataset.scale
= s` does the same. Each pass's workers copy the dataset when the pass starts, so the
change reaches them; persistent workers keep the copy of the first pass, and the change
never would (PyTorch's DataLoader documentation, persistent_workers). EC503's fix would
break such a loader, so the mark says why it is left alone.

One walk of the module indexes every change made inside a loop by the text of the
object changed; each loader then looks its own names up (linear in the file).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Callable, Optional

from envcheck.scripts.index import module_nodes
from envcheck.scripts.tensors import dotted

LOOPS = (ast.For, ast.AsyncFor, ast.While)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class _Change:
    line: int
    scope: Optional[ast.AST]  # the innermost function, None at module level
    statement: ast.stmt


@dataclass
class _Built:
    targets: list[ast.expr]
    call: ast.Call
    scope: Optional[ast.AST]


def mark_resampled(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """`resampled`: where a loop after the loader changes its dataset (a method called
    for its effect, or an attribute set), or None. A plain name is only the same object
    in its own function; `self.train_loader.dataset` anywhere in the file."""
    built, changes = _index(module)
    for loader in loaders:
        loader["resampled"] = None
        found = built.get(int(loader.get("line") or 0))
        if found is None:
            continue
        for name in sorted(_dataset_expressions(found.targets, found.call)):
            for change in changes.get(name, []):
                if change.line > found.call.lineno and (
                    change.scope is found.scope or name.startswith("self.")
                ):
                    loader["resampled"] = _why(change.statement)
                    break
            if loader["resampled"]:
                break


def _index(module: ast.Module) -> tuple[dict[int, _Built], dict[str, list[_Change]]]:
    """Line -> the assignment of a call made there; object text -> the changes loops make
    to it, in one walk that keeps the function and the loops around each statement."""
    built: dict[int, _Built] = {}
    changes: dict[str, list[_Change]] = {}
    stack: list[tuple[ast.AST, Optional[ast.AST], bool]] = [(module, None, False)]
    while stack:
        node, scope, in_loop = stack.pop()
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            built.setdefault(node.value.lineno, _Built(node.targets, node.value, scope))
        if in_loop and isinstance(node, (ast.Expr, ast.Assign)):
            for changed in _changed_objects(node):
                changes.setdefault(changed, []).append(_Change(node.lineno, scope, node))
        inner_scope = node if isinstance(node, FUNCTIONS) else scope
        inner_loop = (in_loop or isinstance(node, LOOPS)) and not isinstance(node, FUNCTIONS)
        stack.extend((child, inner_scope, inner_loop) for child in _statements(node))
    for found in changes.values():
        found.sort(key=lambda c: c.line)
    return built, changes


def _statements(node: ast.AST) -> list[ast.AST]:
    """The statements directly inside `node` (bodies of blocks, handlers and cases): the
    walk skips expressions, which hold no statement (lambdas excepted: none changes a
    dataset by assignment)."""
    found: list[ast.AST] = []
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        value = getattr(node, field, None)
        if isinstance(value, list):
            found.extend(v for v in value if isinstance(v, ast.AST))
    return found


def _changed_objects(node: ast.stmt) -> list[str]:
    """`X.method(...)` called for its effect (its result unused): X; `X.attr = ...`: X."""
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
    ):
        found = dotted(node.value.func.value)  # names and attributes only: cheap to spell
        return [found] if found else []
    if isinstance(node, ast.Assign):
        targets = [dotted(t.value) for t in node.targets if isinstance(t, ast.Attribute)]
        return [t for t in targets if t]
    return []


def _dataset_expressions(targets: list[ast.expr], call: ast.Call) -> set[str]:
    """`train_loader.dataset` for each name the loader is bound to, and the dataset
    passed (`train_dataset` of `DataLoader(train_dataset, ...)`) when it is a name."""
    found = {f"{name}.dataset" for name in map(dotted, targets) if name}
    dataset: Optional[ast.expr] = call.args[0] if call.args else None
    for keyword in call.keywords:
        if keyword.arg == "dataset":
            dataset = keyword.value
    name = dotted(dataset) if dataset is not None else None
    if name:
        found.add(name)
    return found


def _why(statement: ast.stmt) -> str:
    code = ast.unparse(statement)
    code = code if len(code) <= 60 else code[:57] + "..."
    return (
        f"its dataset is changed between passes (`{code}`, line {statement.lineno}): "
        "persistent workers would keep serving their first copy of it"
    )


# Lightning callback hooks that run before or after every training epoch
EPOCH_HOOKS = ("on_train_epoch_start", "on_epoch_start", "on_train_epoch_end", "on_epoch_end")
FIT_LOADER_KEYWORDS = ("train_dataloaders", "train_dataloader", "dataloaders")


def mark_changed_by_callbacks(
    module: ast.Module,
    loaders: list[dict[str, Any]],
    class_of: Callable[[ast.expr], Optional[ast.ClassDef]],
) -> None:
    """`resampled` for a loader the file hands to a Trainer's `fit` when a callback of
    that file's Trainers (`callbacks=[train_callback(args)]`, a class of the file or of
    another file of the run: `class_of` finds it) changes the training loader's dataset
    in an epoch hook (RWKV's `on_train_epoch_start`: `dataset =
    trainer.train_dataloader.dataset`, then `dataset.real_epoch = ...`, which
    `__getitem__` reads). Persistent workers would keep their first copy of it."""
    waiting = [x for x in loaders if not x.get("resampled")]
    if not waiting:
        return
    fitted: set[str] = set()
    callbacks: list[ast.expr] = []
    for node in module_nodes(module):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr == "fit":
            given = [
                *node.args[1:],
                *(k.value for k in node.keywords if k.arg in FIT_LOADER_KEYWORDS),
            ]
            fitted.update(n for n in map(dotted, given) if n)
        for keyword in node.keywords:
            if keyword.arg == "callbacks" and isinstance(keyword.value, (ast.List, ast.Tuple)):
                callbacks.extend(e.func for e in keyword.value.elts if isinstance(e, ast.Call))
    if not fitted or not callbacks:
        return
    why = next((w for w in map(lambda c: _epoch_change(class_of(c)), callbacks) if w), None)
    if why is None:
        return
    bound = {
        node.value.lineno: [dotted(t) for t in node.targets]
        for node in module_nodes(module)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
    }
    for loader in waiting:
        if any(name in fitted for name in bound.get(int(loader.get("line") or 0), [])):
            loader["resampled"] = why


def _epoch_change(found: Optional[ast.ClassDef]) -> Optional[str]:
    """How an epoch hook of the callback class `found` changes the training loader's
    dataset (an attribute set on, or a method called on, `x.train_dataloader.dataset` or
    a local name bound to it), or None."""
    for method in found.body if found is not None else []:
        if not isinstance(method, FUNCTIONS) or method.name not in EPOCH_HOOKS:
            continue
        held = {"train_dataloader.dataset"}
        for node in ast.walk(method):
            if isinstance(node, ast.Assign) and _holds_dataset(node.value):
                held.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(method):
            if isinstance(node, (ast.Expr, ast.Assign)) and any(
                name in held or _holds_dataset_text(name) for name in _changed_objects(node)
            ):
                code = ast.unparse(node)
                code = code if len(code) <= 60 else code[:57] + "..."
                return (
                    f"a Lightning callback ({found.name}.{method.name}) changes its "  # type: ignore[union-attr]
                    f"dataset every epoch (`{code}`, line {node.lineno}): persistent "
                    "workers would keep serving their first copy of it"
                )
    return None


def _holds_dataset(node: ast.expr) -> bool:
    name = dotted(node)
    return name is not None and _holds_dataset_text(name)


def _holds_dataset_text(name: str) -> bool:
    return ".train_dataloader.dataset" in f".{name}" or name.startswith("train_dataloader.dataset")
