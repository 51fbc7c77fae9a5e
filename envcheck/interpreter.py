"""The audited Python interpreter: this one, or another (`--python`) asked once for its sys.path.

envcheck is often installed apart from the environment it audits (pipx), so the target
interpreter is run exactly once, with a tiny script that imports nothing but the
standard library, to learn where its packages live. Everything else is read from disk.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envcheck import subprocess_runner
from envcheck.errors import InputError

# Runs inside the target interpreter: standard library only, and valid Python 2.7 too,
# so that even a legacy environment can be audited.
_PROBE_SCRIPT = r"""
import json, os, platform, sys
prefix = sys.prefix
base = getattr(sys, "base_prefix", getattr(sys, "real_prefix", prefix))
print(json.dumps({
    "executable": sys.executable,
    "version": platform.python_version(),
    "implementation": platform.python_implementation(),
    "sys_path": [p for p in sys.path if p],
    "prefix": prefix,
    "base_prefix": base,
    "conda": os.path.isdir(os.path.join(prefix, "conda-meta")),
}))
"""

TARGET_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Interpreter:
    executable: str
    version: str
    implementation: str
    sys_path: tuple[str, ...]
    prefix: str
    base_prefix: str
    conda: bool

    @property
    def in_venv(self) -> bool:
        return self.prefix != self.base_prefix

    def to_json(self) -> dict[str, Any]:
        return {
            "executable": self.executable,
            "version": self.version,
            "implementation": self.implementation,
            "prefix": self.prefix,
            "base_prefix": self.base_prefix,
            "venv": self.in_venv,
            "conda": self.conda,
            "sys_path": list(self.sys_path),
        }


def current() -> Interpreter:
    """The interpreter envcheck itself runs in."""
    return Interpreter(
        executable=sys.executable,
        version=platform.python_version(),
        implementation=platform.python_implementation(),
        sys_path=tuple(p for p in sys.path if p),
        prefix=sys.prefix,
        base_prefix=getattr(sys, "base_prefix", sys.prefix),
        conda=os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
    )


def resolve_executable(python: str) -> Path:
    """A path or a command name on PATH, as the user typed it after --python."""
    candidate = Path(python).expanduser()
    if candidate.is_dir():
        # a venv or conda env folder: accept it and find its interpreter
        for rel in ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe"):
            if (candidate / rel).exists():
                return candidate / rel
        raise InputError(f"--python {python}: a folder without bin/python in it")
    if candidate.exists():
        return candidate
    found = shutil.which(python)
    if found is None:
        raise InputError(f"--python {python}: no such interpreter (not a file, not on PATH)")
    return Path(found)


def target(python: str, timeout: float = TARGET_TIMEOUT_S) -> Interpreter:
    """Run the target interpreter once to learn its version and sys.path."""
    executable = resolve_executable(python)
    try:
        proc = subprocess_runner.run([str(executable), "-c", _PROBE_SCRIPT], timeout)
    except subprocess.TimeoutExpired:
        raise InputError(f"--python {python}: did not answer within {timeout:.0f} s") from None
    except OSError as exc:
        raise InputError(f"--python {python}: cannot run it ({exc.strerror or exc})") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"--python {python}: exited with code {proc.returncode}: {last}")
    try:
        info = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        info = None
    if not isinstance(info, dict):  # no JSON, or JSON that is not the probe's object
        raise InputError(f"--python {python}: is it a Python interpreter? (unreadable answer)")
    return _from_answer(info, executable)


def _from_answer(info: dict[str, Any], executable: Path) -> Interpreter:
    return Interpreter(
        executable=str(info.get("executable") or executable),
        version=str(info.get("version", "")),
        implementation=str(info.get("implementation", "")),
        sys_path=tuple(str(p) for p in info.get("sys_path", [])),
        prefix=str(info.get("prefix", "")),
        base_prefix=str(info.get("base_prefix", "")),
        conda=bool(info.get("conda", False)),
    )
