"""The built wheel carries rules/ and the schemas, and the installed package finds them.

Builds a real wheel (hatchling, no isolation), installs it into a separate folder with
`pip install --target`, and runs it from there: no editable install, no source tree on
sys.path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES

ROOT = Path(__file__).resolve().parent.parent
KERAS_FIXTURE = FIXTURES / "linux-docker-keras-preprocessing-1.0.9.json"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    [built] = out.glob("envcheck-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-compile",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    return target


def run_installed(installed: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed copy from a neutral folder, its own site first on sys.path."""
    env = {**os.environ, "PYTHONPATH": str(installed), "PYTHONNOUSERSITE": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=installed.parent, env=env, capture_output=True, text=True
    )


@pytest.mark.slow
def test_wheel_contains_rules_and_schemas(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for rules_file in (ROOT / "rules").glob("*.toml"):
        assert f"envcheck/rules/{rules_file.name}" in names
    assert "envcheck/schemas/report.schema.json" in names
    assert "envcheck/schemas/snapshot.schema.json" in names


@pytest.mark.slow
def test_installed_package_finds_its_rules(installed: Path) -> None:
    probe = run_installed(
        installed,
        "-c",
        "import envcheck, json; from envcheck.rulebook import builtin_rules_dir, "
        "builtin_registry; print(json.dumps([envcheck.__file__, str(builtin_rules_dir()), "
        "len(builtin_registry())]))",
    )
    assert probe.returncode == 0, probe.stderr
    module_file, rules_dir, count = json.loads(probe.stdout)
    assert Path(module_file).is_relative_to(installed)
    assert Path(rules_dir) == installed / "envcheck" / "rules"
    assert count >= 12


@pytest.mark.slow
def test_installed_package_runs_the_doctor(installed: Path) -> None:
    result = run_installed(
        installed, "-m", "envcheck", "doctor", "--facts", str(KERAS_FIXTURE), "-f", "json"
    )
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["findings"][0]["id"] == "EC101"


def test_console_script_and_module_entry_point() -> None:
    script = shutil.which("envcheck", path=str(Path(sys.executable).parent))
    assert script, "the envcheck console script is installed beside this interpreter"
    result = subprocess.run(
        [script, "doctor", "--facts", str(KERAS_FIXTURE), "--format", "json"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["findings"][0]["id"] == "EC101"
    bad = subprocess.run(
        [script, "doctor", "--facts", "/nonexistent.json"], capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == "envcheck: error: /nonexistent.json: no such file"
    version = subprocess.run(
        [sys.executable, "-m", "envcheck", "--version"], capture_output=True, text=True
    )
    assert version.returncode == 0 and version.stdout.startswith("envcheck ")
