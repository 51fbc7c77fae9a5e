"""Every built-in rule against its pass/fail/unknown cases (tests/rule_cases/<ID>.toml)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import load_cases, snapshot_from

from envcheck.engine.evaluate import evaluate
from envcheck.engine.registry import Registry
from envcheck.rulebook import builtin_registry
from envcheck.snapshot import Facts

REGISTRY = builtin_registry()


@pytest.mark.parametrize(("rule_id", "case"), load_cases())
def test_rule_case(rule_id: str, case: dict[str, Any]) -> None:
    rule = REGISTRY.get(rule_id)
    assert rule is not None, f"case file for unknown rule {rule_id}"
    facts = Facts(snapshot_from(case.get("facts", {})))
    [result] = evaluate(Registry([rule]), facts)
    assert result.status.value == case["expect"], f"{case['name']}: {result.reason}"
    assert result.reason, "every outcome says why"
    if case["expect"] == "fail":
        assert result.findings
        for finding in result.findings:
            assert "<unknown>" not in finding.message, finding.message
            assert case.get("message_contains", "") in finding.message
            assert case.get("fix_contains", "") in finding.fix
        if "findings" in case:
            assert len(result.findings) == case["findings"]
    else:
        assert not result.findings
