"""Jupyter notebooks read as the Python their code cells hold.

`envcheck scripts train.ipynb` audits the code cells, in order, each after a
`# %% [code cell N]` line (the way the real-script corpus stores notebooks); IPython
magics and shell lines (`%matplotlib inline`, `!pip install ...`) become comments so the
text parses. Reported lines count in that text, so the cell header above a finding says
which cell it is in. Outputs are never read: a notebook may be large for its images.
"""

from __future__ import annotations

import json
from typing import Any

SUFFIX = ".ipynb"
MAX_NOTEBOOK_BYTES = 50_000_000  # outputs (images) make notebooks large; only code is read


def notebook_code(text: str) -> str:
    """The code cells of a notebook's JSON text as one Python source; ValueError naming
    what is wrong when it is not a notebook."""
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        why = f"invalid JSON: {exc.msg}, line {exc.lineno}"
        raise ValueError(f"not a Jupyter notebook ({why})") from None
    except RecursionError:  # `[[[[...]]]]` thousands deep
        raise ValueError("not a Jupyter notebook (JSON nested too deeply)") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a Jupyter notebook (no list of cells)")
    parts: list[str] = []
    number = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(s) for s in source)
        if not isinstance(source, str):
            raise ValueError(f"not a Jupyter notebook (code cell {number} has no text)")
        parts.append(f"# %% [code cell {number}]")
        parts.extend(_commented_magic(line) for line in source.splitlines())
    return "\n".join(parts) + "\n"


def _commented_magic(line: str) -> str:
    """`%matplotlib inline`, `!nvidia-smi`, `%%time`: IPython, not Python; a comment."""
    stripped = line.lstrip()
    return f"# {line}" if stripped.startswith(("%", "!")) else line
