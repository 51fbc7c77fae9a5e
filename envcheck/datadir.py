"""Checking the --data folder before anything reads it, with every call bounded.

A folder on a dead network mount can block `stat` for minutes. The check runs in a
daemon thread and gives up after `timeout`, so the doctor reports the problem and goes on
with the rest of its checks.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Optional


def problem_with(path: Path, timeout: float = 5.0) -> Optional[str]:
    """Why `path` cannot be audited as a dataset folder, or None when it can."""
    answer: list[Optional[str]] = []
    worker = threading.Thread(target=lambda: answer.append(_inspect(path)), daemon=True)
    worker.start()
    worker.join(timeout)
    if not answer:
        return f"no answer within {timeout:g} s (a hung network mount?)"
    return answer[0]


def _inspect(path: Path) -> Optional[str]:
    try:
        if not path.exists():
            return "no such directory"
        if not path.is_dir():
            return "not a directory"
        with os.scandir(path) as entries:
            next(entries, None)
    except PermissionError:
        return "permission denied (cannot list it)"
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    return None
