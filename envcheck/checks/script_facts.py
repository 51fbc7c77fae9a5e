"""The one answer every script rule shares: does this file train on a GPU?

The source decides when it can (envcheck/scripts/device.py: yes, no, or unknown with the
reason). When it cannot, the target machine does: `doctor --script` judges against the
machine it runs on, `envcheck scripts` against `--target` or `[target]`, and without a
target the answer stays unknown, with both reasons.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from envcheck.checks.gpu_facts import nvidia_gpu_present
from envcheck.scripts.values import LIVE
from envcheck.snapshot import Facts, Missing


@dataclass(frozen=True)
class GpuAnswer:
    """True, False, or None (unknown), and why."""

    trains: Optional[bool]
    reason: str


def trains_on_gpu(facts: Facts, file_facts: dict[str, Any]) -> GpuAnswer:
    """Whether the file's training runs on a GPU (see the module docstring)."""
    if file_facts.get("source") == LIVE:  # a live loader: what the caller said is authoritative
        on = bool(file_facts.get("uses_cuda"))
        return GpuAnswer(on, "the live loader feeds a CUDA device" if on else "CPU training")
    answer = file_facts.get("gpu")
    if isinstance(answer, dict):
        where = f" (line {answer['line']})" if answer.get("line") else ""
        reason = f"{answer.get('reason')}{where}"
        if answer.get("trains") == "yes":
            return GpuAnswer(True, f"trains on a GPU: {reason}")
        if answer.get("trains") == "no":
            return GpuAnswer(False, reason)
        from_code = f"the source does not say whether it trains on a GPU ({reason})"
    elif file_facts.get("uses_cuda"):  # an observation without the three-valued answer
        return GpuAnswer(True, "uses CUDA")
    else:
        from_code = "the source does not say whether it trains on a GPU"
    present = nvidia_gpu_present(facts)
    if isinstance(present, Missing):
        return GpuAnswer(
            None, f"{from_code}, and the target machine's GPUs are not known ({present.reason})"
        )
    if present:
        return GpuAnswer(True, f"{from_code}; the target machine has an NVIDIA GPU")
    return GpuAnswer(False, f"{from_code}; the target machine has no NVIDIA GPU")
