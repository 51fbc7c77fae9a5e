"""The probe's image files: a sample of the user's image folder, or a generated one.

Image-folder layout as torchvision's ImageFolder and Keras' `image_dataset_from_directory`
read it: one subfolder per class, JPEG/PNG files inside (files directly in the root form
one class). Nothing here writes into the user's folder: dropping cached pages
(`posix_fadvise(DONTNEED)`) only asks the kernel to forget clean copies.
"""

from __future__ import annotations

import errno
import os
import random
import stat
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
# Read at most this much of one file: a FIFO or a huge sparse file named *.jpg must not
# block the probe or exhaust its memory. Photos, even 50-megapixel PNGs, stay below it.
MAX_FILE_BYTES = 64 * 2**20
# The walk of a user's folder stops after this many entries or seconds and samples from
# what it saw: enough to draw `sample_files` from, and bounded on multi-million-file trees.
MAX_WALK_ENTRIES = 200_000
MAX_WALK_S = 10.0

# Generated files: ImageNet-like JPEGs. ImageNet's training images average about
# 400x350 pixels and 110 KB; 500x375 is its most common size.
GENERATED_SIZE = (500, 375)
GENERATED_DISTINCT = 24  # distinct pictures; the files are byte copies (same decode cost)
GENERATED_QUALITY = 90


def list_image_folder(
    root: str,
    limit: int,
    seed: int = 0,
    max_entries: int = MAX_WALK_ENTRIES,
    max_seconds: float = MAX_WALK_S,
) -> Tuple[List[str], List[int], int, bool]:
    """A random sample (at most `limit`) of image files under root and their class indices.

    Returns (files, labels, image files seen, whether the whole tree was walked). The walk
    is bounded (a multi-million-file tree must not stall the probe): it stops after
    `max_entries` directory entries or `max_seconds`, and the sample (reservoir sampling,
    so memory stays at `limit`) is then drawn from what was seen. Unreadable subfolders
    are skipped.
    """
    rng = random.Random(seed)
    sample: List[Tuple[str, str]] = []
    seen = entries = 0
    deadline = time.monotonic() + max_seconds
    complete = True
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root)
        label_name = "." if rel == "." else rel.split(os.sep)[0]
        entries += len(dirnames) + len(filenames)
        for name in sorted(filenames):
            if not name.lower().endswith(IMAGE_EXTENSIONS):
                continue
            seen += 1
            item = (os.path.join(dirpath, name), label_name)
            if len(sample) < limit:
                sample.append(item)
            else:
                slot = rng.randrange(seen)
                if slot < limit:
                    sample[slot] = item
        if entries >= max_entries or time.monotonic() > deadline:
            complete = False
            break
    classes = sorted({label for _, label in sample})
    index = {name: i for i, name in enumerate(classes)}
    return [p for p, _ in sample], [index[label] for _, label in sample], seen, complete


def generate_dataset(
    root: str, count: int, encode_jpeg: Callable[[object], bytes], classes: int = 10
) -> Tuple[List[str], List[int]]:
    """Write `count` real JPEG files into class folders under root (a temporary folder).

    `encode_jpeg` takes an HxWx3 uint8 NumPy array (the backend's own encoder). The
    pictures are smooth colour fields with noise, so they compress like photographs.
    """
    import numpy as np

    width, height = GENERATED_SIZE
    rng = np.random.default_rng(0)
    blobs = []
    for _ in range(GENERATED_DISTINCT):
        coarse = rng.integers(0, 256, size=(height // 25 + 1, width // 25 + 1, 3)).astype(
            np.float32
        )
        smooth = np.kron(coarse, np.ones((25, 25, 1), dtype=np.float32))[:height, :width]
        noise = rng.normal(0.0, 18.0, size=(height, width, 3))
        picture = np.clip(smooth + noise, 0, 255).astype(np.uint8)
        blobs.append(encode_jpeg(picture))
    files: List[str] = []
    labels: List[int] = []
    for i in range(count):
        label = i % classes
        folder = os.path.join(root, f"class_{label:02d}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"img_{i:05d}.jpg")
        with open(path, "wb") as handle:
            handle.write(blobs[i % len(blobs)])
        files.append(path)
        labels.append(label)
    _flush_to_disk(files)  # only clean pages can be dropped for the cold runs
    return files, labels


def _flush_to_disk(files: Sequence[str]) -> None:
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd) if hasattr(os, "fdatasync") else os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def available_memory_bytes() -> Optional[int]:
    """MemAvailable from /proc/meminfo (Linux); None elsewhere."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def drop_cached_pages(files: Sequence[str]) -> bool:
    """Ask the kernel to forget the files' cached pages; False where it cannot be asked."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return False
    dropped = False
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            dropped = True
        except OSError:
            pass
        finally:
            os.close(fd)
    return dropped


def unusable(path: str) -> Optional[str]:
    """Why the file cannot be a sample (not a regular file, too large), or None."""
    try:
        info = os.stat(path)
    except OSError:
        return None  # reading it reports the problem
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > MAX_FILE_BYTES:
        return f"larger than {MAX_FILE_BYTES // 2**20} MiB"
    return None


def read_file(path: str, throttle_bps: Optional[float] = None) -> bytes:
    """The file's bytes; with throttle_bps, no faster than that (a slow-disk stand-in).

    OSError for anything but a regular file of at most MAX_FILE_BYTES: opened without
    blocking (a FIFO would wait for a writer forever), checked, read with a cap."""
    start = time.perf_counter()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_FILE_BYTES} bytes", path)
    if throttle_bps:
        wait = len(data) / throttle_bps - (time.perf_counter() - start)
        if wait > 0:
            time.sleep(wait)
    return data


def validate(
    files: Sequence[str],
    labels: Sequence[int],
    decode: Callable[[bytes], object],
    seconds: float,
) -> Dict[str, Any]:
    """Read and decode each file once, serially, within `seconds`: finds corrupt files,
    times one sample's read and decode on one core, and warms the page cache.

    Returns {"files", "labels", "corrupt", "corrupt_examples", "skipped", "read_s",
    "decode_s", "bytes", "checked"}; files not reached in time are kept (unchecked) when
    they are regular files of a readable size; the others are skipped.
    """
    good_files: List[str] = []
    good_labels: List[int] = []
    corrupt: List[str] = []
    skipped: List[str] = []
    read_s = decode_s = 0.0
    total_bytes = checked = 0
    deadline = time.monotonic() + seconds
    for index, (path, label) in enumerate(zip(files, labels, strict=False)):
        if time.monotonic() > deadline and checked >= 8:
            rest = [(f, lab) for f, lab in zip(files[index:], labels[index:]) if not unusable(f)]
            skipped.extend(f for f in files[index:] if unusable(f))
            good_files.extend(f for f, _ in rest)
            good_labels.extend(lab for _, lab in rest)
            break
        if unusable(path):
            skipped.append(path)
            continue
        t0 = time.perf_counter()
        try:
            data = read_file(path)
        except OSError:
            corrupt.append(path)
            continue
        t1 = time.perf_counter()
        try:
            decode(data)
        except Exception:
            corrupt.append(path)
            continue
        t2 = time.perf_counter()
        read_s += t1 - t0
        decode_s += t2 - t1
        total_bytes += len(data)
        checked += 1
        good_files.append(path)
        good_labels.append(label)
    return {
        "files": good_files,
        "labels": good_labels,
        "corrupt": len(corrupt),
        "corrupt_examples": corrupt[:5],
        "skipped": len(skipped),
        "read_s": read_s / checked if checked else None,
        "decode_s": decode_s / checked if checked else None,
        "mean_bytes": total_bytes / checked if checked else None,
        "checked": checked,
    }
