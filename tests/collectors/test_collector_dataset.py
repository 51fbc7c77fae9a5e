"""dataset collector: real folders built in tmp_path, walked, sampled and read, never written.

Every test that points the collector at a folder goes through `collect_untouched`, which
compares a full listing (names, modes, sizes, mtimes, ctimes, inodes) before and after:
the collector must not create, modify or touch anything inside the data folder.

Budget exhaustion is made deterministic with `TickClock`, an injected clock that moves a
fixed step at every reading; no test asserts on wall-clock time.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import stat
import struct
import sys
import tarfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from envcheck.collectors import dataset
from envcheck.collectors.base import CollectContext
from envcheck.collectors.dataset.estimate import Estimate, estimate
from envcheck.collectors.dataset.formats import crc32c, magic_kind, masked_crc32c
from envcheck.collectors.dataset.sections import FORMATS_LIMIT, METHOD, METHOD_NO_FADVISE
from envcheck.collectors.dataset.tally import (
    MAGIC_SAMPLE,
    READ_SAMPLE,
    SIZE_BUCKETS,
    WALK_SHARE,
    Level,
    size_bucket,
)
from envcheck.collectors.dataset.walk import spread
from envcheck.interpreter import current

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
ROOT_SKIP = "running as root: chmod 000 does not stop root from reading"

DATASET_KEYS = list(dataset.DATASET_KEYS)
THROUGHPUT_KEYS = ["cold", "warm", "sample_files", "method", "reasons"]
PASS_KEYS = ["files", "bytes", "seconds", "files_per_s", "bytes_per_s"]


# --- helpers -------------------------------------------------------------------------------


class TickClock:
    """A clock that advances `step` seconds every time it is read."""

    def __init__(self, step: float):
        self.step = step
        self.now = 1000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            self.now += self.step
            return self.now


def listing(root: Path) -> dict[str, tuple[int, int, int, int, int]]:
    """Everything under `root` (not following links): what reading must leave unchanged."""

    def facts(st: os.stat_result) -> tuple[int, int, int, int, int]:
        return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)

    out = {".": facts(os.lstat(root))}
    pending = [(os.fspath(root), "")]
    while pending:
        folder, rel = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except PermissionError:  # a chmod 000 folder (not as root): its own entry is kept
            continue
        for entry in entries:
            name = rel + entry.name
            st = entry.stat(follow_symlinks=False)
            out[name] = facts(st)
            if stat.S_ISDIR(st.st_mode):
                pending.append((entry.path, name + "/"))
    return out


def collect_untouched(
    root: Path,
    budget: float = 5.0,
    clock: Any = None,
    **kwargs: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the collector on `root`; assert it wrote nothing there; (dataset, read_throughput)."""
    before = listing(root)
    result = collect_without_listing(root, budget, clock, **kwargs)
    assert listing(root) == before, "the collector changed something inside the data folder"
    return result


def collect_without_listing(
    root: Path,
    budget: float = 5.0,
    clock: Any = None,
    **kwargs: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The collector's two sections, their keys checked (the caller compares listings)."""
    ctx = CollectContext(interpreter=current(), data=root, data_budget_s=budget)
    sections = dataset.collect(ctx, clock=clock or TickClock(1e-6), **kwargs)
    assert list(sections) == ["dataset", "read_throughput"]
    facts, throughput = sections["dataset"], sections["read_throughput"]
    assert list(facts) == DATASET_KEYS
    assert list(throughput) == THROUGHPUT_KEYS
    return facts, throughput


def noise_image(path: Path, size: tuple[int, int], fmt: str) -> Path:
    """A real image file of random pixels, written by Pillow."""
    image_module = pytest.importorskip("PIL.Image")
    path.parent.mkdir(parents=True, exist_ok=True)
    width, height = size
    image = image_module.frombytes("RGB", size, os.urandom(width * height * 3))
    image.save(path, fmt)
    return path


def jpeg_bytes(size: tuple[int, int] = (32, 32)) -> bytes:
    image_module = pytest.importorskip("PIL.Image")
    buffer = io.BytesIO()
    image_module.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3)).save(buffer, "JPEG")
    return buffer.getvalue()


def _crc32c_bitwise(data: bytes) -> int:
    """CRC-32C, bit by bit: independent of the module's table-driven one."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    crc = _crc32c_bitwise(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_bytes(records: list[bytes]) -> bytes:
    """TFRecord framing: uint64 length, uint32 masked crc32c(length), data, masked crc(data)."""
    out = b""
    for data in records:
        length = struct.pack("<Q", len(data))
        out += length + struct.pack("<I", _masked(length)) + data
        out += struct.pack("<I", _masked(data))
    return out


def npy_bytes() -> bytes:
    """A real .npy file (format 1.0) of three float32 values."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    return (
        b"\x93NUMPY\x01\x00"
        + struct.pack("<H", len(header))
        + header.encode("latin-1")
        + struct.pack("<3f", 1.0, 2.0, 3.0)
    )


def write_tar(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def file_sizes(*paths: Path) -> int:
    return sum(p.stat().st_size for p in paths)


# --- trees ---------------------------------------------------------------------------------


@pytest.fixture
def class_tree(tmp_path: Path):
    """Three class folders of real JPEGs and PNGs, with the usual damage.

    cat/  4 JPEG, 1 PNG, loop -> .. (a directory symlink to an ancestor)
    dog/  3 JPEG, 1 PNG, gone.jpg -> a missing file (broken symlink)
    bird/ 2 JPEG, corrupt.jpg (garbage bytes), secret.jpg (a JPEG, chmod 000)
    alias -> dog (a symlink to a sibling: followed once, not a loop, not counted twice)
    """
    root = tmp_path / "train"
    sizes = [(64, 64), (128, 96), (256, 256), (640, 480)]
    images = [noise_image(root / "cat" / f"cat{i}.jpg", sizes[i], "JPEG") for i in range(4)]
    images += [noise_image(root / "dog" / f"dog{i}.jpg", sizes[i], "JPEG") for i in range(3)]
    images += [noise_image(root / "bird" / f"bird{i}.jpg", sizes[i], "JPEG") for i in range(2)]
    images += [noise_image(root / name / "extra.png", (32, 32), "PNG") for name in ("cat", "dog")]
    images.append(write(root / "bird" / "corrupt.jpg", b"this is not a JPEG at all\n" * 40))
    secret = noise_image(root / "bird" / "secret.jpg", (48, 48), "JPEG")
    images.append(secret)
    (root / "cat" / "loop").symlink_to("..", target_is_directory=True)
    (root / "dog" / "gone.jpg").symlink_to(root / "nowhere.jpg")
    (root / "alias").symlink_to("dog", target_is_directory=True)
    secret.chmod(0)
    yield root, images
    secret.chmod(0o644)


def test_class_folders_of_real_images(class_tree) -> None:
    root, images = class_tree
    facts, throughput = collect_untouched(root)
    assert facts["path"] == str(root)
    assert facts["complete"] is True
    assert facts["reasons"] == {}
    assert facts["files"] == 13
    assert facts["dirs"] == 4  # train, cat, dog, bird; alias leads to dog, counted once
    assert facts["bytes"] == file_sizes(*images)
    assert facts["mean_file_bytes"] == round(facts["bytes"] / 13)
    assert sum(facts["size_histogram"].values()) == 13
    assert list(facts["size_histogram"]) == list(SIZE_BUCKETS)
    assert facts["formats"] == {".jpg": 11, ".png": 2}
    assert facts["layout"] == "class-folders"
    assert facts["class_folders"] == 3
    assert facts["symlink_loops"] == 1
    assert facts["broken_symlinks"] == 1
    if IS_ROOT:  # root reads the chmod 000 file: it is sampled like the others
        assert facts["unreadable"] == 0
        assert facts["magic"] == {"jpeg": 10, "png": 2, "unknown": 1}
        assert facts["sampled"] == 13
    else:
        assert facts["unreadable"] == 1
        assert facts["magic"] == {"jpeg": 9, "png": 2, "unknown": 1}
        assert facts["sampled"] == 12
    assert facts["walk_seconds"] >= 0

    assert throughput["sample_files"] == facts["sampled"]
    cold, warm = throughput["cold"], throughput["warm"]
    assert cold["files"] == warm["files"] == facts["sampled"]
    expected_bytes = file_sizes(*(p for p in images if IS_ROOT or p.name != "secret.jpg"))
    assert cold["bytes"] == warm["bytes"] == expected_bytes
    for result in (cold, warm):
        assert list(result)[:5] == PASS_KEYS
        assert result["seconds"] > 0
        assert result["files_per_s"] > 0
        assert result["bytes_per_s"] > 0
    assert list(cold) == [*PASS_KEYS, "cache_dropped"]
    assert cold["cache_dropped"] is hasattr(os, "posix_fadvise")
    assert throughput["method"] == METHOD
    assert throughput["reasons"] == {}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="posix_fadvise is Linux's")
def test_real_clock_cold_and_warm_reads_on_linux(class_tree) -> None:
    root, _ = class_tree
    facts, throughput = collect_untouched(root, clock=time.monotonic)
    assert facts["files"] == 13
    for name in ("cold", "warm"):
        result = throughput[name]
        assert result is not None, throughput["reasons"]
        assert result["files"] > 0
        assert result["bytes"] > 0
        assert result["seconds"] > 0
        assert result["files_per_s"] > 0
        assert result["bytes_per_s"] > 0
    assert throughput["cold"]["cache_dropped"] is True
    assert "cache_dropped" not in throughput["reasons"]


def test_chmod_000_folder_is_unreadable(tmp_path: Path) -> None:
    root = tmp_path / "data"
    write(root / "a" / "x.bin", b"x" * 10)
    write(root / "b" / "y.bin", b"y" * 10)
    locked = root / "locked"
    write(locked / "z.bin", b"z" * 10)
    locked.chmod(0)
    try:
        facts, _ = collect_untouched(root)
    finally:
        locked.chmod(0o755)
    if IS_ROOT:
        pytest.skip(ROOT_SKIP)
    assert facts["unreadable"] == 1
    assert facts["files"] == 2
    assert facts["dirs"] == 4  # the locked folder exists, though it cannot be listed


def test_links_to_themselves_are_loops_and_links_through_files_are_broken(
    tmp_path: Path,
) -> None:
    root = tmp_path / "data"
    write(root / "a" / "x.jpg", b"\xff\xd8\xff")
    (root / "a" / "self.jpg").symlink_to("self.jpg")  # ELOOP
    (root / "a" / "through.jpg").symlink_to("x.jpg/inside")  # ENOTDIR
    (root / "a" / "to-file.jpg").symlink_to("x.jpg")  # a link to a file: a file
    facts, _ = collect_untouched(root)
    assert facts["symlink_loops"] == 1
    assert facts["broken_symlinks"] == 1
    assert facts["files"] == 2


def test_unlistable_top_folder_is_an_error_not_an_empty_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    write(root / "a" / "x.jpg", b"\xff\xd8\xff")
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.path.basename(os.fspath(path)) == "data":
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    sections = dataset.collect(
        CollectContext(interpreter=current(), data=root), clock=TickClock(1e-6)
    )
    monkeypatch.undo()
    facts = sections["dataset"]
    assert facts["files"] is None
    assert facts["layout"] is None
    assert facts["reasons"]["files"] == "cannot list it (Permission denied)"
    assert sections["read_throughput"]["cold"] is None


def test_refused_folder_and_file_count_as_unreadable_even_for_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PermissionError from listing a folder and from opening a file, simulated, so that
    the counting is checked whoever runs the tests."""
    root = tmp_path / "data"
    for name in ("a", "b", "c"):
        for index in range(3):
            write(root / name / f"{index}.bin", bytes([index]) * 100)
    write(root / "a" / "locked.bin", b"secret" * 10)
    real_scandir, real_open = os.scandir, os.open

    def scandir(path: Any = ".") -> Any:
        if os.path.basename(os.fspath(path)) == "c":
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_scandir(path)

    def os_open(path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        if os.fspath(path).endswith("locked.bin"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_open(path, flags, mode, **kwargs)

    before = listing(root)
    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", scandir)
        patch.setattr(os, "open", os_open)
        ctx = CollectContext(interpreter=current(), data=root, data_budget_s=5.0)
        sections = dataset.collect(ctx, clock=TickClock(1e-6))
    assert listing(root) == before
    facts, throughput = sections["dataset"], sections["read_throughput"]
    assert facts["unreadable"] == 2  # folder c, and locked.bin (counted once, not per pass)
    assert facts["files"] == 7
    assert facts["sampled"] == 6
    assert throughput["sample_files"] == 6
    assert throughput["cold"]["files"] == 6


def test_flat_folder_sizes_fill_each_bucket_and_fifos_are_never_opened(tmp_path: Path) -> None:
    root = tmp_path / "flat"
    sizes = [10, 20 * 1024, 100 * 1024, 300 * 1024, 2 * 1024 * 1024, 17 * 1024 * 1024]
    files = [write(root / f"f{index}.BIN", os.urandom(size)) for index, size in enumerate(sizes)]
    (root / "empty-subfolder").mkdir()
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe")  # opening it for reading would block forever
    facts, throughput = collect_untouched(root)
    assert facts["complete"] is True
    assert facts["layout"] == "flat"
    assert facts["class_folders"] is None
    assert facts["files"] == 6
    assert facts["dirs"] == 2
    assert facts["bytes"] == sum(sizes)
    assert facts["size_histogram"] == dict.fromkeys(SIZE_BUCKETS, 1)
    assert facts["formats"] == {".bin": 6}  # lower case
    assert facts["magic"] == {"unknown": 6}
    assert throughput["cold"]["bytes"] == throughput["warm"]["bytes"] == file_sizes(*files)


def test_empty_folder(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    facts, throughput = collect_untouched(root)
    assert facts["complete"] is True
    assert facts["layout"] == "empty"
    assert facts["files"] == 0
    assert facts["dirs"] == 1
    assert facts["bytes"] == 0
    assert facts["mean_file_bytes"] is None
    assert facts["reasons"]["mean_file_bytes"] == "no files"
    assert facts["size_histogram"] == dict.fromkeys(SIZE_BUCKETS, 0)
    assert facts["formats"] == {}
    assert facts["magic"] == {"unknown": 0}
    assert facts["sampled"] == 0
    assert throughput["cold"] is None
    assert throughput["warm"] is None
    assert throughput["sample_files"] == 0
    assert throughput["reasons"]["cold"] == "no readable files to sample"


def test_sharded_folder_of_tar_and_tfrecord(tmp_path: Path) -> None:
    root = tmp_path / "shards"
    for index in range(3):
        members = {f"{index:06d}_{n}.jpg": jpeg_bytes() for n in range(2)}
        members.update({f"{index:06d}_{n}.cls": b"7" for n in range(2)})
        write_tar(root / f"shard-{index:06d}.tar", members)
    write(root / "train-00000-of-00001.tfrecord", tfrecord_bytes([b"a" * 30, b"bb", b""]))
    write(root / "index.json", b'{"shards": 4}')
    facts, _ = collect_untouched(root)
    assert facts["layout"] == "sharded"
    assert facts["formats"] == {".tar": 3, ".json": 1, ".tfrecord": 1}
    assert facts["magic"] == {"tar": 3, "tfrecord": 1, "unknown": 1}
    assert facts["class_folders"] is None


def test_lmdb_folder_is_sharded(tmp_path: Path) -> None:
    root = tmp_path / "lmdb"
    write(root / "train.lmdb" / "data.mdb", b"\x00" * 8192)
    write(root / "train.lmdb" / "lock.mdb", b"\x00" * 8192)
    facts, _ = collect_untouched(root)
    assert facts["layout"] == "sharded"
    assert facts["magic"] == {"lmdb": 1, "unknown": 1}


def test_magic_bytes_of_every_format(tmp_path: Path) -> None:
    root = tmp_path / "formats"
    noise_image(root / "a.jpg", (40, 30), "JPEG")
    noise_image(root / "a.png", (40, 30), "PNG")
    noise_image(root / "a.webp", (40, 30), "WEBP")
    noise_image(root / "a.gif", (40, 30), "GIF")
    noise_image(root / "a.bmp", (40, 30), "BMP")
    noise_image(root / "a.tif", (40, 30), "TIFF")
    write(root / "a.h5", b"\x89HDF\r\n\x1a\n" + b"\x00" * 504)
    write(root / "a.npy", npy_bytes())
    with zipfile.ZipFile(root / "a.npz", "w") as archive:
        archive.writestr("arr_0.npy", npy_bytes())
    write(root / "a.parquet", b"PAR1" + b"\x15\x00" * 40 + struct.pack("<I", 80) + b"PAR1")
    write_tar(root / "a.tar", {"x.jpg": jpeg_bytes()})
    write(root / "a.tfrecord", tfrecord_bytes([b"record one", b"record two"]))
    write(root / "db" / "data.mdb", b"\x00" * 4096)
    # and files that must not be taken for what they claim or resemble
    write(root / "corrupt.jpg", b"\x00\x01garbage" * 50)
    bad_crc = bytearray(tfrecord_bytes([b"payload"]))
    bad_crc[8] ^= 0xFF
    write(root / "bad.tfrecord", bytes(bad_crc))
    write(root / "BMW.txt", b"BMW is a car maker, not a bitmap header.\n")
    write(root / "notes.bin", b"plain bytes")
    facts, _ = collect_untouched(root)
    assert facts["sampled"] == 17
    assert facts["magic"] == {
        "bmp": 1,
        "gif": 1,
        "hdf5": 1,
        "jpeg": 1,
        "lmdb": 1,
        "npy": 1,
        "npz": 1,
        "parquet": 1,
        "png": 1,
        "tar": 1,
        "tfrecord": 1,
        "tiff": 1,
        "webp": 1,
        "unknown": 4,
    }
    assert facts["formats"][".jpg"] == 2  # the corrupt one counts by its extension
    assert facts["formats"][".tfrecord"] == 2


def test_numpy_save_is_npy_when_numpy_is_installed(tmp_path: Path) -> None:
    numpy = pytest.importorskip("numpy")
    root = tmp_path / "arrays"
    root.mkdir()
    numpy.save(root / "x.npy", numpy.arange(10))
    numpy.savez(root / "y.npz", a=numpy.arange(3))
    facts, _ = collect_untouched(root)
    assert facts["magic"] == {"npy": 1, "npz": 1, "unknown": 0}


@pytest.mark.parametrize(
    ("name", "head", "kind"),
    [
        ("x", b"\xff\xd8\xff\xe0\x00\x10JFIF", "jpeg"),
        ("x", b"\x89PNG\r\n\x1a\n", "png"),
        ("x", b"RIFF\x24\x00\x00\x00WEBPVP8 ", "webp"),
        ("x", b"RIFF\x24\x00\x00\x00WAVEfmt ", "unknown"),
        ("x", b"GIF89a\x01\x00", "gif"),
        ("x", b"BM\x36\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00", "bmp"),
        ("x", b"BMW is a car maker", "unknown"),
        ("x", b"II*\x00\x08\x00\x00\x00", "tiff"),
        ("x", b"MM\x00*\x00\x00\x00\x08", "tiff"),
        ("x", b"\x89HDF\r\n\x1a\n", "hdf5"),
        ("x", b"\x93NUMPY\x01\x00", "npy"),
        ("x", b"PK\x03\x04\x14\x00", "npz"),
        ("x", b"PAR1\x15\x04", "parquet"),
        ("x", b"\x00" * 257 + b"ustar\x0000", "tar"),
        ("data.mdb", b"\x00" * 16, "lmdb"),
        ("x", tfrecord_bytes([b"abc"]), "tfrecord"),
        ("x", b"", "unknown"),
    ],
)
def test_magic_kind(name: str, head: bytes, kind: str) -> None:
    assert magic_kind(name, head) == kind


def test_crc32c_known_values() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc32c(b"") == 0
    for data in (b"", b"a", b"\x00" * 8, os.urandom(100)):
        assert crc32c(data) == _crc32c_bitwise(data)
        assert masked_crc32c(data) == _masked(data)


@pytest.mark.parametrize(
    ("size", "bucket"),
    [
        (0, "<16KiB"),
        (16 * 1024 - 1, "<16KiB"),
        (16 * 1024, "16-64KiB"),
        (64 * 1024, "64-256KiB"),
        (256 * 1024, "256KiB-1MiB"),
        (1024 * 1024 - 1, "256KiB-1MiB"),
        (1024 * 1024, "1-16MiB"),
        (16 * 1024 * 1024, ">=16MiB"),
    ],
)
def test_size_buckets(size: int, bucket: str) -> None:
    assert size_bucket(size) == bucket


def test_spread_takes_one_file_per_folder_first() -> None:
    folders = [["a1", "a2", "a3"], ["b1"], ["c1", "c2"]]
    assert spread(folders, 4) == ["a1", "b1", "c1", "a2"]
    assert spread(folders, 100) == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert spread([], 5) == []


def test_magic_sample_is_spread_across_many_folders(tmp_path: Path) -> None:
    root = tmp_path / "many"
    for folder in range(100):
        for index in range(3):
            write(root / f"class{folder:03d}" / f"{index}.jpg", b"\xff\xd8\xff" + bytes(20))
    facts, throughput = collect_untouched(root)
    assert facts["sampled"] == MAGIC_SAMPLE
    assert facts["magic"] == {"jpeg": MAGIC_SAMPLE, "unknown": 0}
    assert throughput["sample_files"] == READ_SAMPLE
    assert facts["class_folders"] == 100


def test_nested_layout_is_estimated_per_depth_when_the_budget_runs_out(tmp_path: Path) -> None:
    """root/split{0,1}/cls{00..49}/20 files: the walk stops inside depth 2."""
    root = tmp_path / "nested"
    for split in range(2):
        for cls in range(50):
            folder = root / f"split{split}" / f"cls{cls:02d}"
            folder.mkdir(parents=True)
            for index in range(20):
                (folder / f"{index}.txt").write_bytes(b"0123456789")
    # about 2,300 clock readings for the whole walk; stop it after about 1,300
    facts, _ = collect_untouched(root, budget=1.0, clock=TickClock(WALK_SHARE / 1300))
    assert facts["complete"] is False
    assert "estimates" in facts["reasons"]["complete"]
    assert 1000 <= facts["files"] <= 4000  # truly 2,000
    assert 51 <= facts["dirs"] <= 206  # truly 103
    assert 10_000 <= facts["bytes"] <= 40_000
    assert facts["layout"] == "nested"


def test_estimate_extrapolates_each_depth_from_its_listed_folders() -> None:
    level = Level
    exact = estimate(
        [
            level(known=1, visited=1, listed=1, files=5, bytes=50, subdirs=2),
            level(known=2, visited=2, listed=2, files=10, bytes=100, subdirs=0),
        ],
        files_seen=15,
        bytes_seen=150,
    )
    assert exact == Estimate(files=15, dirs=3, bytes=150, note=None)

    # DIR holds 10 folders; 4 listed (100 files, 2 subfolders each); depth 2 never listed
    partial = estimate(
        [
            level(known=1, visited=1, listed=1, files=0, subdirs=10),
            level(known=10, visited=5, listed=4, files=400, bytes=4000, subdirs=8),
            level(known=8),
        ],
        files_seen=430,
        bytes_seen=4300,
    )
    assert partial.files == 1000 + 20 * 100  # depth 1: 400 × 10/4; depth 2: 20 × 100
    assert partial.bytes == 10_000 + 20 * 1000
    assert partial.dirs == 1 + 10 + 20
    assert partial.note is not None
    assert "depth 2" in partial.note
    assert "depth 1" in partial.note

    lower = estimate([level(known=1, visited=1)], files_seen=50, bytes_seen=500)
    assert (lower.files, lower.dirs, lower.bytes) == (50, 1, 500)
    assert lower.note is not None
    assert lower.note.startswith("a lower bound")


def test_walk_stopped_inside_the_top_folder_reports_a_lower_bound(tmp_path: Path) -> None:
    root = tmp_path / "big-flat"
    root.mkdir()
    for index in range(500):
        (root / f"{index}.jpg").write_bytes(b"\xff\xd8\xff" + bytes(7))
    facts, _ = collect_untouched(root, budget=1.0, clock=TickClock(WALK_SHARE / 100))
    assert facts["complete"] is False
    assert 0 < facts["files"] < 500
    assert facts["reasons"]["files"].startswith("a lower bound")
    assert facts["layout"] == "flat"


def test_zero_budget_returns_without_error(tmp_path: Path) -> None:
    write(tmp_path / "d" / "a" / "x.jpg", b"\xff\xd8\xff")
    facts, throughput = collect_untouched(tmp_path / "d", budget=0.0)
    assert facts["complete"] is False
    assert facts["layout"] is None
    assert "layout" in facts["reasons"]
    assert throughput["cold"] is None
    assert throughput["reasons"]["cold"]


@pytest.mark.slow
def test_two_hundred_thousand_files_are_estimated_within_the_budget(tmp_path: Path) -> None:
    root = tmp_path / "big"
    try:
        _scale_test(root)
    finally:  # 200,000 entries should not linger in pytest's kept temporary folders
        shutil.rmtree(root, ignore_errors=True)


def _make_files(root: Path, folders: int, per_folder: int) -> None:
    """`folders` × `per_folder` files of 10 bytes. Each folder's first file is written, the
    others are hard links to it: as real to a walk (a directory entry of a regular file)
    as separate files, but with no inode to allocate each, so quick even on a slow disk."""
    root.mkdir()
    for folder in range(folders):
        path = root / f"class{folder:03d}"
        path.mkdir()
        first = path / "0000.jpg"
        first.write_bytes(b"0123456789")
        target, prefix = os.fspath(first), os.fspath(path) + os.sep
        for index in range(1, per_folder):
            name = f"{prefix}{index:04d}.jpg"
            try:
                os.link(target, name)
            except OSError:  # a file system without hard links
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, b"0123456789")
                os.close(fd)


def _scale_test(root: Path) -> None:
    _make_files(root, 200, 1000)
    truth = 200_000
    before = listing(root)  # once around both runs: 200,000 lstat calls take a while

    # deterministic: the walk's share of the budget is spent after ~60,000 clock readings,
    # about 60 of the 200 class folders
    facts, throughput = collect_without_listing(root, budget=1.0, clock=TickClock(1e-5))
    assert facts["complete"] is False
    assert 0.5 * truth <= facts["files"] <= 2 * truth
    assert 0.5 * 10 * truth <= facts["bytes"] <= 2 * 10 * truth
    assert facts["dirs"] == 201
    assert facts["layout"] == "class-folders"
    assert facts["class_folders"] == 200  # every top-level folder is known after an early stop
    assert facts["formats"] == {".jpg": facts["files"]}
    assert facts["size_histogram"]["<16KiB"] == facts["files"]
    assert facts["sampled"] == MAGIC_SAMPLE
    assert throughput["cold"]["files"] > 0
    assert throughput["warm"]["files"] > 0

    # and with the real clock: it returns, with an answer of the right shape
    facts, throughput = collect_without_listing(root, budget=1.0, clock=time.monotonic)
    assert isinstance(facts["files"], int)
    assert facts["files"] > 0
    assert facts["complete"] in (True, False)
    assert listing(root) == before, "the collector changed something inside the data folder"


def test_a_hung_file_system_is_abandoned_and_what_was_seen_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing one folder blocks (as on a dead network mount): the collector still returns."""
    root = tmp_path / "data"
    for name in ("a", "b", "hang"):
        for index in range(5):
            write(root / name / f"{index}.jpg", b"\xff\xd8\xff" + bytes(5))
    release = threading.Event()
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.path.basename(os.fspath(path)) == "hang":
            release.wait(60)
        return real_scandir(path)

    before = listing(root)
    monkeypatch.setattr(os, "scandir", scandir)
    try:
        ctx = CollectContext(interpreter=current(), data=root, data_budget_s=0.2)
        # the clock barely moves, so only the real-time wait (budget + grace) can end it
        sections = dataset.collect(ctx, clock=TickClock(1e-9))
    finally:
        release.set()
        monkeypatch.undo()
    assert listing(root) == before
    facts, throughput = sections["dataset"], sections["read_throughput"]
    assert facts["complete"] is False
    assert "stopped answering" in facts["reasons"]["complete"]
    assert facts["files"] >= 0
    assert throughput["cold"] is None
    assert "no reply" in throughput["reasons"]["cold"]


def test_no_posix_fadvise_means_cache_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    write(root / "a.bin", os.urandom(5000))
    monkeypatch.delattr(os, "posix_fadvise", raising=False)
    _, throughput = collect_untouched(root)
    assert throughput["cold"]["cache_dropped"] is False
    assert "posix_fadvise" in throughput["reasons"]["cache_dropped"]
    assert throughput["method"] == METHOD_NO_FADVISE
    assert throughput["warm"]["files"] == 1


def test_many_extensions_are_capped(tmp_path: Path) -> None:
    root = tmp_path / "frames"
    root.mkdir()
    for index in range(FORMATS_LIMIT + 10):
        (root / f"frame.{index:06d}").write_bytes(b"x")
    facts, _ = collect_untouched(root)
    assert len(facts["formats"]) == FORMATS_LIMIT + 1
    assert facts["formats"]["other"] == 10
    assert sum(facts["formats"].values()) == facts["files"]


def test_without_data_both_sections_are_none() -> None:
    assert dataset.collect(CollectContext(interpreter=current())) == {
        "dataset": None,
        "read_throughput": None,
    }


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_folder_that_cannot_be_walked_gives_reasons(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "nothing"
    if kind == "file":
        path.write_bytes(b"not a folder")
    ctx = CollectContext(interpreter=current(), data=path, data_budget_s=1.0)
    sections = dataset.collect(ctx)
    facts, throughput = sections["dataset"], sections["read_throughput"]
    why = "no such directory" if kind == "missing" else "not a directory"
    assert list(facts) == DATASET_KEYS
    assert facts["complete"] is False
    assert facts["files"] is None
    assert facts["reasons"]["files"] == why
    assert facts["reasons"]["layout"] == why
    assert throughput["cold"] is None
    assert why in throughput["reasons"]["cold"]
