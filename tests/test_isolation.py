"""Security: nothing from the audited checkout runs while envcheck audits it (issue 12).

A module planted in the working folder (platform.py, json.py, sitecustomize.py) would run
if a foreign interpreter were started there with `-c`; each one here leaves a marker file
when imported, so a test that finds no marker shows the code did not run.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import FW_PYTHON

from envcheck import interpreter, isolated, subprocess_runner
from envcheck.deep import deep_check
from envcheck.probe import runner

PLANTED = ("platform", "json", "sitecustomize", "usercustomize", "site", "encodings")


def plant(folder: Path, marker_dir: Path) -> list[Path]:
    """A module per name that, when imported, writes a marker and then fails loudly."""
    markers = []
    for name in PLANTED:
        marker = marker_dir / f"ran-{name}"
        (folder / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'w').write('planted {name} ran')\n", encoding="utf-8"
        )
        markers.append(marker)
    return markers


@pytest.fixture
def hostile_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    markers = plant(checkout, tmp_path)
    monkeypatch.chdir(checkout)
    return markers


def test_the_interpreter_query_runs_nothing_from_the_working_folder(
    hostile_checkout: list[Path],
) -> None:
    answer = interpreter.target(sys.executable)
    assert answer.version == interpreter.current().version
    assert [m.name for m in hostile_checkout if m.exists()] == []
    assert os.getcwd() not in answer.sys_path  # the checkout is not an import location


def test_collect_with_python_runs_nothing_from_the_working_folder(
    hostile_checkout: list[Path],
) -> None:
    envcheck = Path(sys.executable).with_name("envcheck")
    proc = subprocess.run(
        [str(envcheck), "collect", "--python", sys.executable],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert [m.name for m in hostile_checkout if m.exists()] == []
    assert json.loads(proc.stdout)["interpreter"]["executable"]


def test_the_deep_check_runs_nothing_from_the_working_folder(
    hostile_checkout: list[Path],
) -> None:
    result = deep_check(sys.executable, {"torch": True, "tensorflow": True}, timeout=60)
    assert [m.name for m in hostile_checkout if m.exists()] == []
    # the child answered (with the framework or the reason it has none), it did not crash
    torch = result["deep"]["torch"]
    assert torch["ok"] is True or "torch" in (torch["error"] or "")


def test_isolation_keeps_the_packages_a_normal_start_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-E hides PYTHONPATH from the query itself; the answer still lists it, so the
    package audit covers what the training would import."""
    extra = tmp_path / "on-pythonpath"
    extra.mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(extra), "relative/ignored"]))
    answer = interpreter.target(sys.executable)
    assert answer.sys_path[0] == str(extra)
    assert not any(p.endswith("relative/ignored") for p in answer.sys_path)


def test_query_flags_and_neutral_folder() -> None:
    argv = isolated.python_argv("py", "print(1)", isolated.STDLIB_ONLY_FLAGS)
    assert argv[:4] == ["py", "-E", "-s", "-c"]
    assert argv[4].startswith(isolated.DROP_CWD)
    with isolated.neutral_folder() as folder:
        assert os.listdir(folder) == []
        held = folder
    assert not os.path.exists(held)


@pytest.mark.parametrize(
    "answer",
    [
        '{"sys_path": 5}',
        '{"sys_path": ["ok", 3]}',
        '{"version": ["3", "11"]}',
        '{"executable": {"a": 1}}',
        "[" * 100000 + "]" * 100000,
        '{"sys_path": [], "version": NaN}',
        "1" * 5000,
        '"just a string"',
    ],
)
def test_a_misbehaving_interpreter_answer_is_an_input_error(tmp_path: Path, answer: str) -> None:
    fake = tmp_path / "python"
    (tmp_path / "answer.txt").write_text(answer, encoding="utf-8")
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'answer.txt'}\n", encoding="utf-8")
    fake.chmod(0o755)
    with pytest.raises(interpreter.InputError, match="unreadable answer"):
        interpreter.target(str(fake))


def test_an_empty_python_is_an_input_error() -> None:
    with pytest.raises(interpreter.InputError):
        interpreter.resolve_executable("")


def test_the_timeout_holds_when_a_detached_grandchild_keeps_the_pipe(tmp_path: Path) -> None:
    """The grandchild leaves the process group (its own session), so the group kill does
    not reach it, and it still holds stdout: the caller must not wait for it."""
    pidfile = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            subprocess_runner.run([sys.executable, "-c", script], timeout=1.0)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(45)  # a hang guard, not a timing assertion: before the fix it never ended
    try:
        assert not worker.is_alive(), "subprocess_runner.run blocked on the grandchild's pipe"
        assert outcome and isinstance(outcome[0], subprocess.TimeoutExpired)
    finally:
        for _ in range(50):
            if pidfile.exists() and pidfile.read_text():
                break
            time.sleep(0.1)
        if pidfile.exists() and pidfile.read_text():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), 9)


def _child_view(python: str, workdir: Path) -> dict[str, object]:
    """What the probe child's boot line leaves on sys.path, run in `python`."""
    code = runner.stage_child_code(workdir)
    boot = runner.BOOT_PATH.format(code=str(code))
    show = (
        "import json, envcheck.probe.child.main as m; "
        "print(json.dumps({'sys_path': sys.path, 'main': m.__file__}))"
    )
    proc = subprocess.run(
        [python, "-c", boot + show],
        capture_output=True,
        text=True,
        cwd=str(workdir),
        env=runner.child_environment(workdir),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.skipif(not FW_PYTHON.exists(), reason=f"no framework environment at {FW_PYTHON}")
def test_the_probe_child_sees_the_audited_packages_and_its_own_code_only(tmp_path: Path) -> None:
    view = _child_view(str(FW_PYTHON), tmp_path)
    # The audited interpreter's own path, as it starts in a neutral folder (it may hold an
    # editable envcheck of its own, as the framework environment of `make test` does).
    audited = subprocess.run(
        [str(FW_PYTHON), "-c", "import json, sys; print(json.dumps(sys.path[1:]))"],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        env=runner.child_environment(tmp_path),
        timeout=120,
    )
    own = set(json.loads(audited.stdout))
    ours = {sys.prefix, str(Path(runner.CHILD_SOURCE).parents[2])}
    paths = [str(p) for p in view["sys_path"]]  # type: ignore[attr-defined]
    leaked = [p for p in paths[1:] if p not in own and any(p.startswith(o) for o in ours)]
    assert leaked == []
    assert not any(p.startswith(sys.prefix + "/") for p in paths if p not in own)
    assert str(view["main"]).startswith(str(tmp_path / "code"))
    assert view["sys_path"][0] == str(tmp_path / "code")  # type: ignore[index]
    assert "" not in view["sys_path"]  # type: ignore[operator]


def test_the_staged_child_code_is_framework_free_and_complete(tmp_path: Path) -> None:
    code = runner.stage_child_code(tmp_path)
    staged = sorted(p.name for p in (code / "envcheck/probe/child").glob("*.py"))
    assert staged == sorted(p.name for p in runner.CHILD_SOURCE.glob("*.py"))
    stub = (code / "envcheck/__init__.py").read_text(encoding="utf-8")
    assert "import" not in stub  # not envcheck's own package (it imports its dependencies)


def test_the_framework_temporary_files_go_into_the_work_folder(tmp_path: Path) -> None:
    env = runner.child_environment(tmp_path)
    for name in ("TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        assert env[name].startswith(str(tmp_path)), name


def _planted_program(folder: Path, name: str, marker: Path) -> None:
    program = folder / name
    program.write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
    program.chmod(0o755)


@pytest.mark.parametrize("entry", [".", ""])
def test_a_bare_program_name_is_never_taken_from_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    """With `.` or an empty entry in PATH, `ldconfig` or `python3` would run from the
    audited checkout; envcheck looks bare names up on PATH's absolute entries only."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    marker = tmp_path / "planted-ran"
    for name in ("ldconfig", "python3", "envcheck-no-such-tool"):
        _planted_program(checkout, name, marker)
    monkeypatch.chdir(checkout)
    monkeypatch.setenv("PATH", os.pathsep.join([entry, "/usr/bin", "/bin"]))
    with pytest.raises(FileNotFoundError):
        subprocess_runner.run(["envcheck-no-such-tool"], timeout=10)
    from envcheck.collectors import frameworks

    frameworks._system_libraries(os.environ, {})
    with pytest.raises(interpreter.InputError):
        interpreter.resolve_executable("envcheck-no-such-tool")
    assert not marker.exists()


def test_trusted_path_keeps_absolute_entries_only() -> None:
    joined = os.pathsep.join(["/usr/bin", "", ".", "bin", "/opt/x/bin"])
    assert subprocess_runner.trusted_path(joined) == os.pathsep.join(["/usr/bin", "/opt/x/bin"])


def test_a_venv_folder_in_the_working_folder_is_still_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--python .venv` names a folder on purpose: that stays allowed."""
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    monkeypatch.chdir(tmp_path)
    assert interpreter.resolve_executable(".venv") == Path(".venv/bin/python")
