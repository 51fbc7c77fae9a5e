"""Branches a Linux training node never takes.

`if num_workers and _IS_WINDOWS: num_workers = 0` guards Windows, where workers are
spawned; on the Linux node a CUDA training job runs on, the parameter keeps its value. The
value resolver (values.py) skips the bodies of such branches, so a script is read on the
path a Linux run takes. Only conditions that name Windows or macOS are recognised:
`sys.platform == "win32"`, `sys.platform.startswith("darwin")`, `platform.system() ==
"Windows"`, `os.name == "nt"`, and flags named for them (`IS_WINDOWS`, `_IS_MACOS`).
"""

from __future__ import annotations

import ast
import re

# flags named for a non-Linux platform: IS_WINDOWS, _IS_WINDOWS, ON_WINDOWS, is_macos, IS_MAC
# (a bare `win` or `mac` may be a window or an address, not a platform)
FLAG = re.compile(
    r"^_*(?:(?:is|on|running_on)_?(?:windows|win32|win|macos|mac|darwin|osx)"
    r"|windows|win32|macos|darwin|osx)$",
    re.I,
)
# what sys.platform / platform.system() / os.name equal on Windows and macOS
NAMES = ("win32", "cygwin", "windows", "darwin", "nt", "win", "mac")
PLATFORM_READS = ("sys.platform", "platform.system()", "os.name", "platform.platform()")


def other_platform_only(test: ast.expr) -> bool:
    """True when `test` can hold only on Windows or macOS (never on Linux)."""
    if isinstance(test, ast.BoolOp):
        parts = [other_platform_only(v) for v in test.values]
        return any(parts) if isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, (ast.Name, ast.Attribute)):
        name = test.id if isinstance(test, ast.Name) else test.attr
        return bool(FLAG.match(name))
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute):
        # sys.platform.startswith("win")
        return (
            test.func.attr == "startswith"
            and _reads_platform(test.func.value)
            and len(test.args) == 1
            and _names_other(test.args[0])
        )
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if isinstance(test.ops[0], ast.Eq):
            return (_reads_platform(left) and _names_other(right)) or (
                _reads_platform(right) and _names_other(left)
            )
        if isinstance(test.ops[0], ast.In) and _reads_platform(left):
            options = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else []
            return bool(options) and all(_names_other(o) for o in options)
    return False


def _reads_platform(node: ast.expr) -> bool:
    text = ast.unparse(node)
    return text in PLATFORM_READS or (text.endswith(".lower()") and text[:-8] in PLATFORM_READS)


def _names_other(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.lower() in NAMES
    )
