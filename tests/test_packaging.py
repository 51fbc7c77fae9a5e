"""The publishable package: the built wheel and sdist carry rules/ and the schemas, their
metadata is what PyPI shows (the distribution `envcheck-gpu`, command and import name
`envcheck`), the README renders, and the installed package finds its rules.

Builds a real wheel and sdist (hatchling, no isolation), checks them with `twine check`,
installs the wheel into a separate folder with `pip install --target`, and runs it from
there: no editable install, no source tree on sys.path.
"""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES

ROOT = Path(__file__).resolve().parent.parent
KERAS_FIXTURE = FIXTURES / "linux-docker-keras-preprocessing-1.0.9.json"


DISTRIBUTION = "envcheck-gpu"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--sdist",
            "--no-isolation",
            "--outdir",
            str(out),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    [built] = dist.glob("envcheck_gpu-*.whl")
    return built


@pytest.fixture(scope="module")
def sdist(dist: Path) -> Path:
    [built] = dist.glob("envcheck_gpu-*.tar.gz")
    return built


@pytest.mark.slow
def test_twine_check_passes_and_the_readme_renders(dist: Path) -> None:
    files = sorted(str(p) for p in dist.iterdir())
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2, result.stdout


@pytest.mark.slow
def test_wheel_metadata_names_the_distribution_and_keeps_frameworks_optional(
    wheel: Path,
) -> None:
    import envcheck

    archive = zipfile.ZipFile(wheel)
    [metadata_name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    metadata = email.message_from_bytes(archive.read(metadata_name))
    assert metadata["Name"] == DISTRIBUTION
    assert metadata["Version"] == envcheck.__version__
    assert metadata["Requires-Python"] == ">=3.10"
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert "pipx install envcheck-gpu" in (metadata.get_payload() or "")
    requires = metadata.get_all("Requires-Dist") or []
    for framework in ("torch", "tensorflow"):
        mandatory = [r for r in requires if r.startswith(framework) and "extra ==" not in r]
        assert mandatory == [], f"{framework} must stay an optional extra: {mandatory}"
    [entry_points] = [n for n in archive.namelist() if n.endswith("entry_points.txt")]
    assert "envcheck = envcheck.cli:main" in archive.read(entry_points).decode()
    assert any(n.endswith("licenses/LICENSE") for n in archive.namelist())


@pytest.mark.slow
def test_sdist_carries_the_sources_and_no_ignored_files(sdist: Path) -> None:
    with tarfile.open(sdist) as archive:
        names = [n.split("/", 1)[1] for n in archive.getnames() if "/" in n]
    for required in ("pyproject.toml", "README.md", "LICENSE", "envcheck/service.py"):
        assert required in names
    for rules_file in (ROOT / "rules").glob("*.toml"):
        assert f"rules/{rules_file.name}" in names
    assert not [n for n in names if n.startswith((".venv", "tests/real_scripts/files"))]


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
