"""The training machine `envcheck scripts` judges against: --target SNAPSHOT.json,
[target] in envcheck.toml, or none (machine-dependent rules undecided); `doctor
--script` keeps judging the machine it runs on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import snapshot_from
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.errors import InputError
from envcheck.scripts.target import NO_TARGET, apply, capability_of, from_table

SCRIPT = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "def main():\n"
    "    device = 'cuda'\n"
    "    loader = DataLoader(ds, batch_size=64, num_workers=16, pin_memory=True,\n"
    "                        persistent_workers=True)\n"
    "    model = torch.nn.Linear(4096, 4096).to(device)\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n"
    "        model(x.to(device)).sum().backward()\n"
    "        opt.step()\n"
    "if __name__ == '__main__':\n"
    "    main()\n"
)


HEAD = {
    "schema_version": 1,
    "tool": {"name": "envcheck", "version": "0.1.0"},
    "created": "2026-11-23T00:00:00Z",
    "collectors": {},
}


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT)
    return tmp_path


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def checks(result: Any) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in json.loads(result.stdout)["checks"]}


@pytest.mark.parametrize(
    ("model", "cap"),
    [
        ("NVIDIA A100-SXM4-80GB", "8.0"),
        ("A100", "8.0"),
        ("NVIDIA A10G", "8.6"),
        ("NVIDIA A2", "8.6"),
        ("NVIDIA GeForce RTX 3090", "8.6"),
        ("NVIDIA GeForce RTX 4090", "8.9"),
        ("NVIDIA L4", "8.9"),
        ("NVIDIA L40S", "8.9"),
        ("Tesla T4", "7.5"),
        ("Tesla V100-SXM2-16GB", "7.0"),
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("Tesla P100-PCIE-16GB", "6.0"),
        ("Mystery 9000", None),
    ],
)
def test_capability_by_model_name(model: str, cap: Any) -> None:
    assert capability_of(model) == cap


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ({"cpus": 0}, "cpus must be a whole number >= 1"),
        ({"cpus": "8"}, "cpus must be a whole number >= 1"),
        ({"gpus": 2}, "gpus needs gpu (a model name) or compute-capability"),
        ({"gpu": "Mystery 9000"}, "gpu 'Mystery 9000' is not a model envcheck knows"),
        ({"compute-capability": "eight"}, 'compute-capability must look like "8.0"'),
        ({"system": "Plan9"}, "system must be one of Linux, Windows, Darwin"),
        ({"cores": 8}, "unknown [target] key(s) cores"),
    ],
)
def test_bad_target_tables(table: dict[str, Any], error: str) -> None:
    with pytest.raises(InputError, match=None) as caught:
        from_table(table, "envcheck.toml")
    assert error in str(caught.value)


def test_a_table_becomes_machine_sections() -> None:
    target = from_table({"cpus": 8, "gpus": 2, "gpu": "L4"}, "envcheck.toml")
    data = apply(snapshot_from({"cpu": {"usable": 2}}), target).data
    assert data["cpu"] == {"logical": 8, "usable": 8}
    assert [d["compute_capability"] for d in data["gpu"]["devices"]] == ["8.9", "8.9"]
    assert data["platform"] is None  # not declared: the rules that need it say unknown
    assert "not declared in [target]" in data["collectors"]["platform"]["reason"]
    bare = apply(snapshot_from({"cpu": {"usable": 2}}), None).data
    assert bare["cpu"] is None and bare["collectors"]["cpu"]["reason"] == NO_TARGET


def test_without_a_target_machine_rules_are_undecided(project: Path) -> None:
    result = run("scripts", "train.py", "-f", "json")
    assert result.exit_code == 0, result.stdout
    found = checks(result)
    for rule in ("EC504", "EC507", "EC508"):
        assert found[rule]["status"] == "unknown"
        assert "no target machine declared" in found[rule]["reason"]
    text = run("scripts", "train.py").stdout
    assert "3 rules undecided (EC504, EC507, EC508; --target SNAPSHOT.json" in text


def test_target_snapshot_from_collect(project: Path) -> None:
    machine = {
        "cpu": {"logical": 8, "usable": 8},
        "platform": {"system": "Linux"},
        "gpu": {
            "status": "ok",
            "devices": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}],
        },
    }
    (project / "node.json").write_text(json.dumps({**HEAD, **machine}))
    result = run("scripts", "train.py", "--target", "node.json", "-f", "json")
    found = checks(result)
    assert found["EC504"]["status"] == "fail"  # 16 workers on 8 CPUs
    assert found["EC507"]["status"] == "fail"  # float32 on an A100
    message = next(
        f["message"] for f in json.loads(result.stdout)["findings"] if f["id"] == "EC504"
    )
    assert "num_workers=16 but the training machine has only 8 usable CPUs" in message


def test_target_from_a_saved_doctor_report(project: Path) -> None:
    machine = {**HEAD, "cpu": {"logical": 4, "usable": 4}}
    report = {"schema_version": 1, "findings": [], "checks": [], "facts": machine}
    (project / "report.json").write_text(json.dumps(report))
    found = checks(run("scripts", "train.py", "--target", "report.json", "-f", "json"))
    assert found["EC504"]["status"] == "fail"  # 16 workers on 4 CPUs
    assert "no target machine declared" not in found["EC507"]["reason"]
    assert "snapshot has no 'gpu' facts" in found["EC507"]["reason"]


def test_target_table_in_config(project: Path) -> None:
    (project / "envcheck.toml").write_text('[target]\ncpus = 32\ngpus = 1\ngpu = "T4"\n')
    found = checks(run("scripts", "train.py", "-f", "json"))
    assert found["EC504"]["status"] == "pass"  # 16 workers on 32 CPUs
    assert found["EC507"]["status"] == "fail"  # a T4 has tensor cores
    assert found["EC508"]["status"] == "pass"  # a T4 (7.5) predates TF32
    assert "predate TF32" in found["EC508"]["reason"]


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (None, "envcheck: error: --target node.json: no such file"),
        ("{not json", "envcheck: error: --target node.json: not valid JSON"),
        (json.dumps(HEAD), "has no platform, cpu or gpu facts"),
        (json.dumps({**HEAD, "cpu": {"usable": "8"}}), "--target node.json: cpu.usable"),
    ],
)
def test_bad_target_file_is_one_line_exit_2(project: Path, content: Any, error: str) -> None:
    if content is not None:
        (project / "node.json").write_text(content)
    result = CliRunner().invoke(app, ["scripts", "train.py", "--target", "node.json"])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert error in line


def test_doctor_judges_its_own_machine(project: Path) -> None:
    # a [target] with plenty of CPUs does not change what doctor --script judges against
    (project / "envcheck.toml").write_text("[target]\ncpus = 1024\n")
    (project / "train.py").write_text(SCRIPT.replace("num_workers=16", "num_workers=4096"))
    found = checks(run("doctor", "--script", "train.py", "-f", "json", "--exit-zero"))
    assert found["EC504"]["status"] == "fail"
