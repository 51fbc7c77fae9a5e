"""One rule = metadata (id, severity, message, fix, evidence, docs) + a pure evaluation.

Declarative TOML rules and Python checks both become `Rule`s, so the registry, the
evaluator and the reporters never need to know which kind they hold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from envcheck.model import Impact, Location, RuleInfo, Severity, Status
from envcheck.snapshot import Facts

ID_PATTERN = re.compile(r"^[A-Z]{2,5}[0-9]{3,4}$")
BUILTIN_ID_PATTERN = re.compile(r"^EC[1-9][0-9]{2}$")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Hit:
    """One occurrence of the problem a rule looks for: template values and evidence."""

    values: Mapping[str, Any] = field(default_factory=dict)
    evidence: Mapping[str, Any] = field(default_factory=dict)
    location: Optional[Location] = None
    impact: Optional[Impact] = None  # overrides the rule's own estimate (e.g. measured)


@dataclass(frozen=True)
class Outcome:
    status: Status
    reason: str = ""
    hits: Sequence[Hit] = ()

    @classmethod
    def passed(cls, reason: str) -> Outcome:
        return cls(Status.PASS, reason)

    @classmethod
    def unknown(cls, reason: str) -> Outcome:
        return cls(Status.UNKNOWN, reason)

    @classmethod
    def failed(cls, *hits: Hit, reason: str = "") -> Outcome:
        return cls(Status.FAIL, reason, hits or (Hit(),))


Evaluate = Callable[[Facts], Outcome]


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: Severity
    category: str
    summary: str
    message: str  # template: {fact.path} or {value} fields, optional |filter
    fix: str  # template, pasteable
    evidence: tuple[str, ...]
    docs: str
    evaluate: Evaluate = field(compare=False, repr=False)
    impact: Optional[Impact] = None
    origin: str = "builtin"  # "builtin", or the user rule file it came from
    defined_in: str = ""  # the module (file:line) or TOML file that defines it

    @property
    def docs_ref(self) -> str:
        """Where a reader finds the rule's full documentation: a command that works
        wherever envcheck is installed (docs/ is not in the wheel), or a user rule's file."""
        if self.origin == "builtin":
            return f"envcheck rules show {self.id}"
        return self.origin

    def info(self) -> RuleInfo:
        return RuleInfo(
            id=self.id,
            name=self.name,
            severity=self.severity,
            category=self.category,
            summary=self.summary,
            docs=self.docs,
            docs_ref=self.docs_ref,
            origin=self.origin,
            defined_in=self.defined_in or self.origin,
        )


def validate_identity(rule_id: str, name: str, where: str) -> None:
    """Raise ValueError when an id or name is malformed (callers add the file name)."""
    if not ID_PATTERN.match(rule_id):
        raise ValueError(f"{where}: rule id {rule_id!r} must look like EC101 (letters, digits)")
    if not NAME_PATTERN.match(name):
        raise ValueError(f"{where}: rule name {name!r} must be kebab-case")
