"""Wall-clock budget for the whole measurement, handed out to phases as they start.

Each phase gets its planned share of what is *left*, so a phase that overran (a slow
warm-up, a slow first batch) shortens the ones after it instead of the probe overrunning.
"""

from __future__ import annotations

import time
from typing import Dict


class Budget:
    def __init__(self, seconds: float, plan: Dict[str, float]) -> None:
        self.total = float(seconds)
        self._start = time.monotonic()
        self._pending = dict(plan)

    def left(self) -> float:
        return max(0.0, self.total - (time.monotonic() - self._start))

    def used(self) -> float:
        return time.monotonic() - self._start

    def extend(self, seconds: float) -> None:
        """Give back time spent on set-up that is not measuring (graph tracing)."""
        self.total += seconds

    def slice(self, phase: str, floor: float = 0.3) -> float:
        """Seconds for `phase`: its share of what is left among the phases still to run."""
        share = self._pending.pop(phase, 0.0)
        weight = share + sum(self._pending.values())
        seconds = self.left() * share / weight if weight > 0 else self.left()
        return max(seconds, floor)
