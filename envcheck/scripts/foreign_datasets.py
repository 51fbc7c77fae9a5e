"""Datasets a helper of another file of the run returns.

`train_dataset = processor.create_dataset(features)` with `processor = BertProcessor(...)`
imported from the project's pybert/io/bert_processor.py, whose `create_dataset` ends in
`dataset = TensorDataset(all_input_ids, ...); return dataset`: the loader over it reads
tensors built up front, as a `TensorDataset(...)` of the file itself would be read
(EC501/EC502). The helper is a method of the class the receiver was built from, or a
top-level function (`data.get_dataset(...)`), that one file of the run linked to the
caller defines (run_options.method_elsewhere / function_elsewhere). It is followed only
when every `return` of it gives the same name or call, the name assigned once there, and
that call names a dataset class known to hold its samples in memory (TensorDataset, a
library's in-memory dataset); anything else stays out of sight.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from envcheck.scripts.datasets import library_in_memory
from envcheck.scripts.index import Function, own_nodes

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker
    from envcheck.scripts.foreign_helpers import Foreign

TENSOR_DATASETS = {"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"}


def returned_elsewhere(
    walker: Walker, maker: ast.Call, function: Optional[ast.AST]
) -> Optional[tuple[str, str, str]]:
    """(class, qualname, text) of the in-memory dataset the helper `maker` calls returns,
    when another file of the run defines that helper (see the module docstring); None
    otherwise."""
    helper = _helper(walker, maker, function)
    if helper is None:
        return None
    returned = _returned_call(helper.function)
    if returned is None:
        return None
    qualname = _qualified(returned.func, helper.aliases)
    if qualname is None:
        return None
    short = qualname.rsplit(".", 1)[-1]
    if qualname not in TENSOR_DATASETS and library_in_memory(qualname) is None:
        return None
    text = f"{ast.unparse(returned)}, returned by {helper.function.name}() in {helper.shown}"
    return short, qualname, text


def _helper(walker: Walker, maker: ast.Call, function: Optional[ast.AST]) -> Optional[Foreign]:
    """The function of another file of the run that `maker` runs: `obj.method(...)` on an
    object built from a class another file defines, or that file's top-level function."""
    func = maker.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        built = walker.scope_of(function).lookup(func.value.id)
        if isinstance(built, ast.Call) and walker.method_elsewhere is not None:
            cls = walker.qualname(built.func)
            if cls:
                return walker.method_elsewhere(cls, (func.attr,))
    name = walker.qualname(func)
    if name and walker.function_elsewhere is not None:
        return walker.function_elsewhere(name)
    return None


def _returned_call(helper: Function) -> Optional[ast.Call]:
    """The one call every `return` of `helper` gives, itself or through a local name the
    helper assigns once (`dataset = TensorDataset(...); return dataset`)."""
    nodes = list(own_nodes(helper))
    returns = [n.value for n in nodes if isinstance(n, ast.Return)]
    if not returns or any(r is None for r in returns):
        return None
    texts = {ast.dump(r) for r in returns if r is not None}
    if len(texts) != 1:
        return None
    value = returns[0]
    if isinstance(value, ast.Name):
        assigned = [
            n.value
            for n in nodes
            if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            and n.value is not None
            and any(
                isinstance(t, ast.Name) and t.id == value.id
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
        ]
        stored = [n for n in nodes if isinstance(n, ast.Name) and n.id == value.id]
        bound = [n for n in stored if not isinstance(n.ctx, ast.Load)]
        if len(assigned) != 1 or len(bound) != 1 or value.id in _parameters(helper):
            return None
        value = assigned[0]
    return value if isinstance(value, ast.Call) else None


def _parameters(helper: Function) -> set[str]:
    arguments = helper.args
    return {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}


def _qualified(node: ast.expr, aliases: dict[str, str]) -> Optional[str]:
    """`TensorDataset` with `from torch.utils.data import TensorDataset` in the helper's
    file -> its dotted name; None for anything but a name or attribute chain."""
    probe = node
    while isinstance(probe, ast.Attribute):
        probe = probe.value
    if not isinstance(probe, ast.Name):
        return None
    head, _, rest = ast.unparse(node).partition(".")
    return aliases.get(head, head) + (f".{rest}" if rest else "")
