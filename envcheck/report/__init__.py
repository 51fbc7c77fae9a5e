"""Reporters: each turns a Report into one output format."""

from __future__ import annotations

import enum


class OutputFormat(str, enum.Enum):
    """The formats of a report (doctor, probe)."""

    TEXT = "text"
    JSON = "json"
    HTML = "html"  # one self-contained page with inline SVG charts (envcheck/report/html.py)
    SARIF = "sarif"  # SARIF 2.1.0, for code-scanning UIs (envcheck/report/sarif.py)
    JUNIT = "junit"  # JUnit XML, one test case per check (envcheck/report/junit.py)


class ScriptsFormat(str, enum.Enum):
    """`envcheck scripts`: findings in code, for editors, pre-commit and code scanning."""

    TEXT = "text"  # path:line:col: ID severity message (envcheck/report/script_lines.py)
    JSON = "json"
    SARIF = "sarif"
    JUNIT = "junit"


class DataFormat(str, enum.Enum):
    """Outputs that are data rather than a report: `rules list/show`, `diff`, `run`'s doctor."""

    TEXT = "text"
    JSON = "json"
