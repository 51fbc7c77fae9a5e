"""Hostile but valid sources for the script analyser's value following and call graph
(hostile-input campaign, 2026-11-27; benchmarks/script_audit_hostile.py times them).

Each test holds a property without a clock: the work counted (calls of the function
that blew up, AST nodes visited) grows linearly with the input, or a source deep enough
to pass Python's recursion limit gives an answer (unknown, or one line naming the file)
instead of a traceback.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envcheck.scripts import values
from envcheck.scripts.analyze import FileReport, analyze_file

HEAD = "import torch\nfrom torch.utils.data import DataLoader\n"
LOOP = "model = Net().cuda()\nfor b in loader:\n    model(b.cuda()).sum().backward()\n"


def audit(tmp_path: Path, source: str, name: str = "train.py") -> FileReport:
    """The analyser's report on `source` saved as `name`; it must not be an error."""
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    report = analyze_file(path, name)
    assert report.error is None, report.error
    return report


def counted(monkeypatch: pytest.MonkeyPatch, owner: Any, attribute: str) -> list[int]:
    """Counts the calls of `owner.attribute` from now on (in [0])."""
    count = [0]
    real: Callable[..., Any] = getattr(owner, attribute)

    def counting(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, attribute, counting)
    return count


def loader_value(report: FileReport, setting: str = "num_workers") -> dict[str, Any]:
    [loader] = [x for x in report.loaders if x["line"] == max(y["line"] for y in report.loaders)]
    return dict(loader["args"][setting])


# -- names assigned under `if` tests ----------------------------------------------------


def guarded_chain(count: int) -> str:
    """`g{i+1}` decided by an `if` reading `g{i}` twice."""
    body = "".join(f"g{i + 1} = 0\nif g{i} and g{i}:\n    g{i + 1} = 1\n" for i in range(count))
    return HEAD + "g0 = 1\n" + body + f"loader = DataLoader(ds, num_workers=g{count})\n" + LOOP


def test_names_decided_by_tests_on_other_such_names_take_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each name's `if` read the previous name twice, and a name decided while another
    was pending was never remembered: 2**N decisions (20 names took 47 s, 100 hung)."""
    holds = counted(monkeypatch, values.Scope, "_holds")
    work = {}
    for count in (8, 16):
        holds[0] = 0
        report = audit(tmp_path, guarded_chain(count))
        assert loader_value(report)["value"] == 1
        work[count] = holds[0]
    assert work[16] < 4 * work[8], work


def test_a_name_assigned_in_each_branch_of_a_long_elif_chain_is_read_in_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The k-th branch of an `if`/`elif` chain sits under k tests, and each branch's
    assignment read all of its tests anew: N branches took N² reads (1,000 took 8 s)."""
    holds = counted(monkeypatch, values.Scope, "_holds")
    work = {}
    for count in (100, 400):
        branches = "".join(
            f"{'if' if i == 0 else 'elif'} mode == {i}:\n    w = {i % 8}\n" for i in range(count)
        )
        source = HEAD + "mode = 3\n" + branches + "loader = DataLoader(ds, num_workers=w)\n"
        holds[0] = 0
        assert loader_value(audit(tmp_path, source + LOOP))["value"] == 3
        work[count] = holds[0]
    assert work[400] < 8 * work[100], work


def test_a_chain_of_decided_names_deeper_than_the_stack_is_unknown(tmp_path: Path) -> None:
    """Thousands of names each decided by the previous one: unknown past a bound, never
    a recursion error that costs the file."""
    report = audit(tmp_path, guarded_chain(3000))
    value = loader_value(report)
    assert not value["known"]


def test_names_deciding_each_other_in_a_cycle_stay_unknown(tmp_path: Path) -> None:
    source = (
        HEAD + "a = 0\nb = 0\nif b:\n    a = 1\nif a:\n    b = 1\n"
        "loader = DataLoader(ds, num_workers=a)\n" + LOOP
    )
    report = audit(tmp_path, source)
    assert not loader_value(report)["known"]


def test_an_elif_chain_past_the_recursion_limit_is_named_as_such(tmp_path: Path) -> None:
    """Thousands of `elif`s: the file is one line's error, which called it "an
    expression"."""
    branches = "".join(
        f"{'if' if i == 0 else 'elif'} mode == {i}:\n    w = {i % 8}\n" for i in range(2500)
    )
    path = tmp_path / "generated.py"
    path.write_text(HEAD + "mode = 3\n" + branches, encoding="utf-8")
    report = analyze_file(path, "generated.py")
    assert report.error is not None
    assert report.error["reason"].startswith("code nested too deeply to analyse")
    assert "`elif` chain" in report.error["reason"]


# -- parameters followed through the file's callers -------------------------------------


def calling_the_next_two(count: int) -> str:
    """`count` functions, each building a loader from its parameter and calling the next
    two functions with it."""
    body = "".join(
        f"def f{i}(w=2):\n    f{(i + 1) % count}(w)\n    f{(i + 2) % count}(w)\n"
        f"    return DataLoader(ds, num_workers=w)\n"
        for i in range(count)
    )
    return HEAD + body + "loader = f0()\n" + LOOP


def test_callers_are_found_without_scanning_the_file_for_each_parameter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each parameter followed to its callers scanned every node of the file: N functions
    handing a setting on took N² (800 took 48 s). The calls are indexed once per file."""
    from envcheck.scripts import parameters

    scanned = [0]
    real = parameters.module_nodes

    def counting(tree: ast.AST) -> list[ast.AST]:
        found = real(tree)
        scanned[0] += len(found)
        return found

    monkeypatch.setattr(parameters, "module_nodes", counting)
    work = {}
    for count in (50, 200):
        scanned[0] = 0
        audit(tmp_path, calling_the_next_two(count))
        work[count] = scanned[0]
    assert work[200] < 8 * work[50], work


def layers(width: int, leaf: str, top: str) -> str:
    """Five layers of `width` functions, each calling every function of the layer below
    with its own parameter `v`; the top layer is called with `top`."""
    text = "".join(f"def f0_{j}(v):\n    return {leaf}\n" for j in range(width))
    for layer in range(1, 5):
        for j in range(width):
            calls = "".join(f"    f{layer - 1}_{k}(v)\n" for k in range(width))
            text += f"def f{layer}_{j}(v):\n{calls}"
    return HEAD + text + "".join(f"f4_{j}({top})\n" for j in range(width)) + LOOP


@pytest.mark.parametrize(
    ("module", "function", "leaf", "top"),
    [
        ("parameters", "parameter_value", "DataLoader(ds, num_workers=v)", "4"),
        ("dataloaders", "_from_callers", "DataLoader(v, num_workers=2)", "Data()"),
    ],
)
def test_callers_of_callers_are_read_within_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, function: str, leaf: str, top: str
) -> None:
    """A loader's setting (or dataset) handed down layers of functions, each calling the
    whole layer below: every path up was followed, width**4 callers per loader (a
    source of 800 calls hung). Now one question reads at most MAX_CALLS calls; the
    source grows as width**2, the work must not grow faster."""
    from envcheck.scripts import dataloaders, parameters

    owner = {"parameters": parameters, "dataloaders": dataloaders}[module]
    calls = counted(monkeypatch, owner, function)
    work = {}
    for width in (4, 8):
        calls[0] = 0
        audit(tmp_path, layers(width, leaf, top))
        work[width] = calls[0]
    assert work[8] < 8 * work[4], work


def test_a_setting_handed_down_a_few_functions_is_still_known(tmp_path: Path) -> None:
    body = "def f0(w):\n    return DataLoader(ds, num_workers=w)\n" + "".join(
        f"def f{i}(w):\n    return f{i - 1}(w)\n" for i in range(1, 4)
    )
    report = audit(tmp_path, HEAD + body + "loader = f3(4)\n" + LOOP)
    assert loader_value(report)["value"] == 4


# -- classes ----------------------------------------------------------------------------


def many_methods(count: int) -> str:
    """A class of `count` methods, each storing its argument and calling the next."""
    methods = "".join(
        f"    def m{i}(self, w):\n        self.w{i} = w\n"
        f"        return self.m{(i + 1) % count}(w)\n"
        for i in range(count)
    )
    return (
        HEAD
        + "class T:\n    workers = 4\n    def __init__(self, w=4):\n        self.w = w\n"
        + methods
        + "    def loader(self):\n        return DataLoader(ds, num_workers=self.workers)\n"
        "loader = T().loader()\n" + LOOP
    )


def counting_walk(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the nodes every `ast.walk` yields from now on (in [0])."""
    visited = [0]
    walk = ast.walk

    def counting(node: ast.AST) -> Iterator[ast.AST]:
        for found in walk(node):
            visited[0] += 1
            yield found

    monkeypatch.setattr(ast, "walk", counting)
    return visited


def test_a_class_of_many_methods_is_read_in_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every method's scope read the class-level defaults anew, walking every method of
    the class for the attributes they assign: N methods took N² (800 took 12 s)."""
    visited = counting_walk(monkeypatch)
    work = {}
    for count in (50, 200):
        visited[0] = 0
        report = audit(tmp_path, many_methods(count))
        assert loader_value(report)["value"] == 4
        work[count] = visited[0]
    assert work[200] < 8 * work[50], work


def inheritance_chain(count: int) -> str:
    """`count` classes, each deriving from the one before; the first sets `self.w`."""
    classes = "class B0:\n    def __init__(self, w=4):\n        self.w = w\n" + "".join(
        f"class B{i}(B{i - 1}):\n    def step{i}(self):\n        return self.w\n"
        for i in range(1, count)
    )
    return (
        HEAD + classes + f"class Top(B{count - 1}):\n    def make(self):\n"
        "        return DataLoader(ds, num_workers=self.w)\n"
        "loader = Top().make()\n" + LOOP
    )


def test_a_long_chain_of_base_classes_is_read_in_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step up a class's bases gathered the file's classes and its names for itself
    anew, scanning the whole module: N classes took N² (800 took 4 s)."""
    from envcheck.scripts import inherited

    scanned = [0]
    real = inherited.self_aliases

    def counting(module: ast.Module) -> list[str]:
        scanned[0] += len(module.body)
        return real(module)

    monkeypatch.setattr(inherited, "self_aliases", counting)
    work = {}
    for count in (50, 200):
        scanned[0] = 0
        audit(tmp_path, inheritance_chain(count))
        work[count] = scanned[0]
    assert work[200] < 8 * work[50], work


# -- training loops ---------------------------------------------------------------------


def host_reads(count: int) -> str:
    """A training loop reading `count` values back to the host every step."""
    reads = "".join(
        f"        v{i} = loss.item() + x.cpu().numpy().sum() + {i}\n" for i in range(count)
    )
    return (
        HEAD
        + "loader = DataLoader(ds, num_workers=2)\nmodel = Net().cuda()\n"
        + "for epoch in range(3):\n    for x, y in loader:\n        x = x.cuda()\n"
        + "        loss = model(x).sum()\n        loss.backward()\n        opt.step()\n"
        + reads
    )


def test_a_loop_of_many_host_reads_is_read_in_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a tensor was built on the host walked the whole scope for the bindings
    of each name read: a loop of N `.item()` / `.cpu()` reads took N² (800 took 36 s)."""
    visited = counting_walk(monkeypatch)
    work = {}
    for count in (50, 200):
        visited[0] = 0
        audit(tmp_path, host_reads(count))
        work[count] = visited[0]
    assert work[200] < 8 * work[50], work


# -- long chains --------------------------------------------------------------------------


def chains(depth: int) -> str:
    """Statements each holding a chain `depth` links deep: each call's function holds the
    rest of its chain."""
    return (
        HEAD
        + "import tensorflow as tf\n"
        + f"x = f{'()' * depth}\n"
        + f"model = Net{'.a()' * depth}.cuda()\n"
        + f"ds = tf.data.Dataset.range(9){'.map(f)' * depth}\n"
        + f"opt.step{'()' * depth}\n"
        + f"for b in loader{'.a()' * depth}:\n    model(b.cuda()).sum().backward()\n"
    )


def test_chains_of_calls_are_read_in_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text of every call's function was asked for (`ast.unparse`), and each holds the
    rest of its chain: a chain N links deep cost N² (a file of such chains took hours).
    A node's text now costs at most texts.MAX_NODES nodes."""
    unparsed = [0]
    real = ast.unparse

    def counting(node: ast.AST) -> str:
        unparsed[0] += sum(1 for _ in ast.walk(node))
        return real(node)

    monkeypatch.setattr(ast, "unparse", counting)
    work = {}
    for depth in (100, 400):
        unparsed[0] = 0
        audit(tmp_path, chains(depth))
        work[depth] = unparsed[0]
    assert work[400] < 8 * work[100], work


def test_own_nodes_walks_a_chain_deeper_than_the_stack() -> None:
    """Recursive generators passed each node up through every level (N² for N levels)
    and stopped at Python's recursion limit."""
    from envcheck.scripts.index import own_nodes

    node: ast.expr = ast.Name("f", ast.Load())
    for _ in range(20_000):
        node = ast.Call(node, [], [])
    assert sum(1 for _ in own_nodes(node)) == 20_001  # the inner calls, `f` and its ctx


def test_a_long_node_s_text_keeps_its_beginning() -> None:
    from envcheck.scripts import texts

    call = ast.parse("torch.nn.DataParallel(model, device_ids=[" + "1, " * 300 + "])").body[0]
    shown = texts.text(call)
    assert shown.startswith("torch.nn.DataParallel(model, device_ids=[1, 1,")
    assert shown.endswith("...])") and len(shown) < 400
    small = ast.parse("DataLoader(ds, num_workers=4)").body[0]
    assert texts.text(small) == ast.unparse(small)


# -- reports ------------------------------------------------------------------------------

TARGET = Path(__file__).parent / "fixtures" / "gpu" / "datacenter-8x-a100-foreign-process.json"


def report_bytes(tmp_path: Path, source: str, output: str) -> int:
    """The size of `envcheck scripts --format OUTPUT` on `source`."""
    from typer.testing import CliRunner

    from envcheck.cli import app

    path = tmp_path / "train.py"
    path.write_text(source, encoding="utf-8")
    result = CliRunner().invoke(
        app, ["scripts", "--exit-zero", "--format", output, "--target", str(TARGET), str(path)]
    )
    assert result.exit_code == 0, result.output[-2000:]
    return len(result.stdout_bytes)


def test_findings_on_one_long_line_quote_it_cut_short(tmp_path: Path) -> None:
    """N loaders on one generated line (`l0 = DataLoader(ds); l1 = ...`): each finding
    quoted the whole line, N² bytes of report. A quoted line is cut at 200 characters."""
    size = {}
    for count in (50, 200):
        line = "; ".join(f"l{i} = DataLoader(ds)" for i in range(count))
        size[count] = report_bytes(tmp_path, HEAD + line + "\n", "text")
    assert size[200] < 8 * size[50], size


def test_findings_on_a_long_pipeline_carry_part_of_it(tmp_path: Path) -> None:
    """A pipeline of N serial maps has N findings, and each carried the whole pipeline as
    evidence: N² in the JSON report (400 maps made 66 MB). Each now carries at most the
    64 operations around its own."""
    size = {}
    for count in (70, 280):
        maps = "".join("ds = ds.map(f)\n" for _ in range(count))
        source = (
            "import tensorflow as tf\nds = tf.data.Dataset.range(9)\n" + maps + "model.fit(ds)\n"
        )
        size[count] = report_bytes(tmp_path, source, "json")
    assert size[280] < 8 * size[70], size


# -- call graphs deeper than the stack ------------------------------------------------------


def test_a_thousand_functions_returning_one_another_are_analysed(tmp_path: Path) -> None:
    """What a helper returns was read through the helper it returns, one level of
    Python's stack per function: a chain of 1,000 recursed past the limit and the file
    was skipped as "nested too deeply". Past 32 helpers it is not known instead."""
    body = "def f0(w):\n    return DataLoader(ds, num_workers=w)\n" + "".join(
        f"def f{i}(w):\n    return f{i - 1}(w)\n" for i in range(1, 1500)
    )
    report = audit(tmp_path, HEAD + body + "loader = f1499(4)\n" + LOOP)
    assert report.loaders and report.facts["uses_cuda"]


def python_calls(run: Callable[[], Any], where: str = str(Path(values.__file__).parent)) -> int:
    """The function calls code under `where` (by default the analyser, envcheck/scripts)
    makes while `run()` runs, built-in ones included: its work counted, not timed."""
    import sys

    count = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "c_call") and frame.f_code.co_filename.startswith(where):
            count[0] += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count[0]


def test_a_function_defined_anew_before_each_call_is_read_in_linear_work(
    tmp_path: Path,
) -> None:
    """`def make(w=2): ...` defined again before each of its N calls: every definition
    read every call of the name for the parameters they pass, N² (10,000 timed out)."""
    work = {}
    for count in (100, 1000):
        block = "def make(w=2):\n    return DataLoader(ds, num_workers=w)\nl{i} = make()\n"
        source = HEAD + "".join(block.format(i=i) for i in range(count)) + LOOP
        work[count] = python_calls(lambda source=source: audit(tmp_path, source))
    assert work[1000] < 14 * work[100], work


# -- runs of many files -------------------------------------------------------------------

PARSER = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--workers', default={})\n"
READER = HEAD + "loader = DataLoader(ds, num_workers=args.workers)\n"


def loaders_of_run(folder: Path) -> list[dict[str, Any]]:
    """The loaders of every file under `folder`, audited in one run. The clock stands
    still: these tests count work, and a busy machine must not stop the run at the
    folder's time budget."""
    from envcheck import interpreter
    from envcheck.collectors.base import CollectContext
    from envcheck.collectors.scripts import collect

    ctx = CollectContext(interpreter=interpreter.current(), scripts=(folder,))
    return list(collect(ctx, clock=lambda: 0.0)["scripts"]["loaders"])


def test_a_run_of_many_files_finds_each_one_s_options_in_linear_work(tmp_path: Path) -> None:
    """Each file reading `args.workers` compared its path with every parser of the run
    and read every parser's default anew: N files took N² (2,000 hit the folder's 10 s
    budget after 1,328). The parsers are indexed by their group of files linked by
    imports once per option."""
    from envcheck.scripts import run_options

    work = {}
    for count in (20, 160):
        folder = tmp_path / f"run{count}"
        for i in range(count):
            (folder / f"part{i}").mkdir(parents=True)
            (folder / f"part{i}" / "params.py").write_text(PARSER.format(i % 8))
            (folder / f"part{i}" / "data.py").write_text("import params\n" + READER)
        found: list[dict[str, Any]] = []
        work[count] = python_calls(
            lambda folder=folder, found=found: found.extend(loaders_of_run(folder)),
            run_options.__file__,
        )
        assert len(found) == count and all(x["args"]["num_workers"]["known"] for x in found)
    assert work[160] < 12 * work[20], work


def test_a_value_many_parsers_agree_on_names_three(tmp_path: Path) -> None:
    """Each file named every parser it agreed with: N² of report over N files."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    for i in range(5):
        (folder / f"params{i}.py").write_text(PARSER.format(4))
    (folder / "data.py").write_text("import params0, params1, params2, params3, params4\n" + READER)
    [loader] = loaders_of_run(folder)
    value = loader["args"]["num_workers"]
    assert value["known"] and value["value"] == 4
    assert value["source"].count("defaults to 4 in") == 3
    assert value["source"].endswith(" and 2 more")


# -- notebooks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "magic"),
    [
        ("files = !ls data", 8),
        ("  t, u = %timeit -o f()", 9),
        ("x == !y", None),
        ("x = y", None),
        ("f(a=!b)", None),
        ("= !ls", None),
        (" " * 200_000 + "a", None),  # N² backtracking steps for the expression it replaces
        (" " * 200_000 + "a = !ls", 200_004),
    ],
)
def test_an_assignment_from_a_magic_is_found_in_one_pass(line: str, magic: int | None) -> None:
    """`^(\\s*[\\w.,\\s]+?=\\s*)[!%]` backtracked over a line of leading spaces: a notebook
    cell line of 100,000 spaces took minutes to read, of a million hours."""
    from envcheck.scripts.notebooks import assigned_magic

    assert assigned_magic(line) == magic


WORKER_VALUES = HEAD + (
    "import torch.distributed as dist\n"
    "dist.init_process_group('nccl')\n"
    "a = DataLoader(ds, num_workers='4')\n"
    "b = DataLoader(ds, num_workers=[4, 'x'])\n"
    "c = DataLoader(ds, num_workers=2.5)\n"
    "d = DataLoader(ds, num_workers={'a': 1})\n"
    "e, g = create_loader([ds, ds], num_workers=[4, 4])\n"
    "f = DataLoader(ds, num_workers=8)\n"
    "model = Net().cuda()\n"
    "for loader in (a, b, c, d, e, f):\n"
    "    for x in loader:\n"
    "        model(x.cuda()).sum().backward()\n"
)


def test_worker_counts_that_are_no_numbers_never_blank_a_rule(tmp_path: Path) -> None:
    """A string, a float, a dict, a list holding a string (BLIP's loader maker gets
    `num_workers=[4, 4, 4]`, one per loader): each loader says why it cannot be judged,
    or is judged at its largest count, and the other loaders of the run are still judged
    (a TypeError in EC504 had made the whole rule unknown)."""
    from conftest import script_results

    found = script_results(tmp_path, WORKER_VALUES, "train.py")
    for rule in ("EC501", "EC503", "EC504"):
        assert "rule raised" not in (found[rule].reason or ""), found[rule].reason
    flagged = sorted(f.location.line for f in found["EC504"].findings)
    assert flagged == [9, 10]  # the maker's list (at most 4 per loader, x 8) and f's 8
    assert "is no worker count this audit can judge" in found["EC501"].reason


def test_a_rule_failing_on_one_loader_still_judges_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Facts of a shape a rule did not expect, on one loader: that loader is unknown with
    the error named, the run's other loaders keep their verdicts."""
    from conftest import script_results

    from envcheck.checks import ec5xx_torch

    real = ec5xx_torch.workers_on_target

    def fragile(loader: dict[str, Any], facts: Any) -> Any:
        if loader.get("line") == 5:
            raise TypeError("an unexpected shape")
        return real(loader, facts)

    monkeypatch.setattr(ec5xx_torch, "workers_on_target", fragile)
    found = script_results(tmp_path, WORKER_VALUES, "train.py")["EC504"]
    assert sorted(f.location.line for f in found.findings) == [9, 10]


# -- loaders stored by many classes ------------------------------------------------------


def test_many_classes_storing_loaders_read_the_file_once_for_periodic_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N classes each storing `self.loader = DataLoader(...)`: whether a loader is read
    now and then through an iterator (periodic_reads.py) reads the file's parents and
    names once, not once per loader (N² nodes: 20 s at N=800)."""
    from envcheck.scripts import periodic_reads

    wide = "".join(
        f"class K{i}:\n    def __init__(self):\n"
        f"        self.loader = DataLoader(ds, num_workers=2)\n"
        for i in range(50)
    )
    walks = counted(monkeypatch, periodic_reads, "module_nodes")
    report = audit(tmp_path, HEAD + wide + "loader = DataLoader(ds)\n" + LOOP)
    assert len(report.loaders) == 51
    assert walks[0] <= 5  # a few whole-file reads, whatever the number of loaders


def test_a_builder_of_many_maps_reads_its_own_functions_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ds = ds.map(f)` N times in one function: the functions it defines itself (a
    nested map function) are listed once, not once per map (N²: 29 s at N=2000)."""
    from envcheck.scripts import map_functions

    walks: list[bool] = []
    real = map_functions._local_definitions

    def spy(root: Any) -> Any:
        walks.append("_envcheck_local_defs" not in root.__dict__)
        return real(root)

    monkeypatch.setattr(map_functions, "_local_definitions", spy)
    body = "".join("    ds = ds.map(f)\n" for _ in range(100))
    source = (
        "import tensorflow as tf\nmodel = tf.keras.Sequential()\n"
        "def make():\n    ds = tf.data.Dataset.range(10)\n" + body + "    return ds\n"
        "model.fit(make())\n"
    )
    audit(tmp_path, source)
    assert len(walks) >= 100 and sum(walks) == 1


# -- round 15: readers that listed the file or the function once per call -----------------


def test_many_keras_fits_read_the_assignments_of_their_scope_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N `model.fit(gen_i, workers=4, ...)` in one file: whether each input is a tf.data
    pipeline reads the values assigned to its name, listed once per scope, not by walking
    the scope per fit (N²: 36 s at N=1000)."""
    visited = counting_walk(monkeypatch)
    work = {}
    for count in (50, 200):
        visited[0] = 0
        fits = "".join(
            f"model.fit(gen{i}, workers=4, use_multiprocessing=True, steps_per_epoch={i})\n"
            for i in range(count)
        )
        audit(tmp_path, "from tensorflow import keras\nmodel = keras.Sequential()\n" + fits)
        work[count] = visited[0]
    assert work[200] < 8 * work[50], work


def counting_own_nodes(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    """Counts the nodes `module.own_nodes` yields from now on (in [0])."""
    visited = [0]
    real = module.own_nodes

    def counting(node: ast.AST) -> Iterator[ast.AST]:
        for found in real(node):
            visited[0] += 1
            yield found

    monkeypatch.setattr(module, "own_nodes", counting)
    return visited


ONE_LINE = HEAD + "{}\n" + LOOP.replace("loader", "l0")
COMPREHENSIONS = "c{0} = [DataLoader(d, num_workers=w) for d in dss for w in [{0}] if (v := w)]\n"


@pytest.mark.parametrize(
    "shape",
    [
        lambda n: ONE_LINE.format("; ".join(f"l{i} = DataLoader(ds)" for i in range(n))),
        lambda n: HEAD + "".join(COMPREHENSIONS.format(i) for i in range(n)) + LOOP,
        lambda n: HEAD + "loader = DataLoader(ds)\n%time x = 1\n" * n + LOOP,
    ],
    ids=["one line", "comprehensions", "one name reassigned"],
)
def test_many_loaders_read_the_calls_assigned_to_each_name_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: Callable[[int], str]
) -> None:
    """N loaders in one scope (on one line, in comprehensions, or a notebook's cells each
    rebuilding `loader`): the calls assigned to a dataset's name (a `random_split`, text
    datasets) are listed once per scope, not by walking the scope per loader (N²: 29 s
    for 1,000 loaders on one line, over 40 s for a notebook of 2,500 cells)."""
    from envcheck.scripts import text_datasets

    visited = counting_own_nodes(monkeypatch, text_datasets)
    work = {}
    for count in (50, 200):
        visited[0] = 0
        source = shape(count).replace("%time ", "")
        audit(tmp_path, source)
        work[count] = visited[0]
    assert work[200] < 8 * work[50], work


def test_many_classes_deriving_from_themselves_list_the_file_methods_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N classes `class A(A)` each with an `__init__`: whether a class of the file
    defines `save_hyperparameters` itself lists the file's methods once, not once per
    `__init__` read (N²: 15 s at N=4000)."""
    from envcheck.scripts import index

    iterated = [0]

    class Counting(list):  # type: ignore[type-arg]
        def __iter__(self) -> Iterator[Any]:
            for item in super().__iter__():
                iterated[0] += 1
                yield item

    real = index.FileIndex.__init__

    def init(self: Any, *args: Any) -> None:
        real(self, *args)
        self.class_nodes = Counting(self.class_nodes)

    monkeypatch.setattr(index.FileIndex, "__init__", init)
    work = {}
    for count in (50, 200):
        iterated[0] = 0
        classes = "".join(
            f"class A{i}(A{i}):\n    def __init__(self, w=2):\n        super().__init__()\n"
            f"        self.w = w\n    def make(self):\n"
            f"        return DataLoader(ds, num_workers=self.w)\n"
            for i in range(count)
        )
        report = audit(tmp_path, HEAD + classes + "loader = A0().make()\n" + LOOP)
        assert report.loaders
        work[count] = iterated[0]
    assert work[200] < 8 * work[50], work


def test_shadowed_definitions_walk_each_statement_once() -> None:
    """Each module-level definition scanned the rest of the file for a later one of its
    name: N functions took N² (1,000 with nested functions, 37 s). Only names defined
    twice are looked for, and each statement is walked once."""
    import ast

    from envcheck.scripts.index import shadowed_definitions

    work = {}
    for count in (50, 200):
        source = "".join(f"def f{i}():\n    def g():\n        return {i}\n" for i in range(count))
        source += "def f0():\n    return 0\nclass C:\n    pass\nC()\nclass C:\n    pass\n"
        module = ast.parse(source)
        visited = [0]
        real_walk = ast.walk

        def counting_walk(
            node: ast.AST, real_walk: Any = real_walk, visited: list[int] = visited
        ) -> Any:
            for child in real_walk(node):
                visited[0] += 1
                yield child

        ast.walk = counting_walk  # type: ignore[assignment]
        try:
            shadowed = shadowed_definitions(module)
        finally:
            ast.walk = real_walk  # type: ignore[assignment]
        # the first f0 is defined again with nothing reading it between; the first C is
        # called before its redefinition
        assert [(d.name, d.lineno) for d in shadowed] == [("f0", 1)]
        work[count] = visited[0]
    assert work[200] < 8 * work[50], work
