"""Order findings so that the fix that buys the most comes first.

Acknowledged findings go last. Then: a measured speedup beats an estimated one, which
beats none; a larger speedup beats a smaller; severity breaks ties; the id keeps the
order stable.
"""

from __future__ import annotations

from typing import Iterable

from envcheck.model import Basis, Finding, RankedFinding

_BASIS_RANK = {Basis.MEASURED: 2, Basis.ESTIMATED: 1}


def sort_key(finding: Finding) -> tuple[int, int, float, int, str]:
    impact = finding.impact
    return (
        1 if finding.acknowledged is not None else 0,
        -(_BASIS_RANK[impact.basis] if impact else 0),
        -(impact.speedup if impact else 1.0),
        -finding.severity.rank,
        finding.id,
    )


def rank(findings: Iterable[Finding]) -> list[RankedFinding]:
    ordered = sorted(findings, key=sort_key)
    return [RankedFinding(i, f) for i, f in enumerate(ordered, start=1)]
