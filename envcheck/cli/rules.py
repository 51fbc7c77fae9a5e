"""`envcheck rules list` and `envcheck rules show`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from envcheck.cli.app import (
    guarded,
    rules_app,
)
from envcheck.cli.common import (
    write_output,
)
from envcheck.cli.options import (
    RulesFormatOpt,
    RulesOpt,
    VerboseOpt,
)
from envcheck.engine.registry import builtin_registry
from envcheck.errors import UsageError
from envcheck.report import (
    DataFormat,
)
from envcheck.report.escape import visible_lines

# rules --------------------------------------------------------------------------------


@rules_app.command("list")
@guarded
def rules_list(
    output_format: RulesFormatOpt = DataFormat.TEXT,
    rules: RulesOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """List every rule: id, severity, category, name and summary."""
    registry = builtin_registry(rules or [])
    if output_format is DataFormat.JSON:
        write_output(json.dumps([_rule_json(r) for r in registry], indent=2) + "\n", None)
        return
    lines = [
        f"{rule.id}  {rule.severity.value:<8} {rule.category:<12} {rule.name}: {rule.summary}"
        for rule in registry
    ]
    write_output(visible_lines("\n".join(lines)) + "\n", None)  # a --rules file's text too


@rules_app.command("show")
@guarded
def rules_show(
    rule_id: Annotated[
        str, typer.Argument(help="The rule id, e.g. EC101.", show_default=False, metavar="RULE_ID")
    ],
    output_format: RulesFormatOpt = DataFormat.TEXT,
    rules: RulesOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Explain one rule: what it detects, why it costs time, the fix and the evidence."""
    registry = builtin_registry(rules or [])
    rule = registry.get(rule_id)
    if rule is None:
        raise UsageError(f"no rule with id {rule_id!r} (see `envcheck rules list`)")
    if output_format is DataFormat.JSON:
        write_output(json.dumps(_rule_json(rule), indent=2) + "\n", None)
        return
    out = [f"{rule.id} {rule.name}  [{rule.severity.value}, {rule.category}]", f"{rule.summary}\n"]
    if rule.docs:
        out.append(rule.docs + "\n")
    out.append(f"Message: {rule.message}")
    out.append(f"Fix:     {rule.fix}")
    if rule.impact:
        out.append(
            f"Impact:  up to {rule.impact.speedup:g}x ({rule.impact.basis.value}: "
            f"{rule.impact.source})"
        )
    out.append("Evidence:")
    out.extend(f"  - {item}" for item in rule.evidence)
    out.append(f"Defined in: {rule.origin}")
    write_output(visible_lines("\n".join(out)) + "\n", None)


def _rule_json(rule: Any) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "severity": rule.severity.value,
        "category": rule.category,
        "summary": rule.summary,
        "message": rule.message,
        "fix": rule.fix,
        "impact": rule.impact.to_json() if rule.impact else None,
        "evidence": list(rule.evidence),
        "docs": rule.docs,
        "origin": rule.origin,
    }
