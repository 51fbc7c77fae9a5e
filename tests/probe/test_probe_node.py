"""The node view for real, on this machine's CPU cores: N simulated training processes
(--procs-per-node), the per-process worker counts adding up within the cores, the node's
decode rate on all cores, N concurrent pipelines, and the measured alternatives. Timing
is not asserted; what must hold whatever the load is asserted."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from conftest import FW_PYTHON
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.probe.node import lightning_workers
from envcheck.probe.settings import usable_cores
from envcheck.schemas import load as load_schema

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not FW_PYTHON.exists(), reason=f"no framework environment at {FW_PYTHON} (make frameworks)"
    ),
]


def probe(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        app, ["probe", "--python", str(FW_PYTHON), "--format", "json", "--exit-zero", *args]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    jsonschema.validate(report, load_schema("report"))
    jsonschema.validate(report["facts"], load_schema("snapshot"))
    return report


def _check_node(p: dict[str, Any], processes: int) -> dict[str, Any]:
    cores = usable_cores()
    node = p["node"]
    assert node["processes"] == processes and node["processes_source"] == "--procs-per-node"
    assert node["usable_cores"] == cores
    assert node["cores_per_process"] == max(1, cores // processes)
    assert node["pinned"] is (cores // processes < cores)
    # demand and supply are measured, and the balance and sentence follow from them
    assert node["demand"] == pytest.approx(processes * p["rates"]["compute"], rel=0.01)
    assert node["supply"] > 0 and node["supply_workers"] == cores
    assert node["balance"] == pytest.approx(node["supply"] / node["demand"], rel=0.01)
    assert f"these {cores} cores decode" in node["summary"]
    # every worker count swept fits one process's share; the advice adds up within the node
    assert all(pt["workers"] <= cores // processes for pt in p["workers"]["sweep"])
    per_process = node["workers"]["per_process"]
    assert per_process is not None and per_process * processes <= cores
    assert p["workers"]["recommended"] == per_process
    assert node["workers"]["lightning"] == lightning_workers(cores, processes)
    return node


def test_two_processes_concurrent_pipelines_and_alternatives_with_torch() -> None:
    report = probe(
        "--framework", "torch", "--procs-per-node", "2", "--concurrent", "--tune-workers",
        "--image-size", "64", "--batch-size", "16", "--budget", "10",
    )  # fmt: skip
    p = report["probe"]
    assert p["status"] == "ok", p["failure"]
    node = _check_node(p, 2)
    concurrent = node["concurrent"]
    assert concurrent["status"] == "ok", concurrent
    assert len(concurrent["rates"]) == 2 and all(r > 0 for r in concurrent["rates"])
    assert concurrent["total"] == pytest.approx(sum(concurrent["rates"]), rel=0.01)
    assert concurrent["workers_per_process"] * 2 <= usable_cores()
    found = {a["name"]: a for a in p["alternatives"]}
    assert set(found) == {"pre-resized", "packed-shards", "gpu-decode", "dali"}
    resized = found["pre-resized"]
    assert resized["status"] == "measured" and resized["label"] == "CPU"
    assert resized["short_side"] == 73 and resized["rate"] > 0 and resized["baseline_rate"] > 0
    shards = found["packed-shards"]
    assert shards["status"] == "measured" and shards["files"] >= 8
    assert found["gpu-decode"]["status"] == "unavailable"  # CPU torch: no CUDA
    assert found["gpu-decode"]["label"] == found["dali"]["label"] == "GPU"
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["EC607"]["status"] in ("pass", "fail")  # decided, from measured numbers
    if checks["EC607"]["status"] == "fail":
        [finding] = [f for f in report["findings"] if f["id"] == "EC607"]
        assert finding["message"] == node["summary"]
        assert "(CPU, measured" in finding["fix"] and "(GPU, not measured" in finding["fix"]


def test_more_processes_than_cores_with_tensorflow() -> None:
    processes = usable_cores() * 2
    report = probe(
        "--framework", "tensorflow", "--procs-per-node", str(processes), "--tune-workers",
        "--image-size", "32", "--batch-size", "16", "--budget", "8",
    )  # fmt: skip
    p = report["probe"]
    assert p["status"] == "ok", p["failure"]
    node = _check_node(p, processes)
    assert node["cores_per_process"] == 1 and node["workers"]["cap_per_process"] == 0
    assert node["workers"]["per_process"] == 0  # no worker fits: each process loads inline
    assert {a["name"] for a in p["alternatives"]} >= {"pre-resized", "packed-shards"}
