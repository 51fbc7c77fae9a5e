"""Declarative rules from TOML files: metadata plus a `when` condition over the snapshot.

A file holds `[[rule]]` tables. Every problem in a file (bad TOML, a missing key, an
unknown key, an invalid version specifier) is an InputError naming the file and rule,
so a typo in a policy file never silently disables a rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcheck import finite
from envcheck.engine import conditions
from envcheck.engine.rule import Hit, Outcome, Rule, validate_identity
from envcheck.errors import InputError
from envcheck.model import Basis, Impact, Severity
from envcheck.snapshot import Facts
from envcheck.tomlread import load_toml

REQUIRED = ("id", "name", "severity", "category", "summary", "message", "fix", "when")
OPTIONAL = ("evidence", "docs", "impact")


def load_file(path: Path, origin: str, defined_in: str = "") -> list[Rule]:
    """The rules of one file; `defined_in` names the file as users should see it
    (default: its path)."""
    data = load_toml(path)
    extra = sorted(set(data) - {"rule"})
    if extra:
        raise InputError(f"{path}: unexpected top-level key(s) {', '.join(extra)}; use [[rule]]")
    tables = data.get("rule", [])
    if not isinstance(tables, list):
        raise InputError(f"{path}: 'rule' must be an array of tables ([[rule]])")
    rules = []
    for index, table in enumerate(tables):
        if not isinstance(table, dict):
            raise InputError(f"{path}: rule #{index + 1} must be a table ([[rule]])")
        where = f"{path}: rule {table.get('id', f'#{index + 1}')}"
        try:
            rules.append(_build(table, where, origin, defined_in or str(path)))
        except ValueError as exc:
            raise InputError(str(exc)) from None
        except RecursionError:  # a `when` nested deeper than the stack allows
            raise InputError(f"{where}: when: conditions nested too deeply") from None
    return rules


def _build(table: dict[str, Any], where: str, origin: str, defined_in: str) -> Rule:
    missing = [k for k in REQUIRED if k not in table]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    extra = sorted(set(table) - set(REQUIRED) - set(OPTIONAL))
    if extra:
        raise ValueError(f"{where}: unexpected key(s) {', '.join(extra)}")
    for key in ("id", "name", "severity", "category", "summary", "message", "fix"):
        if not isinstance(table[key], str) or not table[key].strip():
            raise ValueError(f"{where}: '{key}' must be a non-empty string")
    validate_identity(table["id"], table["name"], where)
    try:
        severity = Severity.parse(table["severity"])
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    evidence = table.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise ValueError(f"{where}: 'evidence' must be a list of strings (links or citations)")
    docs = table.get("docs", "")
    if not isinstance(docs, str):
        raise ValueError(f"{where}: 'docs' must be a string")
    condition = conditions.parse(table["when"], f"{where}: when")
    return Rule(
        id=table["id"],
        name=table["name"],
        severity=severity,
        category=table["category"],
        summary=table["summary"].strip(),
        message=table["message"].strip(),
        fix=table["fix"].strip(),
        evidence=tuple(evidence),
        docs=docs.strip(),
        evaluate=_evaluator(condition),
        impact=_impact(table.get("impact"), where),
        origin=origin,
        defined_in=defined_in,
    )


def _evaluator(condition: conditions.Condition) -> Any:
    def evaluate(facts: Facts) -> Outcome:
        truth = condition.evaluate(facts)
        if truth.value is None:
            return Outcome.unknown(truth.reason)
        if truth.value is False:
            return Outcome.passed(truth.reason)
        return Outcome.failed(Hit(evidence={"facts": dict(truth.observed)}), reason=truth.reason)

    return evaluate


def _impact(node: Any, where: str) -> Impact | None:
    if node is None:
        return None
    if not isinstance(node, dict) or set(node) - {"speedup", "basis", "source"}:
        raise ValueError(f"{where}: 'impact' must be {{speedup, basis, source}}")
    speedup = node.get("speedup")
    if (
        not isinstance(speedup, (int, float))
        or isinstance(speedup, bool)
        or finite.non_finite(speedup)
        or speedup < 1
    ):
        raise ValueError(f"{where}: impact.speedup must be a number >= 1 (2.0 = twice as fast)")
    source = node.get("source", "")
    if not isinstance(source, str) or not source:
        raise ValueError(f"{where}: impact.source must cite where the figure comes from")
    try:
        basis = Basis(node.get("basis", "estimated"))
    except ValueError:
        raise ValueError(f"{where}: impact.basis must be 'estimated' or 'measured'") from None
    return Impact(float(speedup), basis, source)
