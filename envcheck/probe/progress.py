"""The probe's live display on stderr: the phase and the budget left (terminals only)."""

from __future__ import annotations

import sys
import time
from typing import Any, Optional

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

PHASE_TITLES = {
    "import": "importing the framework",
    "data": "preparing and checking the images",
    "compute": "compute ceiling (synthetic batches)",
    "input_warm": "input pipeline, cached files",
    "input_cold": "input pipeline, cold files",
    "end_to_end": "training on the pipeline",
    "sweep": "worker sweep",
    "node": "the node: a worker on every core",
    "alternatives": "alternatives: pre-resized, shards, GPU decoding",
    "concurrent": "one pipeline per training process, all at once",
}


class ProbeProgress:
    """Use as a context manager; pass `update` as the runner's progress callback."""

    def __init__(self, budget_s: float, enabled: Optional[bool] = None) -> None:
        self.budget_s = budget_s
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._progress: Optional[Progress] = None
        self._task: Any = None
        self._measuring_since: Optional[float] = None

    def __enter__(self) -> ProbeProgress:
        if self.enabled:
            self._progress = Progress(
                TextColumn("[bold]probe[/bold] {task.description}"),
                BarColumn(),
                TextColumn("{task.fields[left]}"),
                console=Console(stderr=True),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("starting", total=self.budget_s, left="")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()

    def update(self, event: dict[str, Any]) -> None:
        if self._progress is None or event.get("event") != "phase":
            return
        name = str(event.get("name"))
        if name != "import" and self._measuring_since is None:
            self._measuring_since = time.monotonic()
        title = PHASE_TITLES.get(name, name)
        if name == "sweep" and event.get("workers") is not None:
            title += f" (workers={event['workers']})"
        spent = time.monotonic() - self._measuring_since if self._measuring_since else 0.0
        left = max(0.0, self.budget_s - spent)
        self._progress.update(
            self._task, description=title, completed=spent, left=f"{left:4.1f} s left"
        )
