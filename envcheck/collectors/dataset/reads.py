"""Reading the sampled files, read-only: their first bytes (what they are), then a cold
pass (after posix_fadvise(POSIX_FADV_DONTNEED) where there is one) and a warm pass over
the same files, timed.

Files are opened read-only (with O_NOATIME where the kernel allows it, else silently
without; atime updates are the OS's business) and read; nothing is written.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Callable, Sequence
from typing import Optional

from envcheck.collectors.dataset.formats import HEAD_BYTES, magic_kind
from envcheck.collectors.dataset.tally import COLD_SHARE, Clock, Pass, Shared, share_deadline

CHUNK_BYTES = 1 << 20  # read size of the throughput passes


def _open_read_only(path: str) -> int:
    """A read-only descriptor; with O_NOATIME when the kernel permits it (owner or
    CAP_FOWNER), silently without it otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    noatime = getattr(os, "O_NOATIME", 0)
    if noatime:
        try:
            return os.open(path, flags | noatime)
        except OSError:
            pass
    return os.open(path, flags)


def _regular(fd: int) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise OSError(errno.EINVAL, "not a regular file")


def read_head(path: str, size: int = HEAD_BYTES) -> bytes:
    """The first `size` bytes of a regular file (fewer if it is shorter)."""
    fd = _open_read_only(path)
    try:
        _regular(fd)
        chunks: list[bytes] = []
        got = 0
        while got < size:
            chunk = os.read(fd, size - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _unreadable_once(shared: Shared, failed: set[str], path: str) -> None:
    """A sampled file that failed to open or read: one more unreadable, once per file."""
    if path not in failed:
        failed.add(path)
        with shared.lock:
            if not shared.dropped():
                shared.unreadable += 1


def magic_sample(
    sample: Sequence[str], deadline: float, clock: Clock, shared: Shared, failed: set[str]
) -> None:
    """The format of each sampled file from its first bytes, into shared.magic."""
    for path in sample:
        if clock() >= deadline:
            return
        try:
            head = read_head(path)
        except OSError:
            _unreadable_once(shared, failed, path)
            continue
        kind = magic_kind(os.path.basename(path), head)
        with shared.lock:
            if shared.dropped():
                return
            shared.magic[kind] = shared.magic.get(kind, 0) + 1
            shared.sampled += 1


def read_sample(
    sample: Sequence[str], deadline: float, clock: Clock, shared: Shared, failed: set[str]
) -> None:
    """The cold pass (COLD_SHARE of the time left), then the same files again, warm."""
    fadvise = getattr(os, "posix_fadvise", None)
    dontneed = getattr(os, "POSIX_FADV_DONTNEED", None)
    drop: Optional[Callable[[int], None]] = None
    if fadvise is not None and dontneed is not None:

        def drop(fd: int) -> None:
            fadvise(fd, 0, 0, dontneed)

    candidates = [path for path in sample if path not in failed]
    with shared.lock:
        if shared.dropped():
            return
        shared.phase = "cold"
        shared.sample_files = len(candidates)
        shared.cold = Pass()
        shared.cache_dropped = drop is not None
        if drop is None:
            shared.read_reasons["cache_dropped"] = (
                "os.posix_fadvise is not available on this platform (macOS, Windows): "
                "the cold pass may be served from the page cache"
            )
    cold_deadline = share_deadline(clock, deadline, COLD_SHARE)
    buffer = bytearray(CHUNK_BYTES)
    done: list[tuple[str, int, bool]] = []  # (path, bytes read, read to its end)
    for path in candidates:
        if clock() >= cold_deadline:
            break
        try:
            got, whole, seconds, drop_error = _timed_read(
                path, None, drop, buffer, clock, cold_deadline
            )
        except OSError:
            _unreadable_once(shared, failed, path)
            continue
        done.append((path, got, whole))
        with shared.lock:
            if shared.dropped():
                return
            _add_pass(shared.cold, got, whole, seconds)
            if drop_error is not None and shared.cache_dropped:
                shared.cache_dropped = False
                shared.read_reasons["cache_dropped"] = f"posix_fadvise failed: {drop_error}"
    with shared.lock:
        if shared.dropped():
            return
        shared.phase = "warm"
        shared.warm = Pass()
    for path, limit, whole in done:
        if clock() >= deadline:
            break
        try:
            got, _, seconds, _ = _timed_read(path, limit, None, buffer, clock, deadline)
        except OSError:
            continue
        with shared.lock:
            if shared.dropped():
                return
            _add_pass(shared.warm, got, whole and got == limit, seconds)


def _add_pass(result: Optional[Pass], got: int, whole: bool, seconds: float) -> None:
    if result is not None:
        result.bytes += got
        result.files += whole
        result.seconds += seconds


def _timed_read(
    path: str,
    limit: Optional[int],
    drop: Optional[Callable[[int], None]],
    buffer: bytearray,
    clock: Clock,
    deadline: float,
) -> tuple[int, bool, float, Optional[str]]:
    """Read `path` (to its end, or `limit` bytes) until `deadline`: (bytes, whole, seconds,
    why dropping its cache failed). The time covers open, reads and close, not the drop."""
    drop_error: Optional[str] = None
    before_open = clock()
    fd = _open_read_only(path)
    opened = clock()
    try:
        _regular(fd)
        if drop is not None:
            try:
                drop(fd)
            except OSError as exc:
                drop_error = exc.strerror or str(exc)
        reading = clock()
        view = memoryview(buffer)
        raw = io.FileIO(fd, "rb", closefd=False)
        got = 0
        whole = False
        while True:
            want = CHUNK_BYTES if limit is None else min(CHUNK_BYTES, limit - got)
            if want <= 0:
                whole = True
                break
            count = raw.readinto(view[:want]) or 0
            if count == 0:
                whole = True
                break
            got += count
            if clock() >= deadline:
                break
    finally:
        os.close(fd)
    closed = clock()
    return got, whole, (opened - before_open) + (closed - reading), drop_error
