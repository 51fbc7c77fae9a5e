"""What every training callback does, framework-free: the preflight at train start, then
GPU utilisation sampled over the first N training steps, summarised in one line."""

from __future__ import annotations

import sys
import time
import warnings
from typing import Any, Callable, Optional, Sequence, Union

from envcheck import hook
from envcheck.model import Report, Severity

PathLike = hook.PathLike


class TrainingWatch:
    """begin() at train start, step() after every training batch, end() at train end.

    The summary (a dict, as `envcheck run -o` writes, and `line`) is ready once
    `watch_steps` steps have run, or at end() if training stopped earlier."""

    def __init__(
        self,
        fail_on: Union[str, Severity] = "high",
        watch_steps: int = 50,
        warn_only: bool = False,
        python: Optional[str] = None,
        data: Optional[PathLike] = None,
        script: Union[PathLike, Sequence[PathLike], None] = None,
        select: Union[str, Sequence[str], None] = None,
        probe: bool = False,
        rules: Union[PathLike, Sequence[PathLike], None] = None,
        log: Optional[Callable[[str], None]] = None,
        preflight: bool = True,
    ) -> None:
        if watch_steps < 1:
            raise ValueError("watch_steps must be 1 or more")
        self.fail_on = fail_on if isinstance(fail_on, Severity) else Severity.parse(fail_on)
        self.watch_steps = watch_steps
        self.warn_only = warn_only
        self.options: dict[str, Any] = {
            "python": python,
            "data": data,
            "script": script,
            "select": select,
            "probe": probe,
            "rules": rules,
        }
        self.log = log or _to_stderr
        self.run_preflight = preflight
        self.report: Optional[Report] = None
        self.summary: Optional[dict[str, Any]] = None
        self.line: Optional[str] = None
        self.steps = 0
        self._sampler: Any = None
        self._start = 0.0

    def begin(self) -> None:
        """Run the preflight (raise PreflightFailed, or warn with warn_only), then start
        sampling."""
        if self.run_preflight:
            try:
                self.report = hook.preflight(fail_on=self.fail_on, **self.options)
            except hook.PreflightFailed as failed:
                if not self.warn_only:
                    raise
                self.report = failed.report
                warnings.warn(str(failed), RuntimeWarning, stacklevel=3)
        self.steps = 0
        self.summary = self.line = None
        self._sampler = hook.make_sampler()
        self._start = time.monotonic()
        self._sampler.start()

    def step(self) -> None:
        if self._sampler is None:
            return
        self.steps += 1
        if self.steps >= self.watch_steps:
            self._finish()

    def end(self) -> None:
        if self._sampler is not None:
            self._finish()

    def _finish(self) -> None:
        sampler, self._sampler = self._sampler, None
        hook.stop_sampling(sampler)
        hook.close_gpu(sampler.nvml)
        seconds = time.monotonic() - self._start
        util = hook.utilisation(sampler.samples)
        about = sampler.summary()
        steps = f"{self.steps} step" + ("" if self.steps == 1 else "s")
        span = f"over the first {steps} ({seconds:.1f} s)"
        self.line = hook.summary_line(util, span, self.report, about.get("gpu_reason"))
        self.summary = {
            "steps": self.steps,
            "watch_steps": self.watch_steps,
            "watched_s": round(seconds, 2),
            **util,
            "gpu_index": about.get("gpu_index"),
            "gpu_reason": about.get("gpu_reason"),
            "findings": [r.finding.id for r in self.report.findings] if self.report else [],
        }
        self.log(self.line)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class WatchedCallback:
    """The part the Keras and Lightning callbacks share, placed before the framework's
    Callback class in their bases: a TrainingWatch built from the callback's arguments,
    with its report and summary. Keyword arguments other than these go to the preflight
    (python, data, script, select, probe, rules, log)."""

    def __init__(
        self,
        fail_on: Union[str, Severity] = "high",
        watch_steps: int = 50,
        warn_only: bool = False,
        **options: Any,
    ) -> None:
        super().__init__()  # the framework's Callback, next in the method order
        self.watch = TrainingWatch(
            fail_on=fail_on, watch_steps=watch_steps, warn_only=warn_only, **options
        )

    @property
    def report(self) -> Optional[Report]:
        """The doctor's report, once the preflight has run."""
        return self.watch.report

    @property
    def summary(self) -> Optional[dict[str, Any]]:
        """The GPU-utilisation summary, once the watch is over."""
        return self.watch.summary
