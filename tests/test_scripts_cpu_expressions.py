"""Worker counts written over the CPU count (cpu_expressions.py): kept as an expression
by the resolver, evaluated by EC501/EC503 on the training machine's logical CPUs."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from envcheck.engine.evaluate import evaluate
from envcheck.engine.registry import Registry
from envcheck.rulebook import builtin_registry
from envcheck.scripts.analyze import analyze_file
from envcheck.scripts.cpu_expressions import evaluate as evaluate_over_cpus
from envcheck.scripts.values import Scope, resolve
from envcheck.snapshot import Facts, Snapshot


def _resolved(source: str) -> Any:
    module = ast.parse(source)
    expr = module.body[-1]
    assert isinstance(expr, ast.Expr)
    return resolve(expr.value, Scope.of_module(module))


def test_expression_kept_and_evaluated() -> None:
    found = _resolved("import multiprocessing\nmultiprocessing.cpu_count() // 2\n")
    assert not found.known and found.source == "depends on os.cpu_count()"
    assert evaluate_over_cpus(found.value, 2) == 1
    assert evaluate_over_cpus(found.value, 1) == 0
    found = _resolved("import os\nn = os.cpu_count() - 1\nmax(n, 1)\n")
    assert evaluate_over_cpus(found.value, 1) == 1
    assert evaluate_over_cpus(found.value, 8) == 7


def test_a_true_division_of_a_known_parameter_is_evaluated() -> None:
    """RepDistiller (sweep AA): `num_workers=int(num_workers/2)` with the parameter's
    default 8 is 4 workers; a division by zero stays unknown."""
    found = _resolved("def f(num_workers=8):\n    pass\nnum_workers = 8\nint(num_workers / 2)\n")
    assert found.known and found.value == 4
    found = _resolved("n = 0\nint(8 / n)\n")
    assert not found.known


def test_unknown_operand_stays_unknown() -> None:
    found = _resolved("import os\nos.cpu_count() // world_size\n")
    assert not found.known and found.value is None


def test_a_count_over_the_gpus_needs_the_target_s_gpus() -> None:
    """`os.cpu_count() // torch.cuda.device_count()`: workers per GPU process, evaluated
    with the training machine's CPUs and GPUs, never with its CPUs alone."""
    found = _resolved("import os, torch\nos.cpu_count() // torch.cuda.device_count()\n")
    assert not found.known and found.value == "(os.cpu_count() // torch.cuda.device_count())"
    assert evaluate_over_cpus(found.value, 16) is None
    assert evaluate_over_cpus(found.value, 16, 8) == 2


def _statuses(tmp_path: Path, source: str, logical: int) -> dict[str, str]:
    path = tmp_path / "train.py"
    path.write_text(source)
    report = analyze_file(path, "train.py")
    data = {
        "schema_version": 1,
        "collectors": {"scripts": {"status": "ok", "reason": None}},
        "scripts": {
            "files": ["train.py"],
            "loaders": report.loaders,
            "file_facts": [{"path": "train.py", **report.facts}],
        },
        "cpu": {"usable": logical, "logical": logical},
        "gpu": {"status": "ok", "devices": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB"}]},
    }
    rules = Registry([r for r in builtin_registry() if r.id in ("EC501", "EC503")])
    return {r.id: r.status.value for r in evaluate(rules, Facts(Snapshot.from_dict(data)))}


SOURCE = (
    "import multiprocessing\n"
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(torch.load('x.pt'), num_workers=multiprocessing.cpu_count() // 2)\n"
    "for epoch in range(10):\n"
    "    for x in loader:\n"
    "        x = x.to('cuda')\n"
)


def test_judged_on_the_training_machine(tmp_path: Path) -> None:
    assert _statuses(tmp_path, SOURCE, 2) == {"EC501": "pass", "EC503": "fail"}
    # one CPU: cpu_count() // 2 is 0 workers: no persistent workers to ask for
    assert _statuses(tmp_path, SOURCE, 1) == {"EC501": "fail", "EC503": "pass"}


def test_min_over_a_list_written_out_is_min_over_its_members(tmp_path: Path) -> None:
    """`min([os.cpu_count(), batch_size if batch_size > 1 else 0, 8])`: the members of
    the one list are what min() chooses among, so the count is evaluated on the target."""
    found = _resolved(
        "import os\nbatch_size = 32\n"
        "min([os.cpu_count(), batch_size if batch_size > 1 else 0, 8])\n"
    )
    assert not found.known and found.value == "min(os.cpu_count(), 32, 8)"
    assert evaluate_over_cpus(found.value, 2) == 2
    assert evaluate_over_cpus(found.value, 64) == 8
    assert _resolved("max((1, 4, 2))\n").value == 4
    source = SOURCE.replace(
        "multiprocessing.cpu_count() // 2", "min([multiprocessing.cpu_count(), 8])"
    )
    assert _statuses(tmp_path, source, 2) == {"EC501": "pass", "EC503": "fail"}
