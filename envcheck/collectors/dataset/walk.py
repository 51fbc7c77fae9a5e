"""The walk: DIR listed breadth-first within its deadline, counted into the tally.

The walk is breadth-first, one depth at a time, and the folders of each depth are visited
in a seeded random order. So an early stop has still listed DIR itself (all its top-level
class folders are known, and counted) and has listed a random subset of each depth's
folders, from which the totals are extrapolated (see `estimate`). Directory symlinks are
followed unless they lead to a folder already on the path from DIR (a loop: counted in
`symlink_loops`, as are links that cannot be resolved because they point at themselves)
or to a folder already reached another way (not counted twice); folders are told apart by
(st_dev, st_ino). Folders are listed with `os.scandir`; nothing in DIR is opened here.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import math
import os
import random
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Optional

from envcheck.collectors.dataset.tally import (
    READ_SAMPLE,
    SIZE_BUCKETS,
    SIZE_EDGES,
    Clock,
    Shared,
)


class _Node:
    """A folder on the walk, linked to its parent: the chain of ancestors for loop checks."""

    __slots__ = ("key", "parent")

    def __init__(self, key: tuple[int, int], parent: Optional[_Node]):
        self.key = key
        self.parent = parent

    def has_ancestor(self, key: tuple[int, int]) -> bool:
        node: Optional[_Node] = self
        while node is not None:
            if node.key == key:
                return True
            node = node.parent
        return False


@dataclass
class _Folder:
    """One folder's listing, merged into the tally in one step."""

    refused: Optional[str] = None  # why the listing could not be started
    partial: bool = False  # the budget ran out inside it
    files: int = 0
    bytes: int = 0
    histogram: list[int] = field(default_factory=lambda: [0] * len(SIZE_BUCKETS))
    formats: dict[str, int] = field(default_factory=dict)
    subdirs: list[tuple[str, _Node]] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)
    unreadable: int = 0
    broken_symlinks: int = 0
    symlink_loops: int = 0


def breadth_first(root: str, deadline: float, clock: Clock, shared: Shared) -> None:
    """Walk DIR (`root`) into `shared` until `deadline`; shared.error when DIR cannot be."""
    try:
        st = os.stat(root)
    except FileNotFoundError:
        shared.error = "no such directory"
        return
    except PermissionError:
        shared.error = "permission denied"
        return
    except OSError as exc:
        shared.error = f"cannot stat it ({exc.strerror or exc})"
        return
    if not stat.S_ISDIR(st.st_mode):
        shared.error = "not a directory"
        return
    key = (st.st_dev, st.st_ino)
    seen = {key}
    level = [(root, _Node(key, None))]
    with shared.lock:
        shared.level(0).known = 1
    readable = _readability()
    rng = random.Random(0)
    depth = 0
    while level:
        if depth:
            rng.shuffle(level)  # a random subset of each depth when the budget runs out
        next_level: list[tuple[str, _Node]] = []
        for path, node in level:
            if clock() >= deadline:
                return
            with shared.lock:
                cap = math.ceil(READ_SAMPLE / (len(shared.candidates) + 1))
            folder = _list_folder(path, node, deadline, clock, seen, readable, cap)
            if depth == 0 and folder.refused is not None:
                shared.error = f"cannot list it ({folder.refused})"
                return
            next_level.extend(folder.subdirs)
            with shared.lock:
                if shared.dropped():
                    return
                _merge(shared, folder, depth)
            if folder.partial:
                return
        level = next_level
        depth += 1
    with shared.lock:
        shared.complete = True


def _list_folder(
    path: str,
    node: _Node,
    deadline: float,
    clock: Clock,
    seen: set[tuple[int, int]],
    readable: Callable[[os.stat_result], bool],
    cap: int,
) -> _Folder:
    folder = _Folder()
    try:
        entries = os.scandir(path)
    except OSError as exc:
        folder.refused = exc.strerror or str(exc)
        folder.unreadable = 1
        return folder
    with entries:
        while True:
            if clock() >= deadline:
                folder.partial = True
                return folder
            try:
                entry = next(entries)
            except StopIteration:
                return folder
            except OSError:  # the listing broke off (EIO, a stale handle): keep what was read
                folder.unreadable += 1
                return folder
            _add_entry(folder, entry, node, seen, readable, cap)


def _add_entry(
    folder: _Folder,
    entry: os.DirEntry[str],
    node: _Node,
    seen: set[tuple[int, int]],
    readable: Callable[[os.stat_result], bool],
    cap: int,
) -> None:
    try:
        link = entry.is_symlink()
        st = entry.stat(follow_symlinks=True) if link else entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        folder.broken_symlinks += 1  # a dangling link (or an entry deleted under us)
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            folder.symlink_loops += 1  # a link that resolves to itself
        elif exc.errno == errno.ENOTDIR:
            folder.broken_symlinks += 1  # a link through a file, e.g. a.jpg/x
        else:
            folder.unreadable += 1
        return
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        key = _folder_key(entry, st, link)
        if link and node.has_ancestor(key):
            folder.symlink_loops += 1
            return
        if key in seen:  # reached already by another path: counted once
            return
        seen.add(key)
        folder.subdirs.append((entry.path, _Node(key, node)))
    elif stat.S_ISREG(mode):
        size = st.st_size
        folder.files += 1
        folder.bytes += size
        folder.histogram[bisect.bisect_right(SIZE_EDGES, size)] += 1
        ext = os.path.splitext(entry.name)[1].lower()
        folder.formats[ext] = folder.formats.get(ext, 0) + 1
        if not readable(st):
            folder.unreadable += 1
        elif len(folder.candidates) < cap:
            folder.candidates.append(entry.path)
    # sockets, FIFOs and devices are not data files: not counted, never opened


def _folder_key(entry: os.DirEntry[str], st: os.stat_result, link: bool) -> tuple[int, int]:
    """(st_dev, st_ino); Windows' DirEntry.stat leaves them 0, so stat the path there."""
    if st.st_ino == 0 and st.st_dev == 0:
        with contextlib.suppress(OSError):
            st = os.stat(entry.path, follow_symlinks=link)
        if st.st_ino == 0 and st.st_dev == 0:
            return (-1, hash(entry.path))  # no identity to be had: no loop check
    return (st.st_dev, st.st_ino)


def _merge(shared: Shared, folder: _Folder, depth: int) -> None:
    shared.files += folder.files
    shared.bytes += folder.bytes
    for index, count in enumerate(folder.histogram):
        shared.histogram[index] += count
    for ext, count in folder.formats.items():
        shared.formats[ext] = shared.formats.get(ext, 0) + count
    shared.unreadable += folder.unreadable
    shared.broken_symlinks += folder.broken_symlinks
    shared.symlink_loops += folder.symlink_loops
    if folder.candidates:
        shared.candidates.append(folder.candidates)
    level = shared.level(depth)
    shared.level(depth + 1).known += len(folder.subdirs)
    if folder.refused is not None:
        return
    level.visited += 1
    level.files_seen += folder.files
    level.with_files += folder.files > 0
    if folder.partial:
        shared.stopped_inside_folder = True
        return
    level.listed += 1
    level.files += folder.files
    level.bytes += folder.bytes
    level.subdirs += len(folder.subdirs)


def _readability() -> Callable[[os.stat_result], bool]:
    """Whether this process may read a file, from its mode bits (no extra system call).

    Root reads everything; ACLs and MAC policies are not consulted, and files that then
    fail to open in the samples are counted as unreadable too.
    """
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # Windows: mode bits say nothing useful
        return lambda st: True
    euid = geteuid()
    if euid == 0:
        return lambda st: True
    groups = {os.getegid(), *os.getgroups()}

    def readable(st: os.stat_result) -> bool:
        if st.st_uid == euid:
            return bool(st.st_mode & stat.S_IRUSR)
        if st.st_gid in groups:
            return bool(st.st_mode & stat.S_IRGRP)
        return bool(st.st_mode & stat.S_IROTH)

    return readable


def spread(candidates: Sequence[Sequence[str]], limit: int) -> list[str]:
    """Up to `limit` files, round-robin over the folders: the first file of every folder,
    then the second of every folder, and so on."""
    chosen: list[str] = []
    row = 0
    while len(chosen) < limit:
        added = False
        for files in candidates:
            if row < len(files):
                chosen.append(files[row])
                added = True
                if len(chosen) == limit:
                    break
        if not added:
            break
        row += 1
    return chosen
