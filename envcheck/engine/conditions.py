"""The condition language of TOML rules, evaluated in three-valued logic.

A clause is true (the problem is present), false (it is not) or unknown (a fact it needs
is missing). `all` is false as soon as one clause is false, so a rule about a package
that is not installed passes even when other facts are missing; otherwise any unknown
makes the whole condition unknown, never a silent pass.

Clauses (tables in TOML):
    {package = "NAME"}                           installed
    {package = "NAME", version = ">=1.0,<2"}     installed at a version in the specifier
    {fact = "a.b", op = "<", value = 3}          comparison: == != < <= > >= in not-in
    {fact = "a.b", op = "present"}               present / absent (null or not there)
    {fact = "a.b", op = "matches", value = "re"} regular-expression search on the text
                                                 (bounded: a search that runs past
                                                 MATCH_TIMEOUT_S is unknown, not a hang)
    {fact = "a.b", version = "<3.8"}             the fact parsed as a version
    {all = [...]}, {any = [...]}, {not = {...}}
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import regex
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envcheck import finite
from envcheck.snapshot import Facts, Missing

# A user rule's pattern may backtrack catastrophically (`^(a|aa)+$`) on a fact a stranger
# named (a process or device name): Python's `re` cannot be stopped, the `regex` engine
# (a superset of `re`) takes a timeout, checked periodically (it may run a few times over).
MATCH_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class Truth:
    """True / False / unknown, with a reason for unknown and what was observed."""

    value: Optional[bool]
    reason: str = ""
    observed: Mapping[str, Any] = field(default_factory=dict)

    @property
    def unknown(self) -> bool:
        return self.value is None


class Condition:
    def evaluate(self, facts: Facts) -> Truth:
        raise NotImplementedError


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda a, b: a in b,
    "not-in": lambda a, b: a not in b,
}
_UNARY = ("present", "absent")
OPERATORS = (*_COMPARISONS, *_UNARY, "matches")


def _specifier(text: str, where: str) -> SpecifierSet:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ValueError(f"{where}: invalid version specifier {text!r}") from None


@dataclass(frozen=True)
class PackageClause(Condition):
    name: str
    specifier: Optional[SpecifierSet]

    def evaluate(self, facts: Facts) -> Truth:
        version = facts.package_version(self.name)
        if isinstance(version, Missing):
            return Truth(None, version.reason)
        observed = {f"packages.{self.name}": version}
        if version is None:
            return Truth(False, f"{self.name} is not installed", observed)
        if self.specifier is None:
            return Truth(True, f"{self.name} {version} is installed", observed)
        return _version_truth(f"{self.name}", version, self.specifier, observed)


def _version_truth(
    what: str, version: str, specifier: SpecifierSet, observed: Mapping[str, Any]
) -> Truth:
    try:
        parsed = Version(version)
    except InvalidVersion:
        return Truth(None, f"{what} version {version!r} is not a PEP 440 version", observed)
    inside = specifier.contains(parsed, prereleases=True)
    relation = "matches" if inside else "is outside"
    return Truth(inside, f"{what} {version} {relation} {specifier}", observed)


@dataclass(frozen=True)
class FactClause(Condition):
    path: str
    op: str
    value: Any = None
    specifier: Optional[SpecifierSet] = None

    def evaluate(self, facts: Facts) -> Truth:
        found = facts.lookup(self.path)
        if isinstance(found, Missing):
            return Truth(None, found.reason)
        observed = {self.path: found}
        if self.specifier is not None:
            if found is None:
                return Truth(False, f"{self.path} is not set", observed)
            return _version_truth(self.path, str(found), self.specifier, observed)
        if self.op == "present":
            return Truth(found is not None, f"{self.path} = {found!r}", observed)
        if self.op == "absent":
            return Truth(found is None, f"{self.path} = {found!r}", observed)
        if found is None:
            return Truth(False, f"{self.path} is not set", observed)
        if self.op == "matches":
            try:
                hit = regex.search(str(self.value), str(found), timeout=MATCH_TIMEOUT_S)
            except TimeoutError:
                shown = repr(found) if len(str(found)) <= 80 else f"{str(found)[:80]!r}..."
                return Truth(
                    None,
                    f"{self.path} = {shown}: the pattern {self.value!r} did not finish "
                    f"within {MATCH_TIMEOUT_S:g} s (catastrophic backtracking)",
                )
            return Truth(hit is not None, f"{self.path} = {found!r}", observed)
        try:
            result = bool(_COMPARISONS[self.op](found, self.value))
        except TypeError:
            return Truth(None, f"{self.path} = {found!r} cannot be compared with {self.value!r}")
        return Truth(
            result, f"{self.path} = {found!r} {self.op} {self.value!r}: {result}", observed
        )


@dataclass(frozen=True)
class AllOf(Condition):
    clauses: Sequence[Condition]

    def evaluate(self, facts: Facts) -> Truth:
        results = [c.evaluate(facts) for c in self.clauses]
        observed = _merge(results)
        for r in results:
            if r.value is False:
                return Truth(False, r.reason, observed)
        unknown = [r for r in results if r.unknown]
        if unknown:
            return Truth(None, _first_of(unknown), observed)
        return Truth(True, "; ".join(r.reason for r in results), observed)


@dataclass(frozen=True)
class AnyOf(Condition):
    clauses: Sequence[Condition]

    def evaluate(self, facts: Facts) -> Truth:
        results = [c.evaluate(facts) for c in self.clauses]
        observed = _merge([r for r in results if r.value is not False])
        hits = [r for r in results if r.value is True]
        if hits:
            return Truth(True, "; ".join(r.reason for r in hits), _merge(hits))
        unknown = [r for r in results if r.unknown]
        if unknown:
            return Truth(None, _first_of(unknown), observed)
        return Truth(False, "; ".join(r.reason for r in results), _merge(results))


@dataclass(frozen=True)
class Not(Condition):
    clause: Condition

    def evaluate(self, facts: Facts) -> Truth:
        inner = self.clause.evaluate(facts)
        value = None if inner.value is None else not inner.value
        return Truth(value, inner.reason, inner.observed)


def _first_of(unknown: Sequence[Truth]) -> str:
    """The first missing fact's reason, and how many more are missing."""
    more = f" (and {len(unknown) - 1} more missing fact(s))" if len(unknown) > 1 else ""
    return unknown[0].reason + more


def _merge(results: Sequence[Truth]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for r in results:
        merged.update(r.observed)
    return merged


def parse(node: Any, where: str) -> Condition:
    """Build a Condition from TOML data; ValueError names what is wrong and where."""
    if isinstance(node, list):
        if not node:
            raise ValueError(f"{where}: an empty condition list")
        return AllOf(tuple(parse(item, f"{where}[{i}]") for i, item in enumerate(node)))
    if not isinstance(node, dict):
        raise ValueError(f"{where}: a condition must be a table, got {type(node).__name__}")
    kinds = [k for k in ("package", "fact", "all", "any", "not") if k in node]
    if len(kinds) != 1:
        raise ValueError(
            f"{where}: a condition needs exactly one of package, fact, all, any, not "
            f"(got {sorted(node)})"
        )
    kind = kinds[0]
    if kind in ("all", "any"):
        _only(node, {kind}, where)
        items = node[kind]
        if not isinstance(items, list) or not items:
            raise ValueError(f"{where}: '{kind}' needs a non-empty list of conditions")
        parsed = tuple(parse(item, f"{where}.{kind}[{i}]") for i, item in enumerate(items))
        return AllOf(parsed) if kind == "all" else AnyOf(parsed)
    if kind == "not":
        _only(node, {"not"}, where)
        return Not(parse(node["not"], f"{where}.not"))
    if kind == "package":
        _only(node, {"package", "version"}, where)
        name = node["package"]
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where}: 'package' must be a distribution name")
        spec = node.get("version")
        return PackageClause(
            canonicalize_name(name),
            _specifier(str(spec), where) if spec is not None else None,
        )
    _only(node, {"fact", "op", "value", "version"}, where)
    path = node["fact"]
    if not isinstance(path, str) or not re.match(r"^[a-z_]+(\.[A-Za-z0-9_.\-]+)*$", path):
        raise ValueError(f"{where}: 'fact' must be a dotted path such as memory.shm_bytes")
    if "version" in node:
        return FactClause(path, "version", specifier=_specifier(str(node["version"]), where))
    op = node.get("op")
    if op not in OPERATORS:
        raise ValueError(f"{where}: 'op' must be one of {', '.join(OPERATORS)} (got {op!r})")
    if op in _UNARY:
        if "value" in node:
            raise ValueError(f"{where}: op '{op}' takes no value")
    elif "value" not in node:
        raise ValueError(f"{where}: op '{op}' needs a value")
    finite.require_finite(node.get("value"), f"{where}: 'value'")
    if op in ("in", "not-in") and not isinstance(node["value"], (list, str)):
        raise ValueError(f"{where}: op '{op}' needs a list or a string as its value")
    if op in ("<", "<=", ">", ">=") and not isinstance(node["value"], (int, float, str)):
        raise ValueError(f"{where}: op '{op}' needs a number or a string as its value")
    if op == "matches":
        try:
            regex.compile(str(node["value"]))
        except regex.error as exc:
            raise ValueError(f"{where}: bad regular expression: {exc}") from None
    return FactClause(path, op, node.get("value"))


def _only(node: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(node) - allowed)
    if extra:
        raise ValueError(f"{where}: unexpected key(s) {', '.join(extra)}")
