"""Parse JSON from outside (a snapshot, a report, a child's answer) without surprises.

Python's json accepts what no producer of ours writes and what later code cannot hold:
NaN and Infinity, 1e400 (infinity again), integers of thousands of digits (slow, then
OverflowError in arithmetic) and nesting deep enough to exhaust the stack. Each becomes a
ValueError naming the problem, which callers turn into their one-line input error. Lone
surrogates are kept: they are how a file name that is not valid UTF-8 travels in JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any, Optional

MAX_INT_DIGITS = 40  # 2**64 has 20 digits; no fact or measurement comes near 40
MAX_DEPTH = 200  # the deepest document we write is about 10 levels


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:20]}")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"integer of {len(text.lstrip('-'))} digits is too large")
    return int(text)


def _depth(value: Any) -> int:
    """How deep containers nest (iterative: a deep document cannot exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _null(_: str) -> None:
    return None


def _float_or_null(text: str) -> Optional[float]:
    value = float(text)
    return value if math.isfinite(value) else None


def loads(text: str, non_finite_as_null: bool = False) -> Any:
    """json.loads, strict: ValueError for non-finite numbers, huge integers, deep nesting.

    With `non_finite_as_null`, NaN and infinities read as null instead (a measurement
    that produced no number is unknown, not a reason to drop everything around it)."""
    constant = _null if non_finite_as_null else _constant
    floats = _float_or_null if non_finite_as_null else _float
    try:
        value = json.loads(text, parse_constant=constant, parse_float=floats, parse_int=_int)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    if _depth(value) > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return value
