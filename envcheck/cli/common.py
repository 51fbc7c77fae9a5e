"""What several commands share: configuration, severities, writing a report in any
format, the probe inside a command, and the one-line summary of unreadable scripts."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Mapping, Optional

from envcheck import config, datadir
from envcheck import doctor as pipeline
from envcheck import output as outputs
from envcheck.errors import UsageError
from envcheck.model import Report, Severity
from envcheck.probe.settings import ProbeSettings, usable_cores
from envcheck.report import DataFormat, OutputFormat, json_report, text
from envcheck.snapshot import Snapshot

# The probe's runner and the html, sarif and junit reporters are imported where they are
# used: the doctor's static path does not pay for them (about 50 ms of its start-up).


def should_probe(asked: Optional[bool], facts: Mapping[str, Any], data: Any) -> bool:
    """--probe / --no-probe, else: a visible NVIDIA GPU and a --data folder."""
    if asked is not None:
        return asked
    gpu = facts.get("gpu") or {}
    return gpu.get("status") == "ok" and bool(gpu.get("devices")) and data is not None


def with_probe_section(
    snapshot: Any,
    base: ProbeSettings,
    framework: Optional[str],
    flags: Mapping[str, Any],
    explicit: bool,
) -> Any:
    """The snapshot with the probe's section; an automatic probe that cannot choose a
    framework is recorded as skipped instead of failing the doctor."""
    from envcheck.probe.plan import plan
    from envcheck.probe.session import measure

    start = time.monotonic()
    try:
        settings = plan(snapshot.data, base, framework, flags, usable_cores())
    except UsageError as exc:
        if explicit:
            raise
        data = snapshot.as_dict()
        data.setdefault("collectors", {})["probe"] = {
            "status": "unavailable",
            "reason": str(exc),
            "seconds": 0.0,
        }
        return Snapshot(data)
    section = measure(snapshot.data, settings)
    return pipeline.with_probe(snapshot, section, time.monotonic() - start)


def unaudited_scripts(facts: Mapping[str, Any]) -> Optional[str]:
    """One line naming the --script files that could not be audited, if any."""
    section = facts.get("scripts")
    errors = section.get("errors") if isinstance(section, dict) else None
    if not errors:
        return None
    shown = []
    for error in errors[:3]:
        where = str(error.get("path"))
        if error.get("line"):
            where += f":{error['line']}" + (f":{error['column']}" if error.get("column") else "")
        shown.append(f"{where}: {error.get('reason')}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return f"--script: {len(errors)} could not be audited: " + "; ".join(shown) + more


def usable_data(data: Optional[Path]) -> tuple[Optional[Path], Optional[str]]:
    """(the folder to audit, or None; the problem with --data, if any)."""
    if data is None:
        return None, None
    problem = datadir.problem_with(data)
    if problem:
        return None, f"--data {data}: {problem}"
    return data, None


def load_config(path: Optional[Path]) -> config.Config:
    if path is not None:
        return config.load(path, explicit=True)
    return config.load(config.find(Path.cwd()))


def parse_severity(value: Optional[str], flag: str) -> Optional[Severity]:
    if value is None:
        return None
    try:
        return Severity.parse(value)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def emit_report(
    report: Report, fmt: OutputFormat, output: Optional[Path], fail_on: Severity, verbose: bool
) -> None:
    if fmt is OutputFormat.JSON:
        write_output(json_report.render(report, fail_on), output)
        return
    if fmt is OutputFormat.HTML:
        from envcheck.report import html

        write_output(html.render(report, fail_on), output)
        return
    if fmt is OutputFormat.SARIF:
        from envcheck.report import sarif

        write_output(sarif.render(report, fail_on), output)
        return
    if fmt is OutputFormat.JUNIT:
        from envcheck.report import junit

        write_output(junit.render(report, fail_on), output)
        return
    if output is None:
        with outputs.guarded_stdout():
            text.print_report(report, text.make_console(), verbose)
        return
    with outputs.open_text(output) as handle:
        text.print_report(report, text.make_console(file=handle), verbose)


def write_output(content: str, output: Optional[Path]) -> None:
    outputs.write(content, output)


def emit_report_to_stderr(
    report: Report, fmt: DataFormat, fail_on: Severity, verbose: bool
) -> None:
    """The doctor's report on stderr, so the command's stdout stays its own."""
    if fmt is DataFormat.JSON:
        sys.stderr.write(json_report.render(report, fail_on))
        sys.stderr.flush()
        return
    text.print_report(report, text.make_console(file=sys.stderr), verbose)
