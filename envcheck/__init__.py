"""envcheck: why is GPU training slow here, and what fix buys the most."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envcheck.hook import PreflightFailed as PreflightFailed
    from envcheck.model import Finding, Report

__version__ = "0.1.0"


def inspect(obj: object, **kwargs: Any) -> list[Finding]:
    """The input-pipeline findings for a live torch DataLoader or tf.data.Dataset.

    Kept here as a thin stub: this package is imported where envcheck's dependencies may
    be missing (the probe's child process), so the real work is imported only when
    called. See envcheck/live.py.
    """
    from envcheck.live import inspect as inspect_live

    return inspect_live(obj, **kwargs)


def preflight(*args: Any, **kwargs: Any) -> Report:
    """Run the doctor before training; the Report, or PreflightFailed when findings
    reach `fail_on`. See envcheck/hook.py (imported only when called, as above)."""
    from envcheck.hook import preflight as run_preflight

    return run_preflight(*args, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "PreflightFailed":  # the exception class, imported on first use
        from envcheck.hook import PreflightFailed

        return PreflightFailed
    raise AttributeError(f"module 'envcheck' has no attribute {name!r}")
