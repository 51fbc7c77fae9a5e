"""Microsoft Defender on Windows, through PowerShell (`Get-MpComputerStatus`,
`Get-MpPreference`).

Without elevation Defender hides its exclusions behind the text "N/A: Must be an
administrator to view exclusions": that is *unknown*, never "none". `AMRunningMode`
"Passive Mode", "SxS Passive Mode" and "EDR Block Mode" mean Defender is not the primary
antivirus and does no real-time blocking scans (Microsoft's "Defender Antivirus
compatibility" table), so `realtime` is false there even though
`RealTimeProtectionEnabled` may read true.
"""

from __future__ import annotations

import fnmatch
import ntpath
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from envcheck.collectors.antivirus.findings import (
    NO_DATA,
    Check,
    Findings,
    Product,
    Runner,
    failure,
    json_object,
    run_command,
)
from envcheck.collectors.base import CollectContext

CHECK_DEFENDER = "windows-defender"

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


def checks(ctx: CollectContext, runner: Runner, timeout: float, found: Findings) -> list[Check]:
    """The Windows checks: Defender alone."""
    return [(CHECK_DEFENDER, lambda: _windows_defender(ctx, runner, timeout, found))]


def _windows_defender(ctx: CollectContext, runner: Runner, timeout: float, found: Findings) -> None:
    proc, why = run_command(runner, [*POWERSHELL, MP_STATUS], timeout, "Get-MpComputerStatus")
    if proc is None:
        found.fail(CHECK_DEFENDER, why)
        return
    if proc.returncode != 0:
        found.fail(CHECK_DEFENDER, failure(proc, "Get-MpComputerStatus"))
        return
    status = json_object(proc.stdout)
    if status is None:
        found.fail(CHECK_DEFENDER, "Get-MpComputerStatus gave no readable JSON")
        return
    found.checked.append(CHECK_DEFENDER)
    product = Product(DEFENDER, "Get-MpComputerStatus")
    found.products.append(product)
    product.realtime = _defender_realtime(status, product.notes)

    proc, why = run_command(runner, [*POWERSHELL, MP_PREFERENCE], timeout, "Get-MpPreference")
    if proc is not None and proc.returncode != 0:
        why = failure(proc, "Get-MpPreference")
    preference = json_object(proc.stdout) if proc is not None and proc.returncode == 0 else None
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


def _string_list(value: Any) -> list[str]:
    """ConvertTo-Json gives null, one string, or an array of strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(item) for item in value if item is not None]
    return [str(value)]
