"""Documentation generated from the registry stays in step with it."""

from __future__ import annotations

from pathlib import Path

from conftest import cli_flags

from envcheck.docs_gen import render
from envcheck.engine.registry import builtin_registry

ROOT = Path(__file__).resolve().parent.parent


def test_rules_reference_is_current() -> None:
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == render(builtin_registry()), "run `make docs` and commit docs/rules.md"


def test_every_rule_has_an_anchor_the_findings_point_to() -> None:
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in builtin_registry():
        assert f"## {rule.id}" in text
        assert rule.docs_ref == f"docs/rules.md#{rule.id.lower()}"


def test_readme_documents_every_flag() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in ("doctor", "collect"):
        for flag in cli_flags(command):
            assert f"`{flag}" in readme, (command, flag)
