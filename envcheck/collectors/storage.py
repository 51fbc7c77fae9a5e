"""What kind of storage the dataset (`--data DIR`) sits on: HDD, SSD, NVMe, USB, a network
or FUSE file system, tmpfs, an overlay, or a Windows drive seen from WSL.

Linux (method "linux-sysfs"): the path is resolved (symlinks), its mount is the longest
mount-point prefix in /proc/self/mountinfo, and the mount's device (its major:minor
through /sys/dev/block, else a /dev/... source name) is followed through partitions,
device-mapper/LVM and md-RAID (`slaves/`) and loop devices (`loop/backing_file`, whose
file's own mount is then followed the same way) down to the physical disks, whose
`queue/rotational`, `removable`, `device/model`, `size` and bus (the resolved /sys path)
are read. Windows ("windows-powershell"): one PowerShell call (Get-Item, Get-PSDrive,
Get-Partition | Get-Disk, Get-PhysicalDisk) answers with JSON. macOS ("macos-diskutil"):
`mount` gives the file system type, `diskutil info -plist <mount point>` the disk.

Decisions:

- Paths are looked up in the namespace that `ctx.root` stands for: a path under an
  injected root (the tests' fake trees) is read as "/" plus its part below the root, so
  mount points, loop backing files and overlay upper dirs all live in that namespace.
  With the real root "/" this changes nothing.
- `--data` naming a file rather than a folder is not an error: the storage reported is
  the file's mount (the same answer the file's folder would give), with a note saying so.
- A path that does not exist or cannot be stat-ed gives kind "unknown" with the reason,
  and everything else null. A stat or realpath that does not answer within `timeout`
  (a dead NFS server) is abandoned in its daemon thread; the mount is then looked up by
  the path as given, without resolving symlinks, and the answer is marked uncertain.
- Kinds: any disk behind a USB bus is "usb" whatever it claims; then an NVMe transport
  is "nvme"; then rotational 1 is "hdd" and 0 "ssd". Several disks of different kinds
  give the slowest (usb, hdd < ssd < nvme) and certain false. A rotational flag read
  through a hardware RAID volume or a virtual disk (PERC, RAID, Virtual, QEMU, VMware,
  VBOX or virtio) says what the controller or hypervisor declares, so certain is false.
- Overlay: backing_kind is the kind of the file system holding the overlay's upperdir
  (else its first lowerdir), when that directory exists here and its mount is not the
  overlay itself; inside a container it usually is not visible, and backing_kind is null
  with the reason. `disks` are then the backing file system's disks.
- `fuseblk` (ntfs-3g, exfat-fuse) has a real block device: it is classified by its disk.
"""

from __future__ import annotations

import base64
import json
import ntpath
import os
import platform
import plistlib
import re
import stat
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, TypeVar

from envcheck import subprocess_runner
from envcheck.collectors.base import CollectContext, read_text

Runner = Callable[[Sequence[str], float], subprocess_runner.Completed]
Disk = dict[str, Any]
Reasons = dict[str, str]
T = TypeVar("T")

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
MAX_DEPTH = 16
SECTOR = 512

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:(\\|/|$)")
_WSL_DRIVE_MOUNT = re.compile(r"^/mnt/[A-Za-z](/|$)")
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


class _TimedOut(Exception):
    """A bounded filesystem call did not answer in time."""


def collect(
    ctx: CollectContext,
    run: Optional[Runner] = None,
    system: Optional[str] = None,
    timeout: float = 5.0,
) -> dict[str, Any]:
    """{"storage": facts} for ctx.data, {"storage": None} without --data. Never raises."""
    if ctx.data is None:
        return {"storage": None}
    runner: Runner = run or subprocess_runner.run
    system = system or platform.system()
    try:
        if system == "Windows":
            facts = _windows(ctx.data, runner, timeout)
        elif system == "Darwin":
            facts = _macos(ctx, runner, timeout)
        elif system == "Linux":
            facts = _Linux(ctx, timeout).facts()
        else:
            facts = _facts(str(ctx.data), None)
            facts["reasons"]["method"] = f"no storage probe for {system or 'this system'}"
            _unknown(facts, f"no storage probe for {system or 'this system'}")
    except Exception as exc:  # a bug here must not lose the section, nor the doctor
        facts = _facts(str(ctx.data), None)
        _unknown(facts, f"storage probe failed: {type(exc).__name__}: {exc}")
    return {"storage": facts}


# -- shared -------------------------------------------------------------------------


def _facts(path: str, method: Optional[str]) -> dict[str, Any]:
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


def _unknown(facts: dict[str, Any], why: str) -> dict[str, Any]:
    """Kind unknown for `why`; every field still null gets the same reason."""
    facts["kind"] = "unknown"
    facts["certain"] = False
    reasons: Reasons = facts["reasons"]
    reasons.setdefault("kind", why)
    for name in ("resolved", "mount_point", "fs_type", "source", "device", "disks"):
        if facts[name] is None:
            reasons.setdefault(name, why)
    return facts


def _bounded(func: Callable[[], T], timeout: float) -> T:
    """func() in a daemon thread; _TimedOut if it has not answered within `timeout` s."""
    box: list[tuple[bool, Any]] = []

    def body() -> None:
        try:
            box.append((True, func()))
        except BaseException as exc:  # raised in a thread it would be lost
            box.append((False, exc))

    thread = threading.Thread(target=body, name="envcheck-storage-stat", daemon=True)
    thread.start()
    thread.join(timeout)
    if not box:
        raise _TimedOut
    ok, value = box[0]
    if not ok:
        raise value
    result: T = value
    return result


def _resolve(path: str) -> tuple[str, bool]:
    """The path with symlinks resolved, and whether it is a folder; OSError if unreadable."""
    mode = os.stat(path).st_mode
    return os.path.realpath(path), stat.S_ISDIR(mode)


def _in_namespace(ctx: CollectContext, real: str) -> str:
    """A real path as seen in the namespace `ctx.root` stands for ("/" in production)."""
    root = os.path.realpath(ctx.root)
    if root == os.sep:
        return real
    rel = os.path.relpath(real, root)
    if rel == os.curdir:
        return "/"
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return real
    return "/" + rel.replace(os.sep, "/")


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _under(path: str, mount_point: str) -> bool:
    if mount_point == "/":
        return path.startswith("/")
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


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
class _Verdict:
    """The kind of a set of disks, and why it may be uncertain."""

    kind: Optional[str]
    certain: bool = True
    notes: list[str] = field(default_factory=list)


def _judge(disks: list[Disk], extra_kinds: Sequence[str] = ()) -> _Verdict:
    """The slowest kind among the disks (and non-disk backings); notes on uncertainty."""
    verdict = _Verdict(kind=None)
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
            verdict.notes.append(_virtual_note(disk, marker))
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


def _virtual_note(disk: Disk, marker: str) -> str:
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


def _public(disk: Disk) -> Disk:
    return {k: v for k, v in disk.items() if not k.startswith("_")}


# -- Linux --------------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """One line of /proc/self/mountinfo, unescaped."""

    mount_id: str
    major: int
    minor: int
    root: str
    mount_point: str
    options: str
    fs_type: str
    source: str
    super_options: str

    def option(self, name: str) -> Optional[str]:
        """The value of name=value in the super options (overlay's upperdir=...)."""
        for item in self.super_options.split(","):
            key, sep, value = item.partition("=")
            if sep and key == name:
                return value
        return None


def unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as \\040, \\011, \\012, \\134."""
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), text)


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        tail = right.split()
        if len(fields) < 6 or len(tail) < 2:
            continue
        major, _, minor = fields[2].partition(":")
        try:
            major_n, minor_n = int(major), int(minor)
        except ValueError:
            major_n, minor_n = 0, 0
        mounts.append(
            Mount(
                mount_id=fields[0],
                major=major_n,
                minor=minor_n,
                root=unescape(fields[3]),
                mount_point=unescape(fields[4]),
                options=fields[5],
                fs_type=tail[0],
                source=unescape(tail[1]),
                super_options=unescape(tail[2]) if len(tail) > 2 else "",
            )
        )
    return mounts


def find_mount(mounts: Sequence[Mount], path: str) -> Optional[Mount]:
    """The mount holding `path`: the longest mount point that is a prefix; the last
    mounted wins among equals (it hides the ones below it)."""
    best: Optional[Mount] = None
    for mount in mounts:
        if _under(path, mount.mount_point) and (
            best is None or len(mount.mount_point) >= len(best.mount_point)
        ):
            best = mount
    return best


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
        facts = _facts(given, "linux-sysfs")
        facts["reasons"] = self.reasons
        facts["notes"] = self.notes
        try:
            real, is_dir = _bounded(lambda: _resolve(given), self.timeout)
            path = _in_namespace(self.ctx, real)
            facts["resolved"] = path
            if not is_dir:
                self.notes.append(
                    "--data names a file, not a folder: the storage reported is the file's"
                )
        except _TimedOut:
            path = _in_namespace(self.ctx, os.path.abspath(given))
            why = (
                f"the path did not answer within {self.timeout:g} s (a hung network "
                "mount?); its mount is looked up by the path as given, symlinks unresolved"
            )
            self.reasons["resolved"] = why
            self.notes.append(why)
            self.certain = False
        except OSError as exc:
            exists = not isinstance(exc, FileNotFoundError)
            return _unknown(
                facts,
                f"cannot read {given}: {_why(exc)}" if exists else f"{given} does not exist",
            )
        mountinfo = read_text(self.ctx.proc_root / "self/mountinfo")
        self.mounts = parse_mountinfo(mountinfo or "")
        mount = find_mount(self.mounts, path)
        if mount is None:
            where = self.ctx.proc_root / "self/mountinfo"
            why = f"no mount for {path} in {where}" if self.mounts else f"cannot read {where}"
            return _unknown(facts, why)
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
            return _unknown(facts, specific or "the storage behind the mount could not be told")
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
        verdict = _judge(disks, extra)
        self.notes.extend(n for n in verdict.notes if n not in self.notes)
        self.certain = self.certain and verdict.certain
        public = [_public(d) for d in disks]
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
            real, _ = _bounded(lambda: _resolve(str(self.ctx.path(path))), self.timeout)
        except _TimedOut:
            self.reasons.setdefault(
                reason_key, f"{what} {path} did not answer within {self.timeout:g} s"
            )
            return None
        except OSError as exc:
            self.reasons.setdefault(
                reason_key,
                f"{what} {path} is not visible from here ({_why(exc)}; inside a "
                "container the host's file system is not mounted)",
            )
            return None
        found = find_mount(self.mounts, _in_namespace(self.ctx, real))
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


# -- Windows ------------------------------------------------------------------------

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
    return _WINDOWS_SCRIPT.replace("@PATH@", path.replace("'", "''"))


def _is_unc(path: str) -> bool:
    return path.startswith(("\\\\", "//"))


def _unc_share(path: str) -> str:
    parts = [p for p in re.split(r"[\\/]+", path) if p]
    return "\\\\" + "\\".join(parts[:2])


def _windows(data: Path, run: Runner, timeout: float) -> dict[str, Any]:
    given = str(data)
    facts = _facts(given, "windows-powershell")
    reasons: Reasons = facts["reasons"]
    if _is_unc(given):
        return _windows_network(facts, given, _unc_share(given))
    encoded = base64.b64encode(windows_script(given).encode("utf-16-le")).decode("ascii")
    completed, why = _run_first(
        [
            [shell, "-NoProfile", "-NonInteractive", "-EncodedCommand", encoded]
            for shell in POWERSHELLS
        ],
        run,
        timeout,
        "PowerShell",
    )
    if completed is None:
        return _unknown(facts, why)
    try:
        answer = json.loads(completed.stdout.strip() or "null")
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        detail = _first_line(completed.stderr) or _first_line(completed.stdout) or "no output"
        return _unknown(
            facts, f"PowerShell gave no storage answer (exit {completed.returncode}): {detail}"
        )
    resolved = answer.get("Resolved")
    if isinstance(resolved, str):
        facts["resolved"] = resolved
    if answer.get("IsFolder") is False:
        facts["notes"].append(
            "--data names a file, not a folder: the storage reported is the file's"
        )
    if facts["resolved"] is None:
        return _unknown(facts, str(answer.get("Error") or "Get-Item gave no path"))
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
        return _unknown(facts, str(answer.get("Error") or "Get-PhysicalDisk named no disk"))
    disks = [_windows_disk(d) for d in physical if isinstance(d, dict)]
    facts["disks"] = [_public(d) for d in disks]
    verdict = _judge(disks)
    for entry in disks:
        bus = str(entry.get("_bus") or "").lower()
        if bus in _WINDOWS_VIRTUAL_BUSES and disk_kind(entry) in ("hdd", "ssd"):
            verdict.certain = False
            verdict.notes.append(_virtual_note(entry, _WINDOWS_VIRTUAL_BUSES[bus]))
        if entry["rotational"] is None:
            reasons[f"disks.{entry['name']}.rotational"] = (
                f"MediaType is {entry.get('_media') or 'missing'}"
            )
    facts["notes"].extend(verdict.notes)
    if verdict.kind is None:
        return _unknown(facts, "Get-PhysicalDisk told neither the media type nor the bus")
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


def _run_first(
    commands: Sequence[Sequence[str]], run: Runner, timeout: float, what: str
) -> tuple[Optional[subprocess_runner.Completed], str]:
    """The first command that starts; (None, why) when none could, or it hung."""
    missing = []
    for argv in commands:
        try:
            return run(argv, timeout), ""
        except subprocess.TimeoutExpired:
            return None, f"{what} ({argv[0]}) did not answer within {timeout:g} s"
        except OSError as exc:
            missing.append(f"{argv[0]}: {_why(exc)}")
    return None, f"{what} could not be started ({'; '.join(missing)})"


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


# -- macOS --------------------------------------------------------------------------

_MAC_MOUNT_LINE = re.compile(r"^(?P<source>.+?) on (?P<point>.+) \((?P<options>[^()]*)\)$")
MAC_FUSE_FS = ("macfuse", "osxfuse", "fuse")
_MAC_NVME_PROTOCOLS = ("apple fabric", "pci-express", "pci", "nvme", "nvme express")


def parse_mac_mounts(text: str) -> list[Mount]:
    """`mount` on macOS: "/dev/disk3s1s1 on / (apfs, sealed, local, read-only)"."""
    mounts = []
    for index, line in enumerate(text.splitlines()):
        match = _MAC_MOUNT_LINE.match(line.strip())
        if not match:
            continue
        options = [o.strip() for o in match.group("options").split(",")]
        mounts.append(
            Mount(
                mount_id=str(index),
                major=0,
                minor=0,
                root="/",
                mount_point=match.group("point"),
                options=",".join(options[1:]),
                fs_type=options[0],
                source=match.group("source"),
                super_options="",
            )
        )
    return mounts


def _macos(ctx: CollectContext, run: Runner, timeout: float) -> dict[str, Any]:
    assert ctx.data is not None
    given = str(ctx.data)
    facts = _facts(given, "macos-diskutil")
    reasons: Reasons = facts["reasons"]
    certain = True
    try:
        real, is_dir = _bounded(lambda: _resolve(given), timeout)
        path = _in_namespace(ctx, real)
        facts["resolved"] = path
        if not is_dir:
            facts["notes"].append(
                "--data names a file, not a folder: the storage reported is the file's"
            )
    except _TimedOut:
        path = _in_namespace(ctx, os.path.abspath(given))
        why = (
            f"the path did not answer within {timeout:g} s (a hung network mount?); its "
            "mount is looked up by the path as given, symlinks unresolved"
        )
        reasons["resolved"] = why
        facts["notes"].append(why)
        certain = False
    except OSError as exc:
        missing = isinstance(exc, FileNotFoundError)
        return _unknown(
            facts, f"{given} does not exist" if missing else f"cannot read {given}: {_why(exc)}"
        )
    completed, why = _run_first([["/sbin/mount"], ["mount"]], run, timeout, "mount")
    if completed is None:
        return _unknown(facts, why)
    mount = find_mount(parse_mac_mounts(completed.stdout), path)
    if mount is None:
        return _unknown(facts, f"`mount` lists no file system holding {path}")
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
    completed, why = _run_first(
        [
            [tool, "info", "-plist", mount.mount_point]
            for tool in ("/usr/sbin/diskutil", "diskutil")
        ],
        run,
        timeout,
        "diskutil",
    )
    if completed is None:
        return _unknown(facts, why)
    try:
        info = plistlib.loads(completed.stdout.encode("utf-8"))
    except Exception:  # plistlib raises several types on bad input
        info = None
    if not isinstance(info, dict):
        detail = _first_line(completed.stdout) or _first_line(completed.stderr) or "no output"
        return _unknown(facts, f"diskutil gave no disk information: {detail}")
    disk = _mac_disk(info)
    facts["device"] = info.get("DeviceIdentifier")
    facts["disks"] = [_public(disk)]
    verdict = _judge([disk])
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
        return _unknown(facts, "diskutil told neither SolidState nor a known bus")
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
