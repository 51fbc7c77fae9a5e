"""Recorded snapshots of real environments (tests/fixtures/), evaluated end to end.

linux-docker-torch-2.13-tensorflow-cpu-2.21.json: `envcheck collect --python` on a venv
with torch 2.13.0+cpu and tensorflow-cpu 2.21.0 (Keras 3.15), in a 2-CPU container.
linux-docker-keras-preprocessing-1.0.9.json: a venv with keras-preprocessing 1.0.9.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from conftest import FIXTURES

from envcheck.report import json_report
from envcheck.rulebook import builtin_registry
from envcheck.schemas import load as load_schema
from envcheck.service import diagnose
from envcheck.snapshot import Snapshot

FRAMEWORKS = FIXTURES / "linux-docker-torch-2.13-tensorflow-cpu-2.21.json"


def evaluate(data: dict[str, Any]) -> dict[str, Any]:
    report = diagnose(Snapshot.from_dict(data), builtin_registry())
    return json_report.to_dict(report)


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["checks"]}


def test_every_fixture_is_a_valid_snapshot() -> None:
    fixtures = sorted(FIXTURES.glob("*.json"))
    assert len(fixtures) >= 2
    for path in fixtures:
        jsonschema.validate(json.loads(path.read_text()), load_schema("snapshot"))


def test_a_healthy_framework_environment_has_no_findings() -> None:
    data = json.loads(FRAMEWORKS.read_text())
    assert data["modules"]["providers"]["tensorflow"] == ["tensorflow-cpu"]
    report = evaluate(data)
    assert report["findings"] == []
    jsonschema.validate(report, load_schema("report"))
    checked = statuses(report)
    assert checked["EC103"] == "pass"  # one TensorFlow provider
    assert checked["EC104"] == "pass"  # TF 2.21 with Keras 3 only
    assert checked["EC201"] == "pass"  # torch, but a large /dev/shm


def test_the_same_environment_in_a_default_docker_container() -> None:
    data = json.loads(FRAMEWORKS.read_text())
    data["memory"]["shm_bytes"] = 64 * 2**20  # docker run without --shm-size
    data["packages"]["keras-preprocessing"] = "1.1.2"  # an old requirements file
    report = evaluate(data)
    ids = [f["id"] for f in report["findings"]]
    assert ids == ["EC104", "EC201"]  # both medium, no figure: ties broken by id
    assert "TensorFlow 2.21.0 makes Keras 3 its tf.keras" in report["findings"][0]["message"]
