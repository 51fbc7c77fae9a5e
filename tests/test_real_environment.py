"""A real environment, built with pip: envcheck audits it through --python.

Creates a virtual environment, installs keras-preprocessing at an affected release
(1.0.9, no dependencies needed), runs the installed `envcheck doctor --python` as a
subprocess, then upgrades to 1.1.2 and runs it again. Needs the package index.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("audited") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    return root


def pip_install(venv: Path, requirement: str) -> None:
    result = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--disable-pip-version-check",
            requirement,
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def doctor(venv: Path) -> tuple[int, dict[str, Any]]:
    script = shutil.which("envcheck", path=str(Path(sys.executable).parent))
    assert script
    result = subprocess.run(
        [script, "doctor", "--python", str(venv / "bin" / "python"), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=venv.parent,
    )
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def expected_exit(report: dict[str, Any]) -> int:
    high = [
        f
        for f in report["findings"]
        if f["acknowledged"] is None and f["severity"] in ("high", "critical")
    ]
    return 1 if high else 0


def test_affected_release_is_found_and_the_upgrade_clears_it(venv: Path) -> None:
    pip_install(venv, "keras-preprocessing==1.0.9")
    code, report = doctor(venv)
    assert report["facts"]["packages"]["keras-preprocessing"] == "1.0.9"
    assert report["facts"]["interpreter"]["prefix"] == str(venv)
    ids = [f["id"] for f in report["findings"]]
    assert "EC101" in ids
    assert code == 1

    pip_install(venv, "keras-preprocessing==1.1.2")
    code, report = doctor(venv)
    assert report["facts"]["packages"]["keras-preprocessing"] == "1.1.2"
    assert "EC101" not in [f["id"] for f in report["findings"]]
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert statuses["EC101"] == "pass"
    assert code == expected_exit(report)
