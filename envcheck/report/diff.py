"""`envcheck diff`'s output: the text sections and the documented JSON form
(schema: envcheck/schemas/diff.schema.json). The comparison itself is envcheck/diff.py's."""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from envcheck import __version__
from envcheck.diff import (
    AREA_TITLES,
    OTHER_AREAS,
    SCHEMA_VERSION,
    SPEED_AREAS,
    Change,
    Diff,
    FindingRef,
    FindingsDiff,
    Side,
)
from envcheck.engine.template import human_bytes
from envcheck.model import Severity


def to_json(diff: Diff, fail_on: Severity) -> dict[str, Any]:
    """The documented JSON form (schema: envcheck/schemas/diff.schema.json)."""
    new = diff.new_failures(fail_on)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "envcheck", "version": __version__},
        "a": diff.a.header_json(),
        "b": diff.b.header_json(),
        "summary": {
            "speed_changes": len(diff.speed_changes),
            "other_changes": len(diff.other_changes),
            "findings_added": len(diff.findings.added),
            "findings_removed": len(diff.findings.removed),
            "findings_changed": len(diff.findings.changed),
            "new_at_or_above_fail_on": len(new),
            "fail_on": fail_on.value,
        },
        "changes": [c.to_json() for c in diff.changes],
        "findings": {
            "added": [f.to_json() for f in diff.findings.added],
            "removed": [f.to_json() for f in diff.findings.removed],
            "changed": [
                {
                    "id": c.b.id,
                    "location": c.b.location,
                    "a_severity": c.a.severity.value,
                    "b_severity": c.b.severity.value,
                    "message": c.b.message,
                }
                for c in diff.findings.changed
            ],
        },
    }


def render_json(diff: Diff, fail_on: Severity) -> str:
    return json.dumps(to_json(diff, fail_on), indent=2, ensure_ascii=False) + "\n"


ARROW = "→"


def render_text(diff: Diff, fail_on: Severity) -> str:
    """Sections with one `label  A → B` line per difference, speed-relevant first."""
    lines = [f"A: {_side_line(diff.a)}", f"B: {_side_line(diff.b)}", ""]
    if diff.empty:
        lines.append("No differences.")
        return "\n".join(lines) + "\n"
    lines.append("Differences that matter for speed")
    for area in SPEED_AREAS:
        lines += _section(area, [c for c in diff.changes if c.area == area])
    lines += _findings_section(diff.findings)
    if not diff.speed_changes and not _has_findings(diff.findings):
        lines.append("  none")
    lines += ["", "Other differences"]
    for area in OTHER_AREAS:
        lines += _section(area, [c for c in diff.changes if c.area == area])
    if not diff.other_changes:
        lines.append("  none")
    lines += ["", _summary_line(diff, fail_on)]
    return "\n".join(lines) + "\n"


def _side_line(side: Side) -> str:
    how = "findings as recorded" if side.findings_from == "report" else "rules evaluated now"
    created = side.facts.get("created")
    when = f", created {created}" if isinstance(created, str) else ""
    return f"{side.source} ({side.kind}, {how}{when})"


def _section(area: str, changes: Sequence[Change]) -> list[str]:
    if not changes:
        return []
    lines = [f"  {AREA_TITLES[area]}"]
    if area in ("packages", "environment"):
        for c in changes:
            if c.a is None:
                lines.append(f"    + {c.label} {_fmt(c.b, c.unit)}")
            elif c.b is None:
                lines.append(f"    - {c.label} {_fmt(c.a, c.unit)}")
            else:
                lines.append(f"    ~ {c.label} {_fmt(c.a, c.unit)} {ARROW} {_fmt(c.b, c.unit)}")
        return lines
    width = max(len(c.label) for c in changes)
    for c in changes:
        ratio = f"  ({c.ratio:g}x)" if c.ratio is not None else ""
        lines.append(
            f"    {c.label:<{width}}  {_fmt(c.a, c.unit)} {ARROW} {_fmt(c.b, c.unit)}{ratio}"
        )
    return lines


def _has_findings(f: FindingsDiff) -> bool:
    return bool(f.added or f.removed or f.changed)


def _findings_section(f: FindingsDiff) -> list[str]:
    if not _has_findings(f):
        return []
    lines = ["  Findings"]
    for ref in f.added:
        lines.append(f"    + {_finding_text(ref)}  (new in B)")
    for ref in f.removed:
        lines.append(f"    - {_finding_text(ref)}  (gone in B)")
    for c in f.changed:
        where = f" {c.b.location}" if c.b.location else ""
        severities = f"{c.a.severity.value} {ARROW} {c.b.severity.value}"
        lines.append(f"    ~ {c.b.id}{where} {severities}: {c.b.message}")
    return lines


def _finding_text(ref: FindingRef) -> str:
    where = f" {ref.location}" if ref.location else ""
    ack = " [acknowledged]" if ref.acknowledged else ""
    return f"{ref.severity.value:<8} {ref.id}{where} {ref.message}{ack}"


def _summary_line(diff: Diff, fail_on: Severity) -> str:
    f = diff.findings
    new = len(diff.new_failures(fail_on))
    return (
        f"{len(diff.speed_changes)} speed-relevant difference(s), "
        f"findings: {len(f.added)} new, {len(f.removed)} gone, {len(f.changed)} changed severity "
        f"({new} new at or above {fail_on.value}), "
        f"{len(diff.other_changes)} other difference(s)"
    )


def _fmt(value: Any, unit: Optional[str]) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if unit in ("bytes", "bytes/s") and isinstance(value, (int, float)):
        return human_bytes(value) + ("/s" if unit == "bytes/s" else "")
    if unit == "share" and isinstance(value, (int, float)):
        return f"{value * 100:.1f} %"
    if unit in ("samples/s", "files/s") and isinstance(value, (int, float)):
        return f"{value:g} {unit}"
    return str(value)
