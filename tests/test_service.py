"""The one pipeline: every entry point goes through envcheck.service, so the same input
behaves the same everywhere; the Report carries its rules' metadata; reporters come from
one table with one signature; the package's structure holds (engine apart from the
checks, no private names across modules)."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, TESTS
from typer.testing import CliRunner

import envcheck
from envcheck import hook, service
from envcheck.cli import app
from envcheck.errors import InputError
from envcheck.report import REPORTERS, OutputFormat, reporter

PACKAGE = Path(envcheck.__file__).parent
KERAS = FIXTURES / "linux-docker-keras-preprocessing-1.0.9.json"
NO_WORKERS = TESTS / "scripts_corpus" / "torch_no_workers.py"
USER_RULE = """
[[rule]]
id = "ORG101"
name = "keras-preprocessing-banned"
severity = "high"
category = "policy"
summary = "Our policy bans keras-preprocessing in training images"
message = "keras-preprocessing {packages.keras-preprocessing} is installed"
fix = "pip uninstall keras-preprocessing"
evidence = ["internal policy TRAIN-7"]
when = [{ package = "keras-preprocessing" }]
"""


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture()
def unknown_acknowledgement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "envcheck.toml").write_text(
        '[[acknowledge]]\nid = "EC999"\nreason = "a typo in the id"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["doctor", "--facts", str(KERAS)],
        ["scripts", str(NO_WORKERS)],
        ["probe", "--budget", "2"],
        ["run", "--", "true"],
    ],
    ids=["doctor", "scripts", "probe", "run"],
)
def test_an_unknown_acknowledged_rule_is_an_input_error_in_every_command(
    runner: CliRunner, unknown_acknowledgement: Path, args: list[str]
) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "acknowledge EC999: no such rule" in result.stderr
    assert result.stdout == ""  # refused before any work: no report, no command run


def test_preflight_refuses_it_too(unknown_acknowledgement: Path) -> None:
    with pytest.raises(InputError, match="acknowledge EC999: no such rule"):
        hook.preflight()


def test_doctor_script_and_scripts_agree_on_the_same_file(runner: CliRunner) -> None:
    """The script rules judge one file alike from `doctor --script` and `scripts`."""
    doctor = runner.invoke(
        app, ["doctor", "--script", str(NO_WORKERS), "--select", "EC5", "-f", "json", "--exit-zero"]
    )
    scripts = runner.invoke(app, ["scripts", str(NO_WORKERS), "-f", "json", "--exit-zero"])
    assert doctor.exit_code == 0 and scripts.exit_code == 0, doctor.output + scripts.output

    def found(output: str) -> list[tuple[str, Any]]:
        return [(f["id"], f["location"]) for f in json.loads(output)["findings"]]

    assert found(doctor.stdout) == found(scripts.stdout) != []


def test_the_report_carries_the_metadata_of_every_evaluated_rule(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text(USER_RULE, encoding="utf-8")
    result = service.audit(
        service.AuditRequest(facts_file=KERAS, rule_paths=(tmp_path / "policy.toml",))
    )
    rules = result.report.rules
    assert {c.id for c in result.report.checks} == set(rules)
    assert rules["EC101"].docs_ref == "envcheck rules show EC101"
    assert rules["EC101"].defined_in == "rules/ec1xx_packages.toml"
    assert rules["EC303"].defined_in.startswith("envcheck/checks/")
    user = rules["ORG101"]
    assert user.summary == "Our policy bans keras-preprocessing in training images"
    assert user.origin == user.docs_ref == str(tmp_path / "policy.toml")


def test_a_user_rules_summary_reaches_sarif(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text(USER_RULE, encoding="utf-8")
    result = runner.invoke(
        app,
        ["doctor", "--facts", str(KERAS), "--rules", str(tmp_path / "policy.toml"), "-f", "sarif"],
    )
    assert result.exit_code == 1, result.output
    [run] = json.loads(result.stdout)["runs"]
    [rule] = [r for r in run["tool"]["driver"]["rules"] if r["id"] == "ORG101"]
    assert rule["shortDescription"]["text"] == (
        "Our policy bans keras-preprocessing in training images"
    )
    assert str(tmp_path / "policy.toml") in rule["help"]["text"]
    assert any(r["ruleId"] == "ORG101" for r in run["results"])


def test_rules_show_names_where_a_rule_is_defined_and_its_cases(runner: CliRunner) -> None:
    python_rule = runner.invoke(app, ["rules", "show", "EC303"])
    assert "Defined in: envcheck/checks/" in python_rule.stdout
    assert f"Cases:      {TESTS / 'rule_cases' / 'EC303.toml'}" in python_rule.stdout
    toml_rule = runner.invoke(app, ["rules", "show", "EC101"])
    assert "Defined in: rules/ec1xx_packages.toml" in toml_rule.stdout


def test_rules_list_sees_the_config_files_rule_folders(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "org.toml").write_text(USER_RULE, encoding="utf-8")
    (tmp_path / "envcheck.toml").write_text('rules = ["policy/"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert "ORG101" in runner.invoke(app, ["rules", "list"]).stdout
    shown = runner.invoke(app, ["rules", "show", "ORG101"])
    assert shown.exit_code == 0 and "Defined in:" in shown.stdout and "org.toml" in shown.stdout


def test_every_format_has_a_reporter_with_the_same_signature() -> None:
    assert set(REPORTERS) == set(OutputFormat)
    signatures = {fmt: inspect.signature(reporter(fmt)) for fmt in OutputFormat}
    first = next(iter(signatures.values()))
    assert [p.name for p in first.parameters.values()] == ["report", "fail_on", "options"]
    for fmt, signature in signatures.items():
        assert signature == first, fmt


def test_a_scoped_command_keeps_the_configs_choices_within_its_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "envcheck.toml").write_text(
        'select = ["EC1", "EC501"]\nignore = ["EC502"]\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    plan = service.prepare(service.AuditRequest(scope="EC5", scripts=(NO_WORKERS,)))
    assert plan.selection.select == ("EC501",) and plan.selection.ignore == ("EC502",)


def test_a_bad_data_folder_stops_the_doctor_before_its_report(
    runner: CliRunner, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    result = runner.invoke(app, ["doctor", "--data", str(missing), "--select", "EC1"])
    assert result.exit_code == 2
    assert result.stdout == ""  # no report that reads as clean without the data
    assert f"--data {missing}" in result.stderr
    # collect and run stop before any work too
    collect = runner.invoke(app, ["collect", "--data", str(missing)])
    assert collect.exit_code == 2 and collect.stdout == ""


# structure ----------------------------------------------------------------------------


def _imports(path: Path) -> list[ast.ImportFrom]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]


def test_the_engine_does_not_import_the_checks() -> None:
    for path in sorted((PACKAGE / "engine").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                assert not name.startswith(("envcheck.checks", "envcheck.rulebook")), path


def test_no_private_name_is_imported_across_modules() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        for node in _imports(path):
            if not (node.module or "").startswith("envcheck"):
                continue
            offenders += [
                f"{relative}: {node.module}.{a.name}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
    assert offenders == []


def test_a_module_over_500_lines_says_why_in_its_docstring() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= 500:
            continue
        if "Size:" not in (ast.get_docstring(ast.parse(text)) or ""):
            unexplained.append(relative)
    assert unexplained == []
