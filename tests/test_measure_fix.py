"""`envcheck fix` on real PyTorch training on the CPU (slow: several short runs each).

Costs are sleeps (see test_measure_hook.py), so the truth holds on a busy machine: a
serial loader whose batches take longer than the model's step gains from two workers
(each worker sleeps while the other and the model run); a model that takes all the time
gains nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FW_PYTHON

from envcheck.measure.prove import FixRequest, prove_fixes

TORCH_TRAIN = Path(__file__).parent / "measure_programs" / "torch_train.py"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not FW_PYTHON.exists(), reason=f"no framework environment at {FW_PYTHON} (make frameworks)"
    ),
]


def test_fix_keeps_workers_for_a_serial_loader_and_writes_the_patch(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(TORCH_TRAIN.read_text(encoding="utf-8"), encoding="utf-8")
    command = [str(FW_PYTHON), str(script), "--load-ms", "60", "--compute-ms", "40"]
    result = prove_fixes(
        FixRequest(
            command=[*command, "--batches", "40"],
            steps=6,
            warmup=3,
            pairs=2,
            min_pairs=2,
            only=["num_workers=2"],
            cores=2,
            patch_path=tmp_path / "fix.patch",
        )
    )
    run, fix = result["run"], result["fix"]
    assert run["loader"]["num_workers"] == 0 and run["verdict"] == "highly-input-bound"
    (trial,) = fix["trials"]
    assert trial["change"] == "num_workers=2"
    assert trial["decision"] == "keep", trial
    assert trial["ratio"] > 1.3 and trial["interval"][0] > 1.0
    assert trial["pairs"] == 2 and trial["pairs_won"] == 2
    assert trial["loss"] == "identical"  # same shuffle order, same model: same losses
    patch_text = (tmp_path / "fix.patch").read_text(encoding="utf-8")
    assert fix["patch"] == str(tmp_path / "fix.patch")
    assert "+    loader = DataLoader(data, batch_size=a.batch, shuffle=True, num_workers=2)" in (
        patch_text
    )
    assert script.read_text(encoding="utf-8") == TORCH_TRAIN.read_text(encoding="utf-8")


def test_fix_says_no_proven_win_for_a_compute_bound_model(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "envcheck",
            "fix",
            "--steps",
            "6",
            "--pairs",
            "2",
            "--try",
            "num_workers=2",
            "--format",
            "json",
            "-o",
            str(report_path),
            "--",
            str(FW_PYTHON),
            str(TORCH_TRAIN),
            "--compute-ms",
            "60",
            "--batches",
            "40",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "envcheck fix: no proven win" in result.stderr
    assert "pair 2 of 2" in result.stderr  # the progress lines
    report = json.loads(report_path.read_text())
    (trial,) = report["fix"]["trials"]
    assert trial["decision"] != "keep", trial
    assert report["fix"]["patch"] is None
    assert report["run"]["verdict"] == "not-input-bound"
    checks = {c["id"]: c["status"] for c in report["checks"]}
    assert checks["EC704"] == "pass"
