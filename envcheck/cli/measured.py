"""What `envcheck run --measure` and `envcheck fix` share at the command line: guessing
the training script from the command, re-judging the doctor's facts with the measured
sections, and writing the report where the command's own stdout is not."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from envcheck import service
from envcheck.cli.common import emit_report
from envcheck.model import Report, Severity
from envcheck.report import OutputFormat
from envcheck.report.escape import visible


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


def emit_aside(
    report: Report, fmt: OutputFormat, output: Optional[Path], fail_on: Severity, verbose: bool
) -> None:
    """Write the report to `output`, or to stderr: stdout belongs to the user's command."""
    emit_report(report, fmt, output, fail_on, verbose, None if output is not None else sys.stderr)


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
    audit: service.Audit,
    *,
    steps: int,
    seconds: float,
    stop_after: bool,
    output_format: OutputFormat,
    output: Optional[Path],
    verbose: bool,
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
        typer.echo(f"envcheck: error: {visible(str(exc))}", err=True)
        return exc.code
    final = service.with_measured(audit, {"run": section}).report
    try:
        emit_aside(final, output_format, output, audit.fail_on, verbose)
    except InputError as exc:  # the command ran: its exit code still wins
        typer.echo(f"envcheck: error: {visible(str(exc))}", err=True)
    typer.echo(visible(summary_line(section, final)), err=True)
    return int(section["exit_code"])
