"""The mount table: one record for a mounted file system, read from Linux's
/proc/self/mountinfo or macOS's `mount`, and the mount that holds a path."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")
_MAC_MOUNT_LINE = re.compile(r"^(?P<source>.+?) on (?P<point>.+) \((?P<options>[^()]*)\)$")


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
    """Linux's /proc/self/mountinfo; lines that are not mountinfo lines are skipped."""
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


def _under(path: str, mount_point: str) -> bool:
    if mount_point == "/":
        return path.startswith("/")
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")
