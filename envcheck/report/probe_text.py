"""The probe's numbers for people: one headline, the measured rates, the verdict, the
stall split, the worker sweep, and a one-line utilisation timeline per phase."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from rich.markup import escape

_BARS = " ▁▂▃▄▅▆▇█"


def headline(facts: Mapping[str, Any]) -> str:
    probe = facts.get("probe")
    if not isinstance(probe, Mapping):
        reason = ((facts.get("collectors") or {}).get("probe") or {}).get("reason")
        return f"not run: {reason}" if reason else "not run (envcheck probe, doctor --probe)"
    kind = probe.get("device")
    if kind == "cpu":
        device = "CPU"
    elif kind is None:  # the probe failed before its backend chose a device
        device = "no device yet"
    else:
        device = probe.get("device_name") or "GPU"
    version = probe.get("framework_version") or ""
    batch = probe.get("batch_size")
    requested = probe.get("batch_size_requested")
    batch_text = f"batch {batch}" + (f" (asked {requested})" if requested != batch else "")
    return (
        f"{probe.get('framework')} {version} on {device} · {probe.get('model')} · "
        f"{batch_text} · {probe.get('image_size')} px · {probe.get('elapsed_s')} s"
    )


def _rate(value: Any) -> str:
    return f"{value:>8,.0f}/s" if isinstance(value, (int, float)) else "       —  "


def _pct(value: Any) -> str:
    return f"{value * 100:.0f} %" if isinstance(value, (int, float)) else "—"


def detail_lines(probe: Optional[Mapping[str, Any]], ascii_only: bool = False) -> list[str]:
    if not isinstance(probe, Mapping) or not probe.get("rates"):
        return []
    rates = probe["rates"]
    unit = " (CPU)" if probe.get("device") == "cpu" else ""
    workers = probe.get("workers") or {}
    cache = "cached files" if probe.get("cache") != "cold" else "cold files"
    lines = [
        f"    compute ceiling {_rate(rates.get('compute'))}{unit}  model alone, synthetic "
        "batches on the device",
        f"    input pipeline  {_rate(rates.get('input'))}{unit}  workers={workers.get('used')}, "
        f"{cache}",
        f"    end to end      {_rate(rates.get('end_to_end'))}{unit}  "
        f"{_pct(probe.get('input_share'))} of each step waits for input"
        + (f" → {probe['verdict'].replace('-', ' ')}" if probe.get("verdict") else ""),
    ]
    stall = probe.get("stall") or {}
    if stall.get("prep_share") is not None:
        lines.append(
            f"    input time      prep (decode/augment) {_pct(stall.get('prep_share'))}, "
            f"fetch (reading) {_pct(stall.get('fetch_share'))}"
        )
    sweep = workers.get("sweep") or []
    if len(sweep) > 1:
        best = workers.get("recommended")
        points = [
            f"{p['workers']}: {p['rate']:,.0f}/s" + (" ←" if p["workers"] == best else "")
            for p in sweep
            if isinstance(p.get("rate"), (int, float))
        ]
        lines.append("    workers sweep   " + " · ".join(points))
    lines += node_lines(probe)
    timeline = probe.get("timeline") or []
    if timeline:
        lines += [f"    {line}" for line in timeline_lines(timeline, ascii_only)]
    lines += [f"    note: {n}" for n in probe.get("notes") or []]
    if probe.get("device") == "cpu":
        lines.append(
            "    note: measured on the CPU: decoding and the model share its cores, so more "
            "workers also slow the model down; on a GPU the model would not compete"
        )
    return [escape(line) for line in lines]


def node_lines(probe: Mapping[str, Any]) -> list[str]:
    """The node view: processes, demand against supply, per-process workers, the
    concurrent run and the measured alternatives (unescaped)."""
    node = probe.get("node")
    if not isinstance(node, Mapping):
        return []
    processes, usable = node.get("processes"), node.get("usable_cores")
    pinned = ", pinned" if node.get("pinned") else ""
    lines = [
        f"    node            {processes} process(es) on {usable} cores "
        f"({node.get('cores_per_process')} each{pinned}; {node.get('processes_source')})"
    ]
    if node.get("summary"):
        lines.append(f"                    {node['summary']}")
    workers = node.get("workers") or {}
    if workers.get("per_process") is not None:
        lightning = f"Lightning's rule: {workers.get('lightning')}"
        if isinstance(workers.get("lightning_rate"), (int, float)):
            lightning += f" → {workers['lightning_rate']:,.0f}/s"
        rate = workers.get("per_process_rate")
        measured = f" → {rate:,.0f}/s" if isinstance(rate, (int, float)) else ""
        lines.append(
            f"    per process     {workers['per_process']} workers{measured} "
            f"({processes} x {workers['per_process']} = {workers.get('total')} of {usable} "
            f"cores; {lightning})"
        )
    concurrent = node.get("concurrent")
    if isinstance(concurrent, Mapping):
        rates = [r for r in concurrent.get("rates") or [] if isinstance(r, (int, float))]
        if rates and isinstance(concurrent.get("total"), (int, float)):
            lines.append(
                f"    concurrent      {concurrent.get('processes')} pipelines x "
                f"{concurrent.get('workers_per_process')} workers at once: "
                + " + ".join(f"{r:,.0f}" for r in rates)
                + f" = {concurrent['total']:,.0f}/s"
            )
        else:
            lines.append(f"    concurrent      not measured: {concurrent.get('reason')}")
    for item in probe.get("alternatives") or []:
        name = f"{item.get('name')} ({item.get('label')})"
        if item.get("status") == "measured":
            unit = " files/s read cold" if item.get("name") == "packed-shards" else "/s"
            text = (
                f"{item.get('speedup', 0):.1f}x: {item.get('baseline_rate', 0):,.0f} → "
                f"{item.get('rate', 0):,.0f}{unit}"
            )
        else:
            text = f"{item.get('status')}: {item.get('reason')}"
        lines.append(f"    alternative     {name:<20} {text}")
    return lines


def timeline_lines(timeline: list[Mapping[str, Any]], ascii_only: bool = False) -> list[str]:
    """Mean CPU and GPU utilisation per phase, as sparklines of at most 40 columns."""
    bars = " .:-=+*#%@" if ascii_only else _BARS
    cpu = [sum(p["cpu_util"]) / len(p["cpu_util"]) for p in timeline if p.get("cpu_util")]
    gpu = [p.get("gpu_util") for p in timeline]
    out = [f"cpu % {_spark(cpu, bars)}"]
    if any(isinstance(g, (int, float)) for g in gpu):
        out.append(f"gpu % {_spark([g or 0.0 for g in gpu], bars)}")
    return out


def _spark(values: list[float], bars: str, width: int = 40) -> str:
    if not values:
        return ""
    step = max(1, -(-len(values) // width))
    chunks = [values[i : i + step] for i in range(0, len(values), step)]
    means = [sum(c) / len(c) for c in chunks]
    top = len(bars) - 1
    return "".join(bars[min(top, max(0, round(m / 100 * top)))] for m in means)
