"""A reversible unified diff for each change `envcheck fix` kept.

The DataLoader the hook saw is found by the file and line where it was built (the agent
records the caller's site); its keyword arguments are set or added in the source text, so
the rest of the file, comments and layout included, stays as it was. `patch -R` (or
`git apply -R`) undoes it.
"""

from __future__ import annotations

import ast
import difflib
from pathlib import Path
from typing import Any, Mapping, Optional

LOADER_NAMES = ("DataLoader",)


def split_site(site: Optional[str]) -> tuple[Optional[Path], Optional[int]]:
    if not site or ":" not in site:
        return None, None
    path, _, line = site.rpartition(":")
    return (Path(path), int(line)) if line.isdigit() else (None, None)


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def find_loader_call(tree: ast.AST, line: int) -> Optional[ast.Call]:
    """The DataLoader(...) call spanning `line`, the innermost first."""
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _name(node.func) in LOADER_NAMES
        and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    return min(found, key=lambda n: (n.end_lineno or n.lineno) - n.lineno) if found else None


def _offset(lines: list[str], line: int, col_bytes: int) -> int:
    """Character offset in the source of (1-based line, UTF-8 byte column)."""
    before = sum(len(text) for text in lines[: line - 1])
    return before + len(lines[line - 1].encode("utf-8")[:col_bytes].decode("utf-8"))


def edited_source(source: str, call: ast.Call, changes: Mapping[str, Any]) -> str:
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    present = {k.arg: k for k in call.keywords if k.arg}
    for key, value in changes.items():
        keyword = present.get(key)
        if keyword is not None:
            v = keyword.value
            start = _offset(lines, v.lineno, v.col_offset)
            end = _offset(lines, v.end_lineno or v.lineno, v.end_col_offset or v.col_offset)
            edits.append((start, end, repr(value)))
    added = [f"{k}={v!r}" for k, v in changes.items() if k not in present]
    if added:
        ends = [(n.end_lineno or n.lineno, n.end_col_offset or 0) for n in call.args]
        ends += [(k.end_lineno or k.lineno, k.end_col_offset or 0) for k in call.keywords]
        line, col = max(ends)
        at = _offset(lines, line, col)
        edits.append((at, at, ", " + ", ".join(added)))
    for start, end, text in sorted(edits, reverse=True):
        source = source[:start] + text + source[end:]
    return source


def loader_patch(site: Optional[str], changes: Mapping[str, Any]) -> tuple[Optional[str], str]:
    """(unified diff, or None; the reason when there is none)."""
    path, line = split_site(site)
    if path is None or line is None:
        return None, "the DataLoader's source line is not known"
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
        return None, f"{path}: cannot read it as Python ({exc})"
    call = find_loader_call(tree, line)
    if call is None or not (call.args or call.keywords):
        return None, f"{path}:{line}: no DataLoader(...) call with arguments there"
    new = edited_source(source, call, changes)
    diff = difflib.unified_diff(
        source.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path.name}",
        tofile=f"b/{path.name}",
    )
    return "".join(diff), ""


def apply_patch(site: Optional[str], changes: Mapping[str, Any]) -> Optional[Path]:
    """Edit the script in place (`envcheck fix --apply`); the path, or None."""
    path, line = split_site(site)
    if path is None or line is None:
        return None
    source = path.read_text(encoding="utf-8")
    call = find_loader_call(ast.parse(source), line)
    if call is None:
        return None
    path.write_text(edited_source(source, call, changes), encoding="utf-8")
    return path
