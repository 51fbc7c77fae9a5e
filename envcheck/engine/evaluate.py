"""Evaluate every selected rule against a snapshot and turn failures into Findings.

Rules are pure; a rule that raises is a bug in envcheck, reported as `unknown` with the
exception so the other rules still run.
"""

from __future__ import annotations

from typing import Mapping

from envcheck.engine.registry import Registry
from envcheck.engine.rule import Outcome, Rule
from envcheck.engine.selection import Selection
from envcheck.engine.template import render
from envcheck.model import CheckResult, Finding, Status
from envcheck.snapshot import Facts


def evaluate(
    registry: Registry,
    facts: Facts,
    selection: Selection | None = None,
    acknowledged: Mapping[str, str] | None = None,
) -> list[CheckResult]:
    acknowledged = acknowledged or {}
    selection = selection or Selection()
    results = []
    for rule in registry:
        skip = selection.skip_reason(rule.id)
        if skip:
            results.append(_result(rule, Outcome(Status.SKIPPED, skip), facts, None))
            continue
        try:
            outcome = rule.evaluate(facts)
        except Exception as exc:  # a bug in one rule must not hide the others
            outcome = Outcome.unknown(f"rule raised {type(exc).__name__}: {exc}")
        results.append(_result(rule, outcome, facts, acknowledged.get(rule.id)))
    return results


def _result(rule: Rule, outcome: Outcome, facts: Facts, ack: str | None) -> CheckResult:
    findings = []
    if outcome.status is Status.FAIL:
        for hit in outcome.hits:
            findings.append(
                Finding(
                    id=rule.id,
                    name=rule.name,
                    severity=rule.severity,
                    category=rule.category,
                    message=render(rule.message, hit.values, facts),
                    fix=render(rule.fix, hit.values, facts),
                    docs=rule.docs_ref,
                    impact=hit.impact or rule.impact,
                    location=hit.location,
                    evidence={"links": list(rule.evidence), **hit.evidence},
                    acknowledged=ack,
                )
            )
    return CheckResult(
        id=rule.id,
        name=rule.name,
        category=rule.category,
        severity=rule.severity,
        status=outcome.status,
        reason=outcome.reason,
        findings=tuple(findings),
    )
