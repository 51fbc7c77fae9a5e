"""A measured run and its proven fix, re-evaluated from saved facts (`doctor --facts`):
the rules read the recorded `run` and `fix` sections of a real `envcheck fix`
(tests/fixtures/measure/record.py), and every format carries them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from conftest import FIXTURES
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.schemas import load as load_schema

MEASURED = FIXTURES / "measure" / "torch-serial-fix.json"


def doctor(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["doctor", "--facts", str(MEASURED), *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.stdout


def test_json_report_has_run_and_fix_and_validates() -> None:
    _, out = doctor("--format", "json")
    report = json.loads(out)
    jsonschema.validate(report, load_schema("report"))
    assert report["run"]["loader"]["num_workers"] == 0
    assert report["fix"]["trials"][0]["decision"] == "keep"
    ids = [f["id"] for f in report["findings"]]
    assert ids[:2] == ["EC701", "EC704"] or ids[:2] == ["EC704", "EC701"]
    ec701 = next(f for f in report["findings"] if f["id"] == "EC701")
    assert ec701["impact"]["basis"] == "measured"  # the proven ratio, not the ceiling
    assert "proven on this run: num_workers=2:" in ec701["fix"]
    assert (
        sum(report["run"]["split"].values()) == 1.0
        or abs(sum(report["run"]["split"].values()) - 1.0) < 1e-9
    )


def test_text_report_shows_the_run_area() -> None:
    _, out = doctor()
    assert "Run  torch on CPU · 20 steps after 5 warm-up" in out
    assert "loader: DataLoader(num_workers=0" in out
    assert "num_workers=2: " in out and "-> keep" in out
    assert "patch: /tmp/envcheck-fix/fix.patch" in out


def test_machine_formats_carry_the_findings(tmp_path: Path) -> None:
    _, sarif = doctor("--format", "sarif")
    rules = {r["ruleId"] for r in json.loads(sarif)["runs"][0]["results"]}
    assert {"EC701", "EC704"} <= rules
    _, junit = doctor("--format", "junit")
    assert 'name="EC704 proven-speedup"' in junit or "EC704" in junit


def test_without_a_measured_run_the_run_area_stays_hidden() -> None:
    result = CliRunner().invoke(
        app, ["doctor", "--facts", str(FIXTURES / "linux-docker-keras-preprocessing-1.0.9.json")]
    )
    assert "[✓] Run" not in result.stdout and " Run  " not in result.stdout
