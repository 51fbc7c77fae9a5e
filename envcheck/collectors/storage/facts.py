"""The storage section's shape, and the kind a set of disks gives, for every platform.

Kinds: any disk behind a USB bus is "usb" whatever it claims; then an NVMe transport is
"nvme"; then rotational 1 is "hdd" and 0 "ssd". Several disks of different kinds give
the slowest (usb, hdd < ssd < nvme) and certain false. A rotational flag read through a
hardware RAID volume or a virtual disk (PERC, RAID, Virtual, QEMU, VMware, VBOX or
virtio) says what the controller or hypervisor declares, so certain is false.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

Disk = dict[str, Any]
Reasons = dict[str, str]

KINDS = ("hdd", "ssd", "nvme", "usb", "network", "fuse", "tmpfs", "overlay", "drvfs", "unknown")
NETWORK_FS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "ceph",
        "glusterfs",
        "lustre",
        "beegfs",
        "gpfs",
        "afpfs",
        "webdav",
    }
)
MEMORY_FS = frozenset({"tmpfs", "ramfs"})
# The slowest first: several disks of different kinds give the first of these present.
DISK_KIND_ORDER = ("usb", "hdd", "ssd", "nvme")
# Model or vendor text of a disk that is a RAID volume or a hypervisor's virtual disk.
VIRTUAL_MARKERS = ("PERC", "RAID", "Virtual", "QEMU", "VMware", "VBOX", "LOGICAL VOLUME")
# --data may name a file (an archive, a shard): its folder's storage is the answer.
FILE_NOTE = "--data names a file, not a folder: the storage reported is the file's"


def blank_facts(path: str, method: Optional[str]) -> dict[str, Any]:
    """The section for `path` before anything is known: kind unknown, every fact null."""
    return {
        "path": path,
        "resolved": None,
        "mount_point": None,
        "fs_type": None,
        "source": None,
        "device": None,
        "disks": None,
        "kind": "unknown",
        "backing_kind": None,
        "certain": False,
        "notes": [],
        "method": method,
        "reasons": {},
    }


def mark_unknown(facts: dict[str, Any], why: str) -> dict[str, Any]:
    """Kind unknown for `why`; every field still null gets the same reason."""
    facts["kind"] = "unknown"
    facts["certain"] = False
    reasons: Reasons = facts["reasons"]
    reasons.setdefault("kind", why)
    for name in ("resolved", "mount_point", "fs_type", "source", "device", "disks"):
        if facts[name] is None:
            reasons.setdefault(name, why)
    return facts


def disk_kind(disk: Disk) -> Optional[str]:
    """One disk's kind: the bus first (usb, nvme), then the rotational flag."""
    if disk.get("transport") == "usb":
        return "usb"
    if disk.get("transport") == "nvme":
        return "nvme"
    if disk.get("rotational") is True:
        return "hdd"
    if disk.get("rotational") is False:
        return "ssd"
    return None


@dataclass
class Verdict:
    """The kind of a set of disks, and why it may be uncertain."""

    kind: Optional[str]
    certain: bool = True
    notes: list[str] = field(default_factory=list)


def judge(disks: list[Disk], extra_kinds: Sequence[str] = ()) -> Verdict:
    """The slowest kind among the disks (and non-disk backings); notes on uncertainty."""
    verdict = Verdict(kind=None)
    kinds: list[str] = list(extra_kinds)
    labels: list[str] = []
    for disk in disks:
        kind = disk_kind(disk)
        if kind is None:
            verdict.certain = False
            verdict.notes.append(
                f"{disk['name']}: neither its bus nor its rotational flag could be read"
            )
            continue
        kinds.append(kind)
        labels.append(f"{disk['name']}: {kind}")
        marker = _virtual_marker(disk)
        if kind in ("hdd", "ssd") and marker:
            verdict.certain = False
            verdict.notes.append(virtual_note(disk, marker))
        elif kind == "ssd" and str(disk["name"]).startswith("mmcblk"):
            verdict.certain = False
            verdict.notes.append(
                f"{disk['name']} is an SD/eMMC card: flash, but far slower than an SSD"
            )
    if not kinds:
        return verdict
    others = [k for k in kinds if k not in DISK_KIND_ORDER]
    if others:
        verdict.kind = others[0]
    else:
        verdict.kind = min(kinds, key=DISK_KIND_ORDER.index)
    if len(set(kinds)) > 1:
        verdict.certain = False
        shown = ", ".join(labels + [f"backing: {k}" for k in extra_kinds])
        verdict.notes.append(
            f"the data spans storage of different kinds ({shown}): "
            f"the slowest, {verdict.kind}, decides"
        )
    return verdict


def _virtual_marker(disk: Disk) -> Optional[str]:
    if disk.get("transport") == "virtio":
        return "virtio"
    text = f"{disk.get('model') or ''} {disk.get('_vendor') or ''}"
    for marker in VIRTUAL_MARKERS:
        if marker.lower() in text.lower():
            return marker
    if str(disk.get("name", "")).startswith("xvd"):
        return "Xen"
    return None


def virtual_note(disk: Disk, marker: str) -> str:
    """Why a RAID volume's or a virtual disk's rotational flag is only a claim."""
    what = f"{disk['name']} ({disk['model']})" if disk.get("model") else str(disk["name"])
    flag = "rotational" if disk.get("rotational") else "non-rotational"
    if marker in ("PERC", "RAID", "LOGICAL VOLUME"):
        return (
            f"{what} is a volume of a hardware RAID controller: its {flag} flag is the "
            "controller's claim, not necessarily what the member disks are"
        )
    return (
        f"{what} is a virtual disk ({marker}): its {flag} flag is what the hypervisor "
        "declares, not necessarily what the host's storage is"
    )


def public_disk(disk: Disk) -> Disk:
    """The disk as the snapshot shows it: without the "_" keys kept for judging."""
    return {k: v for k, v in disk.items() if not k.startswith("_")}
