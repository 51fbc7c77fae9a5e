"""The doctor's pipeline: snapshot in (collected or loaded), ranked Report out.

One direction only: collectors -> Snapshot -> rules -> findings -> rank -> Report. The
CLI, the pre-training hook and `envcheck.preflight()` all go through here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional

from envcheck import __version__, interpreter
from envcheck.collect import collect_snapshot, now_iso
from envcheck.collectors.base import CollectContext
from envcheck.engine.evaluate import evaluate
from envcheck.engine.rank import rank
from envcheck.engine.registry import Registry
from envcheck.engine.selection import Selection
from envcheck.model import Report
from envcheck.snapshot import Facts, Snapshot


def take_snapshot(python: Optional[str] = None) -> Snapshot:
    """Collect facts about this machine and the audited interpreter (this one by default)."""
    audited = interpreter.target(python) if python else interpreter.current()
    return collect_snapshot(CollectContext(interpreter=audited))


def load_snapshot(path: Path) -> Snapshot:
    return Snapshot.load(path)


def diagnose(
    snapshot: Snapshot,
    registry: Registry,
    selection: Optional[Selection] = None,
    acknowledged: Optional[Mapping[str, str]] = None,
) -> Report:
    checks = evaluate(registry, Facts(snapshot), selection, acknowledged)
    findings = [f for c in checks for f in c.findings]
    return Report(
        tool_version=__version__,
        created=now_iso(),
        findings=rank(findings),
        checks=checks,
        facts=snapshot.data,
    )
