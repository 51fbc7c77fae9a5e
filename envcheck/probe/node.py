"""The node around one training process: how many processes share its CPU cores.

Data-parallel training runs one process per GPU, each with its own loader workers, all
on the same cores. The probe measures one process with the cores it really gets, so its
worker advice is per process and adds up within the node. Where the count comes from,
first found wins: --procs-per-node, torchrun's LOCAL_WORLD_SIZE, Slurm's
SLURM_NTASKS_PER_NODE, the GPUs the node shows (CUDA_VISIBLE_DEVICES, else the NVML
device count in the snapshot), else one process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

# PyTorch Lightning's suggestion for DataLoader workers in DDP (data_connector.py):
# max(1, cpus // world_size - 1). The floor the probe's measured count is compared with.
LIGHTNING_RULE = "max(1, cpus // processes - 1)"


@dataclass(frozen=True)
class NodeShape:
    """How many training processes this node runs and which cores each one gets."""

    processes: int
    source: str  # where the count came from, e.g. "LOCAL_WORLD_SIZE=8"
    usable_cores: int

    @property
    def cores_per_process(self) -> int:
        """Each process's share of the usable cores (at least one: it still runs)."""
        return max(1, self.usable_cores // self.processes)

    @property
    def worker_cap(self) -> int:
        """The most loader workers per process whose sum stays within the usable cores."""
        return self.usable_cores // self.processes


def lightning_workers(cores: int, processes: int) -> int:
    """Lightning's suggested num_workers per process (LIGHTNING_RULE)."""
    return max(1, cores // max(1, processes) - 1)


def _positive(text: Optional[str]) -> Optional[int]:
    """The leading count of an environment value ("8", Slurm's "4(x2)"); None if none."""
    match = re.match(r"\s*(\d+)", text or "")
    if not match:
        return None
    value = int(match.group(1))
    return value if value > 0 else None


def _visible_gpus(environ: Mapping[str, str], devices: int) -> Optional[int]:
    """How many of the node's GPUs CUDA_VISIBLE_DEVICES leaves visible (None when unset)."""
    if "CUDA_VISIBLE_DEVICES" not in environ:
        return None
    entries = [e.strip() for e in environ["CUDA_VISIBLE_DEVICES"].split(",") if e.strip()]
    valid = []
    for entry in entries:
        # CUDA stops at the first invalid index; UUIDs and MIG ids count as one device each
        if entry.isdigit() and int(entry) >= devices:
            break
        if entry.startswith("-"):
            break
        valid.append(entry)
    return len(valid)


def node_shape(
    facts: Mapping[str, Any],
    environ: Mapping[str, str],
    usable_cores: int,
    requested: Optional[int] = None,
) -> NodeShape:
    """Processes per node and where the count came from (see the module docstring)."""
    if requested is not None:
        return NodeShape(requested, "--procs-per-node", usable_cores)
    for name in ("LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"):
        count = _positive(environ.get(name))
        if count:
            return NodeShape(count, f"{name}={environ[name]}", usable_cores)
    gpu = facts.get("gpu") or {}
    devices = len(gpu.get("devices") or []) if gpu.get("status") == "ok" else 0
    if devices:
        visible = _visible_gpus(environ, devices)
        if visible is not None and visible > 0:
            return NodeShape(
                visible,
                f"CUDA_VISIBLE_DEVICES={environ['CUDA_VISIBLE_DEVICES']} "
                f"({visible} of {devices} GPUs)",
                usable_cores,
            )
        if visible is None:
            return NodeShape(devices, f"{devices} GPU(s) seen by NVML", usable_cores)
    return NodeShape(1, "no GPUs and no launcher variables: one process", usable_cores)


def per_process_candidates(shape: NodeShape) -> list[int]:
    """Worker counts to sweep for one process: 0, 1, 2, 4, ... up to its share, and in
    data-parallel runs Lightning's count when it fits, so the floor to beat is measured."""
    cap = shape.worker_cap
    values = [0]
    n = 1
    while n <= cap:
        values.append(n)
        n *= 2
    if cap >= 1 and cap not in values:
        values.append(cap)
    lightning = lightning_workers(shape.usable_cores, shape.processes)
    if shape.processes > 1 and lightning <= cap and lightning not in values:
        values.append(lightning)
    return sorted(values)
