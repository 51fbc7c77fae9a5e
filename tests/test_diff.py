"""`envcheck diff`: the pure diff on recorded snapshots and reports, the CLI's exit codes,
the JSON contract (envcheck/schemas/diff.schema.json) and a golden text output
(tests/golden/; regenerate after an intended change with ENVCHECK_UPDATE_GOLDEN=1)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import FIXTURES, cli_flags
from typer.testing import CliRunner

from envcheck import diff
from envcheck.cli import app
from envcheck.model import Severity
from envcheck.report import diff as diff_report
from envcheck.rulebook import builtin_registry
from envcheck.schemas import load as load_schema
from envcheck.service import diagnose
from envcheck.snapshot import Snapshot

GPU = FIXTURES / "gpu"
OLD_V100 = GPU / "old-driver-v100-cu121-torch.json"
A100_NODE = GPU / "datacenter-8x-a100-foreign-process.json"
MIXED = GPU / "mixed-rtx3090-a4000.json"
PROBE_REPORT = FIXTURES / "probe" / "cpu-torch-serial.json"
KERAS = FIXTURES / "linux-docker-keras-preprocessing-1.0.9.json"
TORCH_TF = FIXTURES / "linux-docker-torch-2.13-tensorflow-cpu-2.21.json"
GOLDEN = FIXTURES.parent / "golden" / "diff-old-driver-v100-vs-8x-a100.txt"
AREAS = (*diff.SPEED_AREAS, *diff.OTHER_AREAS)
REGISTRY = builtin_registry()


def evaluate(snapshot: Snapshot) -> Any:
    return [r.finding for r in diagnose(snapshot, REGISTRY).findings]


def side(path: Path) -> diff.Side:
    return diff.load_side(path, evaluate)


def compare(a: Path, b: Path) -> diff.Diff:
    return diff.compare(side(a), side(b))


def edited(path: Path, tmp_path: Path, name: str, edit: Any) -> Path:
    """A copy of a recorded fixture with one edit applied."""
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    out = tmp_path / name
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def keys(d: diff.Diff) -> list[str]:
    return [c.key for c in d.changes]


# the pure diff ------------------------------------------------------------------------


def test_same_file_has_no_differences() -> None:
    d = compare(OLD_V100, OLD_V100)
    assert d.empty and d.new_failures(Severity.INFO) == []
    assert "No differences." in diff_report.render_text(d, Severity.HIGH)


def test_driver_upgrade_on_a_copy_of_the_snapshot(tmp_path: Path) -> None:
    def upgrade(data: dict[str, Any]) -> None:
        data["gpu"]["driver_version"] = "550.54.14"
        data["gpu"]["cuda_driver_version"] = "12.4"

    newer = edited(OLD_V100, tmp_path, "upgraded.json", upgrade)
    d = compare(OLD_V100, newer)
    assert keys(d) == ["gpu.driver_version", "gpu.cuda_driver_version"]
    first = d.changes[0]
    assert (first.area, first.speed, first.a, first.b) == (
        "driver",
        True,
        "470.199.02",
        "550.54.14",
    )
    # the driver now supports torch's CUDA 12.1: EC303 is gone, nothing new
    assert [f.id for f in d.findings.removed] == ["EC303"]
    assert d.findings.added == () and d.new_failures(Severity.INFO) == []
    # and back again: EC303 (critical) is new in B
    back = compare(newer, OLD_V100)
    assert [f.id for f in back.new_failures(Severity.HIGH)] == ["EC303"]


def test_two_gpu_scenarios_speed_relevant_first() -> None:
    d = compare(OLD_V100, A100_NODE)
    areas = [c.area for c in d.changes]
    assert areas == sorted(areas, key=AREAS.index), "areas out of the documented order"
    assert areas[0] == "driver" and keys(d)[:2] == ["gpu.driver_version", "gpu.cuda_driver_version"]
    assert all(c.speed for c in d.speed_changes) and not any(c.speed for c in d.other_changes)
    by_key = {c.key: c for c in d.changes}
    assert (by_key["gpu.count"].a, by_key["gpu.count"].b) == (2, 8)
    assert by_key["gpu.models"].b == "8x NVIDIA A100-SXM4-80GB"
    # the two GPUs both sides have changed alike: one line, not one per GPU
    assert by_key["gpu.*.pcie.max"].a == "Gen3 x16" and by_key["gpu.*.pcie.max"].b == "Gen4 x16"
    assert by_key["gpu.*.pcie.max"].label.startswith("GPUs 0-1")
    assert by_key["packages.nvidia-cuda-runtime-cu12"].a is None  # added in B
    assert [f.id for f in d.findings.added] == ["EC307"]
    assert [f.id for f in d.findings.removed] == ["EC303", "EC310"]  # most severe first
    assert [f.id for f in d.new_failures(Severity.HIGH)] == ["EC307"]
    assert d.new_failures(Severity.CRITICAL) == []


def test_frameworks_cpu_memory_and_packages() -> None:
    d = compare(KERAS, TORCH_TF)
    assert [c.area for c in d.changes] == sorted((c.area for c in d.changes), key=AREAS.index)
    assert any(c.area == "packages" for c in d.changes)
    assert [f.id for f in d.findings.removed] == ["EC101"]


def test_one_gpu_of_two_fixed_pairs_the_duplicate_findings(tmp_path: Path) -> None:
    def persistence_on(data: dict[str, Any]) -> None:
        data["gpu"]["devices"][1]["persistence_mode"] = True

    fixed = edited(MIXED, tmp_path, "fixed.json", persistence_on)
    d = compare(MIXED, fixed)
    assert keys(d) == ["gpu.1.persistence_mode"]
    assert [(f.id, "GPU 1" in f.message) for f in d.findings.removed] == [("EC309", True)]
    assert d.findings.added == ()


def test_storage_cpu_and_probe_rates_with_ratio(tmp_path: Path) -> None:
    def slower(data: dict[str, Any]) -> None:
        facts = data["facts"]
        facts["cpu"]["usable"] = 1
        facts["cpu"]["governor"] = "powersave"
        facts["storage"] = {"path": "/data", "kind": "network", "fs_type": "nfs4"}
        data["probe"]["rates"]["end_to_end"] = halved
        data["probe"]["workers"]["recommended"] = 7
        facts["probe"] = data["probe"]

    before = json.loads(PROBE_REPORT.read_text(encoding="utf-8"))["probe"]["rates"]["end_to_end"]
    halved = round(before / 2, 2)
    b = edited(PROBE_REPORT, tmp_path, "slower.json", slower)
    d = compare(PROBE_REPORT, b)
    areas = [c.area for c in d.changes]
    assert areas == ["storage"] * 3 + ["cpu"] * 2 + ["probe"] * 2
    by_key = {c.key: c for c in d.changes}
    assert by_key["storage.kind"].b == "network"
    assert by_key["probe.rates.end_to_end"].ratio == pytest.approx(0.5, abs=0.01)
    assert by_key["probe.workers.recommended"].ratio is None
    text = diff_report.render_text(d, Severity.HIGH)
    assert f"{before:g} samples/s → {halved:g} samples/s  (0.5x)" in text
    # both are reports: the findings are the recorded ones, unchanged
    assert not (d.findings.added or d.findings.removed or d.findings.changed)


def test_report_and_its_own_snapshot_compare_alike(tmp_path: Path) -> None:
    report = json.loads(PROBE_REPORT.read_text(encoding="utf-8"))
    snapshot = tmp_path / "facts.json"
    snapshot.write_text(json.dumps(report["facts"]), encoding="utf-8")
    a, b = side(PROBE_REPORT), side(snapshot)
    assert (a.kind, a.findings_from, b.kind, b.findings_from) == (
        "report",
        "report",
        "snapshot",
        "evaluated",
    )
    d = diff.compare(a, b)
    assert d.empty, diff_report.render_text(d, Severity.HIGH)


def test_findings_match_by_id_and_location_and_severity_changes() -> None:
    def ref(id_: str, sev: str, loc: str | None = None, msg: str = "m") -> diff.FindingRef:
        return diff.FindingRef(id_, "a-rule", Severity(sev), msg, loc)

    a = [ref("EC501", "medium", "train.py:10"), ref("EC502", "high", "train.py:3")]
    b = [
        ref("EC501", "high", "train.py:10"),  # same place, more severe
        ref("EC501", "high", "train.py:40"),  # same rule elsewhere: new
        ref("EC502", "high", "train.py:3", msg="other words"),  # same: not a change
    ]
    f = diff.diff_findings(a, b)
    assert [(x.id, x.location) for x in f.added] == [("EC501", "train.py:40")]
    assert f.removed == ()
    assert [(c.a.severity.value, c.b.severity.value) for c in f.changed] == [("medium", "high")]
    d = diff.Diff(
        diff.Side("A", "snapshot", {}, tuple(a), "evaluated"),
        diff.Side("B", "snapshot", {}, tuple(b), "evaluated"),
        (),
        f,
    )
    assert len(d.new_failures(Severity.HIGH)) == 2  # the new one and the one that rose
    assert len(d.new_failures(Severity.CRITICAL)) == 0
    acked = dataclasses.replace(b[1], acknowledged=True)
    d2 = dataclasses.replace(d, findings=diff.diff_findings(a, [b[0], acked, b[2]]))
    assert len(d2.new_failures(Severity.HIGH)) == 1  # acknowledged ones do not count


# JSON contract ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (OLD_V100, A100_NODE),
        (MIXED, PROBE_REPORT),
        (PROBE_REPORT, GPU / "laptop-no-nvidia-driver.json"),
        (KERAS, KERAS),
        (GPU / "mig-partitioned-a100.json", GPU / "windows-native-tf215.json"),
    ],
)
def test_json_follows_the_schema(a: Path, b: Path) -> None:
    data = json.loads(diff_report.render_json(compare(a, b), Severity.HIGH))
    jsonschema.Draft202012Validator(load_schema("diff")).validate(data)
    areas = [c["area"] for c in data["changes"]]
    assert areas == sorted(areas, key=AREAS.index)
    speed = [c["speed"] for c in data["changes"]]
    assert speed == sorted(speed, reverse=True)  # every speed-relevant change first


def test_schema_is_a_valid_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(load_schema("diff"))


# golden text --------------------------------------------------------------------------


def golden_diff() -> Any:
    d = compare(OLD_V100, A100_NODE)
    return dataclasses.replace(
        d,
        a=dataclasses.replace(d.a, source="A.json"),
        b=dataclasses.replace(d.b, source="B.json"),
    )


def test_golden_text() -> None:
    text = diff_report.render_text(golden_diff(), Severity.HIGH)
    if os.environ.get("ENVCHECK_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8"), "ENVCHECK_UPDATE_GOLDEN=1 to refresh"


def test_golden_json() -> None:
    rendered = diff_report.render_json(golden_diff(), Severity.HIGH)
    text = re.sub(r'"(version|created)": "[^"]*"', r'"\1": "VOLATILE"', rendered)
    path = GOLDEN.with_suffix(".json")
    if os.environ.get("ENVCHECK_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), "ENVCHECK_UPDATE_GOLDEN=1 to refresh"


# the command line ---------------------------------------------------------------------


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def run(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(app, ["diff", *args], catch_exceptions=False)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ((str(OLD_V100), str(OLD_V100)), 0),
        ((str(OLD_V100), str(A100_NODE)), 1),  # EC307 (high) is new in B
        ((str(OLD_V100), str(A100_NODE), "--fail-on", "critical"), 0),
        ((str(OLD_V100), str(A100_NODE), "--exit-zero"), 0),
        ((str(A100_NODE), str(OLD_V100), "--fail-on", "CRITICAL"), 1),  # EC303 is new
        ((str(OLD_V100), str(A100_NODE), "--format", "json"), 1),
    ],
)
def test_exit_codes(runner: CliRunner, args: tuple[str, ...], code: int) -> None:
    result = run(runner, *args)
    assert result.exit_code == code, result.output


def test_text_and_json_output(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, str(OLD_V100), str(A100_NODE))
    out = result.stdout
    assert out.index("Differences that matter for speed") < out.index("Other differences")
    assert out.index("driver version") < out.index("Findings") < out.index("Packages")
    assert "470.199.02 → 535.104.05" in out
    target = tmp_path / "diff.json"
    result = run(runner, str(OLD_V100), str(A100_NODE), "-f", "json", "-o", str(target))
    assert result.exit_code == 1 and result.stdout == ""
    data = json.loads(target.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(load_schema("diff")).validate(data)
    assert data["summary"]["new_at_or_above_fail_on"] == 1
    assert data["a"]["source"] == str(OLD_V100) and data["b"]["kind"] == "snapshot"


def _bad_finding(data: dict[str, Any]) -> None:
    data["findings"][0]["severity"] = "severe"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "no such file"),
        ("{not json", "not valid JSON"),
        ('{"hello": 1}', "no schema_version"),
        ("[1, 2]", "must be a JSON object"),
        (_bad_finding, "findings.0.severity"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    runner: CliRunner, tmp_path: Path, content: Any, needle: str
) -> None:
    bad = tmp_path / "bad.json"
    if callable(content):
        bad = edited(PROBE_REPORT, tmp_path, "bad.json", content)
    elif content is not None:
        bad.write_text(content, encoding="utf-8")
    for args in ((str(OLD_V100), str(bad)), (str(bad), str(OLD_V100))):
        result = run(runner, *args)
        assert result.exit_code == 2, result.output
        err = result.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in result.output
        assert needle in err and "bad.json" in err


def test_bad_fail_on_and_format(runner: CliRunner) -> None:
    result = run(runner, str(OLD_V100), str(OLD_V100), "--fail-on", "severe")
    assert result.exit_code == 2 and "--fail-on" in result.stderr
    result = run(runner, str(OLD_V100), str(OLD_V100), "--format", "sarif")
    assert result.exit_code == 2


def test_the_guide_documents_every_diff_flag() -> None:
    guide = (FIXTURES.parent.parent / "docs" / "guide.md").read_text(encoding="utf-8")
    assert "### `envcheck diff`" in guide and "diff.schema.json" in guide
    for flag in cli_flags("diff"):
        assert f"`{flag}" in guide, flag
