"""Ranking of findings and the --select/--ignore prefix logic."""

from __future__ import annotations

import pytest

from envcheck.engine.rank import rank
from envcheck.engine.selection import Selection
from envcheck.engine.template import human_bytes, render
from envcheck.errors import UsageError
from envcheck.model import Basis, Finding, Impact, Severity
from envcheck.snapshot import Facts


def finding(
    rule_id: str, severity: Severity, impact: Impact | None = None, ack: str | None = None
) -> Finding:
    return Finding(
        id=rule_id,
        name="n",
        severity=severity,
        category="packages",
        message="m",
        fix="f",
        docs="d",
        impact=impact,
        acknowledged=ack,
    )


def test_measured_beats_estimated_beats_none_and_severity_breaks_ties() -> None:
    findings = [
        finding("EC105", Severity.CRITICAL),
        finding("EC104", Severity.LOW, Impact(1.5, Basis.ESTIMATED, "src")),
        finding("EC103", Severity.LOW, Impact(1.2, Basis.MEASURED, "probe")),
        finding("EC102", Severity.HIGH, Impact(3.0, Basis.ESTIMATED, "src")),
        finding("EC101", Severity.HIGH),
        finding("EC106", Severity.CRITICAL, ack="accepted risk"),
        finding("EC107", Severity.MEDIUM, Impact(3.0, Basis.ESTIMATED, "src")),
    ]
    ordered = [(r.rank, r.finding.id) for r in rank(findings)]
    assert ordered == [
        (1, "EC103"),  # measured
        (2, "EC102"),  # estimated 3.0x, high
        (3, "EC107"),  # estimated 3.0x, medium
        (4, "EC104"),  # estimated 1.5x
        (5, "EC105"),  # no figure, critical
        (6, "EC101"),  # no figure, high
        (7, "EC106"),  # acknowledged last
    ]


@pytest.mark.parametrize(
    ("select", "ignore", "rule_id", "runs"),
    [
        ((), (), "EC101", True),
        (("EC1",), (), "EC201", False),
        (("EC1",), ("EC10",), "EC101", False),
        (("EC1",), ("EC10",), "EC110", True),
        (("EC101",), ("EC1",), "EC101", True),  # the longer prefix wins
        (("EC101",), ("EC1",), "EC102", False),
        ((), ("EC2",), "EC201", False),
        (("ec1, ec2",), (), "EC201", True),  # comma-separated, case-insensitive
    ],
)
def test_longest_prefix_wins(
    select: tuple[str, ...], ignore: tuple[str, ...], rule_id: str, runs: bool
) -> None:
    assert (Selection.of(select, ignore).skip_reason(rule_id) is None) is runs


def test_prefix_matching_no_rule_is_an_error() -> None:
    with pytest.raises(UsageError, match="--ignore EC9"):
        Selection.of((), ("EC9",)).check_known(["EC101", "EC201"])


def test_command_line_selection_extends_the_config() -> None:
    merged = Selection.of(("EC2",), ("EC202",)).merged_over(Selection.of(("EC1",), ("EC101",)))
    assert merged.select == ("EC2",)
    assert merged.ignore == ("EC101", "EC202")


def test_templates() -> None:
    facts = Facts(
        {
            "schema_version": 1,
            "memory": {"shm_bytes": 67108864},
            "modules": {"providers": {"pynvml": ["a", "b"]}},
        }
    )
    assert render("{memory.shm_bytes|bytes}", {}, facts) == "64.0 MiB"
    assert render("{modules.providers.pynvml|join}", {}, facts) == "a, b"
    assert render("{x} and {cpu.governor}", {"x": 3}, facts) == "3 and <unknown>"
    assert human_bytes(512) == "512 B"
