"""Python checks: rules whose logic TOML cannot express, declared with `@check(...)`.

The decorated function takes the snapshot's Facts and returns an Outcome; its docstring
is the rule's documentation (the anti-pattern and the better practice), as in sqlfluff.
The engine only collects what is declared; which modules declare the built-in checks is
envcheck.rulebook's business, so the engine never imports the checks.
"""

from __future__ import annotations

import inspect
from typing import Callable, Optional

from envcheck.engine.rule import Evaluate, Rule, validate_identity
from envcheck.model import Impact, Severity

_DECLARED: list[Rule] = []


def check(
    *,
    id: str,
    name: str,
    severity: Severity,
    category: str,
    summary: str,
    message: str,
    fix: str,
    evidence: tuple[str, ...],
    impact: Optional[Impact] = None,
) -> Callable[[Evaluate], Evaluate]:
    def register(function: Evaluate) -> Evaluate:
        validate_identity(id, name, f"{function.__module__}.{function.__name__}")
        module_file = function.__module__.replace(".", "/") + ".py"
        _DECLARED.append(
            Rule(
                id=id,
                name=name,
                severity=severity,
                category=category,
                summary=summary,
                message=message,
                fix=fix,
                evidence=evidence,
                docs=inspect.cleandoc(function.__doc__ or ""),
                evaluate=function,
                impact=impact,
                defined_in=f"{module_file}:{function.__code__.co_firstlineno}",
            )
        )
        return function

    return register


def declared_checks() -> list[Rule]:
    """Every Python check declared so far (their modules register them on import)."""
    return list(_DECLARED)
