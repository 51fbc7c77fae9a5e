"""Fake machines for the collector tests: a root, /sys, /proc and a home under tmp_path."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Mapping, Optional, Sequence

import pytest

from envcheck.collectors.base import CollectContext
from envcheck.interpreter import Interpreter, current


def write(path: Path, text: str = "") -> Path:
    """Write `text` to `path`, creating its folders; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@dataclasses.dataclass
class FakeMachine:
    """Empty fake filesystem roots; `ctx()` points a CollectContext at them."""

    base: Path

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def sys(self) -> Path:
        return self.base / "sys"

    @property
    def proc(self) -> Path:
        return self.base / "proc"

    @property
    def home(self) -> Path:
        return self.base / "home"

    def root_file(self, rel: str, text: str = "") -> Path:
        return write(self.root / rel.lstrip("/"), text)

    def sys_file(self, rel: str, text: str) -> Path:
        return write(self.sys / rel, text)

    def proc_file(self, rel: str, text: str) -> Path:
        return write(self.proc / rel, text)

    def home_file(self, rel: str, text: str) -> Path:
        return write(self.home / rel, text)

    def sys_link(self, rel: str, target: Path) -> Path:
        """A relative symlink at /sys/<rel> to `target` (a path under the fake tree)."""
        link = self.sys / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(target, link.parent))
        return link

    def block_device(
        self,
        name: str,
        devpath: Optional[str] = None,
        *,
        dev: Optional[str] = None,
        parent: Optional[Path] = None,
        rotational: Optional[int] = None,
        removable: Optional[int] = 0,
        model: Optional[str] = None,
        vendor: Optional[str] = None,
        sectors: Optional[int] = None,
        slaves: Sequence[str] = (),
        backing_file: Optional[str] = None,
    ) -> Path:
        """A block device's folder in the fake /sys, linked as the kernel links it.

        A whole disk lives at /sys/<devpath>/<name> (devpath as under /sys, such as
        "devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block") with
        /sys/block/<name>; a partition (parent=the disk's folder) lives inside its disk and
        has a `partition` file. Both get /sys/class/block/<name> and, with dev="MAJ:MIN",
        /sys/dev/block/MAJ:MIN. `slaves` name devices made before (dm, md); backing_file
        makes a loop device. Returns the device's folder.
        """
        if parent is not None:
            node = parent / name
            write(node / "partition", "1\n")
        else:
            node = self.sys / (devpath or "devices/virtual/block") / name
            node.mkdir(parents=True, exist_ok=True)
            self.sys_link(f"block/{name}", node)
        self.sys_link(f"class/block/{name}", node)
        if dev is not None:
            self.sys_link(f"dev/block/{dev}", node)
        files = {
            "queue/rotational": rotational,
            "removable": removable if parent is None else None,
            "device/model": model,
            "device/vendor": vendor,
            "size": sectors,
            "loop/backing_file": backing_file,
        }
        for rel, value in files.items():
            if value is not None:
                write(node / rel, f"{value}\n")
        for slave in slaves:
            target = Path(os.path.realpath(self.sys / "class/block" / slave))
            link = node / "slaves" / slave
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(target, link.parent))
        return node

    def ctx(
        self,
        environ: Optional[Mapping[str, str]] = None,
        interpreter: Optional[Interpreter] = None,
    ) -> CollectContext:
        return CollectContext(
            interpreter=interpreter or current(),
            environ=dict(environ or {}),
            root=self.root,
            sys_root=self.sys,
            proc_root=self.proc,
            home=self.home,
        )


@pytest.fixture
def machine(tmp_path: Path) -> FakeMachine:
    fake = FakeMachine(tmp_path / "machine")
    for folder in (fake.root, fake.sys, fake.proc, fake.home):
        folder.mkdir(parents=True)
    return fake
