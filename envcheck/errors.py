"""Errors that end a run with a one-line message, mapped to exit codes at the CLI edge."""

from __future__ import annotations


class EnvcheckError(Exception):
    """Bad input from the user (a file, a flag, an interpreter): exit code 2."""

    exit_code = 2


class InputError(EnvcheckError):
    """A file or path given by the user is missing, unreadable or malformed."""


class UsageError(EnvcheckError):
    """A flag or option value that makes no sense."""
