"""PyTorch backend: a DataLoader built the way torchvision's ImageNet example builds it.

Each sample: read the file, decode with Pillow, random-resized crop, horizontal flip,
to a float tensor and normalise (ToTensor + Normalize) — on the CPU, in the loader's
workers. The model trains with SGD on the device; cuDNN autotuning is on and happens
during the warm-up steps, which are not timed.
"""

from __future__ import annotations

import contextlib
import gc
import io
import itertools
import math
import platform
import random
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Sampler

from envcheck.probe.child import images
from envcheck.probe.child.errors import ProbeFailure

try:
    import numpy as np
    from PIL import Image
except ImportError as exc:  # torchvision's decoders need both; so does this probe
    raise ProbeFailure(
        "import",
        "the torch probe decodes images with Pillow and NumPy, as torchvision "
        f"does: pip install pillow numpy ({exc})",
    ) from exc

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def _conv(cin: int, cout: int, stride: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
    )


def build_model(name: str, classes: int) -> nn.Module:
    """small-cnn (light: the input pipeline shows), deep-cnn (heavier), or a torchvision
    architecture by name with random weights."""
    if name == "small-cnn":
        widths = [32, 64, 128, 256]
        layers = [_conv(3 if i == 0 else widths[i - 1], w, 2) for i, w in enumerate(widths)]
        return nn.Sequential(
            *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(widths[-1], classes)
        )
    if name == "deep-cnn":
        layers: List[nn.Module] = [_conv(3, 64, 2)]
        cin = 64
        for width in (64, 128, 256, 512):
            layers += [_conv(cin, width, 2), _conv(width, width, 1), _conv(width, width, 1)]
            cin = width
        return nn.Sequential(
            *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)
        )
    try:
        import torchvision.models as tvm
    except ImportError as exc:
        raise ProbeFailure(
            "model",
            f"model {name!r} needs torchvision (not importable: {exc}); "
            "built in: small-cnn, deep-cnn",
        ) from exc
    factory = getattr(tvm, name, None)
    if factory is None or not callable(factory):
        raise ProbeFailure("model", f"torchvision has no model {name!r}")
    return factory(weights=None, num_classes=classes)


def random_resized_crop(img: Any, size: int, rng: random.Random) -> Any:
    """torchvision's RandomResizedCrop(scale=(0.08, 1), ratio=(3/4, 4/3)), with Pillow."""
    width, height = img.size
    area = width * height
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        w = round(math.sqrt(target * ratio))
        h = round(math.sqrt(target / ratio))
        if 0 < w <= width and 0 < h <= height:
            left = rng.randint(0, width - w)
            top = rng.randint(0, height - h)
            return img.resize((size, size), Image.BILINEAR, box=(left, top, left + w, top + h))
    return img.resize((size, size), Image.BILINEAR)


def decode(data: bytes) -> Any:
    img = Image.open(io.BytesIO(data))
    return img.convert("RGB")


class ImageFiles(Dataset):  # type: ignore[type-arg]
    def __init__(
        self, files: Sequence[str], labels: Sequence[int], size: int, throttle_bps: Optional[float]
    ) -> None:
        self.files = list(files)
        self.labels = list(labels)
        self.size = size
        self.throttle_bps = throttle_bps
        self.rng = random.Random(0)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> Any:
        try:
            img = decode(images.read_file(self.files[index], self.throttle_bps))
        except Exception:
            return None  # counted and skipped by collate
        img = random_resized_crop(img, self.size, self.rng)
        if self.rng.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        tensor = torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1)
        tensor = tensor.float().div_(255)
        return (tensor - MEAN) / STD, self.labels[index]


def collate(samples: List[Any]) -> Any:
    good = [s for s in samples if s is not None]
    if not good:
        return torch.empty(0, 3, 1, 1), torch.empty(0, dtype=torch.long), len(samples)
    x = torch.stack([s[0] for s in good])
    y = torch.tensor([s[1] for s in good], dtype=torch.long)
    return x, y, len(samples) - len(good)


class Cycling(Sampler):  # type: ignore[type-arg]
    """Endless passes over the files, each pass freshly shuffled."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __iter__(self) -> Iterator[int]:
        rng = random.Random(1)
        for _ in itertools.count():
            order = list(range(self.count))
            rng.shuffle(order)
            yield from order

    def __len__(self) -> int:
        return 2**31


class TorchBackend:
    framework = "torch"

    def __init__(self, settings: Dict[str, Any]) -> None:
        self.settings = settings
        want = settings.get("device", "auto")
        self.cuda_error: Optional[str] = None
        try:
            cuda = torch.cuda.is_available()
        except Exception as exc:
            cuda, self.cuda_error = False, str(exc)
        if want == "cuda" and not cuda:
            why = f": {self.cuda_error}" if self.cuda_error else ""
            raise ProbeFailure(
                "device",
                f"torch {torch.__version__} cannot use a CUDA GPU "
                f"(cuda build: {torch.version.cuda}){why}",
            )
        self.device = torch.device("cuda:0" if cuda and want != "cpu" else "cpu")
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            torch.backends.cudnn.benchmark = True
        self.model: Any = None
        self.pinned = False

    def describe(self) -> Dict[str, Any]:
        name = torch.cuda.get_device_name(0) if self.cuda else (platform.processor() or "cpu")
        info: Dict[str, Any] = {
            "framework": "torch",
            "version": torch.__version__,
            "device": self.device.type,
            "device_name": name,
            "cuda_build": torch.version.cuda,
            "threads": torch.get_num_threads(),
            "cuda_error": self.cuda_error,
        }
        if self.cuda:
            props = torch.cuda.get_device_properties(0)
            info["pci_bus_id"] = getattr(props, "pci_bus_id", None)
            info["memory_bytes"] = props.total_memory
        return info

    def default_batch_size(self) -> int:
        return 64 if self.cuda else 32

    def warmup_steps(self) -> int:
        return 5 if self.cuda else 2  # cuDNN autotuning tries algorithms in the first steps

    def loader_defaults(self) -> Dict[str, Any]:
        # torch.utils.data.DataLoader's own defaults
        return {"workers": 0, "pin_memory": False, "prefetch": 2}

    def encode_jpeg(self, array: Any) -> bytes:
        out = io.BytesIO()
        Image.fromarray(array).save(out, format="JPEG", quality=images.GENERATED_QUALITY)
        return out.getvalue()

    def decode(self, data: bytes) -> Any:
        img = decode(data)
        img.load()
        return img

    def build(self, name: str, batch: int, size: int, classes: int) -> None:
        self.release()
        torch.manual_seed(0)
        self.model = build_model(name, classes).to(self.device).train()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.loss = nn.CrossEntropyLoss()
        self.synthetic = (
            torch.randn(batch, 3, size, size, device=self.device),
            torch.randint(0, classes, (batch,), device=self.device),
        )

    def release(self) -> None:
        self.model = self.optimizer = self.synthetic = None
        gc.collect()  # reference cycles (autograd graphs) can still hold device memory
        if self.cuda:
            torch.cuda.empty_cache()

    def is_oom(self, exc: BaseException) -> bool:
        oom = getattr(torch.cuda, "OutOfMemoryError", None)
        return (oom is not None and isinstance(exc, oom)) or "out of memory" in str(exc)

    def train_step(self, batch: Any) -> None:
        x, y = batch
        self.optimizer.zero_grad(set_to_none=True)
        self.loss(self.model(x), y).backward()
        self.optimizer.step()

    def compute_step(self) -> None:
        self.train_step(self.synthetic)

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def to_device(self, host: Any) -> Any:
        x, y, _skipped = host
        pinned = self.pinned
        return x.to(self.device, non_blocking=pinned), y.to(self.device, non_blocking=pinned)

    @staticmethod
    def batch_len(host: Any) -> int:
        return int(host[0].shape[0])

    @contextlib.contextmanager
    def open_loader(
        self,
        files: Sequence[str],
        labels: Sequence[int],
        batch: int,
        workers: int,
        pin_memory: bool,
        prefetch: Optional[int],
        throttle_bps: Optional[float],
    ) -> Iterator[Iterator[Any]]:
        dataset = ImageFiles(files, labels, self.settings["image_size"], throttle_bps)
        kwargs: Dict[str, Any] = {}
        if workers > 0 and prefetch and prefetch > 0:  # -1 (tf.data's AUTOTUNE): the default
            kwargs["prefetch_factor"] = prefetch
        loader = DataLoader(
            dataset,
            batch_size=batch,
            sampler=Cycling(len(files)),
            num_workers=workers,
            pin_memory=pin_memory and self.cuda,
            collate_fn=collate,
            drop_last=True,
            **kwargs,
        )
        self.pinned = bool(pin_memory and self.cuda)
        iterator = iter(loader)
        try:
            yield iterator
        finally:
            shutdown = getattr(iterator, "_shutdown_workers", None)
            if shutdown is not None:
                shutdown()
            del iterator

    # the node view's alternatives (alternatives.py) --------------------------------------

    def downscale(self, data: bytes, short_side: int) -> Any:
        """(JPEG bytes with the shorter side at most `short_side`, whether it shrank)."""
        img = decode(data)
        width, height = img.size
        scale = short_side / min(width, height)
        if scale < 1:
            img = img.resize((round(width * scale), round(height * scale)), Image.BILINEAR)
        out = io.BytesIO()
        img.save(out, format="JPEG", quality=images.GENERATED_QUALITY)
        return out.getvalue(), scale < 1

    def gpu_decode_rate(self, blobs: List[bytes], seconds: float) -> Optional[float]:
        """Images/s decoded by torchvision.io.decode_jpeg on the GPU (nvJPEG), batched."""
        from torchvision.io import decode_jpeg

        tensors = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in blobs]
        decode_jpeg(tensors[:2], device=self.device)  # warm-up: nvJPEG handles, memory
        self.sync()
        decoded = 0
        start = time.perf_counter()
        while decoded < 2 * len(tensors) or time.perf_counter() - start < seconds:
            decode_jpeg(tensors, device=self.device)
            self.sync()
            decoded += len(tensors)
        elapsed = time.perf_counter() - start
        return decoded / elapsed if elapsed > 0 else None
