"""Defaults a user gets without flags, declared once for every entry point.

The probe's own defaults (budget, batch size, model) live with its settings in
envcheck/probe/settings.py; the ones here are shared by the commands, `preflight()` and
the callbacks."""

from __future__ import annotations

from envcheck.model import Severity

FAIL_ON = Severity.HIGH  # findings at or above it make the exit code 1
DATA_BUDGET_S = 5.0  # seconds for the dataset walk and its read sample together (--data-budget)
WATCH_S = 120.0  # seconds of a training command's start sampled by `envcheck run` (--watch)
