"""Which rules run: --select / --ignore by id prefix, the longest matching prefix wins.

As in flake8: `--select EC1 --ignore EC10` runs EC110 but not EC101, and
`--ignore EC1 --select EC101` runs EC101 alone of the EC1xx rules. With no --select,
everything not ignored runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from envcheck.errors import UsageError


@dataclass(frozen=True)
class Selection:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    @classmethod
    def of(cls, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> Selection:
        return cls(_normalise(select), _normalise(ignore))

    def merged_over(self, base: Selection) -> Selection:
        """Command-line choices (self) added to the config file's (base)."""
        return Selection(
            self.select or base.select, tuple(dict.fromkeys(base.ignore + self.ignore))
        )

    def skip_reason(self, rule_id: str) -> Optional[str]:
        """Why a rule is deselected, or None when it runs."""
        best_select = _longest(rule_id, self.select)
        best_ignore = _longest(rule_id, self.ignore)
        if best_ignore and len(best_ignore) >= len(best_select or ""):
            return f"ignored ({best_ignore})"
        if self.select and not best_select:
            return f"not selected ({', '.join(self.select)})"
        return None

    def check_known(self, ids: Iterable[str]) -> None:
        """Every prefix must match some rule: a typo should not select nothing silently."""
        known = list(ids)
        for flag, prefixes in (("select", self.select), ("ignore", self.ignore)):
            for prefix in prefixes:
                if not any(rule_id.startswith(prefix) for rule_id in known):
                    raise UsageError(f"--{flag} {prefix}: no rule id starts with {prefix}")


def _normalise(prefixes: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for item in prefixes:
        out.extend(p.strip().upper() for p in item.split(",") if p.strip())
    return tuple(out)


def _longest(rule_id: str, prefixes: tuple[str, ...]) -> Optional[str]:
    matches = [p for p in prefixes if rule_id.startswith(p)]
    return max(matches, key=len) if matches else None
