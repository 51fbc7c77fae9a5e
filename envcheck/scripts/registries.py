"""Models picked by name from a registry dict of the file, read from the source.

`ENCODERS = {"mlp": MLPEncoder, "conv": ConvEncoder}` at module level (or in the function),
then `ENCODERS[args.encoder](...)` with `--encoder` defaulting to "mlp": the default run
builds `MLPEncoder`, and that name says the model's kind as a direct `MLPEncoder()` call
would. Only a key the source settles (a literal, an option's default) picks a value;
nothing here judges.
"""

from __future__ import annotations

import ast
from typing import Optional

from envcheck.scripts.values import Scope, resolve


def picked_name(node: ast.Call, scope: Scope) -> Optional[str]:
    """The name of the class or function `registry[key](...)` calls: the dict literal's
    value under the key the source settles (`MLPEncoder` for `ENCODERS[args.encoder]()`,
    --encoder defaulting to "mlp"); None for any other call, or a key not settled."""
    func = node.func
    if not (isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name)):
        return None
    table = scope.lookup(func.value.id)
    if not isinstance(table, ast.Dict):
        return None
    key = resolve(func.slice, scope)
    if not key.known:
        return None
    for k, value in zip(table.keys, table.values, strict=True):
        if isinstance(k, ast.Constant) and k.value == key.value:
            return _name(value)
    return None


def _name(value: ast.expr) -> Optional[str]:
    """`MLPEncoder`, `encoders.MLPEncoder`: the last name; None for anything else."""
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Attribute):
        return value.attr
    return None
