"""Storage on Linux (method "linux-sysfs"): from the data path down to its disks.

The path is resolved (symlinks), its mount is the longest mount-point prefix in
/proc/self/mountinfo, and the mount's device (its major:minor through /sys/dev/block,
else a /dev/... source name) is followed through partitions, device-mapper/LVM and
md-RAID (`slaves/`) and loop devices (`loop/backing_file`, whose file's own mount is then
followed the same way) down to the physical disks, whose `queue/rotational`, `removable`,
`device/model`, `size` and bus (the resolved /sys path) are read. The file system type
alone tells tmpfs, network and FUSE mounts, and a Windows drive seen from WSL (drvfs, or
9p on a Microsoft kernel). `fuseblk` (ntfs-3g, exfat-fuse) has a real block device: it is
classified by its disk.

Overlay: backing_kind is the kind of the file system holding the overlay's upperdir (else
its first lowerdir), when that directory exists here and its mount is not the overlay
itself; inside a container it usually is not visible, and backing_kind is null with the
reason. `disks` are then the backing file system's disks.

A stat or realpath that does not answer within `timeout` (a dead NFS server) is
abandoned; the mount is then looked up by the path as given, without resolving symlinks,
and the answer is marked uncertain.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from envcheck.collectors.base import CollectContext, read_text
from envcheck.collectors.storage import bounded, mounts
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
from envcheck.collectors.storage.mounts import Mount, find_mount

MAX_DEPTH = 16
SECTOR = 512

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:(\\|/|$)")
_WSL_DRIVE_MOUNT = re.compile(r"^/mnt/[A-Za-z](/|$)")


def probe(ctx: CollectContext, timeout: float) -> dict[str, Any]:
    """The storage section for ctx.data, read from /proc and /sys."""
    return _Linux(ctx, timeout).facts()


@dataclass
class _Answer:
    kind: str
    device: Optional[str] = None
    disks: Optional[list[Disk]] = None
    backing_kind: Optional[str] = None


class _Linux:
    """One Linux storage probe; reasons, notes and certainty gather across the recursion."""

    def __init__(self, ctx: CollectContext, timeout: float):
        self.ctx = ctx
        self.timeout = timeout
        self.reasons: Reasons = {}
        self.notes: list[str] = []
        self.certain = True
        self.mounts: list[Mount] = []
        self.osrelease = (read_text(ctx.proc_root / "sys/kernel/osrelease") or "").lower()
        self.sys_real = os.path.realpath(ctx.sys_root)

    def facts(self) -> dict[str, Any]:
        assert self.ctx.data is not None
        given = str(self.ctx.data)
        facts = blank_facts(given, "linux-sysfs")
        facts["reasons"] = self.reasons
        facts["notes"] = self.notes
        located = bounded.locate(self.ctx, facts, self.timeout)
        if located is None:
            return facts
        path, certain = located
        self.certain = self.certain and certain
        mountinfo = read_text(self.ctx.proc_root / "self/mountinfo")
        self.mounts = mounts.parse_mountinfo(mountinfo or "")
        mount = find_mount(self.mounts, path)
        if mount is None:
            where = self.ctx.proc_root / "self/mountinfo"
            why = f"no mount for {path} in {where}" if self.mounts else f"cannot read {where}"
            return mark_unknown(facts, why)
        facts.update(mount_point=mount.mount_point, fs_type=mount.fs_type, source=mount.source)
        answer = self.classify(mount, 0)
        facts.update(
            kind=answer.kind,
            device=answer.device,
            disks=answer.disks,
            backing_kind=answer.backing_kind,
        )
        if answer.kind == "unknown":
            specific = self.reasons.get("kind") or self.reasons.get("device")
            return mark_unknown(facts, specific or "the storage behind the mount could not be told")
        facts["certain"] = self.certain
        return facts

    # classification of one mount

    def classify(self, mount: Mount, depth: int) -> _Answer:
        fs = mount.fs_type
        kind = self._fs_kind(mount)
        if kind is not None:
            return _Answer(kind, disks=[])
        if fs == "overlay":
            return self._overlay(mount, depth)
        node = self._mount_node(mount)
        if node is None:
            self.reasons.setdefault(
                "device",
                f"no block device behind {fs} from {mount.source!r} "
                f"(device {mount.major}:{mount.minor} is not in {self.ctx.sys_root}/dev/block)",
            )
            return _Answer("unknown")
        disks: list[Disk] = []
        extra: list[str] = []
        self._walk(node, depth, set(), disks, extra)
        verdict = judge(disks, extra)
        self.notes.extend(n for n in verdict.notes if n not in self.notes)
        self.certain = self.certain and verdict.certain
        public = [public_disk(d) for d in disks]
        if verdict.kind is None:
            self.reasons.setdefault(
                "kind",
                "no disk behind "
                f"{node.name} could be classified (no rotational flag, no known bus)",
            )
            return _Answer("unknown", device=node.name, disks=public or None)
        return _Answer(verdict.kind, device=node.name, disks=public)

    def _fs_kind(self, mount: Mount) -> Optional[str]:
        """The kind told by the file system type alone (no disk behind it), else None."""
        fs = mount.fs_type
        if fs in MEMORY_FS:
            return "tmpfs"
        if self._is_drvfs(mount):
            return "drvfs"
        if fs in NETWORK_FS:
            return "network"
        if fs == "fuse" or fs.startswith("fuse."):
            return "fuse"
        return None

    def _is_drvfs(self, mount: Mount) -> bool:
        if mount.fs_type == "drvfs":
            return True
        if mount.fs_type != "9p" or "microsoft" not in self.osrelease:
            return False
        return bool(
            _WINDOWS_DRIVE.match(mount.source)
            or "aname=drvfs" in mount.super_options
            or _WSL_DRIVE_MOUNT.match(mount.mount_point)
        )

    def _overlay(self, mount: Mount, depth: int) -> _Answer:
        upper = mount.option("upperdir")
        lower = mount.option("lowerdir")
        backing_dir = upper or (lower.split(":")[0] if lower else None)
        answer = _Answer("overlay", disks=[])
        if not backing_dir:
            self.reasons["backing_kind"] = "the overlay mount names no upperdir or lowerdir"
            return answer
        which = "upper" if upper else "lower"
        backing = self._mount_of(backing_dir, "backing_kind", f"the overlay's {which} dir")
        if backing is None:
            return answer
        if backing.fs_type == "overlay" or backing.mount_id == mount.mount_id or depth >= 4:
            self.reasons["backing_kind"] = (
                f"the overlay's {which} dir {backing_dir} is not visible from here "
                "(inside a container the host's file system is not mounted)"
            )
            return answer
        inner = self.classify(backing, depth + 1)
        if inner.kind == "unknown":
            self.reasons.setdefault(
                "backing_kind", f"the storage under {backing_dir} could not be told"
            )
            return _Answer("overlay", disks=inner.disks)
        return _Answer("overlay", disks=inner.disks, backing_kind=inner.kind)

    def _mount_of(self, path: str, reason_key: str, what: str) -> Optional[Mount]:
        """The mount of a path named inside the namespace (a loop's file, an upper dir)."""
        try:
            real, _ = bounded.within(
                lambda: bounded.resolve(str(self.ctx.path(path))), self.timeout
            )
        except bounded.TimedOut:
            self.reasons.setdefault(
                reason_key, f"{what} {path} did not answer within {self.timeout:g} s"
            )
            return None
        except OSError as exc:
            self.reasons.setdefault(
                reason_key,
                f"{what} {path} is not visible from here ({bounded.os_reason(exc)}; inside a "
                "container the host's file system is not mounted)",
            )
            return None
        found = find_mount(self.mounts, bounded.in_namespace(self.ctx, real))
        if found is None:
            self.reasons.setdefault(reason_key, f"no mount holds {what} {path}")
        return found

    # block devices

    def _mount_node(self, mount: Mount) -> Optional[Path]:
        """The /sys folder of the mount's block device, by major:minor, else by source."""
        if mount.major:
            node = self._real_dir(self.ctx.sys_root / "dev/block" / f"{mount.major}:{mount.minor}")
            if node is not None:
                return node
        source = mount.source
        if not source.startswith("/dev/") or source == "/dev/root":
            return None
        if source.startswith("/dev/mapper/"):
            return self._dm_by_name(source[len("/dev/mapper/") :])
        name = os.path.basename(os.path.realpath(self.ctx.path(source)))
        return self._block_dir(name) or self._block_dir(os.path.basename(source))

    def _dm_by_name(self, dm_name: str) -> Optional[Path]:
        try:
            candidates = sorted((self.ctx.sys_root / "block").glob("dm-*"))
        except OSError:
            return None
        for candidate in candidates:
            if read_text(candidate / "dm/name") == dm_name:
                return self._real_dir(candidate)
        return None

    def _block_dir(self, name: str) -> Optional[Path]:
        for parent in ("class/block", "block"):
            node = self._real_dir(self.ctx.sys_root / parent / name)
            if node is not None:
                return node
        return None

    @staticmethod
    def _real_dir(link: Path) -> Optional[Path]:
        try:
            real = Path(os.path.realpath(link))
            return real if real.is_dir() else None
        except OSError:
            return None

    def _walk(
        self, node: Path, depth: int, seen: set[str], disks: list[Disk], extra: list[str]
    ) -> None:
        """Collect the physical disks under one block device's /sys folder."""
        name = node.name
        if name in seen:
            return
        if depth > MAX_DEPTH:
            self.reasons.setdefault("disks", f"device nesting deeper than {MAX_DEPTH} at {name}")
            return
        seen.add(name)
        if (node / "partition").is_file():
            self._walk(node.parent, depth + 1, seen, disks, extra)
            return
        slaves = _listdir(node / "slaves")
        if slaves:
            for slave in slaves:
                target = self._real_dir(node / "slaves" / slave) or self._block_dir(slave)
                if target is None:
                    self.reasons.setdefault("disks", f"{name}'s member {slave} is not in /sys")
                    continue
                self._walk(target, depth + 1, seen, disks, extra)
            return
        if name.startswith("loop"):
            self._loop(node, depth, seen, disks, extra)
            return
        disks.append(self._disk(node))

    def _loop(
        self, node: Path, depth: int, seen: set[str], disks: list[Disk], extra: list[str]
    ) -> None:
        backing = read_text(node / "loop/backing_file")
        if not backing:
            self.reasons.setdefault("disks", f"{node.name} has no readable loop/backing_file")
            return
        backing = backing.removesuffix(" (deleted)")
        mount = self._mount_of(backing, "disks", f"{node.name}'s backing file")
        if mount is None:
            return
        if self._fs_kind(mount) is not None or mount.fs_type == "overlay":
            answer = self.classify(mount, depth + 1)
            extra.append(answer.kind)
            disks.extend(d for d in answer.disks or [] if d["name"] not in seen)
            return
        inner = self._mount_node(mount)
        if inner is None:
            self.reasons.setdefault(
                "disks", f"{node.name}'s backing file {backing} is on no block device"
            )
            return
        self._walk(inner, depth + 1, seen, disks, extra)

    def _disk(self, node: Path) -> Disk:
        name = node.name
        disk: Disk = {
            "name": name,
            "rotational": _flag(read_text(node / "queue/rotational")),
            "transport": self._transport(node),
            "removable": _flag(read_text(node / "removable")),
            "model": read_text(node / "device/model") or read_text(node / "device/name") or None,
            "size_bytes": None,
            "_vendor": read_text(node / "device/vendor"),
        }
        sectors = _int(read_text(node / "size"))
        disk["size_bytes"] = None if sectors is None else sectors * SECTOR
        whys = {
            "rotational": "no queue/rotational",
            "transport": "the bus cannot be told from the /sys path",
            "removable": "no removable flag",
            "model": "no device/model",
            "size_bytes": "no size",
        }
        for key, why in whys.items():
            if disk[key] is None:
                self.reasons[f"disks.{name}.{key}"] = why
        return disk

    def _transport(self, node: Path) -> Optional[str]:
        name = node.name
        rel = "/" + os.path.relpath(node, self.sys_real).replace(os.sep, "/")
        if "/usb" in rel:
            return "usb"
        if name.startswith("nvme"):
            return "nvme"
        if name.startswith("vd"):
            return "virtio"
        if "/ata" in rel:
            return "sata"
        if name.startswith(("sd", "sr")) and ("/host" in rel or "/target" in rel):
            return "scsi"
        return None


def _listdir(folder: Path) -> list[str]:
    try:
        return sorted(entry.name for entry in folder.iterdir())
    except OSError:
        return []


def _flag(text: Optional[str]) -> Optional[bool]:
    return {"1": True, "0": False}.get(text or "")


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
