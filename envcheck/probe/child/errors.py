"""Failures the child reports by kind, so the parent can turn each into a finding."""

from __future__ import annotations


class ProbeFailure(Exception):
    """kind: import | device | model | data | oom | framework."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
