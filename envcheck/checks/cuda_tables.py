"""Version tables the GPU-stack rules compare against, each with its source.

Kept as data in one place so a new CUDA or TensorFlow release is a one-line change.
"""

from __future__ import annotations

from typing import Optional

from packaging.version import Version

# Minimum driver per CUDA major version under minor-version compatibility
# (CUDA Toolkit release notes, "CUDA Driver" table; CUDA 13: release notes of 13.0).
# None: not published in the sources envcheck cites.
MIN_DRIVER_FOR_CUDA_MAJOR: dict[int, dict[str, Optional[str]]] = {
    11: {"Linux": "450.80.02", "Windows": "452.39"},
    12: {"Linux": "525.60.13", "Windows": "527.41"},
    13: {"Linux": "580", "Windows": None},
}
CUDA_DRIVER_SOURCE = (
    "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ (minimum driver for "
    "minor-version compatibility: CUDA 11.x >= 450.80.02 Linux / 452.39 Windows, "
    "12.x >= 525.60.13 / 527.41, 13.x >= 580)"
)

# TensorFlow's tested Linux GPU builds: (first, last) release -> (cuDNN, CUDA)
# (tensorflow/docs, site/en/install/source.md, "Tested build configurations").
TF_TESTED_BUILDS: list[tuple[str, str, str, str]] = [
    ("2.18", "2.18", "9.3", "12.5"),
    ("2.16", "2.17", "8.9", "12.3"),
    ("2.15", "2.15", "8.9", "12.2"),
    ("2.14", "2.14", "8.7", "11.8"),
    ("2.12", "2.13", "8.6", "11.8"),
    ("2.5", "2.11", "8.1", "11.2"),
    ("2.4", "2.4", "8.0", "11.0"),
    ("2.1", "2.3", "7.6", "10.1"),
    ("1.13", "2.0", "7.4", "10.0"),
]
TF_TESTED_SOURCE = (
    "https://www.tensorflow.org/install/source#gpu (tested build configurations, Linux GPU)"
)

# Compute capabilities CUDA 13 no longer builds for: Maxwell, Pascal, Volta (< 7.5).
CUDA13_MIN_CAPABILITY = (7, 5)


# CUDA variants of PyTorch's wheel indexes (https://pytorch.org/get-started/locally/ and
# previous-versions): https://download.pytorch.org/whl/cu118 ... cu130.
PYTORCH_CUDA_INDEXES = ("11.8", "12.1", "12.4", "12.6", "12.8", "12.9", "13.0")


def pytorch_index_for(driver_cuda: Optional[str]) -> str:
    """The newest PyTorch CUDA wheel index the driver can run, or a placeholder."""
    if driver_cuda:
        try:
            limit = Version(driver_cuda)
        except ValueError:
            limit = None
        if limit is not None:
            fitting = [c for c in PYTORCH_CUDA_INDEXES if Version(c) <= limit]
            if fitting:
                return "https://download.pytorch.org/whl/cu" + fitting[-1].replace(".", "")
    return "https://download.pytorch.org/whl/cuXYZ"


def tf_tested_build(version: Version) -> Optional[tuple[str, str]]:
    """(cuDNN, CUDA) TensorFlow tested `version` with on Linux, None when not in the table."""
    minor = (version.major, version.minor)
    for first, last, cudnn, cuda in TF_TESTED_BUILDS:
        if _mm(first) <= minor <= _mm(last):
            return cudnn, cuda
    return None


def min_driver(cuda_major: int, system: str) -> Optional[str]:
    return MIN_DRIVER_FOR_CUDA_MAJOR.get(cuda_major, {}).get(system)


def driver_key(version: str) -> tuple[int, ...]:
    """NVIDIA driver versions compare numerically field by field: 535.104.05 > 535.54.03."""
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _mm(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)
