"""The built-in rule book: envcheck's Python checks, its shipped TOML rules, and the
user's rule files, assembled into one Registry.

Kept outside engine/ so that the engine (loading, evaluating, ranking) knows nothing of
which rules exist: importing envcheck.checks registers the Python checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from envcheck.engine import toml_rules
from envcheck.engine.python_rules import declared_checks
from envcheck.engine.registry import Registry


def builtin_rules_dir() -> Path:
    """rules/ inside the installed wheel, or at the top of a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise RuntimeError(f"envcheck's rules/ folder is missing (looked in {here} and above)")


def rule_cases_file(rule_id: str) -> Path:
    """Where a built-in rule's pass/fail cases live in envcheck's source tree
    (tests/rule_cases/ID.toml; a wheel does not carry them)."""
    return builtin_rules_dir().parent / "tests" / "rule_cases" / f"{rule_id.upper()}.toml"


def builtin_registry(extra_paths: Iterable[Path] = ()) -> Registry:
    """Every built-in rule, then the user's rule files or folders (`--rules`, config)."""
    import envcheck.checks  # noqa: F401  (registers the Python checks on import)

    registry = Registry(declared_checks())
    for file in sorted(builtin_rules_dir().glob("*.toml")):
        for rule in toml_rules.load_file(file, origin="builtin", defined_in=f"rules/{file.name}"):
            registry.add(rule)
    for path in extra_paths:
        registry.add_path(path)
    return registry
