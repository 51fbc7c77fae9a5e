"""`envcheck probe` and `doctor --probe` at the CLI edge: errors, defaults, re-evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.schemas import load as load_schema

RECORDED = Path(__file__).parents[1] / "fixtures" / "probe" / "cpu-torch-serial.json"


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


def test_no_framework_in_the_audited_interpreter_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the development environment has neither torch nor tensorflow
    import envcheck.probe.plan as plan

    monkeypatch.setattr(plan, "installed_frameworks", lambda facts: [])
    result = invoke("probe")
    assert result.exit_code == 2
    assert "no framework to probe with" in result.stderr
    assert "Traceback" not in result.output


def test_missing_data_folder_is_exit_2(tmp_path: Path) -> None:
    result = invoke("probe", "--data", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "--data" in result.stderr and "nope" in result.stderr


def test_bad_settings_are_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    import envcheck.probe.plan as plan

    monkeypatch.setattr(plan, "installed_frameworks", lambda facts: ["torch"])
    result = invoke("probe", "--device", "tpu")
    assert result.exit_code == 2 and "--device" in result.stderr
    result = invoke("probe", "--batch-size", "0")
    assert result.exit_code == 2 and "--batch-size" in result.stderr
    for bad in ("0", "5000"):
        result = invoke("probe", "--procs-per-node", bad)
        assert result.exit_code == 2, result.output
        assert (
            "--procs-per-node" in result.stderr and "out of range: from 1 to 1024" in result.stderr
        )
        assert len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.output


def test_probe_and_facts_exclude_each_other() -> None:
    result = invoke("doctor", "--facts", str(RECORDED), "--probe")
    assert result.exit_code == 2 and "--probe and --facts" in result.stderr


def test_a_saved_probe_report_re_evaluates_exactly() -> None:
    saved = json.loads(RECORDED.read_text())
    result = invoke("doctor", "--facts", str(RECORDED), "--format", "json", "--exit-zero")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    jsonschema.validate(report, load_schema("report"))
    assert report["probe"] == saved["probe"]
    before = {c["id"]: c["status"] for c in saved["checks"] if c["id"].startswith("EC6")}
    after = {c["id"]: c["status"] for c in report["checks"] if c["id"].startswith("EC6")}
    assert {k: after[k] for k in before} == before
    # recorded before the node view: the rule that needs it says unknown, not pass
    assert after["EC607"] == "unknown" and "EC607" not in before


def test_the_text_report_shows_the_measurements() -> None:
    result = invoke("doctor", "--facts", str(RECORDED), "--select", "EC6", "--exit-zero")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Probe  torch" in out and "on CPU" in out
    assert "compute ceiling" in out and "end to end" in out and "input pipeline" in out
    assert "cpu %" in out  # the utilisation timeline


def test_doctor_without_a_gpu_does_not_probe_by_default() -> None:
    result = invoke("doctor", "--format", "json", "--exit-zero", "--select", "EC6")
    report = json.loads(result.stdout)
    assert report["probe"] is None
    assert {c["status"] for c in report["checks"]} == {"skipped"}


NODE = RECORDED.with_name("cpu-torch-node.json")  # --procs-per-node 2 --concurrent, CPU


def test_a_saved_node_view_re_evaluates_exactly() -> None:
    saved = json.loads(NODE.read_text())
    result = invoke("doctor", "--facts", str(NODE), "--format", "json", "--exit-zero")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    jsonschema.validate(report, load_schema("report"))
    assert report["probe"]["node"] == saved["probe"]["node"]
    before = {c["id"]: c["status"] for c in saved["checks"] if c["id"].startswith("EC6")}
    after = {c["id"]: c["status"] for c in report["checks"] if c["id"].startswith("EC6")}
    assert after == before and after["EC607"] == "fail"
    [finding] = [f for f in report["findings"] if f["id"] == "EC607"]
    assert finding["message"] == saved["probe"]["node"]["summary"]


def test_the_text_report_shows_the_node_view() -> None:
    result = invoke("doctor", "--facts", str(NODE), "--select", "EC6", "--exit-zero")
    assert result.exit_code == 0, result.output
    node = json.loads(NODE.read_text())["probe"]["node"]
    out = result.stdout
    assert "node            2 process(es) on 2 cores (1 each, pinned; --procs-per-node)" in out
    assert node["summary"] in out
    assert "per process     0 workers" in out and "Lightning's rule: 1" in out
    assert "concurrent      2 pipelines x 0 workers at once: 99 + 83 = 182/s" in out
    assert node["supply_basis"] == "2 concurrent pipelines" and node["supply"] == 182.37
    assert "alternative     pre-resized (CPU)" in out
    assert "alternative     gpu-decode (GPU)     unavailable: no CUDA GPU visible to torch" in out
