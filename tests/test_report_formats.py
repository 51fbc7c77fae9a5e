"""Every report format through the real pipeline (CliRunner): text, json, sarif, junit
(html has its own tests, with a browser, in test_report_html.py).

Each output is compared with a golden file in tests/golden/ after normalising the
volatile fields (version, time, the paths of this checkout and interpreter); json is
validated against envcheck's own schema, sarif and junit against their official ones,
vendored in tests/schemas/ (no network at test time; provenance in tests/schemas/README.md).

Regenerate the golden files after an intended change:

    ENVCHECK_UPDATE_GOLDEN=1 pytest tests/test_report_formats.py
"""

from __future__ import annotations

import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import FIXTURES, TESTS
from lxml import etree as lxml_etree  # the dev extra: the XSD validator
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.schemas import load as load_schema

REPO = TESTS.parent
SCHEMAS = TESTS / "schemas"
GOLDEN = TESTS / "golden"
CORPUS = Path("tests") / "scripts_corpus"  # relative to the repo root, as users give it
KERAS = FIXTURES / "linux-docker-keras-preprocessing-1.0.9.json"
TORCH_TF = FIXTURES / "linux-docker-torch-2.13-tensorflow-cpu-2.21.json"
PROBE = FIXTURES / "probe" / "cpu-torch-serial.json"
# Committed corpus scripts with located findings of several rules; the golden run reads
# these with the machine facts of a recorded snapshot, so it is the same everywhere.
GOLDEN_SCRIPTS = (
    "torch_no_workers.py",
    "torch_module_level_spawn.py",
    "tf_serial_map_no_prefetch.py",
    "keras2_imagedatagenerator_fit_generator.py",
)
UPDATE = bool(os.environ.get("ENVCHECK_UPDATE_GOLDEN"))
LEVELS = {"critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}
ORDER = ["info", "low", "medium", "high", "critical"]
EC101_CASE = ".//testcase[@name='EC101 keras-preprocessing-filepaths-rebuild']"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative --script paths as a user gives them; the repo has no envcheck config."""
    monkeypatch.chdir(REPO)


@pytest.fixture(scope="module")
def sarif_validator() -> Any:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.fixture(scope="module")
def junit_schema() -> Any:
    return lxml_etree.XMLSchema(lxml_etree.parse(str(SCHEMAS / "junit-10.xsd")))


def invoke(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def doctor(runner: CliRunner, fmt: str, *args: str) -> tuple[int, str]:
    result = invoke(runner, "doctor", "--format", fmt, *args)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.stdout


@pytest.fixture(scope="module")
def scripts_facts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded machine (2 usable CPUs, no GPU facts) with the script audit of
    GOLDEN_SCRIPTS collected here: located findings that do not depend on this machine."""
    runner = CliRunner()
    folder = tmp_path_factory.mktemp("facts")
    collected = folder / "collected.json"
    cwd = Path.cwd()
    os.chdir(REPO)
    try:
        args = ["collect", "-o", str(collected)]
        for name in GOLDEN_SCRIPTS:
            args += ["--script", str(CORPUS / name)]
        result = runner.invoke(app, args, catch_exceptions=False)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    scripts = json.loads(collected.read_text(encoding="utf-8"))
    facts = json.loads(TORCH_TF.read_text(encoding="utf-8"))
    facts["scripts"] = scripts["scripts"]
    facts["collectors"]["scripts"] = {"status": "ok", "reason": None, "seconds": 0.0}
    merged = folder / "scripts-on-recorded-machine.json"
    merged.write_text(json.dumps(facts), encoding="utf-8")
    return merged


@pytest.fixture
def ack_config(tmp_path: Path) -> Path:
    config = tmp_path / "envcheck.toml"
    config.write_text(
        '[[acknowledge]]\nid = "EC101"\nreason = "pinned by the <legacy> image & its \\"Q3\\" '
        'rebuild"\n',
        encoding="utf-8",
    )
    return config


def cases(scripts_facts: Path, ack_config: Path) -> dict[str, list[str]]:
    return {
        "keras": ["--facts", str(KERAS)],
        "keras-acknowledged": ["--facts", str(KERAS), "--config", str(ack_config)],
        "torch-tf": ["--facts", str(TORCH_TF)],
        "probe-cpu-torch-serial": ["--facts", str(PROBE)],
        "scripts": ["--facts", str(scripts_facts), "--select", "EC5", "--fail-on", "medium"],
    }


CASE_NAMES = ["keras", "keras-acknowledged", "torch-tf", "probe-cpu-torch-serial", "scripts"]


# normalising and golden files ---------------------------------------------------------


def normalise(text: str) -> str:
    """Volatile values out: the version, the time, this checkout and interpreter."""
    text = re.sub(r'"version": "(?!2\.1\.0")[^"]*"', '"version": "VERSION"', text)
    text = re.sub(r'"created": "[^"]*"', '"created": "CREATED"', text)
    text = re.sub(r"^envcheck \d+\.\d+\.\d+\S* ", "envcheck VERSION ", text, flags=re.M)
    text = re.sub(r'(name="envcheck.version" value=)"[^"]*"', r'\1"VERSION"', text)
    text = re.sub(r'(name="created" value=)"[^"]*"', r'\1"CREATED"', text)
    for volatile, stand_in in (
        (sys.executable, "PYTHON"),
        (sys.prefix, "PREFIX"),
        (str(REPO), "REPO"),
        (REPO.as_uri(), "REPO_URI"),
    ):
        text = text.replace(volatile, stand_in)
    return text


def check_golden(name: str, content: str) -> None:
    path = GOLDEN / name
    normalised = normalise(content)
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"{path} is missing: run with ENVCHECK_UPDATE_GOLDEN=1 to write it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(normalised, encoding="utf-8")
        return
    assert normalised == path.read_text(encoding="utf-8"), (
        f"{name} differs from its golden file; if the change is intended, regenerate with "
        "ENVCHECK_UPDATE_GOLDEN=1 pytest tests/test_report_formats.py"
    )


# text and JSON ------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASE_NAMES)
def test_json_is_valid_and_matches_golden(
    runner: CliRunner, scripts_facts: Path, ack_config: Path, case: str
) -> None:
    _, out = doctor(runner, "json", *cases(scripts_facts, ack_config)[case])
    report = json.loads(out)
    jsonschema.validate(report, load_schema("report"))
    check_golden(f"{case}.json", out)


@pytest.mark.parametrize("case", CASE_NAMES)
def test_text_matches_golden(
    runner: CliRunner, scripts_facts: Path, ack_config: Path, case: str
) -> None:
    result = runner.invoke(
        app,
        ["doctor", "--format", "text", *cases(scripts_facts, ack_config)[case]],
        env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"},
        catch_exceptions=False,
    )
    assert result.exit_code in (0, 1), result.output
    check_golden(f"{case}.txt", result.stdout)


# SARIF --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASE_NAMES)
def test_sarif_is_valid_and_matches_golden(
    runner: CliRunner, sarif_validator: Any, scripts_facts: Path, ack_config: Path, case: str
) -> None:
    args = cases(scripts_facts, ack_config)[case]
    _, out = doctor(runner, "sarif", *args)
    log = json.loads(out)
    sarif_validator.validate(log)
    _, json_out = doctor(runner, "json", *args)
    assert_sarif_matches_report(log, json.loads(json_out))
    check_golden(f"{case}.sarif", out)


def assert_sarif_matches_report(log: dict[str, Any], report: dict[str, Any]) -> None:
    """Every evaluated rule described, one result per finding, in rank order."""
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "envcheck" and driver["version"] == report["tool"]["version"]
    evaluated = [c["id"] for c in report["checks"] if c["status"] != "skipped"]
    rule_ids = [r["id"] for r in driver["rules"]]
    assert set(evaluated) <= set(rule_ids)
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["help"]["text"].endswith(f"(see envcheck rules show {rule['id']})")
        assert rule["fullDescription"]["text"]  # the rule's documentation travels with it
    results = run["results"]
    assert len(results) == len(report["findings"])
    for result, finding in zip(results, report["findings"], strict=True):
        assert result["ruleId"] == finding["id"]
        assert rule_ids[result["ruleIndex"]] == finding["id"]
        assert result["level"] == LEVELS[finding["severity"]]
        assert result["message"]["text"] == f"{finding['message']} Fix: {finding['fix']}"
        props = result["properties"]
        assert props["severity"] == finding["severity"]
        assert props["impact"] == finding["impact"]
        assert props["evidence"] == finding["evidence"]
        location = finding["location"]
        if location is None:
            assert "locations" not in result
        else:
            (where,) = result["locations"]
            physical = where["physicalLocation"]
            assert physical["artifactLocation"]["uri"] == location["path"]
            assert physical["region"]["startLine"] == location["line"]
            ascii_line = location["code"] is not None and location["code"].isascii()
            column = location["column"] if ascii_line else None
            assert physical["region"].get("startColumn") == column
            assert physical["region"]["snippet"]["text"] == location["code"]
        if finding["acknowledged"]:
            assert result["suppressions"] == [
                {"kind": "external", "justification": finding["acknowledged"]}
            ]
        else:
            assert "suppressions" not in result


def test_sarif_of_the_whole_script_corpus_locates_every_finding(
    runner: CliRunner, sarif_validator: Any
) -> None:
    """This machine's facts with every corpus script: each result points into its file."""
    args = ["--script", str(CORPUS), "--select", "EC5", "--exit-zero"]
    _, out = doctor(runner, "sarif", *args)
    log = json.loads(out)
    sarif_validator.validate(log)
    results = log["runs"][0]["results"]
    assert results, "the corpus has located findings"
    for result in results:
        physical = result["locations"][0]["physicalLocation"]
        uri = physical["artifactLocation"]["uri"]
        assert uri.startswith("tests/scripts_corpus/") and uri.endswith(".py")
        line = physical["region"]["startLine"]
        source = (REPO / uri).read_text(encoding="utf-8").splitlines()
        assert physical["region"]["snippet"]["text"] == source[line - 1].strip()
    _, json_out = doctor(runner, "json", *args)
    assert_sarif_matches_report(log, json.loads(json_out))


# JUnit --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASE_NAMES)
def test_junit_is_valid_and_matches_golden(
    runner: CliRunner, junit_schema: Any, scripts_facts: Path, ack_config: Path, case: str
) -> None:
    args = cases(scripts_facts, ack_config)[case]
    _, out = doctor(runner, "junit", *args)
    document = lxml_etree.fromstring(out.encode("utf-8"))
    junit_schema.assertValid(document)
    _, json_out = doctor(runner, "json", *args)
    assert_junit_matches_report(out, json.loads(json_out))
    check_golden(f"{case}.xml", out)


def assert_junit_matches_report(xml: str, report: dict[str, Any]) -> None:
    """One case per check; failures exactly for the findings at or above --fail-on."""
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "envcheck"
    cases_ = suite.findall("testcase")
    checks = report["checks"]
    assert len(cases_) == len(checks) == int(suite.get("tests", "")) == int(root.get("tests", ""))
    threshold = ORDER.index(report["summary"]["fail_on"])
    findings = {c["id"]: [f for f in report["findings"] if f["id"] == c["id"]] for c in checks}
    failed = skipped = 0
    for case, check in zip(cases_, checks, strict=True):
        assert case.get("classname") == f"envcheck.{check['category']}"
        assert case.get("name") == f"{check['id']} {check['name']}"
        gating = [
            f
            for f in findings[check["id"]]
            if not f["acknowledged"] and ORDER.index(f["severity"]) >= threshold
        ]
        failures = case.findall("failure")
        assert sorted(f.get("type", "") for f in failures) == sorted(f["severity"] for f in gating)
        failed += bool(failures)
        rest = len(findings[check["id"]]) - len(gating)
        assert (case.find("system-out") is not None) == (rest > 0)
        if check["status"] == "unknown":
            assert case.find("skipped").get("message") == f"unknown: {check['reason']}"  # type: ignore[union-attr]
        if check["status"] in ("unknown", "skipped"):
            skipped += 1
            assert case.find("skipped") is not None
        else:
            assert case.find("skipped") is None
    assert int(suite.get("failures", "")) == failed == int(root.get("failures", ""))
    assert int(suite.get("skipped", "")) == skipped


def test_junit_failures_follow_fail_on(runner: CliRunner, junit_schema: Any) -> None:
    """EC101 (high) fails at --fail-on high and below, and is system-out above it."""
    for fail_on, fails in (("medium", True), ("high", True), ("critical", False)):
        _, out = doctor(runner, "junit", "--facts", str(KERAS), "--fail-on", fail_on)
        junit_schema.assertValid(lxml_etree.fromstring(out.encode("utf-8")))
        case = ET.fromstring(out).find(EC101_CASE)
        assert case is not None
        assert (case.find("failure") is not None) == fails
        assert (case.find("system-out") is not None) == (not fails)


def test_junit_escapes_markup_in_acknowledgements(
    runner: CliRunner, junit_schema: Any, ack_config: Path
) -> None:
    code, out = doctor(runner, "junit", "--facts", str(KERAS), "--config", str(ack_config))
    assert code == 0  # acknowledged: not counted for --fail-on
    junit_schema.assertValid(lxml_etree.fromstring(out.encode("utf-8")))
    case = ET.fromstring(out).find(EC101_CASE)
    assert case is not None and case.find("failure") is None
    text = case.findtext("system-out") or ""
    assert 'acknowledged: pinned by the <legacy> image & its "Q3" rebuild' in text


# exit codes and the command line ------------------------------------------------------


@pytest.mark.parametrize("fail_on", ["info", "medium", "high", "critical"])
def test_exit_code_does_not_depend_on_the_format(
    runner: CliRunner, scripts_facts: Path, ack_config: Path, fail_on: str
) -> None:
    for case, args in cases(scripts_facts, ack_config).items():
        args = [a for a in args if a != "--fail-on" and a != "medium"]
        codes = {
            fmt: invoke(runner, "doctor", "--format", fmt, "--fail-on", fail_on, *args).exit_code
            for fmt in ("text", "json", "sarif", "junit")
        }
        assert len(set(codes.values())) == 1, (case, codes)
        assert codes["text"] in (0, 1)


def test_output_file_and_help(runner: CliRunner, tmp_path: Path, sarif_validator: Any) -> None:
    target = tmp_path / "envcheck.sarif"
    result = invoke(runner, "doctor", "--facts", str(KERAS), "-f", "SARIF", "-o", str(target))
    assert result.exit_code == 1 and result.stdout == ""
    sarif_validator.validate(json.loads(target.read_text(encoding="utf-8")))
    help_text = invoke(runner, "doctor", "--help").stdout
    assert "sarif" in help_text and "junit" in help_text


def test_probe_command_accepts_both_formats() -> None:
    """`envcheck probe` goes through the same _emit_report; its choices include both."""
    from envcheck.report import OutputFormat

    assert {f.value for f in OutputFormat} >= {"text", "json", "sarif", "junit"}


# edge cases on a hand-made report -----------------------------------------------------


def _report(location: Any, message: str = "m") -> Any:
    from envcheck.model import CheckResult, Finding, RankedFinding, Report, Severity, Status

    finding = Finding(
        id="EC501",
        name="dataloader-without-workers",
        severity=Severity.HIGH,
        category="scripts",
        message=message,
        fix="f",
        docs="docs/rules.md#ec501",
        location=location,
    )
    check = CheckResult(
        "EC501", finding.name, "scripts", Severity.HIGH, Status.FAIL, "", (finding,)
    )
    return Report("0", "now", [RankedFinding(1, finding)], [check], {})


def test_sarif_locations_are_uris_and_columns_are_never_wrong(sarif_validator: Any) -> None:
    from envcheck.model import Location
    from envcheck.report import sarif

    spaced = Location("my scripts/train ü.py", 3, 14, "x = DataLoader(ds)")
    log = sarif.to_dict(_report(spaced))
    sarif_validator.validate(log)
    physical = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "my%20scripts/train%20%C3%BC.py"
    assert physical["region"] == {
        "startLine": 3,
        "startColumn": 14,
        "snippet": {"text": spaced.code},
    }
    # ast gives UTF-8 byte offsets: on a non-ASCII line the column is left out, not guessed
    accented = Location("train.py", 3, 20, "étiquettes = DataLoader(ds)")
    region = sarif.to_dict(_report(accented))["runs"][0]["results"][0]["locations"][0]
    assert "startColumn" not in region["physicalLocation"]["region"]
    absolute = sarif.to_dict(_report(Location("/srv/train.py", 1)))
    uri = absolute["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"] == "file:///srv/train.py"


def test_junit_drops_characters_xml_cannot_carry(junit_schema: Any) -> None:
    from envcheck.model import Location
    from envcheck.report import junit

    out = junit.render(_report(Location("a.py", 1, 1, "x\x00y"), message="bad \x1b[31m <&>"))
    junit_schema.assertValid(lxml_etree.fromstring(out.encode("utf-8")))
    failure = ET.fromstring(out).find(".//failure")
    assert failure is not None and failure.get("message") == "a.py:1:1: bad \ufffd[31m <&>"


def test_golden_inputs_name_no_path_of_this_checkout() -> None:
    """The normaliser stands in REPO/PREFIX for this checkout's paths; a recorded fixture
    holding them would make a golden file pass here and fail in a clone elsewhere."""
    for fixture in (KERAS, TORCH_TF, PROBE):
        text = fixture.read_text(encoding="utf-8")
        for volatile in (str(REPO), sys.prefix):
            assert volatile not in text, f"{fixture.name} names {volatile}: scrub it"
