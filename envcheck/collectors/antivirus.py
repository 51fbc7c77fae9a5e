"""Real-time antivirus and endpoint agents that may scan every file the data loader opens.

On-access scanning turns each `open()` of a training sample into a round trip through the
scanner; on a folder of a million small images that is the difference between minutes and
hours. This collector says which scanners are present, whether they scan in real time, and
whether the dataset folder (--data, "DIR") is excluded from them.

Per platform:

- Windows: Microsoft Defender through PowerShell (`Get-MpComputerStatus`,
  `Get-MpPreference`). Without elevation Defender hides its exclusions behind the text
  "N/A: Must be an administrator to view exclusions": that is *unknown*, never "none".
  `AMRunningMode` "Passive Mode", "SxS Passive Mode" and "EDR Block Mode" mean Defender
  is not the primary antivirus and does no real-time blocking scans (Microsoft's
  "Defender Antivirus compatibility" table), so `realtime` is false there even though
  `RealTimeProtectionEnabled` may read true.
- Linux: ClamAV on-access (a running `clamonacc` and its clamd.conf
  `OnAccessIncludePath` / `OnAccessExcludePath` / `OnAccessMountPath`), and commercial
  agents by process name in /proc or by install folder. Microsoft Defender for Endpoint
  alone can be asked (`mdatp health --output json`, `mdatp exclusion list`); the others
  keep their settings in a vendor console, so `realtime` and `excludes_data` stay null.
- macOS: endpoint security system extensions from `systemextensionsctl list`.

Nothing here raises: a command that is missing, fails or hangs becomes a reason under the
check's name in `reasons`; a check that ran is listed in `checked`.
"""

from __future__ import annotations

import fnmatch
import json
import ntpath
import os
import platform
import posixpath
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from envcheck import subprocess_runner
from envcheck.collectors.base import CollectContext, read_text

Runner = Callable[[Sequence[str], float], subprocess_runner.Completed]

CHECK_DEFENDER = "windows-defender"
CHECK_CLAMAV = "clamav"
CHECK_AGENTS = "linux-agents"
CHECK_MACOS = "macos-system-extensions"

NO_DATA = "no --data given"

POWERSHELL = ("powershell", "-NoProfile", "-NonInteractive", "-Command")
MP_STATUS = (
    "Get-MpComputerStatus | Select-Object RealTimeProtectionEnabled,AMRunningMode,"
    "AntivirusEnabled | ConvertTo-Json"
)
MP_PREFERENCE = "Get-MpPreference | Select-Object ExclusionPath,ExclusionProcess | ConvertTo-Json"
DEFENDER = "Microsoft Defender Antivirus"
ADMIN_NOTE = (
    "exclusions need an elevated shell: as administrator run"
    " Get-MpPreference | Select-Object -ExpandProperty ExclusionPath"
)
# AMRunningMode values in which Defender is not the primary antivirus: no real-time blocking.
PASSIVE_MODES = ("passive", "edr block")

CLAMD_CONFS = (
    "/etc/clamav/clamd.conf",
    "/etc/clamd.d/scan.conf",
    "/etc/clamd.conf",
    "/usr/local/etc/clamd.conf",
)
CLAMAV = "ClamAV on-access"

MDE = "Microsoft Defender for Endpoint"


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

# macOS endpoint security extensions: bundle id prefix -> product name.
MACOS_VENDORS: tuple[tuple[str, str], ...] = (
    ("com.crowdstrike.", "CrowdStrike Falcon"),
    ("com.sentinelone.", "SentinelOne"),
    ("com.microsoft.wdav", MDE),
    ("com.sophos.", "Sophos"),
    ("com.eset.", "ESET"),
    ("com.mcafee.", "Trellix/McAfee Endpoint Security"),
    ("com.trellix.", "Trellix/McAfee Endpoint Security"),
    ("com.jamf.protect", "Jamf Protect"),
    ("com.vmware.carbonblack", "VMware Carbon Black"),
    ("com.carbonblack.", "VMware Carbon Black"),
    ("com.malwarebytes.", "Malwarebytes"),
)
ES_SECTION = "com.apple.system_extension.endpoint_security"


@dataclass
class Product:
    name: str
    detected_by: str
    realtime: Optional[bool] = None
    excludes_data: Optional[bool] = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "realtime": self.realtime,
            "excludes_data": self.excludes_data,
            "detected_by": self.detected_by,
            "notes": list(self.notes),
        }


@dataclass
class Findings:
    products: list[Product] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)

    def fail(self, check: str, why: str) -> None:
        previous = self.reasons.get(check)
        self.reasons[check] = f"{previous}; {why}" if previous else why


def collect(
    ctx: CollectContext,
    run: Optional[Runner] = None,
    system: Optional[str] = None,
    timeout: float = 10.0,
) -> dict[str, Any]:
    runner: Runner = run or subprocess_runner.run
    name = system if system is not None else platform.system()
    found = Findings()
    checks: list[tuple[str, Callable[[], None]]]
    if name == "Windows":
        checks = [(CHECK_DEFENDER, lambda: _windows_defender(ctx, runner, timeout, found))]
    elif name == "Linux":
        try:  # one pass over /proc for both checks
            processes, proc_why = _processes(ctx)
        except Exception as exc:
            processes, proc_why = [], f"cannot read {ctx.proc_root}: {type(exc).__name__}: {exc}"
        checks = [
            (CHECK_CLAMAV, lambda: _clamav(ctx, processes, proc_why, found)),
            (CHECK_AGENTS, lambda: _linux_agents(ctx, processes, proc_why, runner, timeout, found)),
        ]
    elif name == "Darwin":
        checks = [(CHECK_MACOS, lambda: _macos(ctx, runner, timeout, found))]
    else:
        checks = []
        found.reasons["platform"] = f"no antivirus checks for {name or 'an unknown system'}"
    for check, body in checks:
        try:
            body()
        except Exception as exc:  # a parser bug must not hide the other checks
            found.fail(check, f"{type(exc).__name__}: {exc}")
    return {
        "antivirus": {
            "products": [product.to_json() for product in found.products],
            "checked": found.checked,
            "reasons": found.reasons,
        }
    }


# --- running commands ----------------------------------------------------------------------


def _run(
    runner: Runner, argv: Sequence[str], timeout: float, label: str
) -> tuple[Optional[subprocess_runner.Completed], str]:
    """(the finished command, "") or (None, why it gave no answer)."""
    try:
        return runner(list(argv), timeout), ""
    except subprocess.TimeoutExpired:
        return None, f"{label} did not answer within {timeout:g} s"
    except FileNotFoundError:
        return None, f"{label}: {argv[0]} not found"
    except OSError as exc:
        return None, f"cannot run {label}: {exc.strerror or exc}"
    except Exception as exc:  # an injected runner may raise anything
        return None, f"{label} failed: {type(exc).__name__}: {exc}"


def _failed(proc: subprocess_runner.Completed, label: str) -> str:
    lines = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
    return f"{label} exited with code {proc.returncode}: {lines[0] if lines else 'no output'}"


# --- Windows: Microsoft Defender -------------------------------------------------------------


def _windows_defender(ctx: CollectContext, runner: Runner, timeout: float, found: Findings) -> None:
    proc, why = _run(runner, [*POWERSHELL, MP_STATUS], timeout, "Get-MpComputerStatus")
    if proc is None:
        found.fail(CHECK_DEFENDER, why)
        return
    if proc.returncode != 0:
        found.fail(CHECK_DEFENDER, _failed(proc, "Get-MpComputerStatus"))
        return
    status = _json_object(proc.stdout)
    if status is None:
        found.fail(CHECK_DEFENDER, "Get-MpComputerStatus gave no readable JSON")
        return
    found.checked.append(CHECK_DEFENDER)
    product = Product(DEFENDER, "Get-MpComputerStatus")
    found.products.append(product)
    product.realtime = _defender_realtime(status, product.notes)

    proc, why = _run(runner, [*POWERSHELL, MP_PREFERENCE], timeout, "Get-MpPreference")
    if proc is not None and proc.returncode != 0:
        why = _failed(proc, "Get-MpPreference")
    preference = _json_object(proc.stdout) if proc is not None and proc.returncode == 0 else None
    if preference is None:
        product.notes.append(f"exclusions unknown: {why or 'Get-MpPreference gave no JSON'}")
        if ctx.data is None:
            product.notes.append(NO_DATA)
        return
    _defender_exclusions(ctx, preference, product)


def _defender_realtime(status: Mapping[str, Any], notes: list[str]) -> Optional[bool]:
    rtp = status.get("RealTimeProtectionEnabled")
    enabled = status.get("AntivirusEnabled")
    mode = str(status.get("AMRunningMode") or "")
    if any(passive in mode.lower() for passive in PASSIVE_MODES):
        notes.append(
            f"AMRunningMode is {mode!r}: Defender is not the primary antivirus and does no"
            " real-time blocking scans (another product may)"
        )
        return False
    if enabled is False:
        notes.append("AntivirusEnabled is false")
        return False
    if isinstance(rtp, bool):
        if not rtp:
            notes.append("real-time protection is off")
        return rtp
    notes.append("RealTimeProtectionEnabled not reported")
    return None


def _defender_exclusions(ctx: CollectContext, preference: Mapping[str, Any], p: Product) -> None:
    paths = _string_list(preference.get("ExclusionPath"))
    processes = _string_list(preference.get("ExclusionProcess"))
    if any(_hidden(entry) for entry in paths + processes):
        p.notes.append(ADMIN_NOTE)
        if ctx.data is None:
            p.notes.append(NO_DATA)
        return
    environ = {key.upper(): value for key, value in ctx.environ.items()}
    executable, prefix = ctx.interpreter.executable, ctx.interpreter.prefix
    for what, target in (("the audited Python", executable), ("its environment", prefix)):
        entry = _first_covering(target, paths, environ)
        if entry is not None:
            p.notes.append(f"{what} {target} is excluded (ExclusionPath {entry})")
    for entry in processes:
        if _process_matches(executable, entry, environ):
            p.notes.append(
                f"ExclusionProcess {entry} matches the audited Python: files it opens are"
                " not scanned in real time, wherever they are"
            )
            break
    if ctx.data is None:
        p.notes.append(NO_DATA)
        return
    data = _windows_abspath(str(ctx.data))
    entry = _first_covering(data, paths, environ)
    p.excludes_data = entry is not None
    if entry is not None:
        p.notes.append(f"DIR {data} is excluded (ExclusionPath {entry})")
    else:
        p.notes.append(
            f"DIR {data} is under no ExclusionPath; as administrator:"
            f" Add-MpPreference -ExclusionPath '{data}'"
        )


def _hidden(entry: str) -> bool:
    """Defender's stand-in for exclusions an unelevated user may not see."""
    return entry.strip().upper().startswith("N/A")


def _windows_abspath(path: str) -> str:
    """DIR made absolute where the collector runs on Windows itself (tests pass Windows
    paths on any system, and those are left as given)."""
    return os.path.abspath(path) if os.name == "nt" else path


def _expand_windows(path: str, environ: Mapping[str, str]) -> str:
    def sub(match: re.Match[str]) -> str:
        return environ.get(match.group(1).upper(), match.group(0))

    return re.sub(r"%([^%]+)%", sub, path)


def _windows_norm(path: str, environ: Mapping[str, str]) -> str:
    text = _expand_windows(path.strip().strip('"'), environ).replace("/", "\\")
    normal = ntpath.normcase(ntpath.normpath(text))
    if len(normal) > 3 and normal.endswith("\\"):
        normal = normal.rstrip("\\")
    return normal


def _windows_covers(entry: str, target: str, environ: Mapping[str, str]) -> bool:
    """Whether an ExclusionPath entry covers `target` (case-insensitive, by whole folder)."""
    if not entry.strip():
        return False
    pattern = _windows_norm(entry, environ)
    path = _windows_norm(target, environ)
    if any(char in pattern for char in "*?"):
        return fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern + "\\*")
    return path == pattern or path.startswith(pattern.rstrip("\\") + "\\")


def _first_covering(
    target: str, entries: Iterable[str], environ: Mapping[str, str]
) -> Optional[str]:
    for entry in entries:
        if _windows_covers(entry, target, environ):
            return entry
    return None


def _process_matches(executable: str, entry: str, environ: Mapping[str, str]) -> bool:
    pattern = _windows_norm(entry, environ)
    path = _windows_norm(executable, environ)
    subject = path if "\\" in pattern else ntpath.basename(path)
    return fnmatch.fnmatchcase(subject, pattern)


def _json_object(text: str) -> Optional[dict[str, Any]]:
    try:
        value = json.loads(text.strip().lstrip("\ufeff")) if text.strip() else None
    except json.JSONDecodeError:
        return None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, dict) else None


def _string_list(value: Any) -> list[str]:
    """ConvertTo-Json gives null, one string, or an array of strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(item) for item in value if item is not None]
    return [str(value)]


# --- Linux: processes ----------------------------------------------------------------------


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


# --- Linux: ClamAV on-access -----------------------------------------------------------------


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


# --- Linux: commercial agents ----------------------------------------------------------------


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
    proc, why = _run(runner, ["mdatp", "health", "--output", "json"], timeout, "mdatp health")
    if proc is not None and proc.returncode != 0:
        why = _failed(proc, "mdatp health")
    health = _json_object(proc.stdout) if proc is not None and proc.returncode == 0 else None
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
    proc, why = _run(runner, ["mdatp", "exclusion", "list"], timeout, "mdatp exclusion list")
    if proc is not None and proc.returncode != 0:
        why = _failed(proc, "mdatp exclusion list")
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


# --- macOS: endpoint security system extensions ----------------------------------------------


@dataclass(frozen=True)
class SystemExtension:
    section: str
    team: str
    bundle_id: str
    version: str
    name: str
    state: str


_EXTENSION_ROW = re.compile(
    r"^[\s*]*(?P<team>\S+)\s+(?P<bundle>\S+)\s+\((?P<version>[^)]*)\)\s+"
    r"(?P<name>.*?)\s*\[(?P<state>[^\]]*)\]\s*$"
)


def parse_systemextensionsctl(text: str) -> list[SystemExtension]:
    """Rows of `systemextensionsctl list`.

    "--- <category>" headers (newer macOS append " (Go to 'System Settings ...')"), a column
    header "enabled active teamID bundleID (version) name [state]", then one line per
    extension: "*" or nothing in the enabled and active columns, tab-separated.
    """
    section = ""
    found: list[SystemExtension] = []
    for line in text.splitlines():
        if line.startswith("---"):
            section = line[3:].strip().split(" ", 1)[0]
            continue
        if line.lstrip().startswith("enabled"):
            continue
        row = _EXTENSION_ROW.match(line)
        if row is None:
            continue
        found.append(
            SystemExtension(
                section,
                row["team"],
                row["bundle"],
                row["version"],
                row["name"].strip() or row["bundle"],
                row["state"],
            )
        )
    return found


def _macos(ctx: CollectContext, runner: Runner, timeout: float, found: Findings) -> None:
    proc, why = _run(runner, ["systemextensionsctl", "list"], timeout, "systemextensionsctl list")
    if proc is None:
        found.fail(CHECK_MACOS, why)
        return
    if proc.returncode != 0:
        found.fail(CHECK_MACOS, _failed(proc, "systemextensionsctl list"))
        return
    found.checked.append(CHECK_MACOS)
    for ext in parse_systemextensionsctl(proc.stdout):
        if ext.section != ES_SECTION or "activated enabled" not in ext.state:
            continue
        name = next(
            (product for prefix, product in MACOS_VENDORS if ext.bundle_id.startswith(prefix)),
            ext.name,
        )
        detected_by = f"system extension {ext.bundle_id} (team {ext.team})"
        same = next((p for p in found.products if p.name == name), None)
        if same is not None:  # a vendor with several endpoint security extensions
            same.notes.append(f"also {detected_by}")
            continue
        product = Product(name, detected_by)
        product.notes.append(
            f"endpoint security extension {ext.name!r} is active: it can inspect every file"
            " open; its real-time settings and exclusions are kept in the vendor's console"
        )
        if ctx.data is None:
            product.notes.append(NO_DATA)
        found.products.append(product)
