"""The doctor's pipeline: snapshot in (collected or loaded), ranked Report out.

One direction only: collectors -> Snapshot -> rules -> findings -> rank -> Report. The
CLI, the pre-training hook and `envcheck.preflight()` all go through here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from envcheck import __version__, interpreter
from envcheck.collect import collect_snapshot, now_iso
from envcheck.collectors.base import CollectContext, run_collector
from envcheck.deep import deep_check
from envcheck.engine.evaluate import evaluate
from envcheck.engine.rank import rank
from envcheck.engine.registry import Registry
from envcheck.engine.selection import Selection
from envcheck.model import Report
from envcheck.snapshot import Facts, Snapshot


def take_snapshot(
    python: Optional[str] = None,
    deep: bool = False,
    data: Optional[Path] = None,
    data_budget: float = 5.0,
    scripts: Sequence[Path] = (),
) -> Snapshot:
    """Collect facts about this machine and the audited interpreter (this one by default).

    With `deep`, each installed framework is also imported, in a child process of the
    audited interpreter with a timeout, to record whether it really sees the GPU.
    """
    audited = interpreter.target(python) if python else interpreter.current()
    snapshot = collect_snapshot(
        CollectContext(
            interpreter=audited, data=data, data_budget_s=data_budget, scripts=tuple(scripts)
        )
    )
    if not deep:
        return snapshot
    facts = snapshot.as_dict()
    frameworks = facts.get("frameworks") or {}
    installed = {name: bool(frameworks.get(name)) for name in ("tensorflow", "torch")}
    outcome = run_collector(
        "deep", lambda _ctx: deep_check(audited.executable, installed), CollectContext(audited)
    )
    facts["collectors"]["deep"] = outcome.status_json()
    facts["deep"] = outcome.sections.get("deep")
    return Snapshot(facts)


def load_snapshot(path: Path) -> Snapshot:
    return Snapshot.load(path)


def with_target_rate(snapshot: Snapshot, rate: Optional[float]) -> Snapshot:
    """Record the samples/s the training needs next to the measured read rate (EC407)."""
    throughput = snapshot.data.get("read_throughput")
    if rate is None or not isinstance(throughput, dict):
        return snapshot
    data = snapshot.as_dict()
    data["read_throughput"]["target_samples_per_s"] = rate
    data["read_throughput"]["target_source"] = "given with --target-rate"
    return Snapshot(data)


def with_probe(snapshot: Snapshot, probe: Mapping[str, Any], seconds: float) -> Snapshot:
    """Add the probe's measurements; its compute rate becomes EC407's target read rate
    unless --target-rate gave one."""
    data = snapshot.as_dict()
    data["probe"] = dict(probe)
    data.setdefault("collectors", {})["probe"] = {
        "status": "ok",
        "reason": None,
        "seconds": round(seconds, 4),
    }
    throughput = data.get("read_throughput")
    compute = (probe.get("rates") or {}).get("compute")
    if isinstance(throughput, dict) and compute and not throughput.get("target_samples_per_s"):
        throughput["target_samples_per_s"] = compute
        throughput["target_source"] = f"the probe's compute ceiling on {probe.get('device')}"
    return Snapshot(data)


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
        probe=snapshot.data.get("probe"),
    )
