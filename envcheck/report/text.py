"""Human output, after flutter doctor: a ranked "fix first" list, then one line per area
with ✓ ! ✗ and the details indented under it, then a closing count.

Rendered through rich, which drops colour for NO_COLOR and for output that is not a
terminal; symbols fall back to ASCII when the output encoding cannot show them.
"""

from __future__ import annotations

import codecs
import io
from typing import Any, Callable, Mapping, Optional

from rich.console import Console
from rich.markup import escape

from envcheck.engine.template import human_bytes
from envcheck.model import CheckResult, Finding, Report, Severity, Status
from envcheck.report import PLAIN, RenderOptions, probe_text, run_text
from envcheck.report.escape import visible

AREAS = (
    "platform",
    "cpu",
    "memory",
    "gpu",
    "frameworks",
    "data",
    "scripts",
    "packages",
    "environment",
    "probe",
)
# Snapshot sections whose collector failures show under each area.
AREA_SECTIONS = {
    "platform": ("platform", "interpreter"),
    "packages": ("packages", "modules", "theano"),
    "frameworks": ("frameworks", "deep"),
    "data": ("storage", "dataset", "read_throughput", "antivirus"),
    "scripts": ("scripts",),
    "probe": ("probe",),
    "run": ("run", "fix"),
}
AREA_TITLES = {
    "platform": "Platform",
    "cpu": "CPU",
    "memory": "Memory",
    "gpu": "GPU",
    "frameworks": "Frameworks",
    "data": "Data",
    "scripts": "Scripts",
    "packages": "Packages",
    "environment": "Environment",
    "probe": "Probe",
    "run": "Run",
}
_SEVERITY_STYLE = {
    Severity.CRITICAL: "bold red",
    Severity.HIGH: "red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.INFO: "dim",
}


def render(
    report: Report, fail_on: Optional[Severity] = None, options: RenderOptions = PLAIN
) -> str:
    """The report as text, with colour codes only when `options.color` says the output is
    a terminal that allows them."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=options.color,
        no_color=not options.color,
        highlight=False,
        width=120,
        soft_wrap=True,
    )
    print_report(report, console, options.verbose, options.encoding)
    return buffer.getvalue()


def print_report(
    report: Report, console: Console, verbose: bool = False, encoding: Optional[str] = None
) -> None:
    """Print to a console; `encoding` is the final output's when the console writes to a
    buffer (default: the console's own)."""
    encoding = encoding or console.encoding or "utf-8"
    symbols = _symbols(encoding)
    if symbols["ok"] != "✓" and not _known_codec(encoding):
        encoding = "ascii"
    for line in _lines(report, symbols, verbose):
        line = visible(line)  # control characters from file names, GPU processes...
        if symbols["ok"] != "✓":  # an output that cannot show Unicode: degrade, never crash
            line = line.encode(encoding, "replace").decode(encoding)
        console.print(line, highlight=False)


def _known_codec(encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
    except LookupError:
        return False
    return True


def _symbols(encoding: str) -> dict[str, str]:
    try:
        "✓✗•".encode(encoding.lower())
        return {"ok": "✓", "warn": "!", "bad": "✗", "unknown": "?", "dot": "•"}
    except (UnicodeEncodeError, LookupError):
        return {"ok": "+", "warn": "!", "bad": "x", "unknown": "?", "dot": "-"}


def _lines(report: Report, sym: dict[str, str], verbose: bool) -> list[str]:
    facts = report.facts
    lines = [_header(report)]
    active = [r for r in report.findings if r.finding.acknowledged is None]
    if active:
        lines += ["", "[bold]Fix first[/bold]"]
        for ranked in active:
            lines += _finding_block(ranked.rank, ranked.finding)
    lines.append("")
    for area in _areas(report):
        lines += _area_block(area, report, facts, sym, verbose)
    acked = [r for r in report.findings if r.finding.acknowledged is not None]
    if acked:
        lines += ["", "[dim]Acknowledged (not counted)[/dim]"]
        for ranked in acked:
            f = ranked.finding
            lines.append(
                f"  [dim]{f.id} {escape(f.message)} — {escape(f.acknowledged or '')}[/dim]"
            )
    lines += ["", _closing(report)]
    return lines


def _header(report: Report) -> str:
    interp = report.facts.get("interpreter") or {}
    plat = report.facts.get("platform") or {}
    parts = [f"envcheck {report.tool_version}"]
    if interp:
        parts.append(f"{interp.get('executable')} (Python {interp.get('version')})")
    if plat:
        parts.append(f"{plat.get('system')} {plat.get('machine')}")
    return "[bold]" + escape(" · ".join(parts)) + "[/bold]"


def _finding_block(rank: int, f: Finding) -> list[str]:
    style = _SEVERITY_STYLE[f.severity]
    out = [
        f" {rank:>2}. [{style}]{f.severity.value:<8}[/{style}] [bold]{f.id}[/bold] "
        f"{escape(f.message)}"
    ]
    out.append(f"       fix:    [green]{escape(f.fix)}[/green]")
    if f.impact:
        out.append(
            f"       impact: up to {f.impact.speedup:g}x faster "
            f"({f.impact.basis.value}: {escape(f.impact.source)})"
        )
    if f.location:
        where = f.location.path + (f":{f.location.line}" if f.location.line else "")
        where += f":{f.location.column}" if f.location.column else ""
        out.append(f"       where:  {escape(where)}")
    out.append(f"       docs:   {escape(f.docs)}")
    return out


def _areas(report: Report) -> list[str]:
    extra = sorted({c.category for c in report.checks} - set(AREAS) - {run_text.AREA})
    measured = [run_text.AREA] if run_text.present(report.facts) else []
    return [*AREAS, *measured, *extra]


def _area_block(
    area: str, report: Report, facts: Mapping[str, Any], sym: dict[str, str], verbose: bool
) -> list[str]:
    checks = [c for c in report.checks if c.category == area]
    collectors = facts.get("collectors") or {}
    failed = {
        section: (collectors.get(section) or {}).get("reason") or "no reason given"
        for section in AREA_SECTIONS.get(area, (area,))
        if (collectors.get(section) or {}).get("status") == "unavailable"
    }
    findings = [f for c in checks for f in c.findings if f.acknowledged is None]
    unknown = [c for c in checks if c.status is Status.UNKNOWN]
    if area in failed or any(f.severity >= Severity.HIGH for f in findings):
        mark = f"[red]{sym['bad']}[/red]"
    elif findings or unknown or failed:
        mark = f"[yellow]{sym['warn']}[/yellow]"
    else:
        mark = f"[green]{sym['ok']}[/green]"
    title = AREA_TITLES.get(area, area.capitalize())
    if area in failed:
        detail = f"unavailable: {failed.pop(area)}"
    else:
        describe = _DESCRIBE.get(area)
        detail = describe(facts) if describe else ""
    lines = [f"[{mark}] [bold]{title}[/bold]  {escape(detail)}"]
    if area == "probe":
        lines += probe_text.detail_lines(facts.get("probe"), ascii_only=sym["ok"] != "✓")
    if area == run_text.AREA:
        lines += run_text.detail_lines(facts)
    for section, reason in failed.items():
        lines.append(
            f"    [yellow]{sym['unknown']}[/yellow] {section} facts unavailable: {escape(reason)}"
        )
    by_reason: dict[str, list[CheckResult]] = {}
    for c in checks:
        if c.status is Status.UNKNOWN:
            by_reason.setdefault(c.reason, []).append(c)
        else:
            lines += _check_lines(c, report, sym, verbose)
    for reason, group in by_reason.items():
        names = (
            ", ".join(c.id for c in group) if len(group) > 1 else f"{group[0].id} {group[0].name}"
        )
        lines.append(f"    [yellow]{sym['unknown']}[/yellow] {names}: unknown — {escape(reason)}")
    return lines


def _check_lines(c: CheckResult, report: Report, sym: dict[str, str], verbose: bool) -> list[str]:
    if c.status is Status.FAIL:
        out = []
        for f in c.findings:
            rank = next(r.rank for r in report.findings if r.finding is f)
            note = " (acknowledged)" if f.acknowledged else f" (fix {rank})"
            style = _SEVERITY_STYLE[f.severity]
            out.append(
                f"    [{style}]{sym['bad']}[/{style}] {c.id} {escape(f.message)}[dim]{note}[/dim]"
            )
        return out
    if verbose:
        mark = sym["ok"] if c.status is Status.PASS else "-"
        return [f"    [dim]{mark} {c.id} {c.name}: {c.status.value} — {escape(c.reason)}[/dim]"]
    return []


def _closing(report: Report) -> str:
    active = report.active_findings()
    counts = {s: 0 for s in Status}
    for c in report.checks:
        counts[c.status] += 1
    by_sev = [
        f"{n} {s.value}"
        for s in reversed(list(Severity))
        if (n := sum(1 for f in active if f.severity is s))
    ]
    found = f"{len(active)} finding{'s' if len(active) != 1 else ''}"
    if by_sev:
        found += f" ({', '.join(by_sev)})"
    return (
        f"{found} · {len(report.checks)} checks: {counts[Status.PASS]} passed, "
        f"{counts[Status.FAIL]} failed, {counts[Status.UNKNOWN]} unknown, "
        f"{counts[Status.SKIPPED]} skipped"
    )


def _platform(facts: Mapping[str, Any]) -> str:
    p = facts.get("platform") or {}
    container = p.get("container") or "none"
    wsl = f", WSL{p.get('wsl_version')}" if p.get("wsl") else ""
    return (
        f"{p.get('system')} {p.get('release')} {p.get('machine')}, Python {p.get('python')}, "
        f"container: {container}{wsl}"
    )


def _cpu(facts: Mapping[str, Any]) -> str:
    c = facts.get("cpu") or {}
    quota = c.get("cgroup_quota_cpus")
    quota_text = f", quota {quota:g} CPUs" if quota else ""
    governor = c.get("governor") or "unknown"
    return (
        f"{c.get('usable')} usable of {c.get('logical')} logical ({c.get('physical')} physical)"
        f"{quota_text}; governor {governor}"
    )


def _memory(facts: Mapping[str, Any]) -> str:
    m = facts.get("memory") or {}

    def size(key: str) -> str:
        value = m.get(key)
        return human_bytes(value) if isinstance(value, int) else "unknown"

    return (
        f"{size('total_bytes')} total, {size('available_bytes')} available, "
        f"/dev/shm {size('shm_bytes')}"
    )


def _gpu(facts: Mapping[str, Any]) -> str:
    gpu = facts.get("gpu") or {}
    if not gpu:
        return "not collected (the snapshot has no gpu section)"
    if gpu.get("status") != "ok":
        pci = gpu.get("pci_nvidia_devices")
        if pci == 0 and "did not answer" in str(gpu.get("reason")):  # a hung driver
            return f"no NVIDIA GPU on the PCI bus, but NVML: {gpu.get('reason')}"
        if pci == 0:
            return "no NVIDIA GPU on the PCI bus, no NVIDIA driver"
        on_bus = f"; {pci} NVIDIA GPU(s) on the PCI bus" if pci else ""
        return f"no NVIDIA driver answers ({gpu.get('reason')}){on_bus}"
    devices = gpu.get("devices") or []
    models: dict[str, int] = {}
    for d in devices:
        models[str(d.get("name"))] = models.get(str(d.get("name")), 0) + 1
    listed = ", ".join(f"{n}x {name}" for name, n in models.items()) or "no GPU"
    return f"driver {gpu.get('driver_version')} (CUDA {gpu.get('cuda_driver_version')}), {listed}"


def _frameworks(facts: Mapping[str, Any]) -> str:
    fw = facts.get("frameworks") or {}
    parts = []
    torch = fw.get("torch")
    if isinstance(torch, dict):
        build = (
            "CPU-only" if torch.get("cpu_only") else f"CUDA {torch.get('cuda') or torch.get('hip')}"
        )
        parts.append(f"torch {torch.get('version')} ({build})")
    tf = fw.get("tensorflow")
    if isinstance(tf, dict):
        build = f"CUDA {tf.get('cuda_version')}" if tf.get("is_cuda_build") else "no CUDA"
        parts.append(f"{tf.get('distribution') or 'tensorflow'} {tf.get('version')} ({build})")
    jax = fw.get("jax")
    if isinstance(jax, dict):
        plugins = ", ".join(jax.get("cuda_plugins") or {}) or "no CUDA plugin"
        parts.append(f"jax {jax.get('version')} ({plugins})")
    return "; ".join(parts) or "no PyTorch, TensorFlow or JAX installed"


def _data(facts: Mapping[str, Any]) -> str:
    storage = facts.get("storage")
    dataset = facts.get("dataset")
    if not isinstance(storage, dict) and not isinstance(dataset, dict):
        return "no --data given"
    parts = []
    if isinstance(storage, dict):
        doubt = "" if storage.get("certain", True) else "?"
        parts.append(
            f"{storage.get('path')} on {storage.get('kind')}{doubt} ({storage.get('fs_type')})"
        )
    if isinstance(dataset, dict) and isinstance(dataset.get("files"), int):
        about = "" if dataset.get("complete", True) else "~"
        size = dataset.get("bytes")
        shown = human_bytes(size) if isinstance(size, int) else "? bytes"
        parts.append(f"{about}{dataset['files']:,} files, {about}{shown}")
    cold = (facts.get("read_throughput") or {}).get("cold")
    if isinstance(cold, dict) and cold.get("files_per_s"):
        parts.append(f"cold reads {cold['files_per_s']:,.0f} files/s")
    products = [p.get("name") for p in (facts.get("antivirus") or {}).get("products") or []]
    if products:
        parts.append("on-access scanning: " + ", ".join(str(p) for p in products))
    return "; ".join(parts)


def _scripts(facts: Mapping[str, Any]) -> str:
    scripts = facts.get("scripts")
    if not isinstance(scripts, dict):
        return "no --script given"
    files = len(scripts.get("files") or [])
    parts = [
        f"{files} file(s) read",
        f"{len(scripts.get('loaders') or [])} DataLoader(s)",
        f"{len(scripts.get('tf_pipelines') or [])} tf.data pipeline(s)",
    ]
    errors = scripts.get("errors") or []
    if errors:
        shown = "; ".join(
            f"{e.get('path')}{':' + str(e['line']) if e.get('line') else ''}: {e.get('reason')}"
            for e in errors[:3]
        )
        parts.append(f"not audited: {shown}")
    return ", ".join(parts)


def _packages(facts: Mapping[str, Any]) -> str:
    packages = facts.get("packages") or {}
    interp = facts.get("interpreter") or {}
    where = interp.get("prefix") or "?"
    return f"{len(packages)} distributions in {where}"


def _environment(facts: Mapping[str, Any]) -> str:
    env = facts.get("environment") or {}
    shown = [f"{k}={v}" for k, v in env.items() if k != "LD_LIBRARY_PATH"]
    return ", ".join(shown) if shown else "no thread, GPU or framework variables set"


_DESCRIBE: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "platform": _platform,
    "cpu": _cpu,
    "memory": _memory,
    "gpu": _gpu,
    "frameworks": _frameworks,
    "data": _data,
    "scripts": _scripts,
    "packages": _packages,
    "environment": _environment,
    "probe": probe_text.headline,
    "run": run_text.headline,
}
