"""Shared test helpers: rule cases as data, and snapshots built from partial facts."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

import pytest

from envcheck.snapshot import SCHEMA_VERSION, Snapshot
from envcheck.tomlread import load_toml

TESTS = Path(__file__).parent
RULE_CASES = TESTS / "rule_cases"
FIXTURES = TESTS / "fixtures"
NULL = "__null__"


def denull(value: Any) -> Any:
    """TOML has no null: the string "__null__" stands for one."""
    if value == NULL:
        return None
    if isinstance(value, dict):
        return {k: denull(v) for k, v in value.items()}
    if isinstance(value, list):
        return [denull(v) for v in value]
    return value


def snapshot_from(facts: dict[str, Any]) -> Snapshot:
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "collectors": {}}
    data.update(denull(facts))
    return Snapshot.from_dict(data)


def load_cases() -> list[Any]:
    params = []
    for path in sorted(RULE_CASES.glob("*.toml")):
        for index, case in enumerate(load_toml(path).get("case", [])):
            params.append(
                pytest.param(path.stem, case, id=f"{path.stem}-{index}-{case.get('expect')}")
            )
    return params


def rule_statuses(**sections: Any) -> dict[str, str]:
    """Status of every built-in rule on a snapshot holding just these sections.

    Lets a collector test state what its fake machine leads to, so facts and rules are
    checked together.
    """
    from envcheck.engine.evaluate import evaluate
    from envcheck.rulebook import builtin_registry
    from envcheck.snapshot import Facts

    collectors = {name: {"status": "ok", "reason": None} for name in sections}
    snapshot = snapshot_from({"collectors": collectors, **sections})
    return {r.id: r.status.value for r in evaluate(builtin_registry(), Facts(snapshot))}


def failing_rules(**sections: Any) -> list[str]:
    """Ids of the built-in rules that fail on a snapshot holding just these sections."""
    return sorted(rule for rule, status in rule_statuses(**sections).items() if status == "fail")


def cli_flags(command: str) -> list[str]:
    """The long options of an envcheck command, read from the CLI itself."""
    import typer

    from envcheck.cli import app

    group: Any = typer.main.get_command(app)
    params = group.commands[command].params
    flags = [o for p in params for o in getattr(p, "opts", []) if o.startswith("--")]
    return [f for f in flags if f != "--help"]


# The probe's framework environment (CPU torch + tensorflow-cpu; `make frameworks`).
# Absolute, because the tests run it from other working folders.
FW_PYTHON = Path(
    os.environ.get("ENVCHECK_FW_PYTHON")
    or Path(__file__).resolve().parent.parent / ".venv-fw" / "bin" / "python"
).absolute()
# A measured framework program that has not ended by then has hung (TensorFlow's and
# Keras's threads can hold up an interpreter's teardown): envcheck stops it and the test
# fails with its log, instead of the whole suite waiting on it.
CHILD_TIMEOUT_S = 300.0


# Tests marked `gpu` need an NVIDIA GPU with a working driver: skipped cleanly elsewhere.
@functools.cache
def nvidia_gpu_absent() -> Optional[str]:
    """Why no NVIDIA GPU can be used here, or None when NVML sees at least one."""
    from envcheck.probe.sampler import load_nvml

    pynvml, why = load_nvml()
    if pynvml is None:
        return why
    try:
        count = int(pynvml.nvmlDeviceGetCount())
    except Exception as exc:
        return f"NVML cannot count GPUs: {exc}"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
    return None if count else "NVML sees no GPU"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is not None:
        why = nvidia_gpu_absent()
        if why:
            pytest.skip(f"needs an NVIDIA GPU: {why}")


def load_script_module(path: Path, name: str) -> ModuleType:
    """Import a script that is not in a package (a benchmark, a corpus tool) by its path."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def script_results(tmp_path: Path, source: str, name: str = "data.py") -> dict[str, Any]:
    """Every EC5xx result for `source` saved as `name`, through the real scripts collector
    and the real rules, against an 8 x A100, 2-CPU Linux node, by rule id."""
    return run_results(tmp_path, {name: source})


def run_results(tmp_path: Path, files: dict[str, str]) -> dict[str, Any]:
    """Every EC5xx result for several files audited in one run (`{"pkg/config.py":
    source, ...}`, folders made as needed), through the real scripts collector and the
    real rules, against an 8 x A100, 2-CPU Linux node, by rule id."""
    from envcheck import interpreter
    from envcheck.collectors import scripts
    from envcheck.collectors.base import CollectContext
    from envcheck.engine.evaluate import evaluate
    from envcheck.rulebook import builtin_registry
    from envcheck.snapshot import Facts

    paths = []
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    ctx = CollectContext(interpreter=interpreter.current(), scripts=tuple(paths))
    snapshot = snapshot_from(
        {
            "collectors": {"scripts": {"status": "ok", "reason": None}},
            "scripts": scripts.collect(ctx)["scripts"],
            "cpu": {"usable": 2, "logical": 2},
            "platform": {"system": "Linux"},
            "gpu": {
                "status": "ok",
                "devices": [
                    {"index": i, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}
                    for i in range(8)
                ],
            },
        }
    )
    found = evaluate(builtin_registry(), Facts(snapshot))
    return {r.id: r for r in found if r.id.startswith("EC5")}


A100_NODE = FIXTURES / "gpu" / "datacenter-8x-a100-foreign-process.json"


def project_checks(
    tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch, script: str = "train.py"
) -> dict[str, tuple[str, str]]:
    """`envcheck scripts SCRIPT` run inside a project of `files` (a `setup.py` marks its
    root, folders made as needed), as a user in the repository, against an 8 x A100,
    2-CPU node: rule id -> (status, reason)."""
    import json

    from typer.testing import CliRunner

    from envcheck.cli import app

    (tmp_path / "setup.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    args = ["scripts", "--format", "json", "--exit-zero", "--target", str(A100_NODE), script]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    return {c["id"]: (c["status"], c.get("reason") or "") for c in report["checks"]}


def audit_report(root: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The JSON report of `envcheck scripts SCRIPT` run inside the project at `root`,
    against an 8 x A100, 2-CPU node, with no file's analysis failing."""
    import json

    from typer.testing import CliRunner

    from envcheck.cli import app

    monkeypatch.chdir(root)
    args = ["scripts", "--format", "json", "--exit-zero", "--target", str(A100_NODE), script]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    assert not report["facts"]["scripts"].get("errors"), report["facts"]["scripts"]
    return report


def rule_status(report: dict[str, Any], rule: str) -> tuple[str, str]:
    """(status, reason) of `rule` in a report of audit_report."""
    check = next(c for c in report["checks"] if c["id"] == rule)
    return check["status"], check.get("reason") or ""
