"""One probe run against a snapshot's interpreter and GPU: sampler, child, summary."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Optional

from envcheck.probe.analysis import summarize
from envcheck.probe.progress import ProbeProgress
from envcheck.probe.runner import run_probe
from envcheck.probe.sampler import Sampler, close_nvml, load_nvml
from envcheck.probe.settings import ProbeSettings, usable_cores


def probed_gpu_index(environ: Mapping[str, str]) -> int:
    """The NVML index of the GPU a framework calls device 0.

    CUDA_VISIBLE_DEVICES renumbers devices; its first entry is the probe's GPU when it is
    a plain index (UUIDs and MIG ids fall back to 0)."""
    first = (environ.get("CUDA_VISIBLE_DEVICES") or "").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def measure(
    facts: Mapping[str, Any], settings: ProbeSettings, show_progress: Optional[bool] = None
) -> dict[str, Any]:
    """Run the probe in the snapshot's interpreter; the report's `probe` section."""
    executable = Path((facts.get("interpreter") or {}).get("executable") or "python3")
    gpu = facts.get("gpu") or {}
    nvml: Any = None
    why: Optional[str] = "no GPU visible to NVML"
    if settings.device != "cpu" and gpu.get("status") == "ok" and gpu.get("devices"):
        nvml, why = load_nvml()
    index = probed_gpu_index(os.environ) if nvml is not None else None
    sampler = Sampler(nvml=nvml, gpu_index=index, nvml_reason=why)
    try:
        with ProbeProgress(settings.budget_s, show_progress) as progress:
            run = run_probe(settings, executable, progress.update, sampler)
    finally:
        close_nvml(nvml)
    try:
        return summarize(run, usable_cores=usable_cores())
    except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError) as exc:
        # The runner keeps only well-formed events, but a value inside one can still be of
        # the wrong type (a rate that is a string): the probe failed, with that reason.
        run.status = "failed"
        run.failure = {
            "kind": "malformed",
            "message": "the probe's child sent results of the wrong shape "
            f"({type(exc).__name__}: {exc})",
        }
        run.result = {"phases": {}, "notes": []}
        return summarize(run, usable_cores=usable_cores())
