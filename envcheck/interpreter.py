"""The audited Python interpreter: this one, or another (`--python`) asked once for its sys.path.

envcheck is often installed apart from the environment it audits (pipx), so the target
interpreter is run exactly once, with a tiny script that imports nothing but the
standard library, to learn where its packages live. Everything else is read from disk.
The query is isolated (envcheck.isolated): nothing in the current folder can run, and
PYTHON* variables are ignored while it runs; the PYTHONPATH entries and the user
site-packages a normal start would add are reported by the script itself, so the audit
still sees every package the training would import.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from envcheck import isolated, jsonsafe, subprocess_runner
from envcheck.errors import InputError

# Runs inside the target interpreter: standard library only, and valid Python 2.7 too,
# so that even a legacy environment can be audited.
_PROBE_SCRIPT = r"""
import json, os, platform, sys
prefix = sys.prefix
base = getattr(sys, "base_prefix", getattr(sys, "real_prefix", prefix))

def user_site():
    # what site.py adds without -s: the user's site-packages, unless a venv hides it
    if os.environ.get("PYTHONNOUSERSITE"):
        return None
    if prefix != base:
        system = False
        try:
            for line in open(os.path.join(prefix, "pyvenv.cfg")):
                key, _, value = line.partition("=")
                if key.strip().lower() == "include-system-site-packages":
                    system = value.strip().lower() == "true"
        except (IOError, OSError):
            pass
        if not system:
            return None
    try:
        import site
        path = site.getusersitepackages()
    except Exception:
        return None
    return path if os.path.isdir(path) else None

paths = [p for p in sys.path if p]
# what -E hid: PYTHONPATH entries go first (relative ones would name the neutral folder)
extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
         if p and os.path.isabs(p) and p not in paths]
paths = extra + paths
user = user_site()
if user and user not in paths:
    at = [i for i, p in enumerate(paths) if p.endswith(("site-packages", "dist-packages"))]
    paths.insert(at[0] if at else len(paths), user)
print(json.dumps({
    "executable": sys.executable,
    "version": platform.python_version(),
    "implementation": platform.python_implementation(),
    "sys_path": paths,
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
    if not python.strip():
        raise InputError("--python: an empty value (an unset variable?)")
    candidate = Path(python).expanduser()
    if candidate.is_dir():
        # a venv or conda env folder: accept it and find its interpreter
        for rel in ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe"):
            if (candidate / rel).exists():
                return candidate / rel
        raise InputError(f"--python {python}: a folder without bin/python in it")
    bare = os.sep not in python and (os.altsep is None or os.altsep not in python)
    if candidate.exists() and not bare:
        return candidate
    # a bare name is a command, as in a shell: looked up on PATH, never in the current
    # folder (where an audited checkout could hold a file named python3)
    found = subprocess_runner.which(python)
    if found is None:
        raise InputError(f"--python {python}: no such interpreter (not a file, not on PATH)")
    return Path(found)


def target(python: str, timeout: float = TARGET_TIMEOUT_S) -> Interpreter:
    """Run the target interpreter once to learn its version and sys.path."""
    executable = resolve_executable(python)
    try:
        proc = isolated.run_python(
            str(executable), _PROBE_SCRIPT, timeout, flags=isolated.STDLIB_ONLY_FLAGS
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"--python {python}: did not answer within {timeout:.0f} s") from None
    except OSError as exc:
        raise InputError(f"--python {python}: cannot run it ({exc.strerror or exc})") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"--python {python}: exited with code {proc.returncode}: {last}")
    lines = proc.stdout.strip().splitlines()
    try:
        info = jsonsafe.loads(lines[-1]) if lines else None
    except ValueError:
        info = None
    answer = _from_answer(info, executable) if isinstance(info, dict) else None
    if answer is None:  # no JSON, or JSON that is not the probe's object
        raise InputError(f"--python {python}: is it a Python interpreter? (unreadable answer)")
    return answer


def _from_answer(info: dict[str, Any], executable: Path) -> Optional[Interpreter]:
    """The answer, or None when a field has the wrong type (not our script's answer)."""
    texts = ("executable", "version", "implementation", "prefix", "base_prefix")
    if any(not isinstance(info.get(key, ""), str) for key in texts):
        return None
    sys_path = info.get("sys_path", [])
    if not isinstance(sys_path, list) or not all(isinstance(p, str) for p in sys_path):
        return None
    return Interpreter(
        executable=info.get("executable") or str(executable),
        version=info.get("version", ""),
        implementation=info.get("implementation", ""),
        sys_path=tuple(sys_path),
        prefix=info.get("prefix", ""),
        base_prefix=info.get("base_prefix", ""),
        conda=info.get("conda") is True,
    )
