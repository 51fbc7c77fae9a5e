"""The probe's child supervision: timeouts, crashes, failures, stray output, cleanup."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pytest

from envcheck.probe.runner import run_probe
from envcheck.probe.settings import ProbeSettings

FAKE_CHILD = Path(__file__).with_name("fake_child.py")


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _run(mode: str, tmp_path: Path, **settings: object):  # type: ignore[no-untyped-def]
    events: list[dict[str, object]] = []
    pidfile = tmp_path / "pids.json"
    run = run_probe(
        ProbeSettings(**settings),  # type: ignore[arg-type]
        Path(sys.executable),
        progress=events.append,
        command=[sys.executable, str(FAKE_CHILD), mode, str(pidfile)],
    )
    return run, events, pidfile


def test_a_finished_child_gives_every_phase(tmp_path: Path, private_tmp: Path) -> None:
    run, events, _ = _run("ok", tmp_path)
    assert run.status == "ok" and run.failure is None
    assert run.result["phases"]["compute"]["rate"] == 500.0
    assert run.result["phases"]["end_to_end"]["input_share"] == 0.8
    assert [e["event"] for e in events][:2] == ["phase", "part"]
    assert list(private_tmp.iterdir()) == []  # the temporary folder is gone


def test_stray_stdout_lines_are_ignored(tmp_path: Path) -> None:
    run, _, _ = _run("noisy", tmp_path)
    assert run.status == "ok"


def test_hard_timeout_kills_the_child_and_its_children(tmp_path: Path, private_tmp: Path) -> None:
    run, _, pidfile = _run("hang", tmp_path, timeout_s=3.0)
    assert run.status == "timeout"
    assert "hard timeout of 3 s" in run.failure["message"]  # type: ignore[index]
    assert run.result["phases"]["compute"]["rate"] == 500.0  # measured phases are kept
    grandchild = json.loads(pidfile.read_text())["child"]
    with pytest.raises(ProcessLookupError):
        for _ in range(50):  # reaped by init shortly after the group kill
            os.kill(grandchild, 0)
            time.sleep(0.1)
    assert list(private_tmp.iterdir()) == []


def test_a_crashed_child_is_reported_with_its_last_words(tmp_path: Path, private_tmp: Path) -> None:
    run, _, _ = _run("crash", tmp_path)
    assert run.status == "crashed"
    message = run.failure["message"]  # type: ignore[index]
    assert "killed by signal 9" in message and "Segmentation fault" in message
    assert run.result["phases"]["compute"]["rate"] == 500.0
    assert list(private_tmp.iterdir()) == []


def test_a_failure_the_child_reports_keeps_its_kind(tmp_path: Path) -> None:
    run, _, _ = _run("failed", tmp_path)
    assert run.status == "failed"
    assert run.failure == {"kind": "oom", "message": "out of memory even at batch size 1"}


def test_an_interpreter_that_cannot_start_is_a_failure(private_tmp: Path) -> None:
    run = run_probe(ProbeSettings(), Path("/nonexistent/python"))
    assert run.status == "failed" and run.failure["kind"] == "start"  # type: ignore[index]
    assert list(private_tmp.iterdir()) == []
