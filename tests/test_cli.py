"""The command line through typer's CliRunner: exit codes, formats, selection, bad input."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import FIXTURES, cli_flags
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.cli.app import reflow
from envcheck.schemas import load as load_schema

KERAS_FIXTURE = FIXTURES / "linux-docker-keras-preprocessing-1.0.9.json"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(autouse=True)
def _no_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every CLI test from an empty folder, so no envcheck.toml is picked up."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)


def run(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def doctor_json(runner: CliRunner, *args: str) -> tuple[int, dict[str, Any]]:
    result = run(runner, "doctor", "--facts", str(KERAS_FIXTURE), "--format", "json", *args)
    return result.exit_code, json.loads(result.stdout)


def assert_one_line_error(result: Any, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert "Traceback" not in result.output
    assert len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err


# the happy paths ----------------------------------------------------------------------


def test_doctor_text_ranks_and_groups_by_area(runner: CliRunner) -> None:
    result = run(runner, "doctor", "--facts", str(KERAS_FIXTURE))
    assert result.exit_code == 1  # EC101 is high, the default --fail-on
    out = result.stdout
    assert "Fix first" in out
    assert " 1. high" in out and "EC101 keras-preprocessing 1.0.9" in out
    assert "pip install 'keras-preprocessing>=1.1.0'" in out
    assert "[✗] Packages" in out
    assert "[✓] Memory" in out
    assert "\x1b[" not in out  # not a terminal: no colour codes
    assert out.strip().splitlines()[-1].startswith("1 finding (1 high)")


def test_doctor_json_follows_the_contract(runner: CliRunner) -> None:
    code, report = doctor_json(runner)
    assert code == 1
    jsonschema.validate(report, load_schema("report"))
    jsonschema.validate(report["facts"], load_schema("snapshot"))
    [finding] = report["findings"]
    assert finding["rank"] == 1 and finding["id"] == "EC101"
    assert finding["evidence"]["facts"] == {"packages.keras-preprocessing": "1.0.9"}
    assert finding["evidence"]["links"][0].startswith("https://github.com/keras-team")
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert statuses["EC101"] == "fail"
    assert statuses["EC102"] == "pass"
    assert report["probe"] is None
    assert report["summary"]["worst_severity"] == "high"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ((), 1),
        (("--fail-on", "critical"), 0),
        (("--fail-on", "HIGH"), 1),
        (("--fail-on", "low"), 1),
        (("--exit-zero",), 0),
        (("--ignore", "EC101"), 0),
    ],
)
def test_exit_codes_follow_fail_on(runner: CliRunner, args: tuple[str, ...], code: int) -> None:
    assert doctor_json(runner, *args)[0] == code


def test_select_and_ignore_by_longest_prefix(runner: CliRunner) -> None:
    _, report = doctor_json(runner, "--select", "EC1", "--ignore", "EC10", "--select", "EC101")
    statuses = {c["id"]: c for c in report["checks"]}
    assert statuses["EC101"]["status"] == "fail"  # EC101 longer than EC10
    assert statuses["EC102"]["status"] == "skipped"
    assert statuses["EC102"]["reason"] == "ignored (EC10)"
    assert statuses["EC201"]["status"] == "skipped"
    assert statuses["EC201"]["reason"].startswith("not selected")


def test_collect_then_doctor_facts_is_the_same(runner: CliRunner, tmp_path: Path) -> None:
    snap = tmp_path / "facts.json"
    result = run(runner, "collect", "-o", str(snap))
    assert result.exit_code == 0, result.output
    data = json.loads(snap.read_text())
    jsonschema.validate(data, load_schema("snapshot"))
    first = run(runner, "doctor", "--facts", str(snap), "-f", "json", "--exit-zero")
    second = run(runner, "doctor", "--facts", str(snap), "-f", "json", "--exit-zero")
    checks = [json.loads(r.stdout)["checks"] for r in (first, second)]
    assert checks[0] == checks[1]
    assert json.loads(first.stdout)["facts"] == data


def test_doctor_accepts_a_saved_report_as_facts(runner: CliRunner, tmp_path: Path) -> None:
    saved = tmp_path / "report.json"
    run(runner, "doctor", "--facts", str(KERAS_FIXTURE), "-f", "json", "-o", str(saved))
    code, report = 0, None
    result = run(runner, "doctor", "--facts", str(saved), "-f", "json")
    code, report = result.exit_code, json.loads(result.stdout)
    assert code == 1 and report["findings"][0]["id"] == "EC101"


def test_output_file_for_text_has_no_colour(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "report.txt"
    result = run(runner, "doctor", "--facts", str(KERAS_FIXTURE), "-o", str(out))
    assert result.exit_code == 1
    assert result.stdout == ""
    text = out.read_text()
    assert "EC101" in text and "\x1b[" not in text


def test_rules_list_and_show(runner: CliRunner) -> None:
    listed = run(runner, "rules", "list")
    assert listed.exit_code == 0
    assert "EC101" in listed.stdout and "keras-preprocessing-filepaths-rebuild" in listed.stdout
    shown = run(runner, "rules", "show", "ec101")
    assert shown.exit_code == 0
    assert "Anti-pattern" in shown.stdout and "pull/193" in shown.stdout
    as_json = json.loads(run(runner, "rules", "list", "--format", "json").stdout)
    assert {r["id"] for r in as_json} >= {"EC101", "EC102", "EC103", "EC201"}


def test_version_and_help(runner: CliRunner) -> None:
    assert run(runner, "--version").stdout.startswith("envcheck ")
    for command in ("doctor", "collect"):
        helped = run(runner, command, "--help").stdout
        flags = cli_flags(command)
        assert "--python" in flags and "--data" in flags
        for flag in flags:
            assert flag in helped, (command, flag)


def test_help_keeps_bracketed_config_tables(runner: CliRunner) -> None:
    """Rich reads `[target]` as markup and drops it unless escaped: the help must still
    name the config tables it points at."""
    helped = " ".join(run(runner, "scripts", "--help").stdout.replace("│", " ").split())
    assert "--target or [target] in envcheck.toml" in helped
    assert "Default: [target] in envcheck.toml" in helped


@pytest.mark.parametrize(
    "command", ["doctor", "collect", "scripts", "probe", "run", "fix", "diff", "preflight"]
)
def test_help_paragraphs_wrap_at_the_terminal_width(runner: CliRunner, command: str) -> None:
    """A docstring's hard line breaks (written for 88-column source) must not survive into
    an 80-column help, where they break sentences in two: each paragraph is reflowed."""
    helped = runner.invoke(app, [command, "--help"], env={"COLUMNS": "80"}).stdout
    description = helped.split("╭")[0]  # the text above the option panels
    lines = [line.strip() for line in description.splitlines()]
    for line, after in itertools.pairwise(lines):
        if line and after and not after.startswith("- "):
            # a short line followed by more text in the same paragraph: a hard break
            assert len(line) >= 60, (command, line, after)


def test_reflow_keeps_paragraphs_and_list_items() -> None:
    text = "One line\n    and its rest.\n\n- item one\n- item two\n  continued"
    assert reflow(text) == "One line and its rest.\n\n- item one\n- item two continued"


# user rules and configuration ---------------------------------------------------------

POLICY = """
[[rule]]
id = "ORG001"
name = "cluster-requires-recent-torch"
severity = "high"
category = "packages"
summary = "Our cluster's images need torch 2.3 or newer"
message = "torch {packages.torch} is older than the cluster's minimum 2.3"
fix = "pip install 'torch>=2.3'"
evidence = ["internal: platform team policy"]
when = [{ package = "torch", version = "<2.3" }]
"""


def _snapshot_with(tmp_path: Path, **packages: str) -> Path:
    data = json.loads(KERAS_FIXTURE.read_text())
    data["packages"] = dict(packages)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    return path


def test_user_rule_folder_adds_policy(runner: CliRunner, tmp_path: Path) -> None:
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "cluster.toml").write_text(POLICY)
    snap = _snapshot_with(tmp_path, torch="2.1.0")
    result = run(runner, "doctor", "--facts", str(snap), "--rules", str(policy), "-f", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1
    assert [f["id"] for f in report["findings"]] == ["ORG001"]
    assert report["findings"][0]["message"] == "torch 2.1.0 is older than the cluster's minimum 2.3"
    snap_ok = _snapshot_with(tmp_path, torch="2.4.0")
    ok = run(runner, "doctor", "--facts", str(snap_ok), "--rules", str(policy), "-f", "json")
    assert ok.exit_code == 0


def test_config_file_acknowledges_and_selects(runner: CliRunner) -> None:
    Path("envcheck.toml").write_text(
        'ignore = ["EC2"]\nfail-on = "medium"\n'
        '[[acknowledge]]\nid = "EC101"\nreason = "legacy image, upgrade planned"\n'
    )
    code, report = doctor_json(runner)
    assert code == 0
    assert report["summary"]["findings"] == 0 and report["summary"]["acknowledged"] == 1
    assert report["findings"][0]["acknowledged"] == "legacy image, upgrade planned"
    assert report["summary"]["fail_on"] == "medium"
    assert {c["status"] for c in report["checks"] if c["id"].startswith("EC2")} == {"skipped"}


def test_pyproject_tool_section_is_read(runner: CliRunner) -> None:
    Path("pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.envcheck]\nignore = ["EC101"]\n'
    )
    code, report = doctor_json(runner)
    assert code == 0
    assert {c["id"]: c["status"] for c in report["checks"]}["EC101"] == "skipped"


# bad input: one line, exit 2, no traceback --------------------------------------------


def test_missing_facts_file(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, "doctor", "--facts", str(tmp_path / "nope.json"))
    assert_one_line_error(result, "nope.json", "no such file")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"hello": 1}', "no schema_version"),
        ('{"schema_version": 99}', "schema_version 99 is not supported"),
        ('{"schema_version": 1, "packages": {"torch": 2}}', "must be a version string"),
        ('{"schema_version": 1, "cpu": [1]}', "section 'cpu' must be an object"),
    ],
)
def test_malformed_facts(runner: CliRunner, tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert_one_line_error(run(runner, "doctor", "--facts", str(path)), "bad.json", needle)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("[[rule]\nid=", "malformed TOML"),
        (POLICY.replace('version = "<2.3"', 'version = "<<2.3"'), "invalid version specifier"),
        (POLICY.replace('severity = "high"', 'severity = "severe"'), "unknown severity"),
        (POLICY.replace('id = "ORG001"', 'id = "org-1"'), "rule id 'org-1'"),
        (POLICY + 'colour = "red"\n', "unexpected key(s) colour"),
        (POLICY.replace("fix = \"pip install 'torch>=2.3'\"\n", ""), "missing key(s) fix"),
        (POLICY.replace("package =", "pakage ="), "exactly one of package"),
        (POLICY.replace('id = "ORG001"', 'id = "EC101"'), "already defined"),
    ],
)
def test_malformed_rule_files(runner: CliRunner, tmp_path: Path, content: str, needle: str) -> None:
    rules = tmp_path / "bad_rules.toml"
    rules.write_text(content)
    result = run(runner, "doctor", "--facts", str(KERAS_FIXTURE), "--rules", str(rules))
    assert_one_line_error(result, needle)


def test_rules_folder_without_rules(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, "rules", "list", "--rules", str(tmp_path))
    assert_one_line_error(result, "no *.toml rule files")


def test_unknown_rule_id(runner: CliRunner) -> None:
    assert_one_line_error(run(runner, "rules", "show", "EC999"), "EC999")


def test_select_prefix_matching_nothing(runner: CliRunner) -> None:
    result = run(runner, "doctor", "--facts", str(KERAS_FIXTURE), "--select", "XY1")
    assert_one_line_error(result, "--select XY1")


def test_bad_fail_on(runner: CliRunner) -> None:
    result = run(runner, "doctor", "--facts", str(KERAS_FIXTURE), "--fail-on", "severe")
    assert_one_line_error(result, "--fail-on", "unknown severity")


def test_missing_python(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, "doctor", "--python", str(tmp_path / "bin" / "python9"))
    assert_one_line_error(result, "python9", "no such interpreter")


@pytest.mark.parametrize("flag", [("--python", "python3"), ("--deep",)])
def test_collecting_flags_with_facts(runner: CliRunner, flag: tuple[str, ...]) -> None:
    result = run(runner, "doctor", *flag, "--facts", str(KERAS_FIXTURE))
    assert_one_line_error(result, f"{flag[0]} and --facts exclude each other")


def test_unwritable_output(runner: CliRunner, tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "out.json"
    result = run(runner, "doctor", "--facts", str(KERAS_FIXTURE), "-f", "json", "-o", str(target))
    assert_one_line_error(result, "cannot write", "out.json")


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ('colour = "red"\n', "unknown envcheck setting(s) colour"),
        ('[[acknowledge]]\nid = "EC101"\n', "needs exactly an id and a reason"),
        ('[[acknowledge]]\nid = "EC999"\nreason = "x"\n', "acknowledge EC999: no such rule"),
        ('fail-on = "sometimes"\n', "fail-on"),
        ("select = [\n", "malformed TOML"),
    ],
)
def test_malformed_config(runner: CliRunner, config: str, needle: str) -> None:
    Path("envcheck.toml").write_text(config)
    result = run(runner, "doctor", "--facts", str(KERAS_FIXTURE))
    assert_one_line_error(result, "envcheck.toml", needle)


def test_internal_error_is_exit_3_without_traceback(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError("collector exploded")

    monkeypatch.setattr("envcheck.service.collect_snapshot", boom)
    result = run(runner, "collect")
    assert result.exit_code == 3
    assert "Traceback" not in result.output
    assert "internal error: RuntimeError: collector exploded" in result.stderr


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("doctor", "--format", "xml"), ("'xml' is not one of", "see envcheck doctor --help")),
        (("doctor", "--fromat", "json"), ("No such option", "--fromat", "--format")),
        (("doctor", "--data-budget", "0.1"), ("--data-budget", "0.1 is out of range: from 0.5")),
        (("doctor", "--target-rate", "0"), ("--target-rate", "at least 1")),
        (("doctor", "--probe-budget", "9999"), ("--probe-budget", "from 2 to 3600")),
        (("probe", "--budget", "1"), ("--budget", "from 2 to 3600", "envcheck probe --help")),
        (("run", "--watch", "0", "--", "true"), ("--watch", "at least 1")),
        (("diff",), ("Missing argument 'A'",)),
        (("rules", "show"), ("Missing argument 'RULE_ID'",)),
        (("nosuch",), ("No such command 'nosuch'",)),
    ],
)
def test_usage_errors_are_one_line(runner: CliRunner, args: tuple[str, ...], needles) -> None:
    """A bad flag or value is bad input like any other: one line on stderr, exit 2."""
    result = run(runner, *args)
    assert_one_line_error(result, "envcheck: error: ", *needles)
    assert result.stdout == ""


@pytest.mark.parametrize("args", [(), ("rules",)])
def test_a_bare_group_still_prints_its_help(runner: CliRunner, args: tuple[str, ...]) -> None:
    result = run(runner, *args)
    assert result.exit_code == 2
    assert "Usage: envcheck" in result.stdout and "Commands" in result.stdout
