"""The values that flow from rules to reporters: severities, outcomes, findings, the report.

Small frozen dataclasses (after pip-audit's result types) so that a finding, once made,
cannot be changed by a reporter, and so that every reporter sees the same facts.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence


class Severity(enum.Enum):
    """How bad a finding is. Ordered: info < low < medium < high < critical."""

    INFO = "info"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _SEVERITY_ORDER.index(self)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank <= other.rank

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls(text.strip().lower())
        except ValueError:
            names = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown severity {text!r} (expected one of: {names})") from None


_SEVERITY_ORDER = [Severity.INFO, Severity.LOW, Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL]


class Status(enum.Enum):
    """What evaluating one rule against one snapshot came to."""

    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"
    SKIPPED = "skipped"


class Basis(enum.Enum):
    """Where a speedup figure comes from: this machine's probe, or a cited source."""

    MEASURED = "measured"
    ESTIMATED = "estimated"


@dataclass(frozen=True)
class Impact:
    """Expected speedup of applying a fix (2.0 = twice as fast) and what it rests on."""

    speedup: float
    basis: Basis
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"speedup": self.speedup, "basis": self.basis.value, "source": self.source}


@dataclass(frozen=True)
class Location:
    path: str
    line: Optional[int] = None
    column: Optional[int] = None  # 1-based
    code: Optional[str] = None  # the source line, stripped

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "column": self.column, "code": self.code}


@dataclass(frozen=True)
class Finding:
    """One problem found: what was observed, how to fix it, why we believe it matters."""

    id: str
    name: str
    severity: Severity
    category: str
    message: str
    fix: str
    docs: str
    impact: Optional[Impact] = None
    location: Optional[Location] = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    acknowledged: Optional[str] = None


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one rule: pass, fail (with findings), unknown or skipped, and why."""

    id: str
    name: str
    category: str
    severity: Severity
    status: Status
    reason: str = ""
    findings: Sequence[Finding] = ()


@dataclass(frozen=True)
class RuleInfo:
    """What a reporter needs to describe a rule, carried in the Report so that no reporter
    consults the registry (a user rule's summary reaches SARIF like a built-in one's)."""

    id: str
    name: str
    severity: Severity
    category: str
    summary: str
    docs: str  # the rule's documentation text (anti-pattern, better practice)
    docs_ref: str  # where to read it: `envcheck rules show ID`, or a user rule's file
    origin: str  # "builtin", or the user rule file it came from
    defined_in: str  # the module or TOML file that defines it


@dataclass(frozen=True)
class RankedFinding:
    rank: int
    finding: Finding


@dataclass(frozen=True)
class Report:
    """Everything one doctor run produced, in ranked order, ready for any reporter."""

    tool_version: str
    created: str
    findings: Sequence[RankedFinding]
    checks: Sequence[CheckResult]
    facts: Mapping[str, Any]
    probe: Optional[Mapping[str, Any]] = None
    rules: Mapping[str, RuleInfo] = field(default_factory=dict)  # every evaluated rule, by id

    def active_findings(self) -> list[Finding]:
        """Findings that count towards --fail-on (acknowledged ones do not)."""
        return [r.finding for r in self.findings if r.finding.acknowledged is None]

    def at_or_above(self, fail_on: Severity) -> list[Finding]:
        """Active findings at or above `fail_on`, in rank order: what fails a run."""
        return [f for f in self.active_findings() if f.severity >= fail_on]

    def worst_severity(self) -> Optional[Severity]:
        active = self.active_findings()
        return max((f.severity for f in active), key=lambda s: s.rank) if active else None
