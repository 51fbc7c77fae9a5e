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
from envcheck.errors import UsageError
from envcheck.report import (
    DataFormat,
)
from envcheck.rulebook import builtin_registry

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
    for rule in registry:
        typer.echo(
            f"{rule.id}  {rule.severity.value:<8} {rule.category:<12} {rule.name}: {rule.summary}"
        )


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
    typer.echo(f"{rule.id} {rule.name}  [{rule.severity.value}, {rule.category}]")
    typer.echo(f"{rule.summary}\n")
    if rule.docs:
        typer.echo(rule.docs + "\n")
    typer.echo(f"Message: {rule.message}")
    typer.echo(f"Fix:     {rule.fix}")
    if rule.impact:
        typer.echo(
            f"Impact:  up to {rule.impact.speedup:g}x ({rule.impact.basis.value}: "
            f"{rule.impact.source})"
        )
    typer.echo("Evidence:")
    for item in rule.evidence:
        typer.echo(f"  - {item}")
    typer.echo(f"Defined in: {rule.origin}")


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
