"""SARIF 2.1.0: the findings for code-scanning UIs (GitHub code scanning, IDE viewers).

One run; `tool.driver.rules` has every rule that was evaluated (not the ones deselected
with --select/--ignore), `results` one entry per finding. Script findings (EC5xx) carry
their file, line, column and source line; the others concern the machine or the
environment and have no file, so their results have no `locations` (valid SARIF, but
GitHub code scanning rejects a file with such results: upload only script findings there,
`--select EC5`). Acknowledged findings are kept, with an external suppression.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Mapping, Optional
from urllib.parse import quote

from envcheck.model import CheckResult, Finding, Report, Severity, Status
from envcheck.report import PLAIN, RenderOptions

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
# No `informationUri` nor `helpUri`: SARIF wants absolute URIs there and envcheck has no
# published home yet. Each rule carries its documentation instead (`fullDescription`,
# `help`), read from the Report, and names the command that shows it offline.

LEVELS = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
    Severity.INFO: "note",
}


def to_dict(report: Report, fail_on: Optional[Severity] = None) -> dict[str, Any]:
    """The SARIF log. Rule summaries and documentation come from the Report's rules
    (user rules' too); a check without them is described by its name."""
    rules = [c for c in report.checks if c.status is not Status.SKIPPED]
    known = {c.id for c in rules}
    for ranked in report.findings:  # a finding's rule is always listed
        if ranked.finding.id not in known:
            rules.extend(c for c in report.checks if c.id == ranked.finding.id)
            known.add(ranked.finding.id)
    index = {c.id: i for i, c in enumerate(rules)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "envcheck",
                "version": report.tool_version,
                "rules": [_rule(c, report) for c in rules],
            }
        },
        "results": [_result(r.finding, index, r.rank) for r in report.findings],
        "columnKind": "unicodeCodePoints",  # see _ascii: the same as UTF-16 units here
        "properties": {
            "created": report.created,
            "fail_on": fail_on.value if fail_on else None,
        },
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render(
    report: Report, fail_on: Optional[Severity] = None, options: RenderOptions = PLAIN
) -> str:
    return json.dumps(to_dict(report, fail_on), indent=2, ensure_ascii=False) + "\n"


def _rule(check: CheckResult, report: Report) -> dict[str, Any]:
    rule = report.rules.get(check.id)
    summary = rule.summary if rule is not None else check.name
    docs = rule.docs_ref if rule is not None else next((f.docs for f in check.findings), None)
    out: dict[str, Any] = {
        "id": check.id,
        "name": check.name,
        "shortDescription": {"text": summary},
        "defaultConfiguration": {"level": LEVELS[check.severity]},
        "properties": {"severity": check.severity.value, "tags": [check.category]},
    }
    if rule is not None and rule.docs:
        out["fullDescription"] = {"text": rule.docs}
    if docs:
        out["help"] = {"text": f"{summary} (see {docs})"}
    return out


def _result(finding: Finding, index: Mapping[str, int], rank: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ruleId": finding.id,
        "level": LEVELS[finding.severity],
        "message": {"text": f"{finding.message} Fix: {finding.fix}"},
    }
    if finding.id in index:
        out["ruleIndex"] = index[finding.id]
    if finding.location is not None:
        loc = finding.location
        physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(loc.path)}}
        region: dict[str, Any] = {}
        if loc.line is not None and loc.line >= 1:
            region["startLine"] = loc.line
            if loc.column is not None and loc.column >= 1 and _ascii(loc.code):
                region["startColumn"] = loc.column
        if loc.code:
            region["snippet"] = {"text": loc.code}
        if region:
            physical["region"] = region
        out["locations"] = [{"physicalLocation": physical}]
    if finding.acknowledged is not None:
        out["suppressions"] = [{"kind": "external", "justification": finding.acknowledged}]
    out["properties"] = {
        "rank": rank,
        "severity": finding.severity.value,
        "category": finding.category,
        "impact": finding.impact.to_json() if finding.impact else None,
        "evidence": dict(finding.evidence),
        "docs": finding.docs,
    }
    return out


def _uri(path: str) -> str:
    """A relative path as given, in POSIX form and percent-encoded; an absolute one as a
    file: URI."""
    posix = path.replace("\\", "/")
    if PurePosixPath(posix).is_absolute() or PureWindowsPath(path).is_absolute():
        if ":" in path[:3] and _raw(path) == path.encode("utf-8", "replace"):
            return PureWindowsPath(path).as_uri()
        return "file://" + ("" if posix.startswith("/") else "/") + quote(_raw(posix), safe="/:")
    return quote(_raw(posix), safe="/")


def _raw(text: str) -> bytes:
    """The bytes of a path for percent-encoding. A file name that is not valid UTF-8
    travels as lone surrogates (\\udcff for the byte 0xff): they are the bytes again, as
    the file system holds them; quote() of the string itself raises."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name makes (a hand-written snapshot)
        return text.encode("utf-8", "surrogatepass")


def _ascii(code: Optional[str]) -> bool:
    """Whether a column can be given: the script audit's columns are ast's UTF-8 byte
    offsets (+1), which equal character columns only on an ASCII line. On other lines the
    result keeps its line and drops the column rather than point at the wrong place."""
    return code is not None and code.isascii()
