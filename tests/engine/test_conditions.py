"""The TOML condition language: three-valued logic and its parse errors."""

from __future__ import annotations

from typing import Any

import pytest

from envcheck.engine import conditions
from envcheck.snapshot import Facts

FACTS = Facts(
    {
        "schema_version": 1,
        "collectors": {"gpu": {"status": "unavailable", "reason": "no NVIDIA driver"}},
        "packages": {"torch": "2.3.1", "weird": "not-a-version"},
        "memory": {"shm_bytes": 67108864, "cgroup_limit_bytes": None},
        "cpu": {"governor": None, "reasons": {"governor": "no cpufreq"}, "model": "AMD EPYC"},
        "platform": {"container": "docker", "python": "3.8.10"},
    }
)


def truth(node: Any) -> bool | None:
    return conditions.parse(node, "test").evaluate(FACTS).value


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ({"package": "torch"}, True),
        ({"package": "Torch"}, True),  # names are canonicalised
        ({"package": "tensorflow"}, False),
        ({"package": "torch", "version": "<2.3"}, False),
        ({"package": "torch", "version": ">=2.3,<2.4"}, True),
        ({"package": "weird", "version": ">1"}, None),  # unparsable version: unknown
        ({"fact": "memory.shm_bytes", "op": "<", "value": 2**30}, True),
        ({"fact": "memory.shm_bytes", "op": ">=", "value": 2**30}, False),
        ({"fact": "memory.cgroup_limit_bytes", "op": "absent"}, True),
        ({"fact": "memory.cgroup_limit_bytes", "op": "<", "value": 5}, False),
        ({"fact": "cpu.governor", "op": "==", "value": "powersave"}, None),  # with reason
        ({"fact": "gpu.driver_version", "op": "present"}, None),  # collector unavailable
        ({"fact": "storage.kind", "op": "==", "value": "hdd"}, None),  # not in snapshot
        ({"fact": "platform.container", "op": "in", "value": ["docker", "k8s"]}, True),
        ({"fact": "platform.container", "op": "not-in", "value": ["docker"]}, False),
        ({"fact": "cpu.model", "op": "matches", "value": "EPYC"}, True),
        ({"fact": "platform.python", "version": "<3.9"}, True),
        ({"fact": "memory.shm_bytes", "op": "<", "value": "text"}, None),  # type mismatch
    ],
)
def test_clauses(node: dict[str, Any], expected: bool | None) -> None:
    assert truth(node) is expected


UNKNOWN = {"fact": "cpu.governor", "op": "==", "value": "powersave"}
TRUE = {"package": "torch"}
FALSE = {"package": "tensorflow"}


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ([TRUE, TRUE], True),
        ([TRUE, FALSE], False),
        ([UNKNOWN, FALSE], False),  # false wins over unknown: not installed means pass
        ([UNKNOWN, TRUE], None),  # otherwise unknown is never a silent pass
        ({"any": [UNKNOWN, TRUE]}, True),
        ({"any": [UNKNOWN, FALSE]}, None),
        ({"any": [FALSE, FALSE]}, False),
        ({"not": TRUE}, False),
        ({"not": UNKNOWN}, None),
        ({"all": [TRUE, {"not": FALSE}]}, True),
    ],
)
def test_kleene_logic(node: Any, expected: bool | None) -> None:
    assert truth(node) is expected


def test_observed_facts_are_reported() -> None:
    result = conditions.parse([TRUE], "t").evaluate(FACTS)
    assert result.observed == {"packages.torch": "2.3.1"}


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ([], "empty condition list"),
        ("torch", "must be a table"),
        ({"package": "torch", "fact": "x"}, "exactly one of"),
        ({"package": "torch", "version": "=>1"}, "invalid version specifier"),
        ({"package": "torch", "op": "=="}, "unexpected key(s) op"),
        ({"fact": "Memory Size", "op": "present"}, "dotted path"),
        ({"fact": "memory.shm_bytes", "op": "~"}, "'op' must be one of"),
        ({"fact": "memory.shm_bytes", "op": "<"}, "needs a value"),
        ({"fact": "memory.shm_bytes", "op": "present", "value": 1}, "takes no value"),
        ({"fact": "cpu.model", "op": "matches", "value": "("}, "bad regular expression"),
        ({"any": []}, "non-empty list"),
    ],
)
def test_parse_errors_name_the_problem(node: Any, message: str) -> None:
    with pytest.raises(ValueError, match=r"^where") as info:
        conditions.parse(node, "where")
    assert message in str(info.value)


def test_a_catastrophic_pattern_is_unknown_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    """`^(a|aa)+$` backtracks exponentially on a long run of `a` that ends otherwise: with
    Python's re the doctor never returned (the fact may be a name a stranger chose). The
    search is bounded; past the bound the clause is unknown, with the reason."""
    monkeypatch.setattr(conditions, "MATCH_TIMEOUT_S", 0.05)
    facts = Facts({"schema_version": 1, "cpu": {"model": "a" * 60 + "!"}})
    node = {"fact": "cpu.model", "op": "matches", "value": "^(a|aa)+$"}
    result = conditions.parse(node, "t").evaluate(facts)
    assert result.value is None
    assert "did not finish within 0.05 s" in result.reason
