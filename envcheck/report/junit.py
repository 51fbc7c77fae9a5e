"""JUnit XML: one test case per check, for CI test-report views (Jenkins, GitLab, Azure).

`<testsuites>` holds one `<testsuite name="envcheck">`. A check whose unacknowledged
findings reach --fail-on fails (one `<failure>` per such finding, type = its severity);
findings below the threshold, and acknowledged ones, are listed in `<system-out>` of a
passing case. Unknown checks are skipped with their reason, deselected checks skipped.
Valid against the Jenkins xunit plugin's junit-10.xsd (tests/schemas/).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Optional

from envcheck.model import CheckResult, Finding, Report, Severity, Status
from envcheck.report import PLAIN, RenderOptions

# Characters XML 1.0 cannot carry at all, even escaped (ElementTree would write them).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def render(
    report: Report, fail_on: Optional[Severity] = None, options: RenderOptions = PLAIN
) -> str:
    threshold = fail_on or Severity.HIGH
    suite = ET.Element("testsuite", name="envcheck")
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("envcheck.version", report.tool_version),
        ("created", report.created),
        ("fail_on", threshold.value),
    ):
        ET.SubElement(properties, "property", name=name, value=_clean(value))
    failures = skipped = 0
    for check in report.checks:
        case, failed = _case(check, threshold)
        suite.append(case)
        failures += failed
        skipped += check.status in (Status.UNKNOWN, Status.SKIPPED)
    counts = {
        "tests": str(len(report.checks)),
        "failures": str(failures),
        "errors": "0",
        "skipped": str(skipped),
    }
    for key, value in counts.items():
        suite.set(key, value)
    root = ET.Element("testsuites", name="envcheck")
    for key in ("tests", "failures", "errors"):
        root.set(key, counts[key])
    root.append(suite)
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _case(check: CheckResult, threshold: Severity) -> tuple[ET.Element, bool]:
    case = ET.Element(
        "testcase",
        classname=_clean(f"envcheck.{check.category}"),
        name=_clean(f"{check.id} {check.name}"),
    )
    if check.status is Status.UNKNOWN:
        ET.SubElement(case, "skipped", message=_clean(f"unknown: {check.reason}"))
        return case, False
    if check.status is Status.SKIPPED:
        skipped = ET.SubElement(case, "skipped")
        if check.reason:
            skipped.set("message", _clean(check.reason))
        return case, False
    failing = [f for f in check.findings if f.acknowledged is None and f.severity >= threshold]
    for finding in failing:
        failure = ET.SubElement(
            case, "failure", message=_clean(_headline(finding)), type=finding.severity.value
        )
        failure.text = _clean(_details(finding))
    rest = [f for f in check.findings if f not in failing]
    if rest:
        out = ET.SubElement(case, "system-out")
        out.text = _clean("\n\n".join(_below(f, threshold) for f in rest))
    return case, bool(failing)


def _headline(finding: Finding) -> str:
    where = _where(finding)
    if not where or finding.location is None or finding.message.startswith(finding.location.path):
        return finding.message  # script findings name their file:line already
    return f"{where}: {finding.message}"


def _where(finding: Finding) -> str:
    loc = finding.location
    if loc is None:
        return ""
    parts = [loc.path]
    if loc.line is not None:
        parts.append(str(loc.line))
        if loc.column is not None:
            parts.append(str(loc.column))
    return ":".join(parts)


def _details(finding: Finding) -> str:
    lines = [f"{finding.severity.value} {finding.id} {finding.name}"]
    if finding.location is not None:
        lines.append(f"at: {_where(finding)}")
        if finding.location.code:
            lines.append(f"    {finding.location.code}")
    lines.append(finding.message)
    lines.append(f"fix: {finding.fix}")
    if finding.impact is not None:
        lines.append(
            f"impact: {finding.impact.speedup:g}x ({finding.impact.basis.value}"
            + (f": {finding.impact.source})" if finding.impact.source else ")")
        )
    lines.append(f"docs: {finding.docs}")
    return "\n".join(lines)


def _below(finding: Finding, threshold: Severity) -> str:
    why = (
        f"acknowledged: {finding.acknowledged}"
        if finding.acknowledged is not None
        else f"below --fail-on {threshold.value}"
    )
    return f"[{why}]\n{_details(finding)}"
