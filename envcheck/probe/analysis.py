"""From the child's raw measurements to the report's `probe` section: the verdict, the
stall split, the worker recommendation.

Pure functions of numbers, so every judgement here is tested without a framework.
"""

from __future__ import annotations

from typing import Any, Optional

from envcheck.probe.node_view import alternatives_section, node_section
from envcheck.probe.runner import ProbeRun

# TensorFlow Profiler, input-pipeline analysis: input share of step time >= 20 %
# "highly input-bound", 5-20 % "moderately", < 5 % "not input-bound".
HIGHLY_INPUT_BOUND = 0.20
MODERATELY_INPUT_BOUND = 0.05
# The worker count recommended is the smallest whose measured rate is within this
# fraction of the best measured: more workers cost memory and start-up for nothing.
WITHIN_BEST = 0.05


def verdict(input_share: Optional[float]) -> Optional[str]:
    if input_share is None:
        return None
    if input_share >= HIGHLY_INPUT_BOUND:
        return "highly-input-bound"
    if input_share >= MODERATELY_INPUT_BOUND:
        return "moderately-input-bound"
    return "not-input-bound"


def stall_split(warm_rate: Optional[float], cold_rate: Optional[float]) -> dict[str, Any]:
    """DS-Analyzer's differential: per-sample input time from cold files (fetch + prep)
    minus that from cached files (prep only) is the fetch part."""
    if not warm_rate or not cold_rate:
        return {"fetch_share": None, "prep_share": None}
    cold_s, warm_s = 1.0 / cold_rate, 1.0 / warm_rate
    fetch = max(0.0, cold_s - warm_s) / cold_s
    return {"fetch_share": round(fetch, 4), "prep_share": round(1.0 - fetch, 4)}


def recommend_workers(
    points: list[dict[str, Any]], used: Optional[int]
) -> tuple[Optional[int], Optional[float]]:
    """(smallest worker count within WITHIN_BEST of the best rate, its rate)."""
    measured = [p for p in points if p.get("rate")]
    if not measured:
        return used, None
    best = max(p["rate"] for p in measured)
    good = sorted(
        (p for p in measured if p["rate"] >= best * (1 - WITHIN_BEST)), key=lambda p: p["workers"]
    )
    return int(good[0]["workers"]), float(good[0]["rate"])


def input_share(
    device: Optional[str], wait_share: Optional[float], end_to_end: Any, compute: Any
) -> tuple[Optional[float], str]:
    """(share of step time spent on input, how it was measured).

    On a GPU it is the measured wait for the next batch (the Profiler's definition). On
    the CPU the pipeline's threads and workers take cores from the model as well, so
    input also costs time *inside* the step; there the share is the end-to-end slowdown
    against the compute ceiling when that is larger than the wait.
    """
    if device != "cpu" or not end_to_end or not compute:
        return wait_share, "wait"
    slowdown = max(0.0, 1.0 - float(end_to_end) / float(compute))
    if wait_share is None or slowdown > wait_share:
        return slowdown, "slowdown"
    return wait_share, "wait"


def _round(value: Any, digits: int = 2) -> Any:
    return round(value, digits) if isinstance(value, float) else value


def summarize(run: ProbeRun, *, usable_cores: Optional[int] = None) -> dict[str, Any]:
    """The `probe` section per DESIGN.md's contract, plus what explains it."""
    raw = run.result
    phases = raw.get("phases") or {}
    backend = raw.get("backend") or {}
    loader = raw.get("loader") or {}
    batch = raw.get("batch") or {}
    compute = phases.get("compute") or {}
    warm = phases.get("input_warm") or {}
    cold = phases.get("input_cold") or {}
    e2e = phases.get("end_to_end") or {}
    sweep = (phases.get("sweep") or {}).get("points") or []
    used = loader.get("workers")
    cache = e2e.get("cache", "warm")
    input_rate = (cold if cache == "cold" else warm).get("rate")
    device = backend.get("device")
    share, basis = input_share(device, e2e.get("input_share"), e2e.get("rate"), compute.get("rate"))
    settings = run.settings
    node = node_section(raw, settings, device, sweep, WITHIN_BEST, usable_cores)
    # per process: among the counts whose sum over the node's processes fits its cores
    recommended = node["workers"]["per_process"]
    recommended_rate = node["workers"]["per_process_rate"]
    if sweep and recommended is None:
        recommended = used
    if not sweep and share is not None and share < MODERATELY_INPUT_BOUND:
        recommended = used  # not input-bound: the current setting is fine
    notes = list(raw.get("notes") or [])
    if compute.get("rate") and e2e.get("rate") and e2e["rate"] > compute["rate"] * 1.05:
        notes.append(
            f"the compute ceiling ({compute['rate']:.0f}/s over {compute.get('steps')} steps) "
            f"came out below the end-to-end rate ({e2e['rate']:.0f}/s): too few steps to "
            "measure it well; a longer --budget measures it better"
        )
    status = "ok" if run.status == "ok" else ("partial" if e2e.get("rate") else "failed")
    return {
        "status": status,
        "failure": run.failure,
        "device": device,
        "device_name": backend.get("device_name"),
        "framework": backend.get("framework") or settings.framework,
        "framework_version": backend.get("version"),
        "model": settings.model,
        "batch_size": batch.get("used"),
        "batch_size_requested": batch.get("requested"),
        "image_size": settings.image_size,
        "rates": {
            "compute": _round(compute.get("rate")),
            "input": _round(input_rate),
            "end_to_end": _round(e2e.get("rate")),
        },
        "input_share": _round(share, 4),
        "input_share_basis": basis,
        "wait_share": _round(e2e.get("input_share"), 4),
        "copy_share": _round(e2e.get("copy_share"), 4),
        "verdict": verdict(share),
        "stall": {
            **stall_split(warm.get("rate"), cold.get("rate")),
            "prep_rate": _round(warm.get("rate")),
            "fetch_prep_rate": _round(cold.get("rate")),
            "pages_dropped": cold.get("pages_dropped"),
        },
        "workers": {
            "used": used,
            "recommended": recommended,
            "recommended_rate": _round(recommended_rate),
            "usable_cores": usable_cores,
            "sweep": [
                {
                    "workers": p["workers"],
                    "rate": _round(p.get("rate")),
                    "input_share": _round(
                        input_share(
                            device, p.get("input_share"), p.get("rate"), compute.get("rate")
                        )[0],
                        4,
                    ),
                }
                for p in sweep
            ],
        },
        "loader": loader,
        "cache": cache,
        "dataset": raw.get("dataset"),
        "notes": notes,
        "gpu_under_load": run.under_load or None,
        "sampler": run.sampler or None,
        "budget_s": settings.budget_s,
        "import_s": raw.get("import_s"),
        "elapsed_s": run.elapsed_s,
        "settings_from": dict(settings.settings_from),
        "timeline": run.timeline,
        "node": node,
        "alternatives": alternatives_section(raw),
    }
