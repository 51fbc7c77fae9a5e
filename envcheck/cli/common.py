"""What several commands share: configuration lookup, severities, and writing a report in
any format to stdout, stderr or a file (through envcheck.output: a closed pipe ends
quietly, a full disk is one line and exit 2, unencodable names are escaped)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, TextIO

from envcheck import config
from envcheck import output as outputs
from envcheck.errors import UsageError
from envcheck.model import Report, Severity
from envcheck.report import OutputFormat, RenderOptions, reporter


def load_config(path: Optional[Path]) -> config.Config:
    """--config, else envcheck.toml or [tool.envcheck] found from the current folder."""
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
    report: Report,
    fmt: OutputFormat,
    output: Optional[Path],
    fail_on: Severity,
    verbose: bool,
    stream: Optional[TextIO] = None,
) -> None:
    """Render the report with its format's reporter and write it to `output`, else to
    `stream` (default stdout). Colour only for text on a terminal that allows it."""
    target = stream if stream is not None else sys.stdout
    options = RenderOptions(verbose=verbose)
    if output is None and fmt is OutputFormat.TEXT:
        options = RenderOptions(
            verbose=verbose,
            color=_wants_colour(target),
            encoding=getattr(target, "encoding", None) or "utf-8",
        )
    content = reporter(fmt)(report, fail_on, options)
    write_output(content, output, stream)


def _wants_colour(stream: TextIO) -> bool:
    """rich's own decision for this stream: a terminal, NO_COLOR unset, TERM not dumb."""
    from rich.console import Console

    console = Console(file=stream)
    return console.color_system is not None and not console.no_color


def write_output(content: str, output: Optional[Path], stream: Optional[TextIO] = None) -> None:
    """`content` to the file `output`, else to `stream` (default stdout)."""
    if stream is None or stream is sys.stdout:
        outputs.write(content, output)
        return
    stream.write(content)
    stream.flush()
