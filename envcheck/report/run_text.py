"""The measured run (`run`) and the proven changes (`fix`) for people: a headline, the
step split, the loader, and one line per trial. Shown only when a run was measured."""

from __future__ import annotations

from typing import Any, Mapping

from rich.markup import escape

AREA = "run"
SPLIT_NAMES = (
    ("data_wait", "data wait"),
    ("compute", "compute"),
    ("copy", "copy"),
    ("host_sync", "host sync"),
    ("checkpoint", "checkpoint"),
    ("logging", "logging"),
    ("other", "other"),
)
LOADER_KEYS = (
    "num_workers",
    "pin_memory",
    "prefetch_factor",
    "persistent_workers",
    "batch_size",
    "start_method",
    "workers",
    "use_multiprocessing",
    "autotune",
    "map_parallelization",
    "inject_prefetch",
)


def present(facts: Mapping[str, Any]) -> bool:
    return isinstance(facts.get("run"), Mapping) or isinstance(facts.get("fix"), Mapping)


def _pct(value: Any) -> str:
    return f"{value * 100:.0f} %" if isinstance(value, (int, float)) else "—"


def _ms(value: Any) -> str:
    return f"{value * 1000:.1f} ms" if isinstance(value, (int, float)) else "—"


def headline(facts: Mapping[str, Any]) -> str:
    run = facts.get("run")
    if not isinstance(run, Mapping):
        return "not measured (envcheck run --measure -- CMD)"
    if not run.get("steps"):
        return f"{run.get('status')}: {run.get('reason')}"
    times = run.get("step_time_s") or {}
    device = "GPU" if run.get("device") == "cuda" else "CPU"
    return (
        f"{run.get('framework')} on {device} · {run.get('steps')} steps after "
        f"{run.get('warmup_steps')} warm-up · median step {_ms(times.get('median'))} "
        f"(p10 {_ms(times.get('p10'))}, p90 {_ms(times.get('p90'))}) · "
        f"{_rate(run.get('steps_per_s'))} steps/s"
    )


def _rate(value: Any) -> str:
    """Three significant figures: 1,700 / 41.2 / 0.853."""
    if not isinstance(value, (int, float)):
        return "?"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def detail_lines(facts: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    run = facts.get("run")
    if isinstance(run, Mapping) and run.get("steps"):
        lines.append(
            f"    input share {_pct(run.get('input_share'))} "
            f"({str(run.get('verdict')).replace('-', ' ')})"
        )
        split = run.get("split") or {}
        parts = [f"{name} {_pct(split.get(key))}" for key, name in SPLIT_NAMES]
        syncs = run.get("host_syncs_per_step")
        lines.append(
            "    step: " + " · ".join(parts) + (f" · {syncs:g} syncs/step" if syncs else "")
        )
        lines += _loader_lines(run.get("loader") or {})
        if run.get("gpu_util_mean") is not None:
            lines.append(f"    GPU busy {run['gpu_util_mean']:.0f} % (mean over the window)")
        if run.get("status") == "partial":
            lines.append(f"    partial: {escape(str(run.get('reason')))}")
    fix = facts.get("fix")
    if isinstance(fix, Mapping):
        lines += _fix_lines(fix)
    return lines


def _loader_lines(loader: Mapping[str, Any]) -> list[str]:
    if not loader:
        return []
    shown = ", ".join(f"{k}={loader[k]}" for k in LOADER_KEYS if loader.get(k) is not None)
    line = f"    loader: {loader.get('kind') or 'loader'}({shown})"
    if loader.get("dataset"):
        line += f" over {loader['dataset']}"
    lines = [escape(line)]
    per_batch = loader.get("dataset_s_per_batch")
    if per_batch is not None:
        where = loader.get("dataset_measured_in")
        share = loader.get("dataset_share_of_wait")
        tail = f", {_pct(share)} of the wait" if share is not None else ""
        lines.append(escape(f"    Dataset code: {_ms(per_batch)} per batch ({where}){tail}"))
    return lines


def _fix_lines(fix: Mapping[str, Any]) -> list[str]:
    trials = fix.get("trials") or []
    if not trials:
        return [escape(f"    fix: nothing tried ({fix.get('reason')})")]
    lines = ["    fix trials (candidate vs unchanged, interleaved pairs):"]
    for t in trials:
        low, high = t.get("interval") or [None, None]
        interval = f"[{low:.2f}, {high:.2f}]" if low is not None and high is not None else "[—]"
        ratio = f"{t['ratio']:.2f}x" if t.get("ratio") is not None else "—"
        lines.append(
            escape(
                f"      {t.get('change')}: {ratio} {interval}, {t.get('pairs_won')} of "
                f"{t.get('pairs')} pairs won, loss {t.get('loss')} -> {t.get('decision')}"
            )
        )
    if not any(t.get("decision") == "keep" for t in trials):
        lines.append("    no proven win")
    if fix.get("patch"):
        lines.append(escape(f"    patch: {fix['patch']}"))
    return lines
