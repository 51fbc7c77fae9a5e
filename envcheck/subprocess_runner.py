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
import errno
import os
import shutil
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


def trusted_path(path: Optional[str] = None) -> str:
    """PATH (or `path`) without relative and empty entries: those name the current folder,
    where an audited checkout could hold its own `ldconfig` or `python3`."""
    entries = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    return os.pathsep.join(e for e in entries if e and os.path.isabs(e))


def which(name: str, path: Optional[str] = None) -> Optional[str]:
    """shutil.which over the trusted entries of PATH (or `path`) only."""
    return shutil.which(name, path=trusted_path(path))


def run(argv: Sequence[str], timeout: float, cwd: Optional[str] = None) -> Completed:
    """Run argv; raise subprocess.TimeoutExpired after `timeout` s, OSError if it cannot start.

    A bare program name is looked up on the trusted entries of PATH only. `cwd` is where
    the child starts (None: here)."""
    program = argv[0]
    if os.sep not in program and (os.altsep is None or os.altsep not in program):
        found = which(program)
        if found is None:
            raise FileNotFoundError(errno.ENOENT, "not found on PATH", program)
        program = found
    posix = os.name == "posix"
    proc = subprocess.Popen(
        [program, *argv[1:]],
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
