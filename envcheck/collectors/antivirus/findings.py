"""What every platform's antivirus check records: the products found, the checks that
ran, and why the others gave no answer; and the command runner they share."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from envcheck import subprocess_runner

Runner = Callable[[Sequence[str], float], subprocess_runner.Completed]
Check = tuple[str, Callable[[], None]]  # the check's name in `checked`, and its body

NO_DATA = "no --data given"
MDE = "Microsoft Defender for Endpoint"  # found on Linux by its agent, on macOS by its extension


@dataclass
class Product:
    """One scanner found, as the `antivirus.products` entries show it."""

    name: str
    detected_by: str
    realtime: Optional[bool] = None
    excludes_data: Optional[bool] = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "realtime": self.realtime,
            "excludes_data": self.excludes_data,
            "detected_by": self.detected_by,
            "notes": list(self.notes),
        }


@dataclass
class Findings:
    """What the checks of one run gather; a failed check adds its reason under its name."""

    products: list[Product] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)

    def fail(self, check: str, why: str) -> None:
        previous = self.reasons.get(check)
        self.reasons[check] = f"{previous}; {why}" if previous else why


def run_command(
    runner: Runner, argv: Sequence[str], timeout: float, label: str
) -> tuple[Optional[subprocess_runner.Completed], str]:
    """(the finished command, "") or (None, why it gave no answer)."""
    try:
        return runner(list(argv), timeout), ""
    except subprocess.TimeoutExpired:
        return None, f"{label} did not answer within {timeout:g} s"
    except FileNotFoundError:
        return None, f"{label}: {argv[0]} not found"
    except OSError as exc:
        return None, f"cannot run {label}: {exc.strerror or exc}"
    except Exception as exc:  # an injected runner may raise anything
        return None, f"{label} failed: {type(exc).__name__}: {exc}"


def failure(proc: subprocess_runner.Completed, label: str) -> str:
    """Why a command that ran gave no answer: its exit code and first line of output."""
    lines = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
    return f"{label} exited with code {proc.returncode}: {lines[0] if lines else 'no output'}"


def json_object(text: str) -> Optional[dict[str, Any]]:
    """One JSON object from a command's output (a one-element list unwrapped), else None."""
    try:
        value = json.loads(text.strip().lstrip("\ufeff")) if text.strip() else None
    except json.JSONDecodeError:
        return None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, dict) else None
