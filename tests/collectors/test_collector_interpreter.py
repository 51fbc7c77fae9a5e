"""interpreter.target: runs another interpreter once; a missing or broken one is an InputError."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.errors import InputError
from envcheck.interpreter import current, target


def _script(folder: Path, body: str, name: str = "fake-python") -> Path:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def test_this_interpreter() -> None:
    found = target(sys.executable)
    here = current()
    assert found.version == platform.python_version()
    assert found.implementation == platform.python_implementation()
    assert os.path.realpath(found.executable) == os.path.realpath(sys.executable)
    assert found.prefix == sys.prefix
    assert found.base_prefix == here.base_prefix
    assert found.in_venv == here.in_venv
    assert found.conda == here.conda
    assert found.sys_path, "a real interpreter has a sys.path"
    assert "" not in found.sys_path
    # pytest and `python -m` add folders to this process's sys.path, so compare with a
    # fresh `python -c` run, and check that nothing outside this process's sys.path appears
    fresh = subprocess.run(
        [sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert list(found.sys_path) == [p for p in json.loads(fresh.stdout) if p]
    assert set(found.sys_path) <= set(here.sys_path)


def test_nonexistent_path(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "python"
    with pytest.raises(InputError, match="no such interpreter") as info:
        target(str(missing))
    assert str(missing) in str(info.value)


def test_command_name_not_on_path() -> None:
    with pytest.raises(InputError, match="envcheck-no-such-python-3"):
        target("envcheck-no-such-python-3")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("echo hi", "is it a Python interpreter"),
        ("true", "is it a Python interpreter"),  # no output at all
        ("echo 42", "is it a Python interpreter"),  # JSON, but not the probe's object
        ("echo '[1, 2]'", "is it a Python interpreter"),
        ('printf "\\377\\376\\n"', "is it a Python interpreter"),  # not UTF-8
        ("echo oops >&2; exit 3", "exited with code 3: oops"),
    ],
    ids=["echo", "silent", "json-number", "json-list", "binary", "fails"],
)
def test_not_python(tmp_path: Path, body: str, message: str) -> None:
    script = _script(tmp_path, body)
    with pytest.raises(InputError, match=message) as info:
        target(str(script))
    assert str(script) in str(info.value)


def test_not_executable(tmp_path: Path) -> None:
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\necho hi\n")
    path.chmod(0o644)
    with pytest.raises(InputError, match="cannot run it"):
        target(str(path))


def test_no_answer_in_time(tmp_path: Path) -> None:
    script = _script(tmp_path, "exec sleep 30")
    with pytest.raises(InputError, match="did not answer"):
        target(str(script), timeout=0.5)


def test_timeout_also_ends_grandchildren(tmp_path: Path) -> None:
    """A wrapper whose child holds the pipes open: the child is killed with it."""
    pidfile = tmp_path / "child.pid"
    # the child lets go of the pipes, so only a process-group kill can end it
    script = _script(tmp_path, f"sleep 300 >/dev/null 2>&1 &\necho $! > {pidfile}\nwait")
    with pytest.raises(InputError, match="did not answer"):
        target(str(script), timeout=1.0)
    child = int(pidfile.read_text())
    assert not _running(child)


def _running(pid: int) -> bool:
    """True while pid exists and is not a zombie (waits briefly for init to reap it)."""
    import time

    for _ in range(50):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except (FileNotFoundError, IndexError):
            return False
        if state == "Z":
            return False
        time.sleep(0.1)
    return True


def test_folder_without_python(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="without bin/python") as info:
        target(str(tmp_path))
    assert str(tmp_path) in str(info.value)


@pytest.mark.slow
def test_venv_folder_is_accepted(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    found = target(str(venv))
    assert found.version == platform.python_version()
    assert Path(found.prefix).resolve() == venv.resolve()
    assert found.in_venv
    assert Path(found.executable).parent.resolve() == (venv / "bin").resolve()
    assert any(Path(p).resolve().is_relative_to(venv.resolve()) for p in found.sys_path)
