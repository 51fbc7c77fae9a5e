"""The human report: areas, unavailable collectors, colour rules."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from conftest import FIXTURES

from envcheck.cli.common import emit_report
from envcheck.model import Severity
from envcheck.report import OutputFormat, text
from envcheck.rulebook import builtin_registry
from envcheck.service import diagnose
from envcheck.snapshot import Snapshot

KERAS_FIXTURE = FIXTURES / "linux-docker-keras-preprocessing-1.0.9.json"


def render(data: dict[str, Any]) -> str:
    report = diagnose(Snapshot.from_dict(data), builtin_registry())
    return text.render(report)


def fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(KERAS_FIXTURE.read_text())
    return data


def test_unavailable_collectors_are_visible_under_their_area() -> None:
    data = fixture()
    data["modules"] = None
    data["collectors"]["modules"] = {"status": "unavailable", "reason": "RECORD unreadable"}
    data["packages"]["torch"] = "2.3.1"  # so that EC201 needs the memory facts
    data["memory"] = None
    data["collectors"]["memory"] = {"status": "unavailable", "reason": "psutil failed"}
    out = render(data)
    assert "[✗] Memory  unavailable: psutil failed" in out
    assert "? modules facts unavailable: RECORD unreadable" in out
    assert "EC201 small-dev-shm: unknown — memory facts unavailable: psutil failed" in out


def test_ascii_fallback_when_the_encoding_cannot_show_symbols() -> None:
    report = diagnose(Snapshot.from_dict(fixture()), builtin_registry())
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    emit_report(report, OutputFormat.TEXT, None, Severity.HIGH, False, stream)
    out = raw.getvalue().decode("ascii")
    assert "[x] Packages" in out and "[+] Memory" in out


@pytest.mark.parametrize(("no_color", "coloured"), [(None, True), ("1", False)])
def test_no_color_is_honoured_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, no_color: str | None, coloured: bool
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # pretend stdout is a terminal
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    buffer = io.StringIO()
    report = diagnose(Snapshot.from_dict(fixture()), builtin_registry())
    emit_report(report, OutputFormat.TEXT, None, Severity.HIGH, False, buffer)
    out = buffer.getvalue()
    assert ("\x1b[31m" in out) is coloured  # red for the high finding


def test_a_snapshot_without_a_gpu_section_says_so() -> None:
    data = fixture()
    assert "gpu" not in data  # recorded before the GPU collector existed
    out = render(data)
    assert "GPU  not collected (the snapshot has no gpu section)" in out
    assert "None" not in out.split("GPU", 1)[1].splitlines()[0]
