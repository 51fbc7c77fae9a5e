"""Reporters: each turns a Report into one output format.

One table from format to reporter; every reporter module has the same
`render(report, fail_on=None, options=RenderOptions()) -> str`. The modules are imported
when a format is asked for, so the doctor's start-up pays only for the one it prints.
"""

from __future__ import annotations

import enum
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from envcheck.model import Report, Severity


class OutputFormat(str, enum.Enum):
    """The formats of a report (doctor, probe)."""

    TEXT = "text"
    JSON = "json"
    HTML = "html"  # one self-contained page with inline SVG charts (envcheck/report/html.py)
    SARIF = "sarif"  # SARIF 2.1.0, for code-scanning UIs (envcheck/report/sarif.py)
    JUNIT = "junit"  # JUnit XML, one test case per check (envcheck/report/junit.py)
    LINES = "lines"  # path:line:col: ID severity message (envcheck/report/script_lines.py)


class ScriptsFormat(str, enum.Enum):
    """`envcheck scripts`: findings in code, for editors, pre-commit and code scanning."""

    TEXT = "text"  # the compiler-style lines (OutputFormat.LINES)
    JSON = "json"
    SARIF = "sarif"
    JUNIT = "junit"

    def report_format(self) -> OutputFormat:
        return OutputFormat.LINES if self is ScriptsFormat.TEXT else OutputFormat(self.value)


class DataFormat(str, enum.Enum):
    """Outputs that are data rather than a report: `rules list/show`, `diff`, `run`'s doctor."""

    TEXT = "text"
    JSON = "json"

    def report_format(self) -> OutputFormat:
        return OutputFormat(self.value)


@dataclass(frozen=True)
class RenderOptions:
    """How a human format is drawn: details of passing checks, colour (a terminal that
    allows it), and the output's encoding (symbols fall back to ASCII where it cannot
    show them)."""

    verbose: bool = False
    color: bool = False
    encoding: str = "utf-8"


PLAIN = RenderOptions()  # no colour, no details of passing checks, UTF-8

Renderer = Callable[["Report", Optional["Severity"], RenderOptions], str]

REPORTERS: dict[OutputFormat, str] = {
    OutputFormat.TEXT: "envcheck.report.text",
    OutputFormat.JSON: "envcheck.report.json_report",
    OutputFormat.HTML: "envcheck.report.html",
    OutputFormat.SARIF: "envcheck.report.sarif",
    OutputFormat.JUNIT: "envcheck.report.junit",
    OutputFormat.LINES: "envcheck.report.script_lines",
}


def reporter(fmt: OutputFormat) -> Renderer:
    """The render function of a format."""
    render: Renderer = importlib.import_module(REPORTERS[fmt]).render
    return render
