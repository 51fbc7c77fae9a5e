"""The classes a name called as a constructor may hold, when it is picked from a table.

Informer's `data_dict = {'ETTh1': Dataset_ETT_hour, ..., 'custom': Dataset_Custom}`, then
`Data = data_dict[self.args.data]` (and `Data = Dataset_Pred` in another branch) and
`data_set = Data(root_path=..., ...)`: which class the run builds depends on an option,
but it is one of the few the source lists. A question every candidate answers the same
way (each one holds its samples in memory) is answered for the call; one they answer
differently, or a candidate that is not a plain class name, leaves it unknown (None).
"""

from __future__ import annotations

import ast
from typing import Optional

from envcheck.scripts.index import own_nodes
from envcheck.scripts.values import Scope

MAX_CANDIDATES = 32  # classes a table may list and still be read


def table_classes(
    name: str, function: Optional[ast.AST], module: ast.Module, scope: Scope
) -> Optional[list[ast.expr]]:
    """The class expressions (`Dataset_ETT_hour`, `data.ETT`) the local `name` may be
    bound to: every assignment of it in `function` (or the module), each a class name or
    a subscript of a dict literal whose values are all class names. None when an
    assignment is anything else, or none of them reads a table (a plain alias is the
    resolver's business, not this one's)."""
    owner: ast.AST = function if function is not None else module
    values = [
        node.value
        for node in own_nodes(owner)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == name
    ]
    found: list[ast.expr] = []
    tables = 0
    for value in values:
        if _class_name(value):
            found.append(value)
            continue
        table = _table(value, scope)
        if table is None:
            return None
        tables += 1
        found.extend(table)
    if not tables or len(found) > MAX_CANDIDATES:
        return None
    return found


def _table(value: ast.expr, scope: Scope) -> Optional[list[ast.expr]]:
    """`table[key]` where `table` is a dict literal (here or by name) of class names."""
    if not isinstance(value, ast.Subscript):
        return None
    held: Optional[ast.expr] = value.value
    if isinstance(held, ast.Name):
        held = scope.lookup(held.id)
    if not isinstance(held, ast.Dict) or not held.values or None in held.keys:
        return None
    if not all(_class_name(v) for v in held.values):
        return None
    return list(held.values)


def _class_name(node: ast.expr) -> bool:
    """`Dataset_ETT_hour`, `loaders.ETTHour`: a dotted name spelled like a class."""
    if isinstance(node, ast.Attribute):
        return node.attr[:1].isupper() and _dotted(node.value)
    return isinstance(node, ast.Name) and node.id[:1].isupper()


def _dotted(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)
