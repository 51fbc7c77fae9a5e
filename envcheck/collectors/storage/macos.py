"""Storage on macOS (method "macos-diskutil"): `mount` gives the file system type,
`diskutil info -plist <mount point>` the disk (SolidState, bus protocol)."""

from __future__ import annotations

import plistlib
from typing import Any, Optional

from envcheck.collectors.base import CollectContext
from envcheck.collectors.storage import bounded
from envcheck.collectors.storage.bounded import Runner, first_line, run_first
from envcheck.collectors.storage.facts import (
    MEMORY_FS,
    NETWORK_FS,
    Disk,
    Reasons,
    blank_facts,
    judge,
    mark_unknown,
    public_disk,
)
from envcheck.collectors.storage.mounts import find_mount, parse_mac_mounts

MAC_FUSE_FS = ("macfuse", "osxfuse", "fuse")
_MAC_NVME_PROTOCOLS = ("apple fabric", "pci-express", "pci", "nvme", "nvme express")


def probe(ctx: CollectContext, run: Runner, timeout: float) -> dict[str, Any]:
    """The storage section for ctx.data, from `mount` and `diskutil`."""
    assert ctx.data is not None
    given = str(ctx.data)
    facts = blank_facts(given, "macos-diskutil")
    reasons: Reasons = facts["reasons"]
    located = bounded.locate(ctx, facts, timeout)
    if located is None:
        return facts
    path, certain = located
    completed, why = run_first([["/sbin/mount"], ["mount"]], run, timeout, "mount")
    if completed is None:
        return mark_unknown(facts, why)
    mount = find_mount(parse_mac_mounts(completed.stdout), path)
    if mount is None:
        return mark_unknown(facts, f"`mount` lists no file system holding {path}")
    facts.update(mount_point=mount.mount_point, fs_type=mount.fs_type, source=mount.source)
    fs = mount.fs_type.lower()
    if fs in NETWORK_FS:
        facts.update(kind="network", disks=[], certain=certain)
        return facts
    if fs in MAC_FUSE_FS or fs.startswith("fuse"):
        facts.update(kind="fuse", disks=[], certain=certain)
        return facts
    if fs in MEMORY_FS:
        facts.update(kind="tmpfs", disks=[], certain=certain)
        return facts
    completed, why = run_first(
        [
            [tool, "info", "-plist", mount.mount_point]
            for tool in ("/usr/sbin/diskutil", "diskutil")
        ],
        run,
        timeout,
        "diskutil",
    )
    if completed is None:
        return mark_unknown(facts, why)
    try:
        info = plistlib.loads(completed.stdout.encode("utf-8"))
    except Exception:  # plistlib raises several types on bad input
        info = None
    if not isinstance(info, dict):
        detail = first_line(completed.stdout) or first_line(completed.stderr) or "no output"
        return mark_unknown(facts, f"diskutil gave no disk information: {detail}")
    disk = _mac_disk(info)
    facts["device"] = info.get("DeviceIdentifier")
    facts["disks"] = [public_disk(disk)]
    verdict = judge([disk])
    if str(info.get("BusProtocol", "")).lower() == "disk image":
        verdict.certain = False
        verdict.notes.append(
            "a mounted disk image: the disk holding the image file is not followed"
        )
    for key in ("rotational", "transport"):
        if disk[key] is None:
            reasons[f"disks.{disk['name']}.{key}"] = (
                f"diskutil gave no {'SolidState' if key == 'rotational' else 'known bus'}"
            )
    facts["notes"].extend(verdict.notes)
    if verdict.kind is None:
        return mark_unknown(facts, "diskutil told neither SolidState nor a known bus")
    facts["kind"] = verdict.kind
    facts["certain"] = certain and verdict.certain
    return facts


def _mac_disk(info: dict[str, Any]) -> Disk:
    solid = info.get("SolidState")
    protocol = str(info.get("BusProtocol") or info.get("Protocol") or "")
    transport: Optional[str] = None
    lowered = protocol.lower()
    if lowered == "usb":
        transport = "usb"
    elif lowered in _MAC_NVME_PROTOCOLS and solid is True:
        transport = "nvme"
    elif lowered == "sata":
        transport = "sata"
    elif lowered in ("sas", "scsi", "fibre channel"):
        transport = "scsi"
    removable = info.get("RemovableMedia", info.get("Removable"))
    size = info.get("TotalSize", info.get("Size"))
    model = info.get("MediaName") or info.get("IORegistryEntryName")
    return {
        "name": str(info.get("ParentWholeDisk") or info.get("DeviceIdentifier") or "disk"),
        "rotational": (not solid) if isinstance(solid, bool) else None,
        "transport": transport,
        "removable": removable if isinstance(removable, bool) else None,
        "model": model if isinstance(model, str) and model else None,
        "size_bytes": size if isinstance(size, int) else None,
    }
