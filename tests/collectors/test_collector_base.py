"""run_collector: whatever a collector raises becomes status "unavailable" with a reason."""

from __future__ import annotations

import pytest

from envcheck.collectors.base import CollectContext, Unavailable, run_collector
from envcheck.interpreter import current


@pytest.fixture
def ctx() -> CollectContext:
    return CollectContext(interpreter=current(), environ={})


def test_ok_collector_returns_its_sections(ctx: CollectContext) -> None:
    outcome = run_collector("demo", lambda c: {"demo": {"answer": 42}}, ctx)
    assert outcome.name == "demo"
    assert outcome.status == "ok"
    assert outcome.reason is None
    assert outcome.sections == {"demo": {"answer": 42}}
    assert outcome.seconds >= 0
    assert outcome.status_json() == {
        "status": "ok",
        "reason": None,
        "seconds": round(outcome.seconds, 4),
    }


def _raises(exc: BaseException):
    def collector(c: CollectContext) -> dict:
        raise exc

    return collector


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (RuntimeError("disk on fire"), "RuntimeError: disk on fire"),
        (KeyError("cpu"), "KeyError: 'cpu'"),
        (Unavailable("x"), "x"),
        (Unavailable("no /proc on this platform"), "no /proc on this platform"),
    ],
    ids=["runtime-error", "key-error", "unavailable", "unavailable-long"],
)
def test_raising_collector_is_unavailable_with_reason(
    ctx: CollectContext, exc: Exception, reason: str
) -> None:
    outcome = run_collector("demo", _raises(exc), ctx)
    assert outcome.status == "unavailable"
    assert outcome.reason == reason
    assert outcome.sections == {}
    assert outcome.status_json()["status"] == "unavailable"
    assert outcome.status_json()["reason"] == reason


def test_context_path_is_under_the_injected_root(tmp_path) -> None:
    ctx = CollectContext(interpreter=current(), environ={}, root=tmp_path)
    assert ctx.path("/dev/shm") == tmp_path / "dev" / "shm"
    assert ctx.path("/.dockerenv") == tmp_path / ".dockerenv"
