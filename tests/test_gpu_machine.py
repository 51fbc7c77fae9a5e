"""envcheck on a real NVIDIA GPU: what the fakes stand in for everywhere else.

Marked `gpu` and skipped cleanly without a GPU and driver (see conftest.py). Run them on a
lent GPU machine with `bash benchmarks/gpu_session.sh`, which also records the snapshot,
the probe report and the NVML recording for fixtures.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakes import record_nvml
from typer.testing import CliRunner

from envcheck.cli import app

pytestmark = pytest.mark.gpu


def _json_of(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "out.json"
    result = CliRunner().invoke(app, [*args, "-o", str(out)], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def test_the_fake_replays_what_the_real_nvml_answered() -> None:
    import pynvml

    recording = record_nvml.record(pynvml)
    assert recording["gpu"]["status"] == "ok", recording["gpu"]["reason"]
    assert recording["fidelity"] == {"collector": [], "sampler": []}, recording["observed"]
    assert recording["unmodelled_functions"] == []


def test_collect_reads_every_device(tmp_path: Path) -> None:
    gpu = _json_of(tmp_path, "collect")["gpu"]
    assert gpu["status"] == "ok" and gpu["reason"] is None
    assert re.fullmatch(r"\d+\.\d+(\.\d+)*", gpu["driver_version"])
    assert re.fullmatch(r"\d+\.\d", gpu["cuda_driver_version"])
    assert gpu["devices"] and gpu["pci_nvidia_devices"] in (None, len(gpu["devices"]))
    for device in gpu["devices"]:
        assert device["name"].startswith("NVIDIA")
        assert device["memory_total_bytes"] > 2**30
        assert re.fullmatch(r"\d+\.\d", device["compute_capability"])
        assert device["pcie"]["max_width"] or "pcie" in device["reasons"]
        # every null has its reason
        for key, value in device.items():
            if value is None:
                assert key in device["reasons"], key


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_deep_check_sees_the_gpu_through_torch(tmp_path: Path) -> None:
    report = _json_of(tmp_path, "doctor", "--deep", "--format", "json")
    torch = report["facts"]["deep"]["torch"]
    assert torch["ok"] and torch["cuda_available"], torch
    assert torch["device_count"] >= 1 and torch["capabilities"]
    failed = {f["id"] for f in report["findings"]}
    assert not failed & {"EC301", "EC302", "EC303", "EC306", "EC314"}, report["findings"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_probe_measures_on_the_gpu(tmp_path: Path) -> None:
    report = _json_of(
        tmp_path, "probe", "--framework", "torch", "--budget", "10", "--format", "json"
    )
    probe = report["probe"]
    assert probe["status"] == "ok", probe["failure"]
    assert probe["device"] == "cuda"
    assert all(rate > 0 for rate in probe["rates"].values()), probe["rates"]
    assert probe["sampler"]["gpu_index"] == 0 and probe["sampler"]["overhead_core_share"] < 0.1
    assert any(point["gpu_util"] for point in probe["timeline"])
    assert probe["gpu_under_load"] and probe["gpu_under_load"]["max_width"], probe
