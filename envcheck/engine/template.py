"""Message and fix templates: `{fact.path}` or `{value}`, optionally `{x|filter}`.

Values a rule supplies (a Hit's values) come first, then facts by dotted path. A field
that cannot be filled renders as `<unknown>` rather than failing the whole report.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from envcheck.snapshot import Facts, Missing

_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.\-]*)(?:\|([a-z]+))?\}")


def human_bytes(value: Any) -> str:
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover


def _join(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


FILTERS: dict[str, Callable[[Any], str]] = {"bytes": human_bytes, "join": _join}


def render(template: str, values: Mapping[str, Any], facts: Facts) -> str:
    def fill(match: re.Match[str]) -> str:
        key, filter_name = match.group(1), match.group(2)
        if key in values:
            value = values[key]
        else:
            value = facts.lookup(key)
            if isinstance(value, Missing) or value is None:
                return "<unknown>"
        if filter_name:
            try:
                return FILTERS[filter_name](value)
            except (KeyError, TypeError, ValueError):
                return str(value)
        return _join(value)

    return _FIELD.sub(fill, template)


def fields(template: str) -> list[tuple[str, str | None]]:
    """The (field, filter) pairs a template uses, for validating rule definitions."""
    return [(m.group(1), m.group(2)) for m in _FIELD.finditer(template)]
