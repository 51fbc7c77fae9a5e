"""The --data folder: what it holds (walk), what its files are (magic bytes), how fast it reads.

Fills two sections, `dataset` and `read_throughput`, in the shapes of docs/snapshot-data.md.
Both are null when no --data was given.

The folder is only ever read. Nothing is created, renamed or written in it: folders are
listed with `os.scandir`, files are opened read-only (with O_NOATIME where the kernel
allows it, else silently without; atime updates are the OS's business) and read.

Budget. `ctx.data_budget_s` covers everything: the walk gets the first `WALK_SHARE` of it
(all of it that it needs, if it finishes early), the rest goes to the magic-byte sample
(`MAGIC_SHARE` of what is left), the cold read pass (`COLD_SHARE` of what is then left)
and the warm pass (the remainder). Decisions against the budget use `clock`, which tests
inject to make budget exhaustion deterministic.

Hangs. A folder on a dead network mount blocks `stat`, `getdents` or `read` for minutes.
All file-system work runs in one daemon thread that merges its results into a shared
tally under a lock, folder by folder and file by file. The caller waits for it at most
the budget plus `GRACE_S` seconds of real time; if it has not finished by then, the
sections report what had been merged, say why in `reasons`, and the thread is abandoned
(what it merges later is dropped).

The walk is breadth-first, one depth at a time, and the folders of each depth are visited
in a seeded random order. So an early stop has still listed DIR itself (all its top-level
class folders are known, and counted) and has listed a random subset of each depth's
folders, from which the totals are extrapolated (see `estimate`). Directory symlinks are
followed unless they lead to a folder already on the path from DIR (a loop: counted in
`symlink_loops`, as are links that cannot be resolved because they point at themselves)
or to a folder already reached another way (not counted twice); folders are told apart by
(st_dev, st_ino).
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import io
import math
import os
import random
import stat
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from envcheck.collectors.base import CollectContext

Clock = Callable[[], float]
Reasons = dict[str, str]

WALK_SHARE = 0.6  # of the budget, for the walk
MAGIC_SHARE = 0.25  # of what the walk left, for the magic-byte sample
COLD_SHARE = 0.75  # of what is then left, for the cold pass; the warm pass gets the rest
GRACE_S = 1.0  # real seconds past the budget before a silent file system counts as hung

MAGIC_SAMPLE = 60  # files whose first bytes are read for `magic`
READ_SAMPLE = 200  # files read cold and warm
HEAD_BYTES = 265  # enough for the tar "ustar" signature at offset 257
CHUNK_BYTES = 1 << 20  # read size of the throughput passes

KIB = 1024
MIB = 1024 * KIB
SIZE_BUCKETS = ("<16KiB", "16-64KiB", "64-256KiB", "256KiB-1MiB", "1-16MiB", ">=16MiB")
SIZE_EDGES = (16 * KIB, 64 * KIB, 256 * KIB, MIB, 16 * MIB)

SHARD_EXTENSIONS = frozenset({".tar", ".tfrecord", ".tfrecords", ".tfrec", ".parquet", ".mdb"})
SHARD_MAGIC = frozenset({"tar", "tfrecord", "parquet", "lmdb"})
SHARDED_SHARE = 0.5  # sharded: at least this share of the files (or of the sample) are shards
FORMATS_LIMIT = 50  # extensions listed in `formats`; the rest are summed as "other"
ROOT_FILES_SHARE = 0.1  # class-folders: DIR itself holds at most this share of the files

# the `dataset` section's keys, in the order of docs/snapshot-data.md
DATASET_KEYS = (
    "path",
    "complete",
    "files",
    "dirs",
    "bytes",
    "mean_file_bytes",
    "size_histogram",
    "formats",
    "magic",
    "sampled",
    "layout",
    "class_folders",
    "unreadable",
    "broken_symlinks",
    "symlink_loops",
    "walk_seconds",
    "reasons",
)

METHOD = "posix_fadvise(POSIX_FADV_DONTNEED) before the cold pass; the same files again warm"
METHOD_NO_FADVISE = (
    "no posix_fadvise on this platform: the cold pass reads whatever is cached; "
    "the same files again warm"
)


# --- entry point -------------------------------------------------------------------------


def collect(
    ctx: CollectContext, clock: Clock = time.monotonic, hang_timeout: Optional[float] = None
) -> dict[str, Any]:
    """{"dataset": ..., "read_throughput": ...}; both None without --data. Never raises.

    `hang_timeout`: real seconds to wait for the file-system thread (default: the budget
    plus GRACE_S).
    """
    if ctx.data is None:
        return {"dataset": None, "read_throughput": None}
    budget = max(0.0, float(ctx.data_budget_s))
    shared = _Shared()
    start = clock()
    worker = threading.Thread(
        target=_work,
        args=(os.fspath(ctx.data), budget, clock, shared),
        name="envcheck-dataset",
        daemon=True,
    )
    worker.start()
    worker.join(budget + GRACE_S if hang_timeout is None else hang_timeout)
    with shared.lock:
        shared.abandoned = True  # from here on the worker's results are dropped
        hung = not shared.finished
        if hung and shared.walk_seconds is None:
            shared.walk_seconds = clock() - start
        waited = budget + GRACE_S if hang_timeout is None else hang_timeout
        return {
            "dataset": _dataset_section(os.fspath(ctx.data), shared, hung, waited, budget),
            "read_throughput": _throughput_section(shared, hung, waited),
        }


# --- shared state --------------------------------------------------------------------------


@dataclass
class _Level:
    """What the walk learnt about the folders at one depth below DIR (DIR is depth 0)."""

    known: int = 0  # folders found at this depth
    visited: int = 0  # folders whose listing was started and not refused
    with_files: int = 0  # visited folders holding at least one file directly
    files_seen: int = 0  # files directly in visited folders (partial listings included)
    listed: int = 0  # folders listed to the end
    files: int = 0  # files directly in the folders listed to the end
    bytes: int = 0
    subdirs: int = 0  # folders found in the folders listed to the end


@dataclass
class _Pass:
    files: int = 0  # files read to their end
    bytes: int = 0
    seconds: float = 0.0


@dataclass
class _Shared:
    """The worker's results, merged under `lock`; read by the caller once it stops waiting."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    abandoned: bool = False
    finished: bool = False
    phase: str = "walk"
    error: Optional[str] = None  # DIR itself cannot be walked
    failure: Optional[str] = None  # the worker failed (a bug)
    # walk
    complete: bool = False
    stopped_inside_folder: bool = False
    walk_seconds: Optional[float] = None
    files: int = 0
    bytes: int = 0
    histogram: list[int] = field(default_factory=lambda: [0] * len(SIZE_BUCKETS))
    formats: dict[str, int] = field(default_factory=dict)
    levels: list[_Level] = field(default_factory=list)
    unreadable: int = 0
    broken_symlinks: int = 0
    symlink_loops: int = 0
    candidates: list[list[str]] = field(default_factory=list)  # per folder, in visit order
    # magic sample
    magic: dict[str, int] = field(default_factory=dict)
    sampled: int = 0
    # read sample
    sample_files: int = 0
    cold: Optional[_Pass] = None
    warm: Optional[_Pass] = None
    cache_dropped: bool = False
    read_reasons: Reasons = field(default_factory=dict)

    def dropped(self) -> bool:
        """Whether the caller stopped waiting (a method: the flag changes under the lock)."""
        return self.abandoned

    def level(self, depth: int) -> _Level:
        while len(self.levels) <= depth:
            self.levels.append(_Level())
        return self.levels[depth]


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


# --- the worker ----------------------------------------------------------------------------


def _work(root: str, budget: float, clock: Clock, shared: _Shared) -> None:
    """The thread's body: walk, magic sample, cold and warm passes, each within its share."""
    try:
        start = clock()
        deadline = start + budget
        _walk(root, start + WALK_SHARE * budget, clock, shared)
        with shared.lock:
            if shared.dropped() or shared.error is not None:
                return
            shared.walk_seconds = clock() - start
            shared.phase = "magic"
            sample = spread(shared.candidates, READ_SAMPLE)
        failed: set[str] = set()
        _magic_sample(
            sample[:MAGIC_SAMPLE], _share(clock, deadline, MAGIC_SHARE), clock, shared, failed
        )
        _read_sample(sample, deadline, clock, shared, failed)
    except BaseException as exc:  # raised in a thread it would be lost, and nothing reported
        with shared.lock:
            shared.failure = f"{type(exc).__name__}: {exc}"
    finally:
        with shared.lock:
            shared.finished = True


def _share(clock: Clock, deadline: float, share: float) -> float:
    now = clock()
    return now + max(0.0, deadline - now) * share


def _walk(root: str, deadline: float, clock: Clock, shared: _Shared) -> None:
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


def _merge(shared: _Shared, folder: _Folder, depth: int) -> None:
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


# --- reading files -------------------------------------------------------------------------


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


def _unreadable_once(shared: _Shared, failed: set[str], path: str) -> None:
    """A sampled file that failed to open or read: one more unreadable, once per file."""
    if path not in failed:
        failed.add(path)
        with shared.lock:
            if not shared.dropped():
                shared.unreadable += 1


def _magic_sample(
    sample: Sequence[str], deadline: float, clock: Clock, shared: _Shared, failed: set[str]
) -> None:
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


def _read_sample(
    sample: Sequence[str], deadline: float, clock: Clock, shared: _Shared, failed: set[str]
) -> None:
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
        shared.cold = _Pass()
        shared.cache_dropped = drop is not None
        if drop is None:
            shared.read_reasons["cache_dropped"] = (
                "os.posix_fadvise is not available on this platform (macOS, Windows): "
                "the cold pass may be served from the page cache"
            )
    cold_deadline = _share(clock, deadline, COLD_SHARE)
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
        shared.warm = _Pass()
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


def _add_pass(result: Optional[_Pass], got: int, whole: bool, seconds: float) -> None:
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


# --- magic bytes -----------------------------------------------------------------------------

_PREFIXES: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xd8\xff", "jpeg"),
    (b"\x89PNG", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"\x89HDF\r\n\x1a\n", "hdf5"),
    (b"\x93NUMPY", "npy"),
    (b"PK\x03\x04", "npz"),
    (b"PAR1", "parquet"),
)
_BMP_HEADER_SIZES = frozenset({12, 40, 52, 56, 64, 108, 124})


def magic_kind(name: str, head: bytes) -> str:
    """The format told by a file's name (LMDB's data.mdb) and first bytes (up to 265)."""
    if name == "data.mdb":
        return "lmdb"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    if is_tfrecord_head(head):
        return "tfrecord"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    for prefix, kind in _PREFIXES:
        if head.startswith(prefix):
            return kind
    # "BM" alone is too weak (text can start with it): the DIB header size must be known
    if head[:2] == b"BM" and len(head) >= 18 and _u32(head, 14) in _BMP_HEADER_SIZES:
        return "bmp"
    return "unknown"


def is_tfrecord_head(head: bytes) -> bool:
    """TFRecord framing: uint64 little-endian length, then the masked CRC32C of those
    8 bytes. The CRC is verified, so any file name qualifies."""
    if len(head) < 12:
        return False
    return _u32(head, 8) == masked_crc32c(head[:8])


def _u32(data: bytes, offset: int) -> int:
    value: int = struct.unpack_from("<I", data, offset)[0]
    return value


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as TFRecord uses; table-driven, for short inputs."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# --- from the tally to the sections ---------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    files: int
    dirs: int
    bytes: int
    note: Optional[str]  # where the estimate is weaker than the extrapolation


def estimate(levels: Sequence[_Level], files_seen: int, bytes_seen: int) -> Estimate:
    """ESTIMATE of the whole folder's files, folders and bytes after an incomplete walk.

    Per-depth extrapolation. Depth 0 is DIR, one folder. At each depth d, the folders
    listed to the end are a random sample (the walk visits each depth in shuffled order)
    of the folders expected there, E(d); so each of them stands for E(d) / listed(d)
    folders:

        files  += files(d) × E(d) / listed(d)      (bytes likewise)
        E(d+1)  = subfolders(d) × E(d) / listed(d)

    E(0) = 1, and while the walk reached every folder of a depth the factor is 1 and the
    counts are exact. Example: DIR with 200 class folders of 1000 files, stopped after
    listing 50 of them: E(1) = 200, files = 50,000 × 200/50 = 200,000.

    A depth whose folders were found but none listed to the end is given the mean per
    folder of the deepest listed depth that held files, and deeper folders are not
    guessed: `note` says so. With no such depth (the walk stopped inside DIR) the files
    seen are reported, a lower bound. The result is never below what was seen.
    """
    files = size = dirs = 0.0
    expected = 1.0
    mean: Optional[tuple[float, float, int]] = None  # files, bytes per folder; its depth
    note: Optional[str] = None
    for depth, level in enumerate(levels):
        if expected <= 0:
            break
        dirs += expected
        if level.listed:
            factor = expected / level.listed
            files += level.files * factor
            size += level.bytes * factor
            if level.files:
                mean = (level.files / level.listed, level.bytes / level.listed, depth)
            expected = level.subdirs * factor
            continue
        if mean is None:
            note = "a lower bound: the walk stopped before it had listed a folder that holds files"
        else:
            files += expected * mean[0]
            size += expected * mean[1]
            note = (
                f"no folder at depth {depth} was listed before the budget ran out: each is "
                f"assumed to hold as much as the listed folders at depth {mean[2]}, and "
                "deeper folders are not counted"
            )
        break
    return Estimate(
        files=max(round(files), files_seen),
        dirs=max(round(dirs), sum(level.known for level in levels)),
        bytes=max(round(size), bytes_seen),
        note=note,
    )


def size_bucket(size: int) -> str:
    return SIZE_BUCKETS[bisect.bisect_right(SIZE_EDGES, size)]


def _scaled(counts: dict[str, int], factor: float, limit: int) -> dict[str, int]:
    """Counts × factor, most common first; past `limit` keys the rest is summed as "other"
    (a key no extension can have: extensions start with a dot or are "")."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    scaled = {key: round(count * factor) for key, count in ordered[:limit]}
    rest = sum(count for _, count in ordered[limit:])
    if rest:
        scaled["other"] = round(rest * factor)
    return scaled


def _level_at(levels: Sequence[_Level], depth: int) -> _Level:
    return levels[depth] if depth < len(levels) else _Level()


def _layout(shared: _Shared) -> tuple[Optional[str], Optional[int], Optional[str]]:
    """(layout, class_folders, why layout is null), from the files seen, first rule wins:

    empty          no files (after a complete walk; an incomplete one that saw none: null)
    sharded        at least half the files have a shard extension (.tar, .tfrecord(s),
                   .tfrec, .parquet, .mdb), or at least half the magic sample is tar,
                   tfrecord, parquet or lmdb
    flat           every file lies directly in DIR (subfolders without files allowed)
    class-folders  at least 2 top-level subfolders hold files directly, and at least half
                   of the listed ones do; DIR itself holds at most ROOT_FILES_SHARE of the
                   files; the top-level subfolders hold at least half of them directly.
                   class_folders: their count (after an incomplete walk, the share of the
                   listed top-level folders that hold files × all top-level folders)
    nested         anything else
    """
    files = shared.files
    if files == 0:
        if shared.complete:
            return "empty", None, None
        return None, None, "no file was seen before the walk stopped"
    shards = sum(n for ext, n in shared.formats.items() if ext in SHARD_EXTENSIONS)
    magic_shards = sum(n for kind, n in shared.magic.items() if kind in SHARD_MAGIC)
    if shards >= SHARDED_SHARE * files or (
        shared.sampled and magic_shards >= SHARDED_SHARE * shared.sampled
    ):
        return "sharded", None, None
    root = _level_at(shared.levels, 0)
    top = _level_at(shared.levels, 1)
    if root.files_seen == files:
        if top.known and not top.visited and not shared.complete:
            return None, None, "the walk stopped before it listed any subfolder"
        return "flat", None, None
    top_files = top.files_seen
    if (
        top.with_files >= 2
        and 2 * top.with_files >= top.visited
        and root.files_seen <= ROOT_FILES_SHARE * files
        and 2 * top_files >= files
    ):
        classes = top.with_files
        if not shared.complete and top.visited:
            classes = round(top.with_files / top.visited * top.known)
        return "class-folders", classes, None
    return "nested", None, None


def _dataset_section(
    path: str, shared: _Shared, hung: bool, waited: float, budget: float
) -> dict[str, Any]:
    reasons: Reasons = {}
    if shared.error is not None:
        # DIR itself cannot be walked: every count is unknown, for the same reason
        unknown = [key for key in DATASET_KEYS if key not in ("path", "complete", "reasons")]
        reasons.update({key: shared.error for key in unknown if key != "class_folders"})
        return {
            **dict.fromkeys(DATASET_KEYS),
            "path": path,
            "complete": False,
            "reasons": reasons,
        }

    complete = shared.complete
    if complete:
        files, dirs, size = shared.files, sum(lv.known for lv in shared.levels), shared.bytes
    else:
        guess = estimate(shared.levels, shared.files, shared.bytes)
        files, dirs, size = guess.files, guess.dirs, guess.bytes
        listed = sum(lv.listed for lv in shared.levels)
        if hung and shared.phase == "walk":
            why = (
                f"the file system stopped answering: no reply within {waited:g} s "
                "(a hung network mount?)"
            )
        elif shared.failure is not None:
            why = f"the walk failed: {shared.failure}"
        else:
            why = f"the walk stopped at its budget ({WALK_SHARE * budget:g} s)"
        reasons["complete"] = (
            f"{why} after listing {listed} of ~{dirs} folders: files, dirs, bytes, formats "
            "and size_histogram are estimates (extrapolated per depth)"
        )
        if guess.note:
            reasons["files"] = guess.note
    factor = files / shared.files if shared.files else 1.0
    layout, class_folders, layout_why = _layout(shared)
    if layout_why:
        reasons["layout"] = layout_why
    if not files:
        reasons["mean_file_bytes"] = "no files"
    magic: dict[str, int] = {"unknown": 0}
    magic.update(shared.magic)
    if not shared.sampled:
        reasons["magic"] = _not_sampled(shared, hung, waited)
    section = {
        "path": path,
        "complete": complete,
        "files": files,
        "dirs": dirs,
        "bytes": size,
        "mean_file_bytes": round(size / files) if files else None,
        "size_histogram": {
            name: round(count * factor)
            for name, count in zip(SIZE_BUCKETS, shared.histogram, strict=True)
        },
        "formats": _scaled(shared.formats, factor, FORMATS_LIMIT),
        "magic": dict(sorted(magic.items(), key=lambda item: (-item[1], item[0]))),
        "sampled": shared.sampled,
        "layout": layout,
        "class_folders": class_folders,
        "unreadable": shared.unreadable,
        "broken_symlinks": shared.broken_symlinks,
        "symlink_loops": shared.symlink_loops,
        "walk_seconds": None if shared.walk_seconds is None else round(shared.walk_seconds, 3),
        "reasons": reasons,
    }
    return section


def _not_sampled(shared: _Shared, hung: bool, waited: float) -> str:
    if hung and shared.phase in ("walk", "magic"):
        return f"not sampled: the file system gave no reply within {waited:g} s"
    if shared.files == 0:
        return "no files to sample"
    return "no file could be sampled (unreadable, or no time left in the budget)"


def _throughput_section(shared: _Shared, hung: bool, waited: float) -> dict[str, Any]:
    reasons: Reasons = dict(shared.read_reasons)
    cold = _pass_facts(shared.cold, "cold", reasons)
    if cold is not None:
        cold["cache_dropped"] = shared.cache_dropped
    warm = _pass_facts(shared.warm, "warm", reasons)
    if shared.error is not None:
        missing = f"the data folder cannot be walked: {shared.error}"
    elif shared.failure is not None:
        missing = f"the reading failed: {shared.failure}"
    elif hung:
        missing = (
            f"not measured: the file system gave no reply within {waited:g} s "
            "(a hung network mount?)"
        )
    elif shared.sample_files == 0:
        missing = "no readable files to sample"
    else:
        missing = "no time left in the budget for this pass"
    for name, facts in (("cold", cold), ("warm", warm)):
        if facts is None:
            reasons.setdefault(name, missing)
        elif hung and shared.phase == name:
            reasons[name] = f"cut short: a read gave no reply within {waited:g} s"
    return {
        "cold": cold,
        "warm": warm,
        "sample_files": shared.sample_files,
        "method": METHOD if hasattr(os, "posix_fadvise") else METHOD_NO_FADVISE,
        "reasons": reasons,
    }


def _pass_facts(result: Optional[_Pass], name: str, reasons: Reasons) -> Optional[dict[str, Any]]:
    if result is None or (result.bytes == 0 and result.files == 0):
        return None
    seconds = result.seconds
    facts: dict[str, Any] = {
        "files": result.files,
        "bytes": result.bytes,
        "seconds": round(seconds, 6),
        "files_per_s": None,
        "bytes_per_s": None,
    }
    if seconds <= 0:
        reasons[f"{name}.files_per_s"] = reasons[f"{name}.bytes_per_s"] = "too fast to time"
        return facts
    facts["bytes_per_s"] = round(result.bytes / seconds, 1)
    if result.files:
        facts["files_per_s"] = round(result.files / seconds, 1)
    else:
        reasons[f"{name}.files_per_s"] = (
            "no file was read to its end within the budget; bytes_per_s covers the part read"
        )
    return facts
