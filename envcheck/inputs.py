"""The files and folders this command has read, so that `-o` never overwrites one.

`envcheck doctor --facts s.json -o s.json` or `envcheck scripts -o train.py train.py`
would replace the user's snapshot or training script with the report. Every reader of a
user's file (snapshots, configuration, rules, scripts) notes the file here, the --data
folder is noted as a whole tree, and the writer (envcheck.output) refuses an output that
is one of them: the same resolved path or the same inode (a hard link, another spelling).
No imports from envcheck: the lowest modules (safefile) note what they read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple, Optional


class Noted(NamedTuple):
    path: Path  # resolved
    identity: Optional[tuple[int, int]]  # (st_dev, st_ino) when it could be examined
    tree: bool  # a folder whose every file is input (--data)
    label: str


_noted: list[Noted] = []


def _identity(path: Path) -> Optional[tuple[int, int]]:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino)


def _resolved(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return Path(os.path.abspath(path))


def note(path: Path, label: str = "an input of this command", tree: bool = False) -> None:
    """Record `path` as read by this command (`tree`: everything under it too)."""
    _noted.append(Noted(_resolved(path), _identity(path), tree, label))


def forget() -> None:
    """A new command starts (tests run several in one process): nothing read yet."""
    _noted.clear()


def clash(path: Path) -> Optional[Noted]:
    """The input that writing `path` would overwrite (or write into), or None."""
    target = _resolved(path)
    identity = _identity(path)
    for each in list(_noted):
        if each.path == target or (identity is not None and identity == each.identity):
            return each
        if each.tree and each.path in target.parents:
            return each
    return None
