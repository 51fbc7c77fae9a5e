"""Storage on Windows (method "windows-powershell"): one PowerShell call (Get-Item,
Get-PSDrive, Get-Volume, Get-Partition | Get-Disk, Get-PhysicalDisk) answers with JSON.

A UNC path, or a drive letter mapped to a share, is "network" without asking a disk.
A disk on a RAID or virtual bus has a media type that the controller or hypervisor
declares, so the answer is uncertain there.
"""

from __future__ import annotations

import base64
import json
import ntpath
import re
from pathlib import Path
from typing import Any

from envcheck.collectors.storage.bounded import Runner, first_line, run_first
from envcheck.collectors.storage.facts import (
    FILE_NOTE,
    Disk,
    Reasons,
    blank_facts,
    disk_kind,
    judge,
    mark_unknown,
    public_disk,
    virtual_note,
)

# Get-PhysicalDisk's enumerations, for a PowerShell that serialises the numbers.
WINDOWS_MEDIA_TYPES = {0: "Unspecified", 3: "HDD", 4: "SSD", 5: "SCM"}
WINDOWS_BUS_TYPES = {
    1: "SCSI",
    2: "ATAPI",
    3: "ATA",
    4: "1394",
    5: "SSA",
    6: "Fibre Channel",
    7: "USB",
    8: "RAID",
    9: "iSCSI",
    10: "SAS",
    11: "SATA",
    12: "SD",
    13: "MMC",
    14: "Virtual",
    15: "File Backed Virtual",
    16: "Storage Spaces",
    17: "NVMe",
}
_BUS_TRANSPORT = {
    "usb": "usb",
    "nvme": "nvme",
    "sata": "sata",
    "ata": "sata",
    "scsi": "scsi",
    "sas": "scsi",
}
_WINDOWS_VIRTUAL_BUSES = {"raid": "RAID", "virtual": "Virtual", "file backed virtual": "Virtual"}

POWERSHELLS = ("powershell", "pwsh")

# Single quotes only: the script travels base64-encoded (-EncodedCommand), so no quoting
# survives or breaks on the command line.
_WINDOWS_SCRIPT = r"""
$ErrorActionPreference = 'Stop'; $ProgressPreference = 'SilentlyContinue'
$out = [ordered]@{}
try {
  $item = Get-Item -LiteralPath '@PATH@' -Force
  $full = $item.FullName
  $target = @($item.Target)[0]
  if ($item.LinkType -and $target -and ($target -match '^([A-Za-z]:|\\\\)')) { $full = $target }
  $out.Resolved = $full
  $out.IsFolder = [bool]$item.PSIsContainer
} catch { $out.Error = 'Get-Item: ' + $_.Exception.Message; $out | ConvertTo-Json -Compress; exit }
if ($full -match '^([A-Za-z]):') {
  $letter = $Matches[1]
  try {
    $out.Drive = Get-PSDrive -Name $letter -PSProvider FileSystem |
      Select-Object Name,Root,DisplayRoot
    $out.FileSystem = (Get-Volume -DriveLetter $letter -ErrorAction SilentlyContinue).FileSystem
    if (-not $out.Drive.DisplayRoot) {
      $disk = Get-Partition -DriveLetter $letter | Get-Disk
      $out.Disk = $disk | Select-Object Number,FriendlyName,BusType,Size
      $pd = @(Get-PhysicalDisk | Where-Object { $_.DeviceId -eq [string]$disk.Number })
      if ($pd.Count -eq 0) { $pd = @($disk | Get-VirtualDisk | Get-PhysicalDisk) }
      $out.PhysicalDisks = @($pd | Select-Object DeviceId,FriendlyName,MediaType,BusType,Size)
    }
  } catch { $out.Error = $_.InvocationInfo.MyCommand.Name + ': ' + $_.Exception.Message }
}
$out | ConvertTo-Json -Depth 4 -Compress
"""


def windows_script(path: str) -> str:
    """The PowerShell script that asks about `path` (single quotes doubled inside it)."""
    return _WINDOWS_SCRIPT.replace("@PATH@", path.replace("'", "''"))


def _is_unc(path: str) -> bool:
    return path.startswith(("\\\\", "//"))


def _unc_share(path: str) -> str:
    parts = [p for p in re.split(r"[\\/]+", path) if p]
    return "\\\\" + "\\".join(parts[:2])


def probe(data: Path, run: Runner, timeout: float) -> dict[str, Any]:
    """The storage section for `data`, from one PowerShell call."""
    given = str(data)
    facts = blank_facts(given, "windows-powershell")
    reasons: Reasons = facts["reasons"]
    if _is_unc(given):
        return _windows_network(facts, given, _unc_share(given))
    encoded = base64.b64encode(windows_script(given).encode("utf-16-le")).decode("ascii")
    completed, why = run_first(
        [
            [shell, "-NoProfile", "-NonInteractive", "-EncodedCommand", encoded]
            for shell in POWERSHELLS
        ],
        run,
        timeout,
        "PowerShell",
    )
    if completed is None:
        return mark_unknown(facts, why)
    try:
        answer = json.loads(completed.stdout.strip() or "null")
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        detail = first_line(completed.stderr) or first_line(completed.stdout) or "no output"
        return mark_unknown(
            facts, f"PowerShell gave no storage answer (exit {completed.returncode}): {detail}"
        )
    resolved = answer.get("Resolved")
    if isinstance(resolved, str):
        facts["resolved"] = resolved
    if answer.get("IsFolder") is False:
        facts["notes"].append(FILE_NOTE)
    if facts["resolved"] is None:
        return mark_unknown(facts, str(answer.get("Error") or "Get-Item gave no path"))
    if _is_unc(facts["resolved"]):
        return _windows_network(facts, facts["resolved"], _unc_share(facts["resolved"]))
    drive = _dict(answer.get("Drive"))
    facts["mount_point"] = drive.get("Root") or ntpath.splitdrive(facts["resolved"])[0] + "\\"
    file_system = answer.get("FileSystem")
    if isinstance(file_system, str) and file_system:
        facts["fs_type"] = file_system.lower()
    display_root = drive.get("DisplayRoot")
    if isinstance(display_root, str) and _is_unc(display_root):
        return _windows_network(facts, facts["resolved"], display_root)
    if facts["fs_type"] is None:
        reasons["fs_type"] = "Get-Volume gave no file system"
    disk = _dict(answer.get("Disk"))
    if disk.get("Number") is not None:
        facts["device"] = f"PhysicalDrive{disk['Number']}"
        facts["source"] = f"\\\\.\\PhysicalDrive{disk['Number']}"
    physical = answer.get("PhysicalDisks")
    if isinstance(physical, dict):  # ConvertTo-Json unwraps a one-element array
        physical = [physical]
    if not isinstance(physical, list) or not physical:
        return mark_unknown(facts, str(answer.get("Error") or "Get-PhysicalDisk named no disk"))
    disks = [_windows_disk(d) for d in physical if isinstance(d, dict)]
    facts["disks"] = [public_disk(d) for d in disks]
    verdict = judge(disks)
    for entry in disks:
        bus = str(entry.get("_bus") or "").lower()
        if bus in _WINDOWS_VIRTUAL_BUSES and disk_kind(entry) in ("hdd", "ssd"):
            verdict.certain = False
            verdict.notes.append(virtual_note(entry, _WINDOWS_VIRTUAL_BUSES[bus]))
        if entry["rotational"] is None:
            reasons[f"disks.{entry['name']}.rotational"] = (
                f"MediaType is {entry.get('_media') or 'missing'}"
            )
    facts["notes"].extend(verdict.notes)
    if verdict.kind is None:
        return mark_unknown(facts, "Get-PhysicalDisk told neither the media type nor the bus")
    facts["kind"] = verdict.kind
    facts["certain"] = verdict.certain
    return facts


def _windows_network(facts: dict[str, Any], resolved: str, share: str) -> dict[str, Any]:
    facts["resolved"] = resolved
    facts["source"] = share
    if facts["mount_point"] is None:
        facts["mount_point"] = share
    if facts["fs_type"] is None:
        facts["reasons"]["fs_type"] = "a network share: its file system is not asked"
    facts.update(kind="network", disks=[], certain=True)
    return facts


def _windows_disk(entry: dict[str, Any]) -> Disk:
    media = entry.get("MediaType")
    bus = entry.get("BusType")
    if isinstance(media, int):
        media = WINDOWS_MEDIA_TYPES.get(media, str(media))
    if isinstance(bus, int):
        bus = WINDOWS_BUS_TYPES.get(bus, str(bus))
    media_text = str(media or "")
    bus_text = str(bus or "")
    size = entry.get("Size")
    device_id = entry.get("DeviceId")
    friendly = entry.get("FriendlyName")
    return {
        "name": f"PhysicalDisk{device_id}" if device_id not in (None, "") else str(friendly),
        "rotational": {"HDD": True, "SSD": False, "SCM": False}.get(media_text.upper()),
        "transport": _BUS_TRANSPORT.get(bus_text.lower()),
        "removable": None,
        "model": friendly if isinstance(friendly, str) and friendly else None,
        "size_bytes": size if isinstance(size, int) else None,
        "_bus": bus_text,
        "_media": media_text,
    }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
