"""Saved snapshots with bad GPU data: wrong types are input errors, absences are unknown."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from envcheck.cli import app

DGX = FIXTURES / "gpu" / "datacenter-8x-a100-foreign-process.json"
BASE: dict[str, Any] = json.loads(DGX.read_text())


def doctor(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Any:
    data = copy.deepcopy(BASE)
    change(data)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    return CliRunner().invoke(app, ["doctor", "--facts", str(path), "-f", "json", "--exit-zero"])


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value

    return change


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        del node[last]

    return change


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        ("gpu.devices", "eight", "gpu.devices: 'eight' is not of type 'array'"),
        ("gpu.status", "maybe", "gpu.status: 'maybe' is not one of"),
        ("gpu.devices.3.processes.0.used_bytes", "lots", "used_bytes: 'lots' is not of type"),
        ("gpu.devices.0.compute_capability", 8.0, "compute_capability: 8.0 is not of type"),
        ("gpu.devices.0.pcie.gen", "4", "pcie.gen: '4' is not of type"),
        ("gpu.driver_version", 535, "driver_version: 535 is not of type"),
        ("frameworks.torch.cpu_only", "no", "cpu_only: 'no' is not of type"),
    ],
)
def test_wrong_types_are_input_errors(tmp_path: Path, path: str, value: Any, needle: str) -> None:
    result = doctor(tmp_path, _set(path, value))
    assert result.exit_code == 2
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("path", "rule", "reason"),
    [
        ("gpu.devices.5.clocks_event_reasons", "EC307", "clocks_event_reasons not recorded"),
        ("gpu.devices.0.persistence_mode", "EC309", "persistence_mode not recorded"),
        ("gpu.driver_version", "EC303", "driver version unknown"),
        ("frameworks", "EC301", "snapshot has no 'frameworks' facts"),
    ],
)
def test_absent_fields_are_unknown(tmp_path: Path, path: str, rule: str, reason: str) -> None:
    result = doctor(tmp_path, _delete(path))
    assert result.exit_code == 0, result.stderr
    check = next(c for c in json.loads(result.stdout)["checks"] if c["id"] == rule)
    assert check["status"] == "unknown"
    assert reason in check["reason"]


def test_unknown_clock_reason_names_are_tolerated(tmp_path: Path) -> None:
    names = ["unknown_0x200", "board_limit_from_a_newer_driver"]
    result = doctor(tmp_path, _set("gpu.devices.5.clocks_event_reasons", names))
    assert result.exit_code == 0
    check = next(c for c in json.loads(result.stdout)["checks"] if c["id"] == "EC307")
    assert check["status"] == "pass"


def test_an_implausible_number_of_gpus_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """50,000 devices took a minute to validate and judge; more than 1,024 is refused."""

    def many(data: dict[str, Any]) -> None:
        first = data["gpu"]["devices"][0]
        data["gpu"]["devices"] = [dict(first, index=i) for i in range(5000)]

    result = doctor(tmp_path, many)
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert err.splitlines() == [err] and "gpu.devices: 5,000 GPUs" in err
    assert "1,024" in err
