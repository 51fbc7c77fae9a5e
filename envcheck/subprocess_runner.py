"""Run a child process with a hard timeout that also ends its own children.

`subprocess.run(timeout=...)` kills only the direct child; a wrapper script whose
grandchild keeps the pipes open would still block the caller. Starting the child in a
new session and killing the whole process group on timeout makes the limit real; a
grandchild that left the group (its own session) and still holds the pipes is not waited
for: the pipes are closed and the limit holds all the same. Ctrl-C and SIGTERM end the
group as well (the child, in its own session, gets neither signal from the terminal).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Optional, Sequence

from envcheck import signals

# After the process group is killed, how long its pipes may take to reach end of file.
DRAIN_S = 2.0


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run(argv: Sequence[str], timeout: float, cwd: Optional[str] = None) -> Completed:
    """Run argv; raise subprocess.TimeoutExpired after `timeout` s, OSError if it cannot start.

    `cwd` is where the child starts (None: here)."""
    posix = os.name == "posix"
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",  # a non-Python file may print any bytes
        start_new_session=posix,
        cwd=cwd,
    )
    try:
        with signals.sigterm_raises():  # Ctrl-C or SIGTERM: the child's group ends too
            stdout, stderr = proc.communicate(timeout=timeout)
    except (subprocess.TimeoutExpired, KeyboardInterrupt, signals.Terminated):
        _end(proc, posix)
        raise
    return Completed(proc.returncode, stdout, stderr)


def _end(proc: subprocess.Popen[str], posix: bool) -> None:
    """Kill the child's group; never block on pipes a detached grandchild keeps open."""
    if posix:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    else:  # pragma: no cover - Windows
        proc.kill()
    try:
        proc.communicate(timeout=DRAIN_S)
    except subprocess.TimeoutExpired:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=DRAIN_S)
