"""The PyTorch script audit on a corpus of realistic training scripts (tests/scripts_corpus).

Each script goes through the real collector (parsed, never run) and the rules, on a
machine with 16 usable CPUs of 64 visible, Linux unless stated; every script must give
exactly the findings listed. False positives are bugs: the clean script gives none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS, snapshot_from
from typer.testing import CliRunner

from envcheck import interpreter
from envcheck.cli import app
from envcheck.collectors import scripts
from envcheck.collectors.base import CollectContext
from envcheck.engine.evaluate import evaluate
from envcheck.engine.registry import builtin_registry
from envcheck.snapshot import Facts

CORPUS = TESTS / "scripts_corpus"
TORCH_RULES = ("EC501", "EC502", "EC503", "EC504", "EC505")


def audit(
    path: Path, system: str = "Linux", rules: tuple[str, ...] = TORCH_RULES
) -> dict[str, Any]:
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(path,))
    section = scripts.collect(ctx)["scripts"]
    snapshot = snapshot_from(
        {
            "collectors": {"scripts": {"status": "ok", "reason": None}},
            "scripts": section,
            "cpu": {"usable": 16, "logical": 64},
            "platform": {"system": system},
            "gpu": {
                "status": "ok",
                "devices": [
                    {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}
                ],
            },
        }
    )
    results = evaluate(builtin_registry(), Facts(snapshot))
    return {r.id: r for r in results if r.id in rules}


def failing(results: dict[str, Any]) -> list[str]:
    return sorted(i for i, r in results.items() if r.status.value == "fail")


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("torch_imagenet_clean.py", []),
        ("torch_no_workers.py", ["EC501", "EC502"]),
        ("torch_module_level_spawn.py", ["EC505"]),
        ("torch_cpu_count_workers.py", ["EC504"]),
        ("lightning_module.py", ["EC501"]),
        ("torch_opaque_config.py", []),
    ],
)
def test_corpus_findings(script: str, expected: list[str]) -> None:
    assert failing(audit(CORPUS / script)) == expected


def test_argparse_default_is_followed() -> None:
    results = audit(CORPUS / "torch_imagenet_clean.py")
    assert results["EC501"].reason == "every DataLoader uses worker processes"


def test_no_workers_finding_points_at_the_call() -> None:
    [finding] = audit(CORPUS / "torch_no_workers.py")["EC501"].findings
    assert finding.location is not None
    assert (finding.location.line, finding.location.column) == (7, 14)
    assert finding.location.code == "loader = DataLoader(dataset, batch_size=64, shuffle=True)"
    assert "num_workers not given (default 0)" in finding.message
    assert finding.fix == (
        "DataLoader(..., num_workers=15, pin_memory=True, persistent_workers=True)"
    )


def test_opaque_kwargs_make_the_rules_unknown() -> None:
    results = audit(CORPUS / "torch_opaque_config.py")
    assert results["EC501"].status.value == "unknown"
    assert "may be set through **cfg.loader" in results["EC501"].reason


def test_module_level_loader_is_fine_on_linux_without_spawn(tmp_path: Path) -> None:
    source = (CORPUS / "torch_module_level_spawn.py").read_text()
    script = tmp_path / "forked.py"
    script.write_text(source.replace('multiprocessing.set_start_method("spawn")\n', ""))
    assert failing(audit(script)) == []
    assert failing(audit(script, system="Darwin")) == ["EC505"]


def test_cpu_count_message_names_both_counts() -> None:
    [finding] = audit(CORPUS / "torch_cpu_count_workers.py")["EC504"].findings
    assert "num_workers=WORKERS (os.cpu_count()) = 64 here but only 16 CPUs" in finding.message


# bad input ------------------------------------------------------------------------------


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["doctor", "-f", "json", "--exit-zero", *args])


def test_bad_files_are_reported_and_the_others_audited(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def main(:\n    pass\n")
    (tmp_path / "notes.py").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\n# caf\xe9\nfrom torch.utils.data import DataLoader\n"
        b"import torch\nDataLoader(torch.load('x'), batch_size=2).__iter__()\n"
        b"torch.zeros(1).cuda()\n"
    )
    (tmp_path / "huge.py").write_text("x = 1\n" * 400_000)
    result = run("--script", str(tmp_path))
    assert result.exit_code == 2  # the others were audited; the bad ones are input errors
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("envcheck: error: --script: 3 could not be audited: ")
    assert "broken.py:1:10: syntax error" in line
    section = json.loads(result.stdout)["facts"]["scripts"]
    errors = {Path(e["path"]).name: e for e in section["errors"]}
    assert errors["broken.py"]["reason"].startswith("syntax error")
    assert (errors["broken.py"]["line"], errors["broken.py"]["column"]) == (1, 10)
    assert "not a Python source file" in errors["notes.py"]["reason"]
    assert "too large" in errors["huge.py"]["reason"]
    assert [Path(x["path"]).name for x in section["loaders"]] == ["latin.py"]


def test_empty_folder_and_missing_path(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("--script", str(empty), "--script", str(tmp_path / "missing.py"))
    assert result.exit_code == 2 and "2 could not be audited" in result.stderr
    reasons = [e["reason"] for e in json.loads(result.stdout)["facts"]["scripts"]["errors"]]
    assert reasons == ["no *.py files in this folder", "no such file or folder"]


def test_without_script_the_rules_are_skipped() -> None:
    checks = json.loads(run().stdout)["checks"]
    assert {c["status"] for c in checks if c["id"] in TORCH_RULES} == {"skipped"}


def test_precision_settings_read_from_the_scripts() -> None:
    precision = ("EC506", "EC507", "EC508")
    clean = audit(CORPUS / "torch_imagenet_clean.py", rules=precision)
    # cudnn.benchmark is on for the resnet; float32 without autocast on an A100
    assert failing(clean) == ["EC507", "EC508"]
    linear = audit(CORPUS / "torch_no_workers.py", rules=precision)
    assert linear["EC506"].status.value == "pass"  # no convolutions
