"""The paired decision of `envcheck fix`: is the candidate faster than the unchanged run?

Each pair is one unchanged run and one candidate run back to back (A, B, A, B, ...), so a
drift of the machine (other jobs, clocks, caches) hits both halves of a pair. The speed
ratio of a pair is A's mean step time over B's; the ratios are averaged on a log scale
(a 2x gain and a 2x loss cancel) and the 95 % interval is Student's t on the log ratios.
"""

from __future__ import annotations

import math
import statistics
from typing import Optional, Sequence

# Student's t distribution, two-sided 95 % (0.975 quantile), by degrees of freedom
# (any statistics table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
T_975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    15: 2.131,
    20: 2.086,
    30: 2.042,
}
# Below this many pairs there is no interval to speak of.
MIN_PAIRS = 2


def t_975(df: int) -> float:
    """The table's value for `df`, or for the largest tabulated df below it (wider)."""
    usable = [d for d in T_975 if d <= df]
    return T_975[max(usable)] if usable else T_975[1]


def paired_ratio(
    baseline_s: Sequence[float], candidate_s: Sequence[float]
) -> tuple[Optional[float], list[Optional[float]], int]:
    """(geometric-mean speed ratio, [low, high] 95 % interval, pairs the candidate won).

    A ratio above 1 means the candidate's steps are shorter."""
    ratios = [a / b for a, b in zip(baseline_s, candidate_s, strict=False) if a > 0 and b > 0]
    if not ratios:
        return None, [None, None], 0
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    won = sum(1 for r in ratios if r > 1.0)
    if len(logs) < MIN_PAIRS:
        return round(math.exp(mean), 4), [None, None], won
    half = t_975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    interval: list[Optional[float]] = [
        round(math.exp(mean - half), 4),
        round(math.exp(mean + half), 4),
    ]
    return round(math.exp(mean), 4), interval, won


def decide(interval: Sequence[Optional[float]], loss: str) -> str:
    """keep: the whole interval is above 1 and the loss did not change; discard: the loss
    changed, or the whole interval is below 1; inconclusive otherwise ("no proven win")."""
    low, high = interval[0], interval[1]
    if loss == "changed":
        return "discard"
    if low is not None and low > 1.0:
        return "keep"
    if high is not None and high < 1.0:
        return "discard"
    return "inconclusive"


def settled(interval: Sequence[Optional[float]]) -> bool:
    """The interval already excludes 1: more pairs would not change the decision's side."""
    low, high = interval[0], interval[1]
    return (low is not None and low > 1.0) or (high is not None and high < 1.0)


# Two losses this close (relative) are one value printed through different float paths.
LOSS_RTOL = 1e-6


def compare_losses(
    baselines: Sequence[Sequence[float]], candidates: Sequence[Sequence[float]]
) -> str:
    """identical | within | changed | unknown, from the losses of the first steps.

    A deterministic run repeats its losses exactly; then any candidate difference beyond
    float noise is a change. A run that does not repeat itself (unseeded shuffles,
    augmentations) is judged by its mean loss against the spread of the unchanged runs."""
    runs = [list(b) for b in baselines if b]
    others = [list(c) for c in candidates if c]
    if not runs or not others:
        return "unknown"
    steps = min(len(r) for r in runs + others)
    if steps == 0:
        return "unknown"
    runs = [r[:steps] for r in runs]
    others = [c[:steps] for c in others]
    reference = runs[0]
    if all(c == reference for c in others) and all(r == reference for r in runs):
        return "identical"
    scale = max(abs(v) for v in reference) or 1.0
    repeats = all(_close(r, reference, LOSS_RTOL * scale) for r in runs)
    if repeats:
        same = all(_close(c, reference, LOSS_RTOL * scale) for c in others)
        return "within" if same else "changed"
    means = [statistics.fmean(r) for r in runs]
    spread = max(means) - min(means)
    low, high = min(means) - spread, max(means) + spread
    inside = all(low <= statistics.fmean(c) <= high for c in others)
    return "within" if inside else "changed"


def _close(a: Sequence[float], b: Sequence[float], tolerance: float) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a, b, strict=False))
