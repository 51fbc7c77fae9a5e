"""Read an input file (a snapshot, a rule file, a configuration) without blocking or
exhausting memory.

Files come from places an attacker can shape: a checkout can hold a symlink named
`policy/x.toml` or `train.py` that points at /dev/zero or /dev/stdin (git stores
symlinks), or a FIFO. Opening a FIFO blocks until a writer comes; reading /dev/zero never
ends. Only regular files are read, opened without blocking and read with a cap.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Optional

from envcheck import inputs

MAX_INPUT_BYTES = 64 * 2**20  # a saved report with a long probe timeline is a few MB


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind(path: Path) -> Optional[str]:
    """What `path` is when it exists but is not a regular file ("a FIFO"), else None.

    Links are followed: a link to /dev/zero is a character device, as a read would see."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def problem(path: Path, limit: int = MAX_INPUT_BYTES) -> Optional[str]:
    """Why `path` is not a readable input (not a regular file, too large), or None.

    A path that cannot be examined is left to the read that follows (it names why)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file (a device, FIFO or socket)"
    if info.st_size > limit:
        return f"{info.st_size:,} bytes: larger than the {limit:,} bytes read at most"
    return None


def read_bytes(path: Path, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The file's bytes; OSError for anything but a regular file of at most `limit` bytes."""
    inputs.note(path)  # never to be overwritten by -o, even when the read fails
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a device, FIFO or socket)")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than the {limit:,} bytes read at most")
    return data
