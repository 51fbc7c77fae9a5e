"""The JSON report: the public contract CI depends on (schema in envcheck/schemas/)."""

from __future__ import annotations

import json
from typing import Any, Optional

from envcheck.model import CheckResult, Finding, RankedFinding, Report, Severity, Status
from envcheck.report import PLAIN, RenderOptions

SCHEMA_VERSION = 1


def to_dict(report: Report, fail_on: Optional[Severity] = None) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "envcheck", "version": report.tool_version},
        "created": report.created,
        "summary": summary(report, fail_on),
        "findings": [_finding(r) for r in report.findings],
        "checks": [_check(c) for c in report.checks],
        "facts": report.facts,
        "probe": report.probe,
        **measured(report),
    }


def measured(report: Report) -> dict[str, Any]:
    """`run` and `fix` (envcheck run --measure, envcheck fix), when the report has them."""
    return {k: report.facts[k] for k in ("run", "fix") if isinstance(report.facts.get(k), dict)}


def render(
    report: Report, fail_on: Optional[Severity] = None, options: RenderOptions = PLAIN
) -> str:
    return json.dumps(to_dict(report, fail_on), indent=2, ensure_ascii=False) + "\n"


def summary(report: Report, fail_on: Optional[Severity]) -> dict[str, Any]:
    by_status = {s.value: 0 for s in Status}
    for c in report.checks:
        by_status[c.status.value] += 1
    by_severity = {s.value: 0 for s in Severity}
    for f in report.active_findings():
        by_severity[f.severity.value] += 1
    worst = report.worst_severity()
    return {
        "findings": len(report.active_findings()),
        "acknowledged": len(report.findings) - len(report.active_findings()),
        "by_severity": by_severity,
        "checks": by_status,
        "worst_severity": worst.value if worst else None,
        "fail_on": fail_on.value if fail_on else None,
    }


def _finding(ranked: RankedFinding) -> dict[str, Any]:
    f: Finding = ranked.finding
    return {
        "rank": ranked.rank,
        "id": f.id,
        "name": f.name,
        "severity": f.severity.value,
        "category": f.category,
        "message": f.message,
        "fix": f.fix,
        "impact": f.impact.to_json() if f.impact else None,
        "location": f.location.to_json() if f.location else None,
        "evidence": dict(f.evidence),
        "docs": f.docs,
        "acknowledged": f.acknowledged,
    }


def _check(c: CheckResult) -> dict[str, Any]:
    return {
        "id": c.id,
        "name": c.name,
        "category": c.category,
        "severity": c.severity.value,
        "status": c.status.value,
        "reason": c.reason,
    }
