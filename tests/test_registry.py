"""The rule registry as a whole (after ansible-lint's test_rules_collection)."""

from __future__ import annotations

from conftest import RULE_CASES

from envcheck.engine.rule import BUILTIN_ID_PATTERN, NAME_PATTERN
from envcheck.engine.template import fields
from envcheck.rulebook import builtin_registry
from envcheck.tomlread import load_toml

REGISTRY = builtin_registry()


def test_registry_is_not_empty() -> None:
    assert len(REGISTRY) >= 8


def test_ids_and_names_are_well_formed_and_unique() -> None:
    ids = [r.id for r in REGISTRY]
    names = [r.name for r in REGISTRY]
    assert len(set(ids)) == len(ids)
    assert len(set(names)) == len(names)
    for rule in REGISTRY:
        assert BUILTIN_ID_PATTERN.match(rule.id), rule.id
        assert NAME_PATTERN.match(rule.name), rule.name


def test_ids_are_grouped_by_area() -> None:
    area_of_group = {
        "1": {"packages"},
        "2": {"memory", "cpu", "platform", "environment"},
        "3": {"gpu", "frameworks"},
        "4": {"data"},
        "5": {"scripts"},
        "6": {"probe"},
        "7": {"run"},
    }
    for rule in REGISTRY:
        assert rule.category in area_of_group[rule.id[2]], (rule.id, rule.category)


def test_every_rule_is_documented() -> None:
    for rule in REGISTRY:
        assert rule.summary and rule.message and rule.fix, rule.id
        assert rule.evidence, f"{rule.id} has no evidence"
        assert "Anti-pattern" in rule.docs and "Best practice" in rule.docs, rule.id
        if rule.impact:
            assert rule.impact.source, f"{rule.id}: an impact figure must cite its source"


def test_templates_use_known_filters() -> None:
    for rule in REGISTRY:
        for _, filter_name in fields(rule.message) + fields(rule.fix):
            assert filter_name in (None, "bytes", "join"), (rule.id, filter_name)


def test_every_rule_has_failing_and_passing_cases() -> None:
    for rule in REGISTRY:
        path = RULE_CASES / f"{rule.id}.toml"
        assert path.is_file(), f"{rule.id} has no case file"
        expects = {case["expect"] for case in load_toml(path)["case"]}
        assert {"fail", "pass"} <= expects, f"{rule.id} cases: {sorted(expects)}"


def test_no_case_file_without_a_rule() -> None:
    ids = {r.id for r in REGISTRY}
    for path in RULE_CASES.glob("*.toml"):
        assert path.stem in ids, f"{path.name} has no rule"
