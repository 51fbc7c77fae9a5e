"""Python checks: rules whose logic TOML cannot express, declared with `@check(...)`.

The decorated function takes the snapshot's Facts and returns an Outcome; its docstring
is the rule's documentation (the anti-pattern and the better practice), as in sqlfluff.
"""

from __future__ import annotations

import inspect
from typing import Callable, Optional

from envcheck.engine.rule import Evaluate, Rule, validate_identity
from envcheck.model import Impact, Severity

_REGISTERED: list[Rule] = []


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
        _REGISTERED.append(
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
            )
        )
        return function

    return register


def builtin_checks() -> list[Rule]:
    """Every Python check shipped with envcheck (importing the modules registers them)."""
    import envcheck.checks  # noqa: F401  (registers on import)

    return list(_REGISTERED)
