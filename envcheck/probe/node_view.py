"""The report's `probe.node` and `probe.alternatives`: can this node's CPUs feed all its
training processes, and what measured change would help.

demand = processes x the per-process compute rate (the ceiling the probe measured for
one process); supply = the node's decode rate with all its cores (the `node` phase: one
pipeline with a worker per core; or, with --concurrent, N pipelines at once when they
decoded more); balance = supply / demand, so below 1 the node is input-bound by
1 / balance.
Pure functions of the child's numbers.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from envcheck.probe.node import lightning_workers

# Supply within this fraction below demand is still called balanced: run-to-run noise.
BALANCED_WITHIN = 0.05


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _r(value: Any, digits: int = 2) -> Any:
    return round(value, digits) if isinstance(value, float) else value


def _consumers(device: Optional[str], processes: int) -> str:
    if device == "cuda":
        return f"{processes} GPU" + ("s" if processes != 1 else "")
    return f"{processes} training process" + ("es" if processes != 1 else "") + " (CPU)"


def verdict_sentence(
    device: Optional[str], processes: int, cores: int, demand: float, supply: float
) -> tuple[str, str]:
    """(verdict, the plain sentence): "8 GPUs consume 23,000 img/s; these 64 cores
    decode 2,300 img/s: input-bound 10x"."""
    balance = supply / demand
    core_word = "core" if cores == 1 else "cores"
    head = (
        f"{_consumers(device, processes)} consume{'s' if processes == 1 else ''} "
        f"{demand:,.0f} img/s; these {cores} {core_word} decode {supply:,.0f} img/s"
    )
    if balance < 1 - BALANCED_WITHIN:
        return "input-bound", f"{head}: input-bound {_factor(1 / balance)}"
    if balance <= 1 + BALANCED_WITHIN:
        return "balanced", f"{head}: balanced, no headroom"
    return "keeps-up", f"{head}: keeps up ({_factor(balance)} headroom)"


def _factor(value: float) -> str:
    return f"{value:.0f}x" if value >= 10 else f"{value:.1f}x"


def per_process_workers(
    sweep: list[Mapping[str, Any]], cap: int, within_best: float
) -> tuple[Optional[int], Optional[float]]:
    """The smallest worker count within `within_best` of the best rate, among the counts
    whose sum over the node's processes fits its cores (every count when none does)."""
    measured = [p for p in sweep if _number(p.get("rate"))]
    fitting = [p for p in measured if int(p["workers"]) <= cap] or measured
    if not fitting:
        return None, None
    best = max(float(p["rate"]) for p in fitting)
    good = sorted(
        (p for p in fitting if float(p["rate"]) >= best * (1 - within_best)),
        key=lambda p: int(p["workers"]),
    )
    return int(good[0]["workers"]), float(good[0]["rate"])


def node_section(
    raw: Mapping[str, Any],
    settings: Any,
    device: Optional[str],
    sweep: list[Mapping[str, Any]],
    within_best: float,
    usable_cores: Optional[int] = None,
) -> dict[str, Any]:
    """`probe.node` (see the module docstring); numbers are null when not measured.
    The usable cores are those the child saw, else `usable_cores`, else the planned."""
    phases = raw.get("phases") or {}
    cores_info = raw.get("cores") or {}
    processes = int(settings.processes)
    usable = int(cores_info.get("usable") or usable_cores or settings.node_cores)
    cap = usable // processes
    compute = _number((phases.get("compute") or {}).get("rate"))
    node = phases.get("node") or {}
    supply = _number(node.get("rate"))
    supply_basis = "one pipeline, a worker per core" if supply else None
    concurrent = _concurrent(phases.get("concurrent"))
    together = _number((concurrent or {}).get("total"))
    if together and (concurrent or {}).get("status") == "ok" and together > (supply or 0):
        # both are measured decode rates on all the cores: the higher is what the node can do
        supply, supply_basis = together, f"{processes} concurrent pipelines"
    demand = processes * compute if compute else None
    verdict = summary = None
    if demand and supply:
        verdict, summary = verdict_sentence(device, processes, usable, demand, supply)
    recommended, rate = per_process_workers(sweep, cap, within_best) if sweep else (None, None)
    lightning = lightning_workers(usable, processes)
    lightning_rate = next(
        (p.get("rate") for p in sweep if p.get("workers") == lightning and p.get("rate")), None
    )
    return {
        "processes": processes,
        "processes_source": settings.processes_source,
        "usable_cores": usable,
        "cores_per_process": max(1, usable // processes),
        "pinned": cores_info.get("pinned"),
        "demand": _r(demand),
        "supply": _r(supply),
        "supply_workers": node.get("workers"),
        "supply_basis": supply_basis,
        "balance": _r(supply / demand, 4) if demand and supply else None,
        "verdict": verdict,
        "summary": summary,
        "workers": {
            "per_process": recommended,
            "per_process_rate": _r(rate),
            "total": recommended * processes if recommended is not None else None,
            "cap_per_process": cap,
            "lightning": lightning,
            "lightning_rate": _r(lightning_rate),
        },
        "concurrent": concurrent,
    }


def _concurrent(raw: Any) -> Optional[dict[str, Any]]:
    if not isinstance(raw, Mapping):
        return None
    return {
        "status": raw.get("status"),
        "processes": raw.get("processes"),
        "workers_per_process": raw.get("workers_per_process"),
        "rates": [_r(r) for r in raw.get("rates") or []],
        "total": _r(raw.get("total")),
        "reason": raw.get("reason"),
    }


def alternatives_section(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`probe.alternatives[]`: each alternative measured (rate, baseline, speedup) or
    unavailable/failed with its reason."""
    found = ((raw.get("phases") or {}).get("alternatives") or {}).get("found") or []
    out = []
    for item in found:
        if not isinstance(item, Mapping):
            continue
        entry = {k: _r(v) for k, v in item.items()}
        if isinstance(item.get("speedup"), float):
            entry["speedup"] = round(item["speedup"], 3)
        out.append(entry)
    return out
