"""`envcheck rules list` and `envcheck rules show`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from envcheck.cli.app import (
    guarded,
    rules_app,
)
from envcheck.cli.common import load_config, write_output
from envcheck.cli.options import (
    ConfigOpt,
    RulesFormatOpt,
    RulesOpt,
    VerboseOpt,
)
from envcheck.engine.registry import Registry
from envcheck.errors import UsageError
from envcheck.report import (
    DataFormat,
)
from envcheck.report.escape import visible_lines
from envcheck.rulebook import builtin_registry, rule_cases_file

# rules --------------------------------------------------------------------------------


@rules_app.command("list")
@guarded
def rules_list(
    output_format: RulesFormatOpt = DataFormat.TEXT,
    rules: RulesOpt = None,
    config_path: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """List every rule: id, severity, category, name and summary (the config file's rule
    folders included, as the doctor sees them)."""
    registry = _registry(rules, config_path)
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
    config_path: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Explain one rule: what it detects, why it costs time, the fix and the evidence,
    where it is defined and where its pass/fail cases are."""
    registry = _registry(rules, config_path)
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
    out.append(f"Defined in: {rule.defined_in or rule.origin}")
    if rule.origin == "builtin":
        cases = rule_cases_file(rule.id)
        where = str(cases) if cases.is_file() else f"{cases.name} in envcheck's tests/rule_cases/"
        out.append(f"Cases:      {where}")
    write_output(visible_lines("\n".join(out)) + "\n", None)


def _registry(rules: Optional[list[Path]], config_path: Optional[Path]) -> Registry:
    settings = load_config(config_path)
    return builtin_registry([*settings.rule_paths, *(rules or [])])


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
        "defined_in": rule.defined_in or rule.origin,
    }
