"""A function parameter's default, read from the source.

Library code (a trainer's `fit(self, ..., use_amp=False)`, `forward(self, X,
device='cpu')`) runs at its parameters' defaults unless a caller passes another value;
the audit judges it there, as it judges argparse defaults. Shared by the GPU answer
(device.py) and the precision reader (precision.py).
"""

from __future__ import annotations

import ast
from typing import Optional

from envcheck.scripts.values import Scope


def parameter_default(function: Optional[ast.AST], name: str, scope: Scope) -> Optional[ast.expr]:
    """The default of `function`'s parameter `name` when the function does not reassign
    it (`def forward(self, X, device='cpu')`): library code runs at its defaults unless a
    caller in sight passes another value (which counts on its own)."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if name in scope.local_names:
        return None
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    with_default = positional[len(positional) - len(arguments.defaults) :]
    pairs = list(zip(with_default, arguments.defaults, strict=True))
    pairs += [
        (a, d)
        for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        if d is not None
    ]
    for parameter, default in pairs:
        if parameter.arg == name:
            return default
    return None
