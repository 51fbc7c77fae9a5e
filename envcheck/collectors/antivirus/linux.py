"""Real-time scanners on Linux: ClamAV on-access, and commercial endpoint agents.

ClamAV: a running `clamonacc` (or a clamd of before 0.102 with `ScanOnAccess yes`) and
its clamd.conf `OnAccessIncludePath` / `OnAccessExcludePath` / `OnAccessMountPath` say
whether DIR is scanned on every open. Commercial agents are found by process name in
/proc or by install folder. Microsoft Defender for Endpoint alone can be asked (`mdatp
health --output json`, `mdatp exclusion list`); the others keep their settings in a
vendor console, so `realtime` and `excludes_data` stay null.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from envcheck.collectors.antivirus.findings import (
    MDE,
    NO_DATA,
    Check,
    Findings,
    Product,
    Runner,
    failure,
    json_object,
    run_command,
)
from envcheck.collectors.base import CollectContext, read_text

CHECK_CLAMAV = "clamav"
CHECK_AGENTS = "linux-agents"

CLAMD_CONFS = (
    "/etc/clamav/clamd.conf",
    "/etc/clamd.d/scan.conf",
    "/etc/clamd.conf",
    "/usr/local/etc/clamd.conf",
)
CLAMAV = "ClamAV on-access"


@dataclass(frozen=True)
class Agent:
    name: str
    processes: frozenset[str]  # exact /proc/PID/comm names
    prefixes: tuple[str, ...]  # comm name prefixes (comm is cut at 15 characters)
    paths: tuple[str, ...]  # install folders


LINUX_AGENTS: tuple[Agent, ...] = (
    Agent("CrowdStrike Falcon", frozenset({"falcon-sensor"}), (), ("/opt/CrowdStrike",)),
    Agent(
        "SentinelOne",
        frozenset({"s1-agent", "s1-orchestrator", "s1-scanner", "s1-network", "s1-firewall"}),
        ("sentinelone",),
        ("/opt/sentinelone",),
    ),
    Agent(MDE, frozenset({"wdavdaemon"}), (), ("/opt/microsoft/mdatp",)),
    Agent("Trellix/McAfee Endpoint Security", frozenset({"mfetpd"}), (), ("/opt/McAfee",)),
    Agent("Sophos Protection for Linux", frozenset(), ("sophos",), ("/opt/sophos-spl",)),
    Agent("Cortex XDR", frozenset({"traps_pmd"}), (), ("/opt/traps",)),
    Agent("ESET", frozenset(), ("esets",), ("/opt/eset",)),
)


def checks(ctx: CollectContext, runner: Runner, timeout: float, found: Findings) -> list[Check]:
    """The Linux checks, ClamAV and the commercial agents, over one pass through /proc."""
    try:
        processes, proc_why = _processes(ctx)
    except Exception as exc:
        processes, proc_why = [], f"cannot read {ctx.proc_root}: {type(exc).__name__}: {exc}"
    return [
        (CHECK_CLAMAV, lambda: _clamav(ctx, processes, proc_why, found)),
        (CHECK_AGENTS, lambda: _linux_agents(ctx, processes, proc_why, runner, timeout, found)),
    ]


# --- processes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Process:
    pid: int
    comm: str
    argv: tuple[str, ...]


def _processes(ctx: CollectContext) -> tuple[list[Process], Optional[str]]:
    """Every process visible under ctx.proc_root, or why none could be listed."""
    try:
        entries = [e for e in ctx.proc_root.iterdir() if e.name.isascii() and e.name.isdigit()]
    except OSError as exc:
        return [], f"cannot list {ctx.proc_root}: {exc.strerror or exc}"
    found: list[Process] = []
    for entry in sorted(entries, key=lambda e: int(e.name)):
        comm = read_text(entry / "comm")
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            raw = b""
        argv = tuple(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)
        if comm is None and argv:
            comm = posixpath.basename(argv[0])[:15]
        if comm:
            found.append(Process(int(entry.name), comm, argv))
    if not found:
        return [], f"no process readable under {ctx.proc_root}"
    return found, None


def _posix_norm(path: str) -> str:
    normal = posixpath.normpath(path.strip().strip('"').strip("'"))
    return "/" if normal in ("/", "//") else normal.rstrip("/")


def _posix_under(path: str, base: str) -> bool:
    base = _posix_norm(base)
    return base == "/" or path == base or path.startswith(base + "/")


def _data_candidates(data: Path) -> list[str]:
    """DIR as given (made absolute) and with symlinks resolved; scanners see the latter."""
    given = _posix_norm(os.path.abspath(data))
    resolved = _posix_norm(os.path.realpath(data))
    return [given] if given == resolved else [given, resolved]


# --- ClamAV on-access -----------------------------------------------------------------


@dataclass
class ClamConfig:
    path: str
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    mount: list[str] = field(default_factory=list)
    scan_on_access: bool = False
    example: bool = False


def parse_clamd_conf(text: str, path: str = "clamd.conf") -> ClamConfig:
    """The on-access options of a clamd.conf ("Option value" lines, # comments)."""
    conf = ClamConfig(path)
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        key = parts[0]
        value = parts[1].strip().strip('"').strip("'") if len(parts) > 1 else ""
        lowered = key.lower()
        if lowered == "example":
            conf.example = True
        elif lowered == "onaccessincludepath" and value:
            conf.include.append(value)
        elif lowered == "onaccessexcludepath" and value:
            conf.exclude.append(value)
        elif lowered == "onaccessmountpath" and value:
            conf.mount.append(value)
        elif lowered == "scanonaccess":
            conf.scan_on_access = value.lower() in ("yes", "true", "1")
    return conf


def _option(argv: Sequence[str], short: str, long: str) -> Optional[str]:
    """The value of -X VALUE, -XVALUE, --long VALUE or --long=VALUE in argv."""
    for index, arg in enumerate(argv[1:], start=1):
        if arg in (short, long):
            return argv[index + 1] if index + 1 < len(argv) else None
        if arg.startswith(long + "="):
            return arg[len(long) + 1 :]
        if short and arg.startswith(short) and not arg.startswith("--") and len(arg) > 2:
            return arg[2:]
    return None


def _clamav(
    ctx: CollectContext, processes: Sequence[Process], why: Optional[str], found: Findings
) -> None:
    if why is not None:
        found.fail(CHECK_CLAMAV, why)
        return
    found.checked.append(CHECK_CLAMAV)
    onacc = [proc for proc in processes if proc.comm == "clamonacc"]
    clamd = [proc for proc in processes if proc.comm == "clamd"]
    if onacc:
        proc = onacc[0]
        conf_option = _option(proc.argv, "-c", "--config-file")
        conf, tried = _read_clamd_conf(ctx, [conf_option] if conf_option else list(CLAMD_CONFS))
        product = Product(CLAMAV, "process clamonacc", realtime=True)
        found.products.append(product)
        if conf is not None:
            for short, long, target in (
                ("-W", "--watch-list", conf.include),
                ("-e", "--exclude-list", conf.exclude),
            ):
                listed = _option(proc.argv, short, long)
                if listed:
                    target.extend(_list_file(ctx, listed))
        _clam_coverage(ctx, conf, tried, product)
        return
    if clamd:
        conf_option = _option(clamd[0].argv, "-c", "--config-file")
        conf, tried = _read_clamd_conf(ctx, [conf_option] if conf_option else list(CLAMD_CONFS))
        if conf is not None and conf.scan_on_access:  # ClamAV before 0.102: on-access in clamd
            product = Product(CLAMAV, "process clamd (ScanOnAccess yes)", realtime=True)
            found.products.append(product)
            _clam_coverage(ctx, conf, tried, product)


def _read_clamd_conf(ctx: CollectContext, paths: Sequence[str]) -> tuple[Optional[ClamConfig], str]:
    for path in paths:
        text = read_text(ctx.path(path))
        if text is not None:
            return parse_clamd_conf(text, path), path
    return None, ", ".join(paths)


def _list_file(ctx: CollectContext, path: str) -> list[str]:
    text = read_text(ctx.path(path)) or ""
    return [line.strip() for line in text.splitlines() if line.strip()]


def _clam_coverage(
    ctx: CollectContext, conf: Optional[ClamConfig], tried: str, product: Product
) -> None:
    if conf is None:
        product.notes.append(
            f"no readable clamd.conf ({tried}): cannot tell which folders are scanned on access"
        )
        return
    if conf.example:
        product.notes.append(f"{conf.path} still has its 'Example' line (clamd refuses it)")
    if ctx.data is None:
        product.notes.append(NO_DATA)
        return
    watched = conf.include + conf.mount
    if not watched:
        product.notes.append(
            f"{conf.path} names no OnAccessIncludePath or OnAccessMountPath:"
            " cannot tell which folders are scanned"
        )
        return
    candidates = _data_candidates(ctx.data)
    excluded = _first_under(candidates, conf.exclude)
    covering = _first_under(candidates, watched)
    if excluded is not None:
        product.excludes_data = True
        product.notes.append(f"DIR is excluded by OnAccessExcludePath {excluded} ({conf.path})")
    elif covering is not None:
        product.excludes_data = False
        product.notes.append(
            f"DIR is under {covering} and scanned on every open; add"
            f" 'OnAccessExcludePath {candidates[-1]}' to {conf.path} and restart clamonacc"
        )
    else:
        product.excludes_data = True
        product.notes.append(
            f"DIR is outside every OnAccessIncludePath/OnAccessMountPath ({', '.join(watched)})"
        )


def _first_under(candidates: Sequence[str], bases: Iterable[str]) -> Optional[str]:
    for base in bases:
        if any(_posix_under(candidate, base) for candidate in candidates):
            return base
    return None


# --- commercial agents ----------------------------------------------------------------


def _linux_agents(
    ctx: CollectContext,
    processes: Sequence[Process],
    why: Optional[str],
    runner: Runner,
    timeout: float,
    found: Findings,
) -> None:
    if why is not None:
        found.fail(CHECK_AGENTS, f"{why}: only install folders were checked")
    found.checked.append(CHECK_AGENTS)
    for agent in LINUX_AGENTS:
        running = [
            proc.comm
            for proc in processes
            if proc.comm in agent.processes or proc.comm.startswith(agent.prefixes)
        ]
        installed = [path for path in agent.paths if _exists(ctx.path(path))]
        if not running and not installed:
            continue
        detected_by = f"process {running[0]}" if running else f"path {installed[0]}"
        product = Product(agent.name, detected_by)
        found.products.append(product)
        if running and installed:
            product.notes.append(f"installed in {installed[0]}")
        elif installed:
            product.notes.append("installed, but no running process of it was seen in /proc")
        if agent.name == MDE:
            _mdatp(ctx, runner, timeout, product)
            continue
        product.notes.append(
            "real-time state and exclusions are kept in the vendor's console; ask whoever"
            " manages it to exclude the dataset folder"
        )
        if ctx.data is None:
            product.notes.append(NO_DATA)


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # e.g. a folder of the agent that this user may not look into
        return False


def _mdatp(ctx: CollectContext, runner: Runner, timeout: float, product: Product) -> None:
    proc, why = run_command(
        runner, ["mdatp", "health", "--output", "json"], timeout, "mdatp health"
    )
    if proc is not None and proc.returncode != 0:
        why = failure(proc, "mdatp health")
    health = json_object(proc.stdout) if proc is not None and proc.returncode == 0 else None
    if health is None:
        product.notes.append(f"real-time state unknown: {why or 'mdatp health gave no JSON'}")
    else:
        product.realtime = _mdatp_flag(health, "realTimeProtectionEnabled")
        passive = _mdatp_flag(health, "passiveModeEnabled")
        product.notes.append(
            "real-time protection from mdatp health: "
            + {True: "on", False: "off", None: "not reported"}[product.realtime]
        )
        if passive:
            product.notes.append("passive mode is on: detections are reported, not blocked")
    if ctx.data is None:
        product.notes.append(NO_DATA)
        return
    proc, why = run_command(runner, ["mdatp", "exclusion", "list"], timeout, "mdatp exclusion list")
    if proc is not None and proc.returncode != 0:
        why = failure(proc, "mdatp exclusion list")
    if proc is None or proc.returncode != 0:
        product.notes.append(f"exclusions unknown: {why}")
        return
    excluded_paths = parse_mdatp_exclusions(proc.stdout)
    candidates = _data_candidates(ctx.data)
    entry = _first_under(candidates, excluded_paths)
    product.excludes_data = entry is not None
    if entry is not None:
        product.notes.append(f"DIR is excluded (mdatp exclusion {entry})")
    else:
        product.notes.append(
            "DIR is under no mdatp path exclusion; as root:"
            f" mdatp exclusion folder add --path {candidates[-1]}"
        )


def _mdatp_flag(health: Mapping[str, Any], camel: str) -> Optional[bool]:
    """A boolean of `mdatp health --output json`: {"value": bool, ...} (or a bare bool)."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()
    for key in (camel, snake):
        value = health.get(key)
        if isinstance(value, Mapping):
            value = value.get("value")
        if isinstance(value, bool):
            return value
    return None


def parse_mdatp_exclusions(text: str) -> list[str]:
    """Folder and file paths from `mdatp exclusion list` (process exclusions left out).

    The output is blocks of "Key: value" lines between "=====" rules, such as
    'Exclusion type: "excludedPath"', 'Path: "/data/"', 'Is directory: true'; JSON
    (a list of such objects) is read as well.
    """
    stripped = text.strip()
    blocks: list[dict[str, str]] = []
    if stripped.startswith(("[", "{")):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            value = None
        items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
        for item in items:
            if isinstance(item, dict):
                blocks.append({str(k).lower(): str(v) for k, v in item.items()})
    else:
        block: dict[str, str] = {}
        for raw in text.splitlines():
            line = raw.strip()
            if not line or set(line) <= set("=-"):
                if block:
                    blocks.append(block)
                block = {}
                continue
            key, sep, value = line.partition(":")
            if sep:
                block[key.strip().lower()] = value.strip().strip('"')
            else:
                block.setdefault("header", line.lower())
        if block:
            blocks.append(block)
    paths: list[str] = []
    for block in blocks:
        kind = " ".join(v.lower() for k, v in block.items() if "type" in k or k == "header")
        if "process" in kind:
            continue
        path = block.get("path")
        if path and path.startswith("/"):
            paths.append(path)
    return paths
