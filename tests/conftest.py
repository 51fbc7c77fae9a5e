"""Shared test helpers: rule cases as data, and snapshots built from partial facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envcheck.snapshot import SCHEMA_VERSION, Snapshot
from envcheck.tomlread import load_toml

TESTS = Path(__file__).parent
RULE_CASES = TESTS / "rule_cases"
FIXTURES = TESTS / "fixtures"
NULL = "__null__"


def denull(value: Any) -> Any:
    """TOML has no null: the string "__null__" stands for one."""
    if value == NULL:
        return None
    if isinstance(value, dict):
        return {k: denull(v) for k, v in value.items()}
    if isinstance(value, list):
        return [denull(v) for v in value]
    return value


def snapshot_from(facts: dict[str, Any]) -> Snapshot:
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "collectors": {}}
    data.update(denull(facts))
    return Snapshot.from_dict(data)


def load_cases() -> list[Any]:
    params = []
    for path in sorted(RULE_CASES.glob("*.toml")):
        for index, case in enumerate(load_toml(path).get("case", [])):
            params.append(
                pytest.param(path.stem, case, id=f"{path.stem}-{index}-{case.get('expect')}")
            )
    return params
