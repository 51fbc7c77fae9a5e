"""Fake machines for the collector tests: a root, /sys, /proc and a home under tmp_path."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping, Optional

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
