"""Alternatives to the CPU input pipeline, measured on this machine where they can be.

Each result names what it is, where it runs (CPU or GPU), and either a measured rate
against the baseline it replaces or why it could not be measured:

  pre-resized    the same pipeline on downscaled copies of sampled images (CPU)
  packed-shards  cold reads of WebDataset-style tar shards of the sample against cold
                 per-file reads of the same files (CPU, reading only)
  gpu-decode     torchvision.io.decode_jpeg on the GPU (nvJPEG), torch only (GPU)
  dali           NVIDIA DALI decoding and cropping on the GPU, when installed (GPU)

Everything written goes into the probe's temporary folder, never next to the user's data.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import tarfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from envcheck.probe.child import harness, images

# torchvision's ImageNet recipe resizes to 256 before a 224 crop; a pre-resized copy
# keeps that margin for the random crops: shorter side = crop side * 256 / 224.
RESIZE_MARGIN = 256 / 224
SUBSET_FILES = 128  # files used per alternative: enough for a rate, cheap to prepare
SHARD_BYTES = 64 * 2**20  # WebDataset's shards are typically tens to hundreds of MB


def _unavailable(name: str, label: str, reason: str) -> Dict[str, Any]:
    return {"name": name, "label": label, "status": "unavailable", "reason": reason}


def _measured(
    name: str, label: str, rate: Optional[float], baseline: Optional[float], **extra: Any
) -> Dict[str, Any]:
    if not rate or not baseline:
        return {"name": name, "label": label, "status": "failed", "reason": "no rate measured"}
    result = {
        "name": name,
        "label": label,
        "status": "measured",
        "rate": rate,
        "baseline_rate": baseline,
        "speedup": rate / baseline,
    }
    result.update(extra)
    return result


def pre_resized(
    backend: Any,
    files: Sequence[str],
    labels: Sequence[int],
    measure: Callable[[Sequence[str], Sequence[int], float], Optional[float]],
    folder: str,
    seconds: float,
) -> Dict[str, Any]:
    """Downscale a subset once into `folder`, then time the same pipeline on the
    originals and on the copies (`measure(files, labels, seconds) -> samples/s`)."""
    name, label = "pre-resized", "CPU"
    short_side = round(backend.settings["image_size"] * RESIZE_MARGIN)
    deadline = time.monotonic() + seconds * 0.4
    originals: List[str] = []
    copies: List[str] = []
    kept: List[int] = []
    larger = 0
    os.makedirs(folder, exist_ok=True)
    for index, (path, target) in enumerate(zip(files[:SUBSET_FILES], labels[:SUBSET_FILES])):
        if time.monotonic() > deadline and len(copies) >= 8:
            break
        try:
            data = images.read_file(path)
            small, was_larger = backend.downscale(data, short_side)
        except Exception:
            continue
        larger += was_larger
        copy = os.path.join(folder, f"{index:05d}.jpg")
        with open(copy, "wb") as handle:
            handle.write(small)
        originals.append(path)
        copies.append(copy)
        kept.append(target)
    if not copies:
        return {"name": name, "label": label, "status": "failed", "reason": "no image resized"}
    if not larger:
        return _unavailable(
            name, label, f"the sampled images are already no larger than {short_side} px"
        )
    left = max(0.6, seconds - (time.monotonic() - deadline + seconds * 0.4))
    baseline = measure(originals, kept, left / 2)
    rate = measure(copies, kept, left / 2)
    return _measured(
        name, label, rate, baseline, short_side=short_side, files=len(copies), resized=larger
    )


def _read_per_file(files: Sequence[str]) -> float:
    start = time.perf_counter()
    for path in files:
        images.read_file(path)
    return time.perf_counter() - start


def _read_shards(shards: Sequence[str]) -> int:
    """Read every member of every shard sequentially, as a WebDataset reader does."""
    count = 0
    for shard in shards:
        with tarfile.open(shard, mode="r|") as archive:
            for member in archive:
                handle = archive.extractfile(member)
                if handle is not None:
                    handle.read()
                    count += member.name.endswith((".jpg", ".jpeg", ".png"))
    return count


def write_shards(files: Sequence[str], labels: Sequence[int], folder: str) -> List[str]:
    """WebDataset layout: per sample `<key>.<ext>` and `<key>.cls`, shards of SHARD_BYTES."""
    os.makedirs(folder, exist_ok=True)
    groups: List[List[int]] = [[]]
    size = 0
    for index, path in enumerate(files):
        if size >= SHARD_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(index)
        size += os.path.getsize(path)
    shards: List[str] = []
    for members in groups:
        shards.append(os.path.join(folder, f"shard-{len(shards):06d}.tar"))
        with tarfile.open(shards[-1], mode="w") as archive:
            for index in members:
                data = images.read_file(files[index])
                key = f"{index:06d}"
                ext = os.path.splitext(files[index])[1].lower() or ".jpg"
                for member, payload in (
                    (key + ext, data),
                    (key + ".cls", str(labels[index]).encode()),
                ):
                    info = tarfile.TarInfo(member)
                    info.size = len(payload)
                    archive.addfile(info, io.BytesIO(payload))
    _flush(shards)
    return shards


def _flush(paths: Sequence[str]) -> None:
    """Write the shards through to the disk: only clean pages can be dropped."""
    for path in paths:
        with open(path, "rb+") as handle:
            os.fsync(handle.fileno())


def packed_shards(
    files: Sequence[str], labels: Sequence[int], folder: str, seconds: float
) -> Dict[str, Any]:
    """Cold reads: the sampled files one by one, then the same bytes packed in shards."""
    name, label = "packed-shards", "CPU"
    deadline = time.monotonic() + seconds * 0.5
    chosen: List[str] = []
    chosen_labels: List[int] = []
    total = 0
    for path, target in zip(files[:SUBSET_FILES], labels[:SUBSET_FILES]):
        if time.monotonic() > deadline and len(chosen) >= 8:
            break
        with contextlib.suppress(OSError):
            total += os.path.getsize(path)
            chosen.append(path)
            chosen_labels.append(target)
    if len(chosen) < 2:
        return {"name": name, "label": label, "status": "failed", "reason": "too few files"}
    try:
        shards = write_shards(chosen, chosen_labels, folder)
    except OSError as exc:
        return _unavailable(name, label, f"cannot write shards in the temporary folder: {exc}")
    dropped = images.drop_cached_pages(chosen) and images.drop_cached_pages(shards)
    per_file_s = _read_per_file(chosen)
    start = time.perf_counter()
    read = _read_shards(shards)
    shard_s = time.perf_counter() - start
    same_fs = _same_filesystem(chosen[0], shards[0])
    images.drop_cached_pages(chosen)  # leave the originals as the cold runs found them
    return _measured(
        name,
        label,
        read / shard_s if shard_s > 0 else None,
        len(chosen) / per_file_s if per_file_s > 0 else None,
        files=len(chosen),
        bytes=total,
        shards=len(shards),
        pages_dropped=dropped,
        same_filesystem=same_fs,
        unit="files read/s, cold",
    )


def _same_filesystem(a: str, b: str) -> Optional[bool]:
    try:
        return os.stat(a).st_dev == os.stat(b).st_dev
    except OSError:
        return None


def gpu_decode(
    backend: Any, files: Sequence[str], baseline: Optional[float], seconds: float
) -> Dict[str, Any]:
    """torchvision.io.decode_jpeg(device="cuda") on batches of the sampled JPEGs."""
    name, label = "gpu-decode", "GPU"
    if backend.framework != "torch":
        return _unavailable(
            name,
            label,
            "measured with the torch backend only (torchvision.io.decode_jpeg); tf.data runs "
            "its map functions on the CPU",
        )
    if not getattr(backend, "cuda", False):
        return _unavailable(name, label, "no CUDA GPU visible to torch")
    if importlib.util.find_spec("torchvision") is None:
        return _unavailable(name, label, "torchvision is not installed (pip install torchvision)")
    jpegs = [p for p in files[:SUBSET_FILES] if p.lower().endswith((".jpg", ".jpeg"))]
    if not jpegs:
        return _unavailable(name, label, "no JPEG files in the sample")
    try:
        rate = backend.gpu_decode_rate([images.read_file(p) for p in jpegs], seconds)
    except Exception as exc:  # an old torchvision, a driver without nvJPEG...
        return {"name": name, "label": label, "status": "failed", "reason": _line(exc)}
    return _measured(name, label, rate, baseline, files=len(jpegs), baseline_is="input_warm")


def dali(
    backend: Any,
    files: Sequence[str],
    labels: Sequence[int],
    batch: int,
    baseline: Optional[float],
    seconds: float,
) -> Dict[str, Any]:
    """NVIDIA DALI's file reader, mixed (GPU) JPEG decoding, random crop and resize."""
    name, label = "dali", "GPU"
    if (
        importlib.util.find_spec("nvidia") is None
        or importlib.util.find_spec("nvidia.dali") is None
    ):
        return _unavailable(
            name, label, "NVIDIA DALI is not installed (pip install nvidia-dali-cuda120)"
        )
    if not (getattr(backend, "cuda", False) or getattr(backend, "gpu", False)):
        return _unavailable(name, label, "no CUDA GPU visible to the framework")
    try:
        rate = _dali_rate(list(files), list(labels), batch, backend.settings["image_size"], seconds)
    except Exception as exc:
        return {"name": name, "label": label, "status": "failed", "reason": _line(exc)}
    return _measured(name, label, rate, baseline, baseline_is="input_warm")


def _dali_rate(files: List[str], labels: List[int], batch: int, size: int, seconds: float) -> Any:
    from nvidia.dali import fn, pipeline_def  # type: ignore[import-not-found]

    threads = max(1, len(os.sched_getaffinity(0)))

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0)  # type: ignore[untyped-decorator]
    def pipe() -> Any:
        jpegs, targets = fn.readers.file(files=files, labels=labels, random_shuffle=True)
        decoded = fn.decoders.image_random_crop(jpegs, device="mixed")
        return fn.resize(decoded, resize_x=size, resize_y=size), targets

    pipeline = pipe()
    pipeline.build()

    class Batches:
        def __next__(self) -> Any:
            return pipeline.run()

    result = harness.input_loop(Batches(), lambda _: batch, seconds)  # type: ignore[arg-type]
    return result["rate"]


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return "{}: {}".format(type(exc).__name__, text[0] if text else "")
