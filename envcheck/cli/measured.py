"""What `envcheck run --measure` and `envcheck fix` share at the command line: guessing
the training script from the command, re-judging the doctor's facts with the measured
sections, and writing the report where the command's own stdout is not."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from envcheck import config
from envcheck import doctor as pipeline
from envcheck.cli.common import open_output
from envcheck.engine.registry import builtin_registry
from envcheck.engine.selection import Selection
from envcheck.model import Report, Severity
from envcheck.report import OutputFormat, json_report, text
from envcheck.snapshot import Snapshot


def interpreter_of(command: Sequence[str]) -> Optional[str]:
    """The Python a command runs (`/venv/bin/python train.py`), so that the doctor audits
    the environment the training runs in, not envcheck's own."""
    name = Path(command[0]).name if command else ""
    return command[0] if name.startswith("python") else None


def script_of(command: Sequence[str]) -> list[Path]:
    """The training script a command runs (`python train.py ...`), if it parses: its
    static findings are ranked with the measured ones. None for `python -m` and others."""
    for arg in command[1:4]:
        if arg == "-m" or arg == "-c":
            return []
        path = Path(arg)
        if path.suffix == ".py" and path.is_file():
            try:
                ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                return []
            return [path]
    return []


def rejudged(
    report: Report,
    settings: config.Config,
    sections: Mapping[str, Any],
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    rules: Sequence[Path] = (),
) -> Report:
    """The doctor's facts plus the measured sections, judged again by the same rules."""
    registry = builtin_registry([*settings.rule_paths, *rules])
    selection = Selection.of(list(select), list(ignore)).merged_over(settings.selection)
    snapshot = Snapshot({**dict(report.facts), **dict(sections)})
    judged = pipeline.diagnose(snapshot, registry, selection, settings.acknowledged)
    return Report(
        tool_version=judged.tool_version,
        created=judged.created,
        findings=judged.findings,
        checks=judged.checks,
        facts=judged.facts,
        probe=report.probe,
    )


def rendered(report: Report, fmt: OutputFormat, fail_on: Severity) -> Optional[str]:
    """The report as text for the machine formats; None for the human text format."""
    if fmt is OutputFormat.JSON:
        return json_report.render(report, fail_on)
    if fmt is OutputFormat.HTML:
        from envcheck.report import html

        return html.render(report, fail_on)
    if fmt is OutputFormat.SARIF:
        from envcheck.report import sarif

        return sarif.render(report, fail_on)
    if fmt is OutputFormat.JUNIT:
        from envcheck.report import junit

        return junit.render(report, fail_on)
    return None


def emit_aside(
    report: Report, fmt: OutputFormat, output: Optional[Path], fail_on: Severity, verbose: bool
) -> None:
    """Write the report to `output`, or to stderr: stdout belongs to the user's command."""
    content = rendered(report, fmt, fail_on)
    if output is not None:
        with open_output(output) as handle:
            if content is None:
                text.print_report(report, text.make_console(file=handle), verbose)
            else:
                handle.write(content)
        return
    if content is None:
        text.print_report(report, text.make_console(file=sys.stderr), verbose)
    else:
        sys.stderr.write(content)
        sys.stderr.flush()


def summary_line(section: Mapping[str, Any], report: Report) -> str:
    """One line on stderr: what the window measured and the doctor's fix 1."""
    from envcheck import hook

    if not section.get("steps"):
        head = f"envcheck: nothing measured: {section.get('reason')}"
    else:
        median = (section.get("step_time_s") or {}).get("median") or 0.0
        share = section.get("input_share") or 0.0
        head = (
            f"envcheck: measured {section['steps']} steps of your run (median "
            f"{median * 1000:.1f} ms): {share * 100:.0f} % of each step waits for the next "
            f"batch ({str(section.get('verdict')).replace('-', ' ')})"
        )
    top = hook.top_finding(report)
    return head + (f"; see fix {top.rank} ({top.finding.id})" if top is not None else "")


def measured_run(
    args: Sequence[str],
    report: Report,
    settings: config.Config,
    *,
    steps: int,
    seconds: float,
    stop_after: bool,
    output_format: OutputFormat,
    output: Optional[Path],
    threshold: Severity,
    verbose: bool,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    rules: Sequence[Path] = (),
) -> int:
    """`envcheck run --measure`: run the command with the hook, report, and return the
    command's own exit status."""
    import typer

    from envcheck import hook
    from envcheck.errors import InputError
    from envcheck.measure.service import MeasureRequest, measure_run

    request = MeasureRequest(command=args, steps=steps, seconds=seconds, stop_after=stop_after)
    try:
        section = measure_run(request)
    except hook.CommandNotRunnable as exc:
        typer.echo(f"envcheck: error: {exc}", err=True)
        return exc.code
    final = rejudged(report, settings, {"run": section}, select, ignore, rules)
    try:
        emit_aside(final, output_format, output, threshold, verbose)
    except InputError as exc:  # the command ran: its exit code still wins
        typer.echo(f"envcheck: error: {exc}", err=True)
    typer.echo(summary_line(section, final), err=True)
    return int(section["exit_code"])
