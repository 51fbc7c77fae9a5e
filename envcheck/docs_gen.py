"""Generate docs/rules.md from the rule registry, so the reference cannot drift.

    python -m envcheck.docs_gen > docs/rules.md      (or: make docs)

tests/test_docs.py fails when the committed file differs from what this prints.
"""

from __future__ import annotations

import sys
from typing import Iterable

from envcheck.engine.rule import Rule
from envcheck.rulebook import builtin_registry
from envcheck.scripts import examples

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
        out += _examples(r.id)
        out += [f"- Message: `{r.message}`", f"- Fix: `{r.fix}`"]
        if r.impact:
            out.append(
                f"- Impact: up to {r.impact.speedup:g}x ({r.impact.basis.value}: {r.impact.source})"
            )
        out.append("- Evidence:")
        out += [f"  - {item}" for item in r.evidence]
    return "\n".join(out).rstrip() + "\n"


def _examples(rule_id: str) -> list[str]:
    """A script rule's first failing and first passing snippet, each tested as written
    (tests/test_scripts_snippets.py)."""
    snippets = examples.load(rule_id)
    out: list[str] = []
    for expect, title in (("fail", "Example"), ("pass", "Fixed")):
        chosen = next((s for s in snippets if s.expect == expect), None)
        if chosen is None:
            continue
        where = f", line {chosen.line}" if chosen.line else ""
        machine = f" (training machine: {chosen.system})" if chosen.system != "Linux" else ""
        out += [f"{title}: {chosen.name}{where}{machine}", "", "```python"]
        out += [chosen.source.rstrip("\n"), "```", ""]
    return out


def main() -> None:
    sys.stdout.write(render(builtin_registry()))


if __name__ == "__main__":
    main()
