"""Run a child process with a hard timeout that also ends its own children.

`subprocess.run(timeout=...)` kills only the direct child; a wrapper script whose
grandchild keeps the pipes open would still block the caller. Starting the child in a
new session and killing the whole process group on timeout makes the limit real.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run(argv: Sequence[str], timeout: float) -> Completed:
    """Run argv; raise subprocess.TimeoutExpired after `timeout` s, OSError if it cannot start."""
    posix = os.name == "posix"
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",  # a non-Python file may print any bytes
        start_new_session=posix,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        if posix:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
        proc.communicate()
        raise
    return Completed(proc.returncode, stdout, stderr)
