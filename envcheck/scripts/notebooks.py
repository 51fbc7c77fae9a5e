"""Jupyter notebooks read as the Python their code cells hold.

`envcheck scripts train.ipynb` audits the code cells, in order, each after a
`# %% [code cell N]` line (the way the real-script corpus stores notebooks). IPython
syntax in a cell that does not parse as Python is turned into Python line for line, so
the text parses and every line keeps its number: a line magic or shell line
(`%matplotlib inline`, `!pip install ...`) becomes a comment, or `pass` where it is
indented (the only line of `try:` or `if IS_COLAB:`), with its `\\`-continued lines as
comments; `x = !ls` keeps its assignment; help lines (`model.fit?`) become comments; a
cell magic whose body is not Python (`%%writefile`, `%%bash`, `%%html`) turns its whole
cell into comments, while `%%time` and the like keep their Python body. Reported lines
count in that text, so the cell header above a finding says which cell it is in.
Outputs are never read: a notebook may be large for its images.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from envcheck import jsonsafe
from envcheck.scripts.index import source_lines

SUFFIX = ".ipynb"
# Cell magics whose body is Python run by IPython (timed, captured, profiled).
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "memit", "tensorflow_version"}
ASSIGNED_MAGIC = re.compile(r"^(\s*[\w.,\s]+?=\s*)[!%]")  # `files = !ls`, `t = %timeit f()`
MAX_NOTEBOOK_BYTES = 50_000_000  # outputs (images) make notebooks large; only code is read


def notebook_code(text: str) -> str:
    """The code cells of a notebook's JSON text as one Python source; ValueError naming
    what is wrong when it is not a notebook. The JSON is read as strictly as a snapshot
    (no NaN, no integers of thousands of digits, bounded nesting); nbformat 3's
    `worksheets` and `input` are read as well as nbformat 4's `cells` and `source`."""
    try:
        document: Any = jsonsafe.loads(text)
    except json.JSONDecodeError as exc:
        why = f"invalid JSON: {exc.msg}, line {exc.lineno}"
        raise ValueError(f"not a Jupyter notebook ({why})") from None
    except ValueError as exc:  # NaN, a huge integer, nesting too deep
        raise ValueError(f"not a Jupyter notebook (invalid JSON: {exc})") from None
    parts: list[str] = []
    number = 0
    for cell in _cells(document):
        if not isinstance(cell, dict):
            raise ValueError("not a Jupyter notebook (a cell is not a JSON object)")
        if cell.get("cell_type") != "code":
            continue
        number += 1
        source = cell.get("source", cell.get("input", ""))
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise ValueError(f"not a Jupyter notebook (code cell {number} has no text)")
        parts.append(f"# %% [code cell {number}]")
        lines = source_lines(source)  # as the parser counts them (no split at \f)
        parts.extend(lines if _parses(source) else python_lines(lines))
    return "\n".join(parts) + "\n"


def _cells(document: Any) -> list[Any]:
    """nbformat 4's `cells`, or the cells of nbformat 3's `worksheets`."""
    if isinstance(document, dict) and isinstance(document.get("cells"), list):
        return list(document["cells"])
    sheets = document.get("worksheets") if isinstance(document, dict) else None
    if isinstance(sheets, list) and all(
        isinstance(w, dict) and isinstance(w.get("cells"), list) for w in sheets
    ):
        return [cell for sheet in sheets for cell in sheet["cells"]]
    raise ValueError("not a Jupyter notebook (no list of cells)")


def _parses(source: str) -> bool:
    """A cell that is Python already stays as it is (a bracketed line may begin with `%`)."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def python_lines(lines: list[str]) -> list[str]:
    """One code cell's lines as Python, one for one (see the module docstring)."""
    first = lines[0].strip() if lines else ""
    if first.startswith("%%") and first[2:].split(" ")[0] not in PYTHON_CELL_MAGICS:
        return [f"# {line}" for line in lines]  # %%writefile, %%bash: not Python
    found: list[str] = []
    continued = False
    for line in lines:
        if continued:  # the rest of `!pip install a \`
            found.append(f"# {line}")
            continued = line.rstrip().endswith("\\")
            continue
        converted = _ipython_line(line)
        continued = converted is not line and line.rstrip().endswith("\\")
        found.append(converted)
    return found


def _ipython_line(line: str) -> str:
    """A line of IPython syntax as Python of one line; any other line unchanged."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith(("%", "!")) or (stripped.endswith("?") and "#" not in stripped):
        return f"{indent}pass  # {stripped}" if indent else f"# {line}"
    assigned = ASSIGNED_MAGIC.match(line)
    if assigned:  # `files = !ls`: the name is bound, to what the shell says
        return f"{assigned.group(1)}None  # {line[assigned.end() - 1 :]}"
    return line
