"""Reporters: each turns a Report into one output format."""

from __future__ import annotations

import enum


class OutputFormat(str, enum.Enum):
    """The closed set of output formats (more arrive with the reports issue)."""

    TEXT = "text"
    JSON = "json"
