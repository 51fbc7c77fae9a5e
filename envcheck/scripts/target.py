"""The machine training scripts are judged against, when it is not the one auditing them.

`envcheck scripts` runs on a laptop or a CI runner, not on the training node. Its
machine-dependent rules (workers against CPUs, mixed precision and TF32 by GPU
generation, spawned workers by platform) read the `platform`, `cpu`, `memory` and `gpu`
sections of the snapshot; `apply` replaces those with the target's:

- `--target SNAPSHOT.json`: what `envcheck collect` saved on the training machine;
- `[target]` in envcheck.toml: `cpus`, `gpus`, `gpu` (a model name such as "A100", its
  compute capability looked up below) or `compute-capability`, and `system`.

Without a target those sections are marked unavailable with the reason, so the rules say
unknown instead of judging the auditing machine. `doctor --script` does not use this: it
judges against the machine it runs on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from envcheck.errors import InputError
from envcheck.snapshot import Snapshot

MACHINE_SECTIONS = ("platform", "cpu", "memory", "gpu")
NO_TARGET = (
    "no target machine declared (envcheck scripts judges machine-dependent rules against "
    "--target SNAPSHOT.json or [target] in envcheck.toml, not the machine it runs on)"
)
TABLE_KEYS = {"cpus", "gpus", "gpu", "compute-capability", "system"}
SYSTEMS = ("Linux", "Windows", "Darwin")
CUDA_GPUS = "https://developer.nvidia.com/cuda-gpus (compute capability by GPU model)"
# Compute capability by model name (NVIDIA's CUDA GPUs list, CUDA_GPUS); the first
# pattern that matches wins, so longer names come before their prefixes.
CAPABILITIES: tuple[tuple[str, str], ...] = (
    (r"\bG?B[12]00\b", "10.0"),
    (r"\bRTX (PRO )?50\d\d\b", "12.0"),
    (r"\bG?H[12]00\b", "9.0"),
    (r"\bL40S?\b|\bL4\b|\bRTX 40\d\d\b|\bAda\b", "8.9"),
    (r"\bA100\b|\bA800\b|\bA30\b", "8.0"),
    (r"\bA10G?\b|\bA40\b|\bA16\b|\bA2\b|\bRTX A\d000\b|\bRTX 30\d\d\b", "8.6"),
    (r"\bT4\b|\bRTX 20\d\d\b|\bGTX 16\d\d\b|\bTITAN RTX\b|\bQuadro RTX\b", "7.5"),
    (r"\bV100\b|\bTITAN V\b", "7.0"),
    (r"\bP100\b", "6.0"),
    (r"\bP40\b|\bP4\b|\bGTX 10\d\d\b", "6.1"),
    (r"\bK80\b", "3.7"),
)


@dataclass(frozen=True)
class Target:
    """The training machine: where it was declared, and its machine sections."""

    source: str
    sections: dict[str, Any] = field(default_factory=dict)


def capability_of(model: str) -> Optional[str]:
    """The compute capability of a GPU model name ("NVIDIA A100-SXM4-80GB" -> "8.0")."""
    for pattern, cap in CAPABILITIES:
        if re.search(pattern, model, re.IGNORECASE):
            return cap
    return None


def from_snapshot(path: Path) -> Target:
    """A snapshot (or saved report) from `envcheck collect` on the training machine,
    checked by the snapshot validator; a bad file is an InputError naming it."""
    try:
        data = Snapshot.load(path).data
    except InputError as exc:
        raise InputError(f"--target {exc}") from None
    sections = {name: data.get(name) for name in MACHINE_SECTIONS}
    if not any(isinstance(s, dict) for s in sections.values()):
        raise InputError(f"--target {path}: the snapshot has no platform, cpu or gpu facts")
    collectors = data.get("collectors") or {}
    return Target(
        f"--target {path}",
        {**sections, "collectors": {k: collectors.get(k) for k in MACHINE_SECTIONS}},
    )


def from_table(table: Any, where: str) -> Target:
    """A `[target]` table: cpus, gpus, gpu or compute-capability, system."""
    if not isinstance(table, dict):
        raise InputError(f"{where}: [target] must be a table")
    extra = sorted(set(table) - TABLE_KEYS)
    if extra:
        raise InputError(
            f"{where}: unknown [target] key(s) {', '.join(extra)} "
            f"(known: {', '.join(sorted(TABLE_KEYS))})"
        )
    sections: dict[str, Any] = {}
    status: dict[str, Any] = {}
    cpus = table.get("cpus")
    if cpus is not None:
        if not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
            raise InputError(f"{where}: [target] cpus must be a whole number >= 1")
        sections["cpu"] = {"logical": cpus, "usable": cpus}
    gpus = table.get("gpus", 1 if ("gpu" in table or "compute-capability" in table) else None)
    if gpus is not None:
        if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 0:
            raise InputError(f"{where}: [target] gpus must be a whole number >= 0")
        sections["gpu"] = {"status": "ok", "reason": None, "devices": _devices(table, gpus, where)}
    system = table.get("system")
    if system is not None:
        if system not in SYSTEMS:
            raise InputError(f"{where}: [target] system must be one of {', '.join(SYSTEMS)}")
        sections["platform"] = {"system": system}
    for name in MACHINE_SECTIONS:
        declared = name in sections
        status[name] = {
            "status": "ok" if declared else "unavailable",
            "reason": None if declared else f"not declared in [target] ({where})",
        }
    return Target(f"[target] in {where}", {**sections, "collectors": status})


def _devices(table: dict[str, Any], count: int, where: str) -> list[dict[str, Any]]:
    if count == 0:
        return []
    model = table.get("gpu")
    cap = table.get("compute-capability")
    if model is not None and not isinstance(model, str):
        raise InputError(f'{where}: [target] gpu must be a model name such as "A100"')
    if cap is not None:
        if not isinstance(cap, str) or not re.fullmatch(r"\d+\.\d+", cap):
            raise InputError(f'{where}: [target] compute-capability must look like "8.0"')
    elif model is not None:
        cap = capability_of(model)
        if cap is None:
            raise InputError(
                f"{where}: [target] gpu {model!r} is not a model envcheck knows; add "
                'compute-capability = "X.Y" (see https://developer.nvidia.com/cuda-gpus)'
            )
    else:
        raise InputError(f"{where}: [target] gpus needs gpu (a model name) or compute-capability")
    return [
        {"index": i, "name": model or f"GPU of compute capability {cap}", "compute_capability": cap}
        for i in range(count)
    ]


def apply(snapshot: Snapshot, target: Optional[Target]) -> Snapshot:
    """The snapshot with its machine sections taken from `target`, or marked unavailable
    (with the reason) when there is none."""
    data = snapshot.as_dict()
    collectors = data.setdefault("collectors", {})
    declared = (target.sections.get("collectors") or {}) if target is not None else {}
    for name in MACHINE_SECTIONS:
        if target is None:
            data[name] = None
            collectors[name] = {"status": "unavailable", "reason": NO_TARGET}
            continue
        data[name] = target.sections.get(name)
        status = declared.get(name) if isinstance(declared.get(name), dict) else None
        collectors[name] = {
            **(status or {"status": "ok" if data[name] else "unavailable", "reason": None}),
            "target": target.source,
        }
    return Snapshot(data)
