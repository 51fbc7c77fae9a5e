"""`measure_run(request)`: run the user's command with the hook and return the `run` section.

One function for the application service to call; the CLI's `envcheck run --measure` and
`envcheck fix` go through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from envcheck import hook
from envcheck.measure import aggregate, launch

DEFAULT_STEPS = 100
DEFAULT_SECONDS = 60.0
DEFAULT_WARMUP = 5


@dataclass
class MeasureRequest:
    """What to run and how long to measure it; `overrides` inject a change (fix)."""

    command: Sequence[str]
    steps: int = DEFAULT_STEPS
    seconds: float = DEFAULT_SECONDS
    warmup: int = DEFAULT_WARMUP
    stop_after: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    loss_steps: int = 0
    sample: bool = True
    stdout: launch.Output = None
    stderr: launch.Output = None
    timeout_s: Optional[float] = None


def measure_run(request: MeasureRequest) -> dict[str, Any]:
    """The `run` section for one run of the command (hook.CommandNotRunnable if it
    cannot start). The command's exit code is `run.exit_code`."""
    settings = launch.HookSettings(
        warmup=request.warmup,
        steps=request.steps,
        seconds=request.seconds,
        stop=request.stop_after,
        loss_steps=request.loss_steps,
        overrides=dict(request.overrides),
    )
    sampler = hook.make_sampler() if request.sample else None
    try:
        child = launch.run_measured(
            request.command,
            settings,
            sampler,
            stdout=request.stdout,
            stderr=request.stderr,
            timeout_s=request.timeout_s,
        )
    finally:
        if sampler is not None:
            hook.close_gpu(sampler.nvml)
    section = aggregate.summarize(
        child.processes,
        child.workers,
        command=request.command,
        exit_code=child.exit_code,
        began=child.started,
        samples=child.timeline,
        sampler=child.sampler,
        stopped_by_envcheck=child.stopped_by_envcheck,
        stop_after=request.stop_after,
    )
    section["elapsed_s"] = round(child.elapsed_s, 3)
    section["window_wanted"] = {
        "warmup": request.warmup,
        "steps": request.steps,
        "seconds": request.seconds,
    }
    section["sampler"] = child.sampler or None
    return section
