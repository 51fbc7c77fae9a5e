"""Plain assignments of a body, read on the path a Linux training node takes.

Shared by the value resolver (values.py) and the config-object reader (configs.py): the
statements of a body and its nested blocks, and the names assigned exactly one
expression there.
"""

from __future__ import annotations

import ast
from typing import Optional

from envcheck.scripts.platforms import other_platform_only


def simple_assignments(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """name -> the expression of its only plain assignment in this body (walked into
    if/with/for/try blocks, not into nested functions). A name assigned twice with
    different expressions is left out: which one applies depends on the run."""
    found: dict[str, ast.expr] = {}
    ambiguous: set[str] = set()
    for node in statements(body):
        targets: list[ast.expr] = []
        value: Optional[ast.expr] = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and value is not None:
                previous = found.get(target.id)
                if previous is not None and ast.dump(previous) != ast.dump(value):
                    ambiguous.add(target.id)
                found[target.id] = value
    return {k: v for k, v in found.items() if k not in ambiguous}


def own_attribute_assignments(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """attribute -> the expression of its only `self.<attribute> = ...` in this body: what
    a method stores on the object and then reads back (`self._dl_kwargs = kwargs` ...
    `DataLoader(**self._dl_kwargs)`)."""
    found: dict[str, ast.expr] = {}
    ambiguous: set[str] = set()
    for node in statements(body):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            if target.attr in found:
                ambiguous.add(target.attr)
            found[target.attr] = node.value
    return {k: v for k, v in found.items() if k not in ambiguous}


def statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a body and of its nested blocks (not of nested functions or
    classes), skipping the bodies of Windows- and macOS-only branches."""
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        out.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            if field == "body" and isinstance(node, ast.If) and other_platform_only(node.test):
                continue  # a Windows or macOS branch: not the Linux training node's path
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                out.extend(statements([n for n in inner if isinstance(n, ast.stmt)]))
            if field == "handlers" and isinstance(inner, list):
                for handler in inner:
                    out.extend(statements(list(getattr(handler, "body", []))))
    return out
