"""What the whole file says about each DataLoader once they are all found: a retry of
the same loader in an `except` handler (judged once), batches copied `non_blocking`, a
loader rebuilt on every call, one read for a single batch, a Lightning hook read once.
Marks only; the rules judge (envcheck/checks/ec5xx_torch.py).
"""

from __future__ import annotations

import ast
from typing import Any

from envcheck.scripts.index import module_nodes


def mark_loaders(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """Every mark, in the order they build on each other."""
    _drop_fallbacks_mark_non_blocking(module, loaders)
    _mark_rebuilt(module, loaders)
    _mark_one_batch(module, loaders)
    _mark_once(loaders)


def _mark_one_batch(module: ast.Module, loaders: list[dict[str, Any]]) -> None:
    """`one_batch`: the loader is built only to read one batch, `next(iter(DataLoader(...)))`
    (a sample for a plot or a callback), so its workers and pinning would buy nothing."""
    if not loaders:
        return
    places = set()
    for node in module_nodes(module):
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
        loader["one_batch"] = (loader["line"], loader["column"]) in places


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
    then cannot outlive it, persistent or not."""
    if not loaders:
        return
    in_loops: dict[str, int] = {}  # function name -> line of a call to it inside a loop
    loop_spans: list[tuple[int, int]] = []
    for node in module_nodes(module):
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            continue
        loop_spans.append((node.lineno, node.end_lineno or node.lineno))
        for inner in [n for statement in node.body for n in ast.walk(statement)]:
            if isinstance(inner, ast.Call):
                func = inner.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name is not None:
                    in_loops.setdefault(name, inner.lineno)
    for loader in loaders:
        line = loader["line"]
        function = loader.get("function")
        if any(start < line <= end for start, end in loop_spans):
            loader["rebuilt"] = "it is created inside a loop"
        elif function is not None and function in in_loops:
            loader["rebuilt"] = (
                f"it is created by {function}(), called inside a loop (line {in_loops[function]})"
            )
        else:
            loader["rebuilt"] = None
