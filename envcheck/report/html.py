"""The HTML report: one self-contained file (`--format html -o report.html`).

No network, no CDN, no JavaScript: inline CSS, inline SVG charts (html_charts.py), every
value from the report passed through `html.escape`. The order follows the text report:
the ranked fixes first, then the environment by area (the same per-area descriptions and
check results as text.py), then the probe's measurements and its timeline.

Size: one small function per section of the page, plus the stylesheet; the charts live in
html_charts.py.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Sequence

from envcheck.model import CheckResult, Finding, Report, Severity, Status
from envcheck.report import PLAIN, RenderOptions, probe_text, text
from envcheck.report import html_charts as charts
from envcheck.report.escape import html_escape as escape  # markup and control characters

_STATUS_MARK = {
    Status.PASS: ("✓", "pass"),
    Status.FAIL: ("✗", "fail"),
    Status.UNKNOWN: ("?", "unknown"),
    Status.SKIPPED: ("–", "skipped"),
}
_AREA_MARK = {"fail": "✗", "warn": "!", "pass": "✓"}

CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f6f7f9;color:#1d232b;font:15px/1.45 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1100px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:1.6em;margin:0 0 4px}h2{font-size:1.25em;margin:32px 0 10px;
border-bottom:2px solid #d9dde3;padding-bottom:4px}h3{font-size:1.05em;margin:18px 0 6px}
p,li,td,th,dd,dt,summary,code,pre{overflow-wrap:anywhere}
code,pre{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;margin:4px 0;background:#f0f2f5;padding:6px 8px;border-radius:4px}
code.fix{display:block;white-space:pre-wrap;background:#eaf6ec;border:1px solid #b7dfbf;
padding:6px 8px;border-radius:4px;color:#0f5132}
.meta{color:#5b6470;margin:0}.summary{font-weight:600;margin:8px 0 0}
ol.fixes{list-style:none;padding:0;margin:0}
li.fix{background:#fff;border:1px solid #d9dde3;border-left:6px solid #999;border-radius:6px;
padding:10px 14px;margin:0 0 12px}
li.sev-critical{border-left-color:#7f1d1d}li.sev-high{border-left-color:#dc2626}
li.sev-medium{border-left-color:#d97706}li.sev-low{border-left-color:#0891b2}
li.sev-info{border-left-color:#9ca3af}
.fix-head{display:flex;flex-wrap:wrap;gap:8px;align-items:baseline}
.rank{font-weight:700;font-size:1.2em}
.sev{text-transform:uppercase;font-size:.75em;font-weight:700;padding:1px 6px;border-radius:3px;
color:#fff;background:#6b7280}
.sev-critical .sev{background:#7f1d1d}.sev-high .sev{background:#dc2626}
.sev-medium .sev{background:#b45309}.sev-low .sev{background:#0e7490}
.rule{font-weight:700}.name{color:#5b6470}
.message{margin:6px 0}
dl.fields{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:4px 12px;margin:6px 0 0}
dl.fields dt{color:#5b6470;font-weight:600}dl.fields dd{margin:0;min-width:0}
table{border-collapse:collapse;width:100%;background:#fff;table-layout:auto}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e5e7eb;vertical-align:top}
th{background:#f0f2f5;font-weight:600}
table.evidence{font-size:.9em}table.evidence th{width:10em;background:#fafafa}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
section.area{background:#fff;border:1px solid #d9dde3;border-radius:6px;padding:8px 14px;
margin:0 0 10px}
.area-head{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.area-head h3{margin:0}.area-detail{color:#3b4450;min-width:0}
.mark{display:inline-block;min-width:1.4em;text-align:center;font-weight:700;border-radius:3px}
.mark-pass,.st-pass{color:#15803d}.mark-warn,.st-unknown{color:#b45309}
.mark-fail,.st-fail{color:#dc2626}.st-skipped{color:#6b7280}
ul.checks{list-style:none;padding:0;margin:6px 0 0}ul.checks li{padding:2px 0}
details{margin:4px 0}summary{cursor:pointer;color:#3b4450}
.verdict{display:inline-block;font-weight:700;padding:2px 8px;border-radius:4px;
background:#e5e7eb}
.verdict-highly-input-bound{background:#fee2e2;color:#991b1b}
.verdict-moderately-input-bound{background:#fef3c7;color:#92400e}
.verdict-not-input-bound{background:#dcfce7;color:#166534}
.split{display:flex;height:22px;border-radius:4px;overflow:hidden;border:1px solid #cbd5e1;
max-width:600px;background:#fff}
.split span{display:block;height:100%;color:#fff;font-size:12px;line-height:22px;
padding:0 6px;white-space:nowrap;overflow:hidden}
.split .fetch{background:#2563eb}.split .prep{background:#c2410c}
.probe-grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:16px}
figure{margin:12px 0 18px;background:#fff;border:1px solid #d9dde3;border-radius:6px;
padding:8px 10px}
figcaption{font-weight:600;margin:0 0 4px}
svg.chart{display:block;width:100%;height:auto}
svg.chart text{font:12px system-ui,sans-serif;fill:#374151}
svg.chart text.phase{font-size:11px;fill:#4b5563}
svg.chart text.nodata{font-size:15px;font-weight:600;fill:#6b7280}
.keys{display:flex;flex-wrap:wrap;gap:6px 14px;font-size:.85em;color:#4b5563;margin:4px 0}
.swatch{display:inline-block;width:12px;height:12px;border:1px solid #bbb;
vertical-align:-2px;margin-right:4px}
.swatch.starved{background:#dc2626;border-color:#dc2626}
.note{color:#4b5563;font-size:.92em}
footer{margin-top:36px;color:#6b7280;font-size:.85em}
@media print{body{background:#fff}li.fix,section.area,figure{break-inside:avoid}}
"""


def render(
    report: Report, fail_on: Optional[Severity] = None, options: RenderOptions = PLAIN
) -> str:
    """The whole document as one string."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(_title(report))}</title>",
        f"<style>{CSS}</style></head><body><main>",
        _header(report, fail_on),
        _fixes(report),
        _environment(report),
        _probe(report),
        "<footer>Generated by envcheck; this file needs no network and no JavaScript.</footer>",
        "</main></body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _title(report: Report) -> str:
    interp = report.facts.get("interpreter") or {}
    where = f" · {interp.get('executable')}" if interp.get("executable") else ""
    return f"envcheck report{where}"


def _header(report: Report, fail_on: Optional[Severity]) -> str:
    interp = report.facts.get("interpreter") or {}
    plat = report.facts.get("platform") or {}
    meta = [f"envcheck {report.tool_version}", f"created {report.created}"]
    if interp:
        meta.append(f"{interp.get('executable')} (Python {interp.get('version')})")
    if plat:
        meta.append(f"{plat.get('system')} {plat.get('machine')}")
    gate = f" · fail-on {fail_on.value}" if fail_on else ""
    return (
        "<header><h1>envcheck report</h1>"
        f'<p class="meta">{escape(" · ".join(meta))}</p>'
        f'<p class="summary" id="summary">{escape(text._closing(report) + gate)}</p></header>'
    )


# the ranked fixes ------------------------------------------------------------------------


def _fixes(report: Report) -> str:
    active = [r for r in report.findings if r.finding.acknowledged is None]
    acked = [r for r in report.findings if r.finding.acknowledged is not None]
    out = ['<section id="fixes"><h2>Fix first</h2>']
    if not active:
        out.append('<p class="none">No findings: nothing to fix.</p>')
    else:
        out.append('<ol class="fixes">')
        out += [_finding(r.rank, r.finding) for r in active]
        out.append("</ol>")
    if acked:
        out.append('<h3>Acknowledged (not counted)</h3><ul class="acknowledged">')
        for r in acked:
            f = r.finding
            out.append(
                f"<li><b>{escape(f.id)}</b> {escape(f.message)} — "
                f"<i>{escape(f.acknowledged or '')}</i></li>"
            )
        out.append("</ul>")
    out.append("</section>")
    return "".join(out)


def _finding(rank: int, f: Finding) -> str:
    sev = f.severity.value
    fields = [("fix", f'<code class="fix">{escape(f.fix)}</code>')]
    if f.impact:
        fields.append(
            (
                "impact",
                f"up to {f.impact.speedup:g}x faster "
                f'<span class="basis">({escape(f.impact.basis.value)}'
                f"{': ' + escape(f.impact.source) if f.impact.source else ''})</span>",
            )
        )
    if f.location:
        where = f.location.path + (f":{f.location.line}" if f.location.line else "")
        where += f":{f.location.column}" if f.location.column else ""
        code = f"<pre>{escape(f.location.code)}</pre>" if f.location.code else ""
        fields.append(("where", f"<code>{escape(where)}</code>{code}"))
    if f.evidence:
        fields.append(("evidence", _evidence(f.evidence)))
    fields.append(("docs", _docs(f)))
    rows = "".join(f"<dt>{escape(name)}</dt><dd>{value}</dd>" for name, value in fields)
    return (
        f'<li class="fix sev-{escape(sev)}" id="fix-{rank}">'
        f'<div class="fix-head"><span class="rank">{rank}.</span>'
        f'<span class="sev">{escape(sev)}</span><span class="rule">{escape(f.id)}</span>'
        f'<span class="name">{escape(f.name)}</span></div>'
        f'<p class="message">{escape(f.message)}</p><dl class="fields">{rows}</dl></li>'
    )


def _docs(f: Finding) -> str:
    """The finding's docs reference: a link, the command that shows a built-in rule, or a
    user rule's file (named, with the command that shows it)."""
    if f.docs.startswith(("https://", "http://")):
        return f'<a href="{escape(f.docs)}">{escape(f.docs)}</a>'
    show = f"envcheck rules show {f.id}"
    if f.docs == show:
        return f"<code>{escape(show)}</code>"
    return f"<code>{escape(f.docs)}</code> · <code>{escape(show)}</code>"


def _evidence(evidence: Mapping[str, Any]) -> str:
    rows = []
    for key, value in evidence.items():
        rows.append(f"<tr><th>{escape(str(key))}</th><td>{_value(value)}</td></tr>")
    return f'<table class="evidence">{"".join(rows)}</table>'


def _value(value: Any) -> str:
    if isinstance(value, str):
        return _linked(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "<br>".join(_linked(v) for v in value)
    if isinstance(value, (dict, list)):
        return f"<code>{escape(json.dumps(value, ensure_ascii=False, sort_keys=True))}</code>"
    return escape(json.dumps(value))


def _linked(value: str) -> str:
    """A documentation URL at the start of a string becomes a link; the rest stays text."""
    if value.startswith(("https://", "http://")):
        url, _, rest = value.partition(" ")
        return f'<a href="{escape(url)}">{escape(url)}</a>' + (f" {escape(rest)}" if rest else "")
    return escape(value)


# the environment by area -----------------------------------------------------------------


def _environment(report: Report) -> str:
    out = ['<section id="environment"><h2>Environment</h2>']
    for area in text._areas(report):
        out.append(_area(area, report))
    out.append("</section>")
    return "".join(out)


def _area(area: str, report: Report) -> str:
    facts = report.facts
    checks = [c for c in report.checks if c.category == area]
    collectors = facts.get("collectors") or {}
    failed = {
        section: (collectors.get(section) or {}).get("reason") or "no reason given"
        for section in text.AREA_SECTIONS.get(area, (area,))
        if (collectors.get(section) or {}).get("status") == "unavailable"
    }
    findings = [f for c in checks for f in c.findings if f.acknowledged is None]
    unknown = [c for c in checks if c.status is Status.UNKNOWN]
    if area in failed or any(f.severity >= Severity.HIGH for f in findings):
        mark = "fail"
    elif findings or unknown or failed:
        mark = "warn"
    else:
        mark = "pass"
    title = text.AREA_TITLES.get(area, area.capitalize())
    if area in failed:
        detail = f"unavailable: {failed.pop(area)}"
    else:
        describe = text._DESCRIBE.get(area)
        detail = describe(facts) if describe else ""
    out = [
        f'<section class="area area-{escape(mark)}" id="area-{escape(area)}">'
        f'<div class="area-head"><span class="mark mark-{mark}" title="{mark}">'
        f"{_AREA_MARK[mark]}</span><h3>{escape(title)}</h3>"
        f'<span class="area-detail">{escape(detail)}</span></div><ul class="checks">'
    ]
    for section, reason in failed.items():
        out.append(
            f'<li><span class="mark st-unknown">?</span> {escape(section)} facts unavailable: '
            f"{escape(reason)}</li>"
        )
    quiet = []
    for c in checks:
        if c.status in (Status.FAIL, Status.UNKNOWN):
            out.append(_check(c, report))
        else:
            quiet.append(c)
    out.append("</ul>")
    if quiet:
        passed = sum(1 for c in quiet if c.status is Status.PASS)
        skipped = len(quiet) - passed
        out.append(
            f"<details><summary>{passed} passed, {skipped} skipped</summary>"
            f'<ul class="checks">{"".join(_check(c, report) for c in quiet)}</ul></details>'
        )
    out.append("</section>")
    return "".join(out)


def _check(c: CheckResult, report: Report) -> str:
    symbol, cls = _STATUS_MARK[c.status]
    head = (
        f'<span class="mark st-{cls}" title="{cls}">{symbol}</span> '
        f"<b>{escape(c.id)}</b> {escape(c.name)}: "
    )
    if c.status is Status.FAIL and c.findings:
        items = []
        for f in c.findings:
            rank = next((r.rank for r in report.findings if r.finding is f), None)
            note = (
                " (acknowledged)"
                if f.acknowledged
                else (f' (<a href="#fix-{rank}">fix {rank}</a>)' if rank else "")
            )
            items.append(f"{escape(f.message)}{note}")
        return f'<li class="check st-{cls}">{head}{"; ".join(items)}</li>'
    return f'<li class="check st-{cls}">{head}{escape(cls)} — {escape(c.reason)}</li>'


# the probe -------------------------------------------------------------------------------


def _probe(report: Report) -> str:
    probe = report.probe if isinstance(report.probe, Mapping) else report.facts.get("probe")
    out = ['<section id="probe"><h2>Training probe</h2>']
    out.append(f'<p class="headline">{escape(probe_text.headline(report.facts))}</p>')
    if not isinstance(probe, Mapping):
        out.append("</section>")
        return "".join(out)
    failure = probe.get("failure")
    if failure:
        out.append(f'<p class="note">failed: {escape(json.dumps(failure, ensure_ascii=False))}</p>')
    out.append('<div class="probe-grid">')
    out.append(_rates(probe))
    out.append(_sweep(probe))
    out.append("</div>")
    out.append(_stall(probe))
    notes = list(probe.get("notes") or [])
    if probe.get("device") == "cpu":
        notes.append(
            "measured on the CPU: decoding and the model share its cores, so more workers "
            "also slow the model down; on a GPU the model would not compete"
        )
    if notes:
        out.append('<ul class="note">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    out.append(_timeline(probe))
    out.append("</section>")
    return "".join(out)


def _fmt_rate(value: Any) -> str:
    return f"{value:,.1f}/s" if isinstance(value, (int, float)) else "—"


def _fmt_pct(value: Any) -> str:
    return f"{value * 100:.0f} %" if isinstance(value, (int, float)) else "—"


def _rates(probe: Mapping[str, Any]) -> str:
    rates = probe.get("rates") or {}
    workers = probe.get("workers") or {}
    unit = " (CPU)" if probe.get("device") == "cpu" else ""
    cache = "cached files" if probe.get("cache") != "cold" else "cold files"
    rows = [
        ("compute ceiling", rates.get("compute"), "model alone, synthetic batches on the device"),
        ("input pipeline", rates.get("input"), f"workers={workers.get('used')}, {cache}"),
        ("end to end", rates.get("end_to_end"), "the model fed by the pipeline"),
    ]
    body = "".join(
        f'<tr><th>{escape(name)}</th><td class="num">{escape(_fmt_rate(value))}</td>'
        f"<td>{escape(what)}</td></tr>"
        for name, value, what in rows
    )
    verdict = str(probe.get("verdict") or "")
    verdict_html = (
        f'<span class="verdict verdict-{escape(verdict)}">{escape(verdict.replace("-", " "))}'
        "</span>"
        if verdict
        else '<span class="verdict">no verdict</span>'
    )
    return (
        f'<div><h3>Rates (samples/s{escape(unit)})</h3><table class="rates">'
        f"<tr><th>measured</th><th>rate</th><th>how</th></tr>{body}</table>"
        f"<p>Verdict: {verdict_html} — {escape(_fmt_pct(probe.get('input_share')))} of each "
        "training step waits for input.</p></div>"
    )


def _sweep(probe: Mapping[str, Any]) -> str:
    workers = probe.get("workers") or {}
    sweep = workers.get("sweep") or []
    best = workers.get("recommended")
    best_row = ' class="best"'
    rows = "".join(
        f"<tr{best_row if p.get('workers') == best else ''}>"
        f'<td class="num">{escape(str(p.get("workers")))}</td>'
        f'<td class="num">{escape(_fmt_rate(p.get("rate")))}</td>'
        f'<td class="num">{escape(_fmt_pct(p.get("input_share")))}</td>'
        f"<td>{'← recommended' if p.get('workers') == best else ''}</td></tr>"
        for p in sweep
        if isinstance(p, Mapping)
    )
    if not rows:
        rows = '<tr><td colspan="4">not measured</td></tr>'
    usable = workers.get("usable_cores")
    return (
        f'<div><h3>Worker sweep</h3><table class="sweep"><tr><th>workers</th>'
        f"<th>end to end</th><th>waits for input</th><th></th></tr>{rows}</table>"
        f'<p class="note">recommended: {escape(str(best))} workers '
        f"({escape(_fmt_rate(workers.get('recommended_rate')))}); usable cores: "
        f"{escape(str(usable))}</p></div>"
    )


def _stall(probe: Mapping[str, Any]) -> str:
    stall = probe.get("stall") or {}
    fetch, prep = stall.get("fetch_share"), stall.get("prep_share")
    if not isinstance(fetch, (int, float)) or not isinstance(prep, (int, float)):
        return '<h3>Input time</h3><p class="note">stall split not measured</p>'
    total = fetch + prep or 1.0
    fw, pw = fetch / total * 100, prep / total * 100
    dropped = "" if stall.get("pages_dropped", True) else " (cold run could not be forced)"

    def label(name: str, width: float, share: float) -> str:
        # a narrow segment keeps its colour but not its text; the line below has the numbers
        return f"{name} {_fmt_pct(share)}" if width >= 20 else ""

    return (
        "<h3>Input time: reading vs decoding</h3>"
        f'<div class="split" role="img" aria-label="fetch {_fmt_pct(fetch)}, prep '
        f'{_fmt_pct(prep)}"><span class="fetch" style="width:{fw:.1f}%">'
        f'{label("fetch", fw, fetch)}</span><span class="prep" style="width:{pw:.1f}%">'
        f"{label('prep', pw, prep)}</span></div>"
        f'<p class="note">fetch (reading) {escape(_fmt_pct(fetch))}, prep (decode/augment) '
        f"{escape(_fmt_pct(prep))}{escape(dropped)}</p>"
    )


def _timeline(probe: Mapping[str, Any]) -> str:
    timeline: Sequence[Mapping[str, Any]] = [
        p for p in probe.get("timeline") or [] if isinstance(p, Mapping)
    ]
    if not timeline:
        return '<h3>Timeline</h3><p class="note">no timeline recorded</p>'
    reason = (probe.get("sampler") or {}).get("gpu_reason")
    no_gpu = "no GPU samples" + (f" ({reason})" if reason else "")
    figures = [
        (
            "GPU utilization",
            charts.line_chart(
                "chart-gpu-util",
                "GPU utilization (%)",
                timeline,
                [("gpu_util", "GPU busy")],
                charts.percent,
                no_gpu,
                y_max=100.0,
            ),
        ),
        (
            "GPU memory",
            charts.line_chart(
                "chart-gpu-mem",
                "GPU memory used",
                timeline,
                [("gpu_mem_bytes", "used")],
                charts.bytes_label,
                no_gpu,
                top_of=charts.nice_top_bytes,
            ),
        ),
        (
            "PCIe throughput",
            charts.line_chart(
                "chart-pcie",
                "PCIe throughput (host to GPU rx, GPU to host tx)",
                timeline,
                [("pcie_rx_bps", "rx (host → GPU)"), ("pcie_tx_bps", "tx (GPU → host)")],
                charts.rate_label,
                no_gpu,
                top_of=charts.nice_top_bytes,
            ),
        ),
        (
            "CPU utilization per core",
            charts.cpu_heat_strip("chart-cpu", "CPU utilization per core", timeline),
        ),
    ]
    keys = "".join(
        f'<span><span class="swatch" style="background:{fill}"></span>'
        f"{escape(phase.replace('_', ' '))}</span>"
        for phase, fill in charts.phase_key(timeline)
    )
    keys += (
        '<span><span class="swatch starved"></span>GPU under '
        f"{charts.STARVED_BELOW:.0f} % busy while fed by the pipeline (input-bound)</span>"
        f"<span>CPU: {charts.heat_legend()} 0–100 % busy</span>"
    )
    out = [
        '<h3>Timeline</h3><p class="note">One sample per '
        f"{escape(str((probe.get('sampler') or {}).get('interval_s') or 0.1))} s; the "
        "background shows the probe's phases. Input-bound periods: end to end and sweep "
        "phases where the GPU is not busy (red under the axis).</p>",
        f'<div class="keys">{keys}</div>',
    ]
    for caption, svg in figures:
        out.append(f"<figure><figcaption>{escape(caption)}</figcaption>{svg}</figure>")
    return "".join(out)
