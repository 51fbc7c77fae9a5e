"""`envcheck scripts` output: one line per finding in the compiler style editors and
pre-commit understand (`path:line:col: ID severity message`), its fix under it, then a
count. Plain text, no colour: it is read in terminals, logs and hook output alike.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from envcheck.defaults import FAIL_ON
from envcheck.model import Finding, Report, Severity
from envcheck.report import PLAIN, RenderOptions
from envcheck.report.escape import visible


def render(
    report: Report, fail_on: Optional[Severity] = None, options: RenderOptions = PLAIN
) -> str:
    active = [r.finding for r in report.findings if r.finding.acknowledged is None]
    lines: list[str] = []
    for finding in sorted(active, key=_position):
        lines.append(
            f"{_where(finding)}: {finding.id} {finding.severity.value} {_message(finding)}"
        )
        lines.append(f"    fix: {finding.fix}")
    for error in _errors(report.facts):
        lines.append(f"{_error_where(error)}: error: {error.get('reason')}")
    lines.append(summary_line(report.facts, active, fail_on or FAIL_ON) + _undecided(report))
    return "\n".join(visible(line) for line in lines) + "\n"


def _undecided(report: Report) -> str:
    """`, 3 rules undecided (EC504, ...)`, with the way to decide them when it is the
    missing target machine."""
    unknown = [c for c in report.checks if c.status.value == "unknown"]
    if not unknown:
        return ""
    ids = ", ".join(c.id for c in unknown)
    hint = ""
    if any("no target machine declared" in c.reason for c in unknown):
        hint = "; --target SNAPSHOT.json judges them against the training machine"
    return f", {len(unknown)} rule{'' if len(unknown) == 1 else 's'} undecided ({ids}{hint})"


def _position(finding: Finding) -> tuple[str, int, int, str]:
    loc = finding.location
    if loc is None:
        return ("", 0, 0, finding.id)
    return (loc.path, loc.line or 0, loc.column or 0, finding.id)


def _where(finding: Finding) -> str:
    loc = finding.location
    if loc is None:
        return "envcheck"
    out = loc.path
    if loc.line:
        out += f":{loc.line}"
        if loc.column:
            out += f":{loc.column}"
    return out


def _message(finding: Finding) -> str:
    """The message without the leading `path:line: ` the line already starts with."""
    text = finding.message
    loc = finding.location
    if loc is None:
        return text
    for prefix in (f"{loc.path}:{loc.line}:{loc.column}: ", f"{loc.path}:{loc.line}: "):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _errors(facts: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    section = facts.get("scripts")
    errors = section.get("errors") if isinstance(section, dict) else None
    return errors if isinstance(errors, list) else []


def _error_where(error: Mapping[str, Any]) -> str:
    out = str(error.get("path"))
    if error.get("line"):
        out += f":{error['line']}"
        if error.get("column"):
            out += f":{error['column']}"
    return out


def _given_count(section: Any) -> int:
    """The files the run was given: those audited or tried (a FIFO, a file too large, a
    syntax error) and the paths that could not be (missing, an empty folder), each once,
    so that "N could not be audited" never exceeds the "M files" it is part of."""
    if not isinstance(section, dict):
        return 0
    shown = [str(f) for f in section.get("files") or []]
    unaudited = [str(e.get("path")) for e in _errors({"scripts": section})]
    return len(dict.fromkeys([*shown, *unaudited]))


def summary_line(facts: Mapping[str, Any], active: Sequence[Finding], fail_on: Severity) -> str:
    section = facts.get("scripts")
    files = _given_count(section)
    blocking = sum(1 for f in active if f.severity >= fail_on)
    found = f"{len(active)} finding{'' if len(active) == 1 else 's'}"
    parts = [f"{found} in {files} file{'' if files == 1 else 's'}"]
    if active:
        parts.append(f"{blocking} at or above {fail_on.value}")
    unreadable = len(_errors(facts))
    if unreadable:
        parts.append(f"{unreadable} could not be audited")
    reasons = section.get("reasons") if isinstance(section, dict) else None
    stopped = reasons.get("files") if isinstance(reasons, dict) else None
    if stopped:  # a folder search cut short: say so, never a silent "0 files"
        parts.append(str(stopped))
    tests = reasons.get("tests") if isinstance(reasons, dict) else None
    if tests:
        parts.append(str(tests))
    return "envcheck scripts: " + ", ".join(parts)
