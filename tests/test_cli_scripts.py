"""`envcheck scripts`: the script audit alone, in the compiler-style lines editors and
pre-commit read; its exit codes, selection limits and bad input; the pre-commit hook
this repository ships, run for real by pre-commit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.schemas import load as load_schema

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "scripts_corpus"
NO_WORKERS = CORPUS / "torch_no_workers.py"  # DataLoader(dataset, batch_size=64, shuffle=True)
CLEAN_TF = CORPUS / "tf_pipeline_fixed.py"


@pytest.fixture(autouse=True)
def _no_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)


def scripts(*args: str) -> Any:
    return CliRunner().invoke(app, ["scripts", *args], catch_exceptions=False)


def test_each_finding_is_one_compiler_style_line_with_its_fix() -> None:
    result = scripts(str(NO_WORKERS))
    assert result.exit_code == 1  # EC501 is high, the default --fail-on
    lines = result.stdout.splitlines()
    ec501 = next(i for i, line in enumerate(lines) if " EC501 " in line)
    assert lines[ec501].startswith(f"{NO_WORKERS}:7:14: EC501 high num_workers not given")
    # the location is not repeated inside the message
    assert lines[ec501].count(f"{NO_WORKERS}:7") == 1
    assert lines[ec501 + 1].startswith("    fix: DataLoader(..., num_workers=")
    assert any(line.startswith(f"{NO_WORKERS}:7:14: EC502 low ") for line in lines)
    assert lines[-1] == "envcheck scripts: 2 findings in 1 file, 1 at or above high"


def test_a_clean_pipeline_passes() -> None:
    result = scripts(str(CLEAN_TF))
    assert result.exit_code == 0, result.stdout
    # Keras mixed precision depends on the training machine's GPUs: undecided without one
    assert result.stdout == (
        "envcheck scripts: 0 findings in 1 file, 1 rule undecided (EC522; --target "
        "SNAPSHOT.json judges them against the training machine)\n"
    )


def test_fail_on_and_exit_zero() -> None:
    assert scripts(str(NO_WORKERS), "--ignore", "EC501").exit_code == 0  # EC502 is low
    assert scripts(str(NO_WORKERS), "--ignore", "EC501", "--fail-on", "low").exit_code == 1
    assert scripts(str(NO_WORKERS), "--exit-zero").exit_code == 0


def test_only_script_rules_run_even_when_the_machine_has_findings() -> None:
    result = scripts(str(NO_WORKERS), "--format", "json")
    report = json.loads(result.stdout)
    jsonschema.validate(report, load_schema("report"))
    ran = {c["id"] for c in report["checks"] if c["status"] != "skipped"}
    assert ran and all(rule_id.startswith("EC5") for rule_id in ran)
    assert {f["id"] for f in report["findings"]} == {"EC501", "EC502"}


def test_sarif_output_locates_the_findings() -> None:
    result = scripts(str(NO_WORKERS), "--format", "sarif")
    sarif = json.loads(result.stdout)
    results = sarif["runs"][0]["results"]
    ec501 = next(r for r in results if r["ruleId"] == "EC501")
    region = ec501["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (7, 14)


def test_a_folder_is_searched_and_select_narrows_within_the_script_rules() -> None:
    result = scripts(str(CORPUS), "--select", "EC51", "--exit-zero")
    assert result.exit_code == 0
    found = {line.split()[1] for line in result.stdout.splitlines()[:-1] if ": EC" in line}
    assert found and all(rule_id.startswith("EC51") for rule_id in found)


def test_select_outside_the_script_rules_is_a_usage_error() -> None:
    result = scripts(str(NO_WORKERS), "--select", "EC3")
    assert result.exit_code == 2
    assert "only the script rules" in result.stderr and "EC3" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_no_paths_is_a_usage_error() -> None:
    result = scripts()
    assert result.exit_code == 2
    assert "at least one file or folder" in result.stderr


def test_a_file_that_does_not_parse_is_named_and_the_others_still_audited(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def main(:\n    pass\n", encoding="utf-8")
    result = scripts(str(broken), str(NO_WORKERS))
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert any(line.startswith(f"{broken}:1:") and ": error: " in line for line in lines)
    assert any(f"{NO_WORKERS}:7:14: EC501" in line for line in lines)
    assert "1 could not be audited" in lines[-1]
    assert "Traceback" not in result.output


def test_a_missing_path_is_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    result = scripts(str(missing))
    assert result.exit_code == 2
    assert f"{missing}: error: no such file or folder" in result.stdout


def test_the_config_files_ignore_applies(tmp_path: Path) -> None:
    config = tmp_path / "envcheck.toml"
    config.write_text('ignore = ["EC501"]\n', encoding="utf-8")
    result = scripts(str(NO_WORKERS), "--config", str(config))
    assert result.exit_code == 0, result.stdout
    assert " EC501 " not in result.stdout and " EC502 " in result.stdout


@pytest.mark.parametrize("command", [["rules", "list"], ["rules", "show", "EC501"]])
def test_rules_commands_refuse_report_formats(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--format", "html"])
    assert result.exit_code == 2
    assert "html" in result.output


def test_run_refuses_unknown_formats() -> None:
    """run's report (the doctor's when it blocks, the measured one with --measure) takes
    every report format; anything else is a usage error."""
    result = CliRunner().invoke(app, ["run", "--format", "yaml", "--", "true"])
    assert result.exit_code == 2


# -- the pre-commit hook ------------------------------------------------------------------


def test_the_hook_manifest_is_valid_for_pre_commit() -> None:
    clientlib = pytest.importorskip("pre_commit.clientlib")
    [hook] = clientlib.load_manifest(str(REPO / ".pre-commit-hooks.yaml"))
    assert hook["id"] == "envcheck-scripts"
    assert hook["entry"] == "envcheck scripts" and hook["types_or"] == ["python", "jupyter"]


@pytest.mark.slow
@pytest.mark.network
def test_pre_commit_runs_the_hook_on_a_project(tmp_path: Path) -> None:
    """pre-commit installs envcheck from this checkout into its own environment (from
    PyPI: envcheck's dependencies) and runs the hook on a project's staged files."""
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: pre-commit try-repo needs one")
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(NO_WORKERS, project / "train.py")
    shutil.copy(CLEAN_TF, project / "pipeline.py")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "envcheck tests",
        "GIT_AUTHOR_EMAIL": "tests@envcheck.invalid",
        "GIT_COMMITTER_NAME": "envcheck tests",
        "GIT_COMMITTER_EMAIL": "tests@envcheck.invalid",
    }
    subprocess.run(["git", "init", "-q"], cwd=project, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=project, check=True, env=env)
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "envcheck-scripts"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "envcheck training-script audit" in out and "Failed" in out
    assert "train.py:7:14: EC501 high" in out
    assert "pipeline.py" not in out  # the clean file has nothing to report
