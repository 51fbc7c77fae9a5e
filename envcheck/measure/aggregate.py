"""From the hook's records to the report's `run` section.

Pure functions of the records (no framework, no clock), so every number is tested from
data. The measured process is the one with the most training steps in its window (a
launcher or a data-preparation helper may run Python too); the framework is the one whose
loader fed the window (a custom tf.data loop imports Keras too, yet is TensorFlow's).
Shares are of the summed step time of the window; `other` is what no timer claimed (the
user's own Python between the timed calls); they sum to 1. The input share is the data
wait, the TensorFlow Profiler's definition, judged with the probe's bands.
"""

from __future__ import annotations

import statistics
from typing import Any, Mapping, Optional, Sequence

from envcheck.probe.analysis import verdict

SPLIT = ("data_wait", "host_sync", "copy", "compute", "checkpoint", "logging", "other")
TIMELINE_KEYS = ("gpu_util", "gpu_mem_bytes", "sm_clock_mhz", "pcie_rx_bps", "pcie_tx_bps")
NO_STEPS = (
    "no training step was seen: the hook did not load (not a Python program, or "
    "python -I / -S), or the program ran no loop over a PyTorch DataLoader, a tf.data "
    "iterator or Keras fit"
)


def main_process(processes: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    if not processes:
        return None
    return max(processes, key=lambda p: (len(p.get("steps") or []), p.get("train_steps") or 0))


def percentiles(values: Sequence[float]) -> dict[str, Optional[float]]:
    """Median, 10th and 90th percentile (inclusive method: exact for few values)."""
    if not values:
        return {"median": None, "p10": None, "p90": None}
    if len(values) == 1:
        only = round(values[0], 6)
        return {"median": only, "p10": only, "p90": only}
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return {
        "median": round(statistics.median(values), 6),
        "p10": round(deciles[0], 6),
        "p90": round(deciles[8], 6),
    }


def split(steps: Sequence[Mapping[str, Any]]) -> dict[str, Optional[float]]:
    """Each category's share of the window's step time; `other` takes the rest."""
    total = sum(float(s["step_s"]) for s in steps)
    if total <= 0:
        return {key: None for key in SPLIT}
    shares = {key: sum(float(s.get(key) or 0.0) for s in steps) / total for key in SPLIT[:-1]}
    shares["other"] = max(0.0, 1.0 - sum(shares.values()))
    rounded = {key: round(value, 4) for key, value in shares.items()}
    largest = max(rounded, key=lambda k: rounded[k])
    rounded[largest] = round(rounded[largest] + 1.0 - sum(rounded.values()), 4)
    return {key: rounded[key] for key in SPLIT}


def loader_section(
    process: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]],
    workers: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The live settings of the loader that fed the window, and its own code's time."""
    loaders = process.get("loaders") or {}
    used: dict[str, int] = {}
    for step in steps:
        key = step.get("loader")
        if key:
            used[key] = used.get(key, 0) + 1
    key = max(used, key=lambda k: used[k]) if used else None
    section: dict[str, Any] = dict(loaders.get(key) or {}) if key else {}
    if len(used) > 1:
        section["loaders_in_window"] = len(used)
    section.update(user_code(process, steps, workers, pid=process.get("pid")))
    return section


def user_code(
    process: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]],
    workers: Sequence[Mapping[str, Any]],
    pid: Any = None,
) -> dict[str, Any]:
    """Time in the user's Dataset code (`__getitem__` and collate) per batch.

    In the training process (no workers) it is measured inside the window and compared
    with the wait; in worker processes it is over the whole run. For tf.data it is the
    Python functions of tf.py_function / numpy_function maps, for Keras a PyDataset's
    __getitem__, per training step."""
    fetch = process.get("fetch") or {}
    wait = sum(float(s.get("data_wait") or 0.0) for s in steps)
    if fetch.get("window_n"):
        per_batch = float(fetch["window_s"]) / int(fetch["window_n"])
        return {
            "dataset_s_per_batch": round(per_batch, 6),
            "dataset_measured_in": "training process",
            "dataset_share_of_wait": round(min(1.0, float(fetch["window_s"]) / wait), 4)
            if wait > 0
            else None,
        }
    mapped = process.get("python_map") or {}
    if mapped.get("window_n") and steps:
        fed_by = (process.get("loaders") or {}).get(str(steps[0].get("loader"))) or {}
        serial = "ParallelMap" not in (fed_by.get("chain") or [])
        return {
            "dataset_s_per_batch": round(float(mapped["window_s"]) / len(steps), 6),
            "dataset_measured_in": mapped.get("source") or "the loader's Python calls",
            # parallel calls overlap: their summed time is no share of the wait
            "dataset_share_of_wait": round(min(1.0, float(mapped["window_s"]) / wait), 4)
            if wait > 0 and serial
            else None,
        }
    mine = [w for w in workers if pid is None or w.get("ppid") == pid] or list(workers)
    count = sum(int(w.get("fetch_n") or 0) for w in mine)
    if count:
        seconds = sum(float(w.get("fetch_s") or 0.0) for w in mine)
        return {
            "dataset_s_per_batch": round(seconds / count, 6),
            "dataset_measured_in": f"{len(mine)} loader worker processes",
            "dataset_share_of_wait": None,
        }
    return {"dataset_s_per_batch": None, "dataset_measured_in": None, "dataset_share_of_wait": None}


def timeline(
    samples: Sequence[Mapping[str, Any]], began: float, t0: Optional[float], t1: Optional[float]
) -> list[dict[str, Any]]:
    """The sampler's points inside the window, `t` in seconds from its start."""
    if t0 is None or t1 is None:
        return []
    points = []
    for sample in samples:
        at = began + float(sample.get("t") or 0.0)
        if t0 <= at <= t1:
            point = {"t": round(at - t0, 3), "cpu_util": sample.get("cpu_util") or []}
            point.update({k: sample.get(k) for k in TIMELINE_KEYS})
            points.append(point)
    return points


def gpu_util(points: Sequence[Mapping[str, Any]]) -> Optional[float]:
    values = [p["gpu_util"] for p in points if p.get("gpu_util") is not None]
    return round(statistics.fmean(values), 1) if values else None


def summarize(
    processes: Sequence[Mapping[str, Any]],
    workers: Sequence[Mapping[str, Any]],
    *,
    command: Sequence[str],
    exit_code: Optional[int],
    began: float,
    samples: Sequence[Mapping[str, Any]] = (),
    sampler: Optional[Mapping[str, Any]] = None,
    stopped_by_envcheck: bool = False,
    stop_after: bool = False,
) -> dict[str, Any]:
    """The `run` section per DESIGN.md: status, steps, step_time_s, split, input_share,
    verdict, loader, timeline; and what explains them."""
    process = main_process(processes)
    steps: list[Mapping[str, Any]] = list(process.get("steps") or []) if process else []
    base: dict[str, Any] = {
        "command": list(command),
        "exit_code": exit_code,
        "framework": process.get("framework") if process else None,
        "device": (process.get("device") if process else None) or _device(sampler),
        "stopped": bool(process and process.get("state") == "done" and stop_after),
        "stopped_by_envcheck": stopped_by_envcheck,
        "hook_errors": [e for p in processes for e in (p.get("errors") or [])],
        "applied": list(process.get("applied") or []) if process else [],
        "losses": list(process.get("losses") or []) if process else [],
    }
    if process is None or not steps:
        return {**base, **_empty(process)}
    window = process.get("window") or {}
    t0, t1 = window.get("t0"), window.get("t1")
    step_times = [float(s["step_s"]) for s in steps]
    shares = split(steps)
    share = shares["data_wait"]
    points = timeline(samples, began, t0, t1)
    total = sum(step_times)
    first = process.get("first_step")
    loader = loader_section(process, steps, workers)
    base["framework"] = loader.get("framework") or base["framework"]
    return {
        **base,
        "status": "ok" if process.get("state") == "done" else "partial",
        "reason": None
        if process.get("state") == "done"
        else (
            f"the program ended after {len(steps)} measured steps, before the window of "
            f"{process.get('steps_wanted')} steps or {process.get('seconds_wanted')} s"
        ),
        "steps": len(steps),
        "warmup_steps": process.get("warmup"),
        "window_s": round(total, 4),
        "steps_per_s": round(len(steps) / total, 3) if total > 0 else None,
        "step_time_s": percentiles(step_times),
        "split": shares,
        "input_share": share,
        "verdict": verdict(share),
        "host_syncs_per_step": round(statistics.fmean(int(s.get("syncs") or 0) for s in steps), 2),
        "loader": loader,
        "startup_s": round(float(first) - began, 3) if first is not None else None,
        "time_to_verdict_s": round(float(t1) - began, 3) if t1 is not None else None,
        "gpu_util_mean": gpu_util(points),
        "timeline": points,
    }


def _device(sampler: Optional[Mapping[str, Any]]) -> Optional[str]:
    return None if not sampler or sampler.get("gpu_index") is None else "cuda"


def _empty(process: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    if process is None:
        reason = NO_STEPS
    elif not process.get("train_steps"):
        reason = (
            "batches were loaded but no step ran a backward pass, an optimizer step or a "
            "compiled function: nothing to call a training step"
        )
    else:
        reason = (
            f"the program ended after {process.get('train_steps')} training steps, all "
            f"inside the warm-up of {process.get('warmup')}: too short to measure"
        )
    return {
        "status": "no-steps",
        "reason": reason,
        "steps": 0,
        "warmup_steps": process.get("warmup") if process else None,
        "window_s": None,
        "steps_per_s": None,
        "step_time_s": percentiles([]),
        "split": {key: None for key in SPLIT},
        "input_share": None,
        "verdict": None,
        "host_syncs_per_step": None,
        "loader": dict(next(iter((process.get("loaders") or {}).values()), {})) if process else {},
        "startup_s": None,
        "time_to_verdict_s": None,
        "gpu_util_mean": None,
        "timeline": [],
    }
