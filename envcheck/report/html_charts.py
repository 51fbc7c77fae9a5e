"""Inline SVG charts of the probe's timeline for the HTML report: no script, no library.

Each chart is one `<svg>` with a viewBox, scaled to the page width by CSS. The probe's
phases are shaded along the time axis and named above it; in the phases that feed the
model from the pipeline (end_to_end, sweep) the samples where the GPU was below half
busy are marked in red under the axis: the input-bound periods. A chart whose series
has no sample at all says so ("no GPU samples") instead of drawing an empty frame.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Optional, Sequence

from envcheck.report.escape import html_escape as escape  # markup and control characters

WIDTH = 960
HEIGHT = 210
LEFT = 84  # room for the value labels ("1.5 GiB/s")
RIGHT = 12
TOP = 24  # the phase names
BOTTOM = 34  # the time axis and the starved strip
MAX_POINTS = 480  # samples per line after averaging (a long probe stays small)
MAX_COLUMNS = 240  # columns of the per-core heat strip
FEEDING = ("end_to_end", "sweep")  # phases where the model is fed by the input pipeline
STARVED_BELOW = 50.0  # GPU utilisation (%) under which a feeding sample counts as starved

PHASE_FILL = {
    "start": "#f2f2f2",
    "import": "#ececec",
    "data": "#e8eef8",
    "compute": "#e6f4ea",
    "input_warm": "#fdf3e1",
    "input_cold": "#fbe9d3",
    "end_to_end": "#e9e4f5",
    "sweep": "#e1eff5",
}
SERIES_COLORS = ("#1f5fbf", "#c2410c", "#15803d", "#7c3aed")

MAX_TICKS = 40  # time-axis ticks drawn at most (about 10 are asked for)
MAX_CORES = 1024  # rows of the CPU strip at most; a timeline claiming more is cut there

Point = Mapping[str, Any]


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _times(timeline: Sequence[Point]) -> tuple[float, float]:
    """(first, last) time of the chart: a span that is finite and positive in floats, even
    for a crafted timeline (times of 1e300, or too large for +1 s to change them)."""
    ts = [t for p in timeline if (t := _num(p.get("t"))) is not None]
    if not ts:
        return 0.0, 1.0
    start, end = min(0.0, min(ts)), max(ts)
    if end <= start:
        end = start + 1.0
    if end / 2 - start / 2 <= 0:  # halves: a span of 3e308 does not overflow
        return 0.0, 1.0
    return start, end


class _Frame:
    """The mapping from time and value to the chart's coordinates."""

    def __init__(self, timeline: Sequence[Point], y_max: float, height: int = HEIGHT):
        self.t0, self.t1 = _times(timeline)
        self.y_max = y_max if y_max > 0 else 1.0
        self.height = height
        self.plot_bottom = height - BOTTOM

    def x(self, t: float) -> float:
        """Near the plot whatever `t` is (halves keep spans near 1.8e308 finite); a phase's
        last sample may reach a little past the end, so only far-off values are cut."""
        share = (t - self.t0) / (self.t1 - self.t0)
        if not math.isfinite(share):
            share = (t / 2 - self.t0 / 2) / (self.t1 / 2 - self.t0 / 2)
        share = min(2.0, max(-1.0, share)) if math.isfinite(share) else 0.0
        return LEFT + share * (WIDTH - LEFT - RIGHT)

    def y(self, value: float) -> float:
        share = min(1.0, max(0.0, value / self.y_max))
        return self.plot_bottom - share * (self.plot_bottom - TOP)


def _phase_spans(timeline: Sequence[Point]) -> list[tuple[str, float, float]]:
    """(phase, start, end) for each run of samples in one phase; a sample covers the
    interval up to the next one."""
    spans: list[tuple[str, float, float]] = []
    points = [
        (t, str(p.get("phase") or "?")) for p in timeline if (t := _num(p.get("t"))) is not None
    ]
    for i, (t, phase) in enumerate(points):
        end = points[i + 1][0] if i + 1 < len(points) else t + 0.1
        if spans and spans[-1][0] == phase:
            spans[-1] = (phase, spans[-1][1], end)
        else:
            start = spans[-1][2] if spans else max(0.0, t - 0.1)
            spans.append((phase, start, end))
    return spans


def _phases_layer(timeline: Sequence[Point], frame: _Frame) -> str:
    parts = ['<g class="phases">']
    for phase, start, end in _phase_spans(timeline):
        x0, x1 = frame.x(start), frame.x(end)
        fill = PHASE_FILL.get(phase, "#f0f0f0")
        parts.append(
            f'<rect x="{x0:.1f}" y="{TOP}" width="{max(0.5, x1 - x0):.1f}" '
            f'height="{frame.plot_bottom - TOP}" fill="{fill}">'
            f"<title>{escape(phase)}: {start:.1f}–{end:.1f} s</title></rect>"
        )
        label = phase.replace("_", " ")
        if x1 - x0 >= len(label) * 6.2 + 4:  # only where the name fits
            parts.append(
                f'<text class="phase" x="{(x0 + x1) / 2:.1f}" y="{TOP - 7}" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
        parts.append(
            f'<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{TOP - 4}" y2="{frame.plot_bottom}" '
            'stroke="#b8b8b8" stroke-width="0.6"/>'
        )
    parts.append("</g>")
    return "".join(parts)


def starved_spans(timeline: Sequence[Point]) -> list[tuple[float, float]]:
    """Intervals in the feeding phases where the GPU was below STARVED_BELOW % busy."""
    spans: list[tuple[float, float]] = []
    points = [p for p in timeline if _num(p.get("t")) is not None]
    for i, p in enumerate(points):
        util = _num(p.get("gpu_util"))
        if p.get("phase") not in FEEDING or util is None or util >= STARVED_BELOW:
            continue
        t = float(p["t"])
        end = float(points[i + 1]["t"]) if i + 1 < len(points) else t + 0.1
        if spans and abs(spans[-1][1] - t) < 1e-9:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((t, end))
    return spans


def _starved_layer(timeline: Sequence[Point], frame: _Frame) -> str:
    spans = starved_spans(timeline)
    if not spans:
        return ""
    parts = ['<g class="starved">']
    for start, end in spans:
        x0, x1 = frame.x(start), frame.x(end)
        parts.append(
            f'<rect x="{x0:.1f}" y="{frame.plot_bottom + 1}" width="{max(1.0, x1 - x0):.1f}" '
            f'height="5" fill="#dc2626"><title>GPU under {STARVED_BELOW:.0f} % busy while '
            f"fed by the input pipeline: {start:.1f}–{end:.1f} s</title></rect>"
        )
    parts.append("</g>")
    return "".join(parts)


def _nice_step(span: float, target: int) -> float:
    raw = span / max(1, target)
    if not math.isfinite(raw) or raw <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _time_axis(frame: _Frame) -> str:
    step = _nice_step(frame.t1 - frame.t0, 10)
    parts = [
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{frame.plot_bottom}" '
        f'y2="{frame.plot_bottom}" stroke="#555" stroke-width="1"/>'
    ]
    first = math.ceil(frame.t0 / step) * step
    count = int(min(MAX_TICKS, max(0.0, (frame.t1 + 1e-9 - first) / step) + 1))
    for i in range(count):  # by count, not `t += step`: a step below the floats' resolution
        t = first + i * step  # at large t would never move t
        x = frame.x(t)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.plot_bottom}" '
            f'y2="{frame.plot_bottom + 4}" stroke="#555"/>'
            f'<text class="tick" x="{x:.1f}" y="{frame.plot_bottom + 18}" '
            f'text-anchor="middle">{t:g} s</text>'
        )
    return "".join(parts)


def _value_axis(frame: _Frame, ticks: Sequence[float], label: Callable[[float], str]) -> str:
    parts = []
    for value in ticks:
        y = frame.y(value)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#000" stroke-opacity="0.08"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(label(value))}</text>"
        )
    return "".join(parts)


def _downsample(pairs: list[tuple[float, Optional[float]]]) -> list[tuple[float, Optional[float]]]:
    if len(pairs) <= MAX_POINTS:
        return pairs
    step = math.ceil(len(pairs) / MAX_POINTS)
    out: list[tuple[float, Optional[float]]] = []
    for i in range(0, len(pairs), step):
        chunk = pairs[i : i + step]
        values = [v for _, v in chunk if v is not None]
        out.append((chunk[0][0], sum(values) / len(values) if values else None))
    return out


def _polylines(pairs: list[tuple[float, Optional[float]]], frame: _Frame, color: str) -> str:
    """One polyline per run of samples with a value: a missing sample is a gap."""
    runs: list[list[str]] = [[]]
    for t, v in _downsample(pairs):
        if v is None:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(f"{frame.x(t):.1f},{frame.y(v):.1f}")
    out = []
    for run in runs:
        if len(run) == 1:
            x, y = run[0].split(",")
            out.append(f'<circle cx="{x}" cy="{y}" r="1.8" fill="{color}"/>')
        elif run:
            out.append(
                f'<polyline points="{" ".join(run)}" fill="none" stroke="{color}" '
                'stroke-width="1.6" stroke-linejoin="round"/>'
            )
    return "".join(out)


def _svg(chart_id: str, title: str, body: str, height: int = HEIGHT) -> str:
    return (
        f'<svg class="chart" id="{escape(chart_id)}" viewBox="0 0 {WIDTH} {height}" '
        f'role="img" aria-labelledby="{escape(chart_id)}-title" '
        f'xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="xMidYMid meet">'
        f'<title id="{escape(chart_id)}-title">{escape(title)}</title>'
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#fff"/>{body}</svg>'
    )


def _no_data(timeline: Sequence[Point], frame: _Frame, text: str) -> str:
    mid = (TOP + frame.plot_bottom) / 2
    return (
        _phases_layer(timeline, frame)
        + _time_axis(frame)
        + f'<rect x="{WIDTH / 2 - 230}" y="{mid - 20}" width="460" height="36" rx="4" '
        'fill="#fff" fill-opacity="0.9" stroke="#bbb"/>'
        f'<text class="nodata" x="{WIDTH / 2}" y="{mid + 4}" text-anchor="middle">'
        f"{escape(text)}</text>"
    )


def line_chart(
    chart_id: str,
    title: str,
    timeline: Sequence[Point],
    series: Sequence[tuple[str, str]],
    label: Callable[[float], str],
    no_data: str,
    y_max: Optional[float] = None,
    top_of: Optional[Callable[[float], float]] = None,
) -> str:
    """A line per (key, legend name) in `series`, over the probe's phases."""
    columns = {
        key: [(float(p["t"]), _num(p.get(key))) for p in timeline if _num(p.get("t")) is not None]
        for key, _ in series
    }
    values = [v for pairs in columns.values() for _, v in pairs if v is not None]
    if not values:
        frame = _Frame(timeline, 1.0)
        return _svg(chart_id, f"{title}: {no_data}", _no_data(timeline, frame, no_data))
    top = y_max if y_max is not None else (top_of or _nice_top)(max(values))
    frame = _Frame(timeline, top)
    ticks = [top * i / 4 for i in range(5)]
    body = [
        _phases_layer(timeline, frame),
        _value_axis(frame, ticks, label),
        _time_axis(frame),
        _starved_layer(timeline, frame),
    ]
    legend_x = LEFT + 4
    for i, (key, name) in enumerate(series):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        body.append(_polylines(columns[key], frame, color))
        if len(series) > 1:
            body.append(
                f'<rect x="{legend_x}" y="{TOP + 6}" width="12" height="4" fill="{color}"/>'
                f'<text class="legend" x="{legend_x + 16}" y="{TOP + 11}">{escape(name)}</text>'
            )
            legend_x += 16 + len(name) * 7 + 18
    return _svg(chart_id, title, "".join(body))


def _nice_top(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    for factor in (1, 2, 4, 6, 8, 10):
        if value <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def cpu_heat_strip(chart_id: str, title: str, timeline: Sequence[Point]) -> str:
    """One row per core, one column per (averaged) sample; darker = busier."""
    samples = [
        (float(p["t"]), [_num(u) for u in p.get("cpu_util") or []])
        for p in timeline
        if _num(p.get("t")) is not None
    ]
    cores = min(MAX_CORES, max((len(u) for _, u in samples), default=0))
    if not cores:
        frame = _Frame(timeline, 1.0)
        return _svg(
            chart_id, f"{title}: no CPU samples", _no_data(timeline, frame, "no CPU samples")
        )
    row = max(3.0, min(16.0, 150.0 / cores))
    height = int(TOP + row * cores + BOTTOM + 4)
    frame = _Frame(timeline, 1.0, height)
    frame.plot_bottom = int(TOP + row * cores)
    step = max(1, math.ceil(len(samples) / MAX_COLUMNS))
    body = [_phases_layer(timeline, frame)]
    cells = ['<g class="cores">']
    for i in range(0, len(samples), step):
        chunk = samples[i : i + step]
        t_start = chunk[0][0]
        t_end = samples[i + step][0] if i + step < len(samples) else chunk[-1][0] + 0.1
        x0, x1 = frame.x(t_start), frame.x(t_end)
        for core in range(cores):
            got = [v for _, u in chunk if core < len(u) and (v := u[core]) is not None]
            if not got:
                continue
            util = sum(got) / len(got)
            cells.append(
                f'<rect x="{x0:.1f}" y="{TOP + core * row:.1f}" width="{x1 - x0 + 0.3:.1f}" '
                f'height="{row:.1f}" fill="{_heat(util)}"/>'
            )
    cells.append("</g>")
    body.append("".join(cells))
    every = max(1, math.ceil(cores / 8))
    shown = list(range(0, cores, every))
    if cores - 1 - shown[-1] >= every / 2:  # the last core too, where its label has room
        shown.append(cores - 1)
    for core in shown:
        y = TOP + core * row + row / 2 + 4
        body.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y:.1f}" text-anchor="end">cpu {core}</text>'
        )
    body.append(_time_axis(frame))
    body.append(_starved_layer(timeline, frame))
    return _svg(chart_id, title, "".join(body), height)


def _heat(util: float) -> str:
    """0 % pale, 100 % deep orange-red; fixed steps so the colours stay readable."""
    share = min(1.0, max(0.0, util / 100))
    low, high = (255, 247, 236), (179, 0, 0)
    r, g, b = (round(lo + (hi - lo) * share) for lo, hi in zip(low, high, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def heat_legend() -> str:
    """A small inline SVG key for the heat strip."""
    stops = "".join(
        f'<rect x="{i * 16}" y="0" width="16" height="10" fill="{_heat(i * 10)}"/>'
        for i in range(11)
    )
    return (
        '<svg class="key" viewBox="0 0 176 10" width="176" height="10" role="img" '
        'aria-label="0 % to 100 % busy" xmlns="http://www.w3.org/2000/svg">'
        f"{stops}</svg>"
    )


def percent(value: float) -> str:
    return f"{value:.0f} %"


def bytes_label(value: float) -> str:
    return _binary(value) if value else "0"


def rate_label(value: float) -> str:
    return (_binary(value) + "/s") if value else "0"


_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def _binary(value: float) -> str:
    """Short binary-unit label: 1.5 GiB, 750 MiB."""
    size, unit = float(value), 0
    while abs(size) >= 1024 and unit < len(_BINARY_UNITS) - 1:
        size, unit = size / 1024, unit + 1
    return f"{size:.3g} {_BINARY_UNITS[unit]}"


def nice_top_bytes(value: float) -> float:
    """A round top for a byte axis in the largest binary unit below the value (6 GiB, 2 GiB)."""
    scale = 1.0
    while value / scale >= 1024 and scale < 1024**4:
        scale *= 1024
    return _nice_top(value / scale) * scale


def phase_key(timeline: Sequence[Point]) -> list[tuple[str, str]]:
    """(phase, fill colour) in the order the phases appear, for the legend under the charts."""
    seen: list[str] = []
    for p in timeline:
        phase = str(p.get("phase") or "?")
        if phase not in seen:
            seen.append(phase)
    return [(phase, PHASE_FILL.get(phase, "#f0f0f0")) for phase in seen]
