"""Realistic GPU machines (tests/fixtures/gpu/*.json), each with its expected findings.

The snapshots are built by tests/fixtures/gpu/build.py from scenarios.toml: the `gpu`
section is what envcheck's real gpu collector reports for the fake NVML's recorded device
data. The first test keeps the committed files and the collector in step; rebuild with
`python tests/fixtures/gpu/build.py` when the collector changes on purpose.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import FIXTURES

from envcheck.report import json_report
from envcheck.rulebook import builtin_registry
from envcheck.schemas import load as load_schema
from envcheck.service import diagnose
from envcheck.snapshot import Snapshot

GPU_FIXTURES = FIXTURES / "gpu"


def _builder() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_fixture_build", GPU_FIXTURES / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _builder()
SCENARIOS = {s["name"]: s for s in BUILD.scenarios()}


def test_at_least_five_scenarios_are_committed() -> None:
    assert len(SCENARIOS) >= 5
    for name in SCENARIOS:
        assert (GPU_FIXTURES / f"{name}.json").is_file(), f"run build.py: {name}.json missing"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fixture_is_what_the_collector_produces(name: str) -> None:
    committed = json.loads((GPU_FIXTURES / f"{name}.json").read_text())
    assert committed == BUILD.snapshot(SCENARIOS[name])


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fixture_has_exactly_the_expected_findings(name: str) -> None:
    data = json.loads((GPU_FIXTURES / f"{name}.json").read_text())
    jsonschema.validate(data, load_schema("snapshot"))
    report = json_report.to_dict(diagnose(Snapshot.from_dict(data), builtin_registry()))
    jsonschema.validate(report, load_schema("report"))
    found = sorted({f["id"] for f in report["findings"]})
    assert found == sorted(SCENARIOS[name]["expect"])
    for finding in report["findings"]:
        assert "<unknown>" not in finding["message"] + finding["fix"]


def test_messages_name_the_device_and_the_numbers() -> None:
    data = json.loads((GPU_FIXTURES / "datacenter-8x-a100-foreign-process.json").read_text())
    report = json_report.to_dict(diagnose(Snapshot.from_dict(data), builtin_registry()))
    messages = {f["id"]: f["message"] for f in report["findings"]}
    assert messages["EC311"].startswith("GPU 3 NVIDIA A100-SXM4-80GB: 1 other process(es) hold")
    assert messages["EC307"].startswith("GPU 5 NVIDIA A100-SXM4-80GB: clocks limited by")


def test_cli_reads_a_gpu_fixture(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from envcheck.cli import app

    fixture = GPU_FIXTURES / "old-driver-v100-cu121-torch.json"
    result = CliRunner().invoke(app, ["doctor", "--facts", str(fixture), "-f", "json"])
    assert result.exit_code == 1
    top = json.loads(result.stdout)["findings"][0]
    assert top["id"] == "EC303" and top["severity"] == "critical"
    assert "470.199.02" in top["message"]
