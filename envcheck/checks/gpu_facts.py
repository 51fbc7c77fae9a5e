"""Readings of the `gpu` and `frameworks` sections that several GPU rules share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from envcheck.engine.rule import Hit
from envcheck.snapshot import Facts, Missing


def devices(facts: Facts) -> Union[list[dict[str, Any]], Missing]:
    """The GPUs NVML reported; Missing when NVML could not be asked."""
    gpu = facts.section("gpu")
    if isinstance(gpu, Missing):
        return gpu
    if gpu.get("status") != "ok":
        if gpu.get("pci_nvidia_devices") == 0:
            return []  # no driver, and no NVIDIA GPU on the PCI bus either
        return Missing(f"GPU facts unavailable: {gpu.get('reason') or 'no reason given'}")
    return [d for d in gpu.get("devices") or [] if isinstance(d, dict)]


def nvidia_gpu_present(facts: Facts) -> Union[bool, Missing]:
    """Whether the machine has an NVIDIA GPU, from NVML or, without a driver, from PCI."""
    gpu = facts.section("gpu")
    if isinstance(gpu, Missing):
        return gpu
    if gpu.get("devices"):
        return True
    pci = gpu.get("pci_nvidia_devices")
    if isinstance(pci, int):
        return pci > 0
    if gpu.get("status") == "ok":
        return False  # NVML answered and counted no device
    return Missing(f"cannot tell whether an NVIDIA GPU is present: {gpu.get('reason')}")


def label(device: dict[str, Any]) -> str:
    return f"GPU {device.get('index', '?')} {device.get('name') or 'unknown model'}"


def device_hit(device: dict[str, Any], values: dict[str, Any], **observed: Any) -> Hit:
    """A finding about one GPU: its label as {device}, and the facts that show it."""
    return Hit(
        values={"device": label(device), **values},
        evidence={"facts": {"device": device.get("index"), **observed}},
    )


@dataclass(frozen=True)
class FrameworkCuda:
    """A framework build and the CUDA version it was built against."""

    framework: str  # "torch 2.3.1+cu121"
    cuda: str  # "12.1"

    @property
    def major(self) -> int:
        return int(self.cuda.split(".")[0])


def framework_cuda_builds(facts: Facts) -> Union[list[FrameworkCuda], Missing]:
    """Every installed framework built against CUDA, with that CUDA version."""
    frameworks = facts.section("frameworks")
    if isinstance(frameworks, Missing):
        return frameworks
    builds = []
    torch = frameworks.get("torch")
    if isinstance(torch, dict) and torch.get("cuda"):
        builds.append(FrameworkCuda(f"torch {torch.get('version')}", str(torch["cuda"])))
    tf = frameworks.get("tensorflow")
    if isinstance(tf, dict) and tf.get("is_cuda_build") and tf.get("cuda_version"):
        name = tf.get("distribution") or "tensorflow"
        builds.append(FrameworkCuda(f"{name} {tf.get('version')}", str(tf["cuda_version"])))
    jax = frameworks.get("jax")
    if isinstance(jax, dict):
        for dist, version in sorted((jax.get("cuda_plugins") or {}).items()):
            match = re.search(r"cuda(\d+)", dist)
            if match:
                builds.append(FrameworkCuda(f"{dist} {version}", match.group(1)))
    return builds


def capability(device: dict[str, Any]) -> Optional[tuple[int, int]]:
    text = device.get("compute_capability")
    if not isinstance(text, str) or "." not in text:
        return None
    major, minor = text.split(".", 1)
    try:
        return int(major), int(minor)
    except ValueError:
        return None


def arch_supported(cap: tuple[int, int], arch_list: list[str]) -> bool:
    """Whether a build's architecture list can run on a device of compute capability `cap`.

    A cubin for sm_XY runs on devices of the same major version and an equal or higher
    minor (binary compatibility); PTX for compute_XY is JIT-compiled for any device of
    capability XY or higher (CUDA C++ Programming Guide, "Binary Compatibility" and
    "PTX Compatibility").
    """
    for arch in arch_list:
        match = re.fullmatch(r"(sm|compute)_(\d+)(\d)[a-z]?", arch.strip())
        if not match:
            continue
        kind, major, minor = match.group(1), int(match.group(2)), int(match.group(3))
        if kind == "sm" and major == cap[0] and minor <= cap[1]:
            return True
        if kind == "compute" and (major, minor) <= cap:
            return True
    return False
