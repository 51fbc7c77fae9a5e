"""Generate docs/rules.md from the rule registry, so the reference cannot drift.

    python -m envcheck.docs_gen > docs/rules.md      (or: make docs)

tests/test_docs.py fails when the committed file differs from what this prints.
"""

from __future__ import annotations

import sys
from typing import Iterable

from envcheck.engine.rule import Rule
from envcheck.rulebook import builtin_registry

HEADER = """# envcheck rule reference

Generated from the rule registry by `python -m envcheck.docs_gen` (`make docs`); do not
edit by hand. `envcheck rules show ID` prints the same text in a terminal.

Ids are grouped by area: EC1xx packages, EC2xx host (CPU, memory), EC3xx GPU, driver
and framework builds, EC4xx the data directory, EC5xx training scripts.
Severities, ordered: info < low < medium < high < critical.
"""


def render(rules: Iterable[Rule]) -> str:
    rules = list(rules)
    out = [HEADER, "| id | name | severity | area | summary |", "|---|---|---|---|---|"]
    for r in rules:
        out.append(
            f"| [{r.id}](#{r.id.lower()}) | {r.name} | {r.severity.value} | {r.category} "
            f"| {r.summary} |"
        )
    for r in rules:
        out += [
            "",
            f"## {r.id}",
            "",
            f"**{r.name}** · severity {r.severity.value} · area {r.category}",
            "",
            r.summary + ".",
            "",
            r.docs,
            "",
        ]
        out += [f"- Message: `{r.message}`", f"- Fix: `{r.fix}`"]
        if r.impact:
            out.append(
                f"- Impact: up to {r.impact.speedup:g}x ({r.impact.basis.value}: {r.impact.source})"
            )
        out.append("- Evidence:")
        out += [f"  - {item}" for item in r.evidence]
    return "\n".join(out).rstrip() + "\n"


def main() -> None:
    sys.stdout.write(render(builtin_registry()))


if __name__ == "__main__":
    main()
