"""Non-finite numbers (NaN, infinity) are rejected where they enter.

NaN passes every range check (`nan < 0` and `nan > 100` are both false) and then reaches
JSON and SARIF as the bare token `NaN`, which strict parsers refuse; infinity turns a
budget or a rate into a loop that never ends or a division that gives nothing useful.
Command-line options and rule files call this before their own range checks.
"""

from __future__ import annotations

import math
import sys
from typing import Any


def non_finite(value: Any) -> bool:
    """True for a float that is NaN or infinite, or an integer too large to be a float
    (TOML allows thousands of digits; float() of one raises OverflowError); bools are not."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):
        return abs(value) > sys.float_info.max
    return not math.isfinite(value)


def require_finite(value: Any, what: str) -> None:
    """ValueError naming `what` when `value` (or any number inside a list) is non-finite."""
    items = value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if non_finite(item):
            raise ValueError(f"{what} must be a finite number (got {item})")
