"""Every EC5xx rule's source snippets (envcheck/scripts/examples/<ID>.toml), sqlfluff
style: each snippet is written to a file, read by the real collector and judged by the
rule against the snippet's training machine. A failing snippet must fail at its line;
a passing one must pass. Every script rule has at least one of each."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import snapshot_from

from envcheck import interpreter
from envcheck.collectors import scripts
from envcheck.collectors.base import CollectContext
from envcheck.engine.evaluate import evaluate
from envcheck.engine.registry import Registry
from envcheck.rulebook import builtin_registry
from envcheck.scripts import examples
from envcheck.snapshot import Facts

REGISTRY = builtin_registry()
SNIPPETS = [s for rule in examples.rules() for s in examples.load(rule)]


def test_every_script_rule_has_a_failing_and_a_passing_snippet() -> None:
    script_rules = sorted(r.id for r in REGISTRY if r.id.startswith("EC5"))
    assert examples.rules() == script_rules
    for rule in script_rules:
        kinds = {s.expect for s in examples.load(rule)}
        assert {"fail", "pass"} <= kinds, rule


@pytest.mark.parametrize(
    "snippet", [pytest.param(s, id=f"{s.rule}-{s.expect}-{s.name}") for s in SNIPPETS]
)
def test_snippet(tmp_path: Path, snippet: examples.Snippet) -> None:
    path = tmp_path / "train.py"
    path.write_text(snippet.source)
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(path,))
    section = scripts.collect(ctx)["scripts"]
    assert not section["errors"], section["errors"]
    facts = {
        "collectors": {"scripts": {"status": "ok", "reason": None}},
        "scripts": section,
        **snippet.machine(),
    }
    rule = REGISTRY.get(snippet.rule)
    assert rule is not None
    [result] = evaluate(Registry([rule]), Facts(snapshot_from(facts)))
    assert result.status.value == snippet.expect, result.reason
    if snippet.expect == "fail":
        lines = [f.location.line if f.location else None for f in result.findings]
        assert snippet.line in lines, (lines, result.reason)
