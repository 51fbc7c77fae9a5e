"""Options defined in one file and read in another (issue 11): one `envcheck scripts` run
over a project knows every argparse option of its files, so a data module that builds its
loaders with `num_workers=args.workers` is judged at `--workers`' default in the project's
params.py, which the project's main.py imports with it (open_clip's layout); a parser no
import links to the reader (another project audited in the same run) gives it nothing.
Each case goes through the real collector or command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envcheck import interpreter
from envcheck.cli import app
from envcheck.collectors.base import CollectContext
from envcheck.collectors.scripts import collect

PARAMS = (
    "import argparse\n"
    "def parse_args(args):\n"
    "    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--workers', type=int, default={workers}, help='per GPU')\n"
    "    parser.add_argument('--epochs', type=int, default=32)\n"
    "    return parser.parse_args(args)\n"
)
DATA = (
    "import torch\n"
    "def get_loader(args, dataset):\n"
    "    return torch.utils.data.DataLoader(\n"
    "        dataset, batch_size=64, num_workers=args.workers, pin_memory=True)\n"
    "class Data:\n"
    "    def __init__(self, args):\n"
    "        self.args = args\n"
    "    def loader(self, dataset):\n"
    "        return torch.utils.data.DataLoader(dataset, num_workers=self.args.workers)\n"
)


def workers(folder: Path, *paths: Path) -> list[dict[str, Any]]:
    """The num_workers of every loader of data.py, audited with `paths` in one run."""
    ctx = CollectContext(interpreter=interpreter.current(), scripts=paths or (folder,))
    section = collect(ctx)["scripts"]
    return [x["args"]["num_workers"] for x in section["loaders"] if x["path"].endswith("data.py")]


def project(tmp_path: Path, **parsers: int) -> Path:
    """pkg/data.py and a parser per name (pkg/params.py, ...) with that --workers default,
    and pkg/main.py importing them all."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "data.py").write_text(DATA)
    for name, default in parsers.items():
        (pkg / f"{name}.py").write_text(PARAMS.format(workers=default))
    imports = "".join(f"from pkg.{name} import parse_args\n" for name in parsers)
    (pkg / "main.py").write_text(imports + "from pkg.data import get_loader\n")
    return pkg


def test_two_files_one_run_read_the_other_files_default(tmp_path: Path) -> None:
    pkg = project(tmp_path, params=4)
    found = workers(pkg)
    assert [(w["known"], w["value"]) for w in found] == [(True, 4), (True, 4)]
    assert {w["text"] for w in found} == {"args.workers", "self.args.workers"}
    assert found[0]["source"] == f"argparse --workers defaults to 4 in {pkg / 'params.py'}"


def test_the_file_alone_does_not_know_the_default(tmp_path: Path) -> None:
    pkg = project(tmp_path, params=4)
    found = workers(pkg, pkg / "data.py")
    assert [w["known"] for w in found] == [False, False]
    assert "is not an argparse option with a default" in found[0]["source"]


def test_two_parsers_that_disagree_leave_it_unknown_with_both(tmp_path: Path) -> None:
    pkg = project(tmp_path, params=4, finetune_params=8)
    found = workers(pkg)
    assert [w["known"] for w in found] == [False, False]
    source = found[0]["source"]
    assert source.startswith("the parsers of this run disagree")
    assert "defaults to 4 in" in source and "defaults to 8 in" in source


def test_parsers_that_agree_give_the_default(tmp_path: Path) -> None:
    pkg = project(tmp_path, params=4, finetune_params=4)
    assert [w["value"] for w in workers(pkg)] == [4, 4]


def test_the_parser_of_the_files_own_package_is_preferred(tmp_path: Path) -> None:
    pkg = project(tmp_path, params=4)
    other = tmp_path / "tools"
    other.mkdir()
    (other / "bench.py").write_text(PARAMS.format(workers=16))
    found = workers(tmp_path)
    assert [w["value"] for w in found] == [4, 4]
    assert str(pkg / "params.py") in found[0]["source"]


def test_a_parser_no_import_links_to_the_file_gives_it_nothing(tmp_path: Path) -> None:
    """Another project's (or an unrelated script's) --workers in the same run is not the
    reader's option: only a parser linked to it by imports (through main.py) counts."""
    pkg = project(tmp_path, params=4)
    (pkg / "main.py").write_text("import torch\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "run.py").write_text(PARAMS.format(workers=12))
    found = workers(tmp_path)
    assert [w["known"] for w in found] == [False, False]
    assert "is not an argparse option with a default" in found[0]["source"]
    # a chain of imports links them: data.py <- main.py -> params.py
    (pkg / "main.py").write_text("from . import data\nfrom .params import parse_args\n")
    assert [w["value"] for w in workers(tmp_path)] == [4, 4]


def test_options_declared_through_an_alias_are_the_file_s_own(tmp_path: Path) -> None:
    """`arg = parser.add_argument; arg("--workers", default=2)` declares the file's own
    option: its default is read, not another file's of the same name."""
    pkg = project(tmp_path, params=8)
    aliased = PARAMS.format(workers=2).replace("args)", "a)", 1)
    aliased = aliased.replace("    parser.add_argument(", "    arg(")
    aliased = aliased.replace(
        "ArgumentParser()\n", "ArgumentParser()\n    arg = parser.add_argument\n"
    )
    (pkg / "data.py").write_text(DATA + aliased)
    own, _ = workers(pkg)
    assert (own["value"], own["source"]) == (2, "argparse --workers default")


def test_a_file_with_its_own_parser_keeps_its_own_options(tmp_path: Path) -> None:
    pkg = project(tmp_path, params=8)
    (pkg / "data.py").write_text(DATA + PARAMS.format(workers=2).replace("args)", "a)", 1))
    own, chained = workers(pkg)
    assert (own["value"], own["source"]) == (2, "argparse --workers default")
    # self.args.workers (`self.args = args`) is the file's own option too, not another
    # file's parser's (8)
    assert chained["value"] == 2 and "params.py" not in chained["source"]
    assert chained["source"] == "self.args = args in __init__ (argparse --workers default)"


@pytest.mark.parametrize("default, status", [(4, "fail"), (1, "pass")])
def test_the_finding_says_where_the_default_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default: int, status: str
) -> None:
    project(tmp_path, params=default)
    (tmp_path / "envcheck.toml").write_text("[target]\ncpus = 2\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app, ["scripts", "pkg", "--select", "EC504", "--exit-zero"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    if status == "fail":
        assert "(argparse --workers defaults to 4 in pkg/params.py)" in result.stdout
        assert result.stdout.count(" EC504 ") == 2
    else:
        assert " EC504 " not in result.stdout


def test_a_helper_s_kwargs_filled_by_another_file_stay_unknown(tmp_path: Path) -> None:
    """`def make_data_loader(args, **kwargs)` called nowhere in its own file but by the
    run's train.py (`make_data_loader(args, **kwargs)`, pytorch-deeplab-xception): the
    worker count may come from there, so the loader is not judged at the defaults; the
    file audited alone is."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "data.py").write_text(
        "import torch\n"
        "def make_data_loader(dataset, **kwargs):\n"
        "    return torch.utils.data.DataLoader(dataset, batch_size=8, **kwargs)\n"
    )
    (pkg / "train.py").write_text(
        "from .data import make_data_loader\n"
        "kwargs = load()\n"
        "loader = make_data_loader(dataset, **kwargs)\n"
    )
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(pkg,))
    loaders = [x for x in collect(ctx)["scripts"]["loaders"] if x["path"].endswith("data.py")]
    assert [(x["opaque_kwargs"], x["caller_kwargs"]) for x in loaders] == [(["kwargs"], [])]
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(pkg / "data.py",))
    loaders = collect(ctx)["scripts"]["loaders"]
    assert [(x["opaque_kwargs"], x["caller_kwargs"]) for x in loaders] == [([], ["kwargs"])]


def test_a_constant_of_an_imported_config_module_of_the_run(tmp_path: Path) -> None:
    """`import config as cfg` ... `num_workers=cfg.NUM_WORKERS` with `NUM_WORKERS = 8` in
    config.py of the same run: 8, naming the file (named alone, too: config.py is read
    beside it); unknown without config.py, and a module of that name the file does not
    import gives nothing."""
    train = (
        "import torch\nimport config as cfg\n"
        "loader = torch.utils.data.DataLoader(ds, num_workers=cfg.NUM_WORKERS)\n"
    )
    (tmp_path / "config.py").write_text("NUM_WORKERS = 8\nNAME = 'x'\n")
    (tmp_path / "data.py").write_text(train)
    [found] = workers(tmp_path, tmp_path / "data.py", tmp_path / "config.py")
    assert (found["known"], found["value"]) == (True, 8)
    assert "config.py" in found["source"]
    # named alone, data.py still reads config.py beside it, as Python would import it
    # (project_context.py); with config.py gone the value is unknown
    [alone] = workers(tmp_path, tmp_path / "data.py")
    assert (alone["known"], alone["value"]) == (True, 8)
    (tmp_path / "config.py").rename(tmp_path / "elsewhere.py")
    [alone] = workers(tmp_path, tmp_path / "data.py")
    assert alone["known"] is False
    (tmp_path / "elsewhere.py").rename(tmp_path / "config.py")
    (tmp_path / "data.py").write_text(
        train.replace("import config as cfg", "import settings as cfg")
    )
    [other] = workers(tmp_path, tmp_path / "data.py", tmp_path / "config.py")
    assert other["known"] is False


WINDOWS = (
    "import torch\n"
    "class Windows(torch.utils.data.Dataset):\n"
    "    def __init__(self):\n"
    "        self.inputs = torch.randn(5000, 20, 1)\n"
    "    def __len__(self):\n"
    "        return self.inputs.shape[0]\n"
    "    def __getitem__(self, idx):\n"
    "        return self.inputs[idx]\n"
)
WINDOWS_TRAIN = (
    "import torch\nfrom windows import Windows\n"
    "loader = torch.utils.data.DataLoader(Windows(), batch_size=1000)\n"
)


def test_a_dataset_class_of_another_file_of_the_run_held_in_memory(tmp_path: Path) -> None:
    """StockPrediction: `from windows import Windows`, whose __getitem__ only indexes the
    tensors it holds, defined in a file of the same run: the loader's samples come from
    memory (EC501/EC502 stand down), naming the file; alone, it is not known."""
    (tmp_path / "windows.py").write_text(WINDOWS)
    (tmp_path / "train.py").write_text(WINDOWS_TRAIN)
    ctx = CollectContext(
        interpreter=interpreter.current(),
        scripts=(tmp_path / "train.py", tmp_path / "windows.py"),
    )
    [loader] = collect(ctx)["scripts"]["loaders"]
    assert "only indexes data it holds" in loader["dataset"]["in_memory"]
    assert "windows.py" in loader["dataset"]["in_memory"]
    # named alone, train.py still reads windows.py beside it (project_context.py)
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(tmp_path / "train.py",))
    [alone] = collect(ctx)["scripts"]["loaders"]
    assert "only indexes data it holds" in alone["dataset"]["in_memory"]
    (tmp_path / "windows.py").rename(tmp_path / "elsewhere.py")  # out of sight
    [unseen] = collect(ctx)["scripts"]["loaders"]
    assert "in_memory" not in unseen["dataset"]


TABLE_TRAIN = (
    "import argparse\nimport torch\nfrom windows import Windows, Hours\n"
    "parser = argparse.ArgumentParser()\nparser.add_argument('--data', default='w')\n"
    "args = parser.parse_args()\n"
    "def get_data(flag):\n"
    "    data_dict = {'w': Windows, 'h': Hours}\n"
    "    Data = data_dict[args.data]\n"
    "    if flag == 'pred':\n"
    "        Data = Windows\n"
    "    data_set = Data()\n"
    "    return torch.utils.data.DataLoader(data_set, batch_size=1000)\n"
    "loader = get_data('train')\n"
)


@pytest.mark.parametrize(
    ("hours", "held"),
    [
        (WINDOWS.replace("Windows", "Hours"), True),
        (WINDOWS.replace("Windows", "Hours").replace("self.inputs[idx]", "Image.open(idx)"), False),
    ],
)
def test_a_dataset_class_picked_from_a_dict_of_classes(
    tmp_path: Path, hours: str, held: bool
) -> None:
    """Informer: `Data = data_dict[args.data]` (and `Data = Windows` in a branch), then
    `Data(...)`: held in memory when every class the table and the branches may pick is
    (each reading its arrays up front); one that opens an image per sample leaves the
    dataset unknown, as a class out of sight does."""
    (tmp_path / "windows.py").write_text(WINDOWS + hours.replace("import torch\n", ""))
    (tmp_path / "train.py").write_text(TABLE_TRAIN)
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(tmp_path / "train.py",))
    [loader] = collect(ctx)["scripts"]["loaders"]
    if held:
        assert "Data is one of windows.Windows, windows.Hours" in loader["dataset"]["in_memory"]
    else:
        assert "in_memory" not in loader["dataset"]


def test_a_data_module_fitted_by_a_gpu_trainer_of_the_run_is_judged(tmp_path: Path) -> None:
    """A Lightning data module's loader over JPEGs, and a file of the same run that
    imports it and fits a Trainer on accelerator="gpu": Lightning copies its batches to
    the GPU (non_blocking), so pinning is judged (EC502), not left to an unseen importer."""
    from conftest import run_results

    data = (
        "import lightning as L\nimport torchvision\nfrom torch.utils.data import DataLoader\n"
        "class Images(L.LightningDataModule):\n"
        "    def train_dataloader(self):\n"
        "        return DataLoader(torchvision.datasets.ImageFolder('x'), num_workers=1)\n"
    )
    train = (
        "import lightning as L\nfrom data import Images\n"
        "trainer = L.Trainer(accelerator='gpu', devices=1, precision='bf16-mixed')\n"
        "trainer.fit(Net(), datamodule=Images())\n"
    )
    found = run_results(tmp_path, {"data.py": data, "train.py": train})["EC502"]
    assert [f.location.line for f in found.findings] == [6]
    alone = run_results(tmp_path / "alone", {"data.py": data})["EC502"]
    assert alone.status.value == "unknown" and "a data module" in alone.reason


MAKER = (
    "from torch.utils.data import DataLoader\n"
    "def make_data_loader(args, **kwargs):\n"
    "    train = DataLoader(Images(args), batch_size=8, shuffle=True, {settings}**kwargs)\n"
    "    val = DataLoader(Images(args), batch_size=8, **kwargs)\n"
    "    return train, val\n"
)
MAKER_TRAIN = (
    "import argparse\n"
    "from dataloaders import make_data_loader\n"
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument('--workers', type=int, default=4)\n"
    "args = parser.parse_args()\n"
    "kwargs = {'num_workers': args.workers, 'pin_memory': True}\n"
    "train_loader, val_loader = make_data_loader(args, **kwargs)\n"
    "for epoch in range(50):\n"
    "    for batch in train_loader:\n"
    "        step(batch)\n"
)


@pytest.mark.parametrize(
    "settings, persistent",
    [
        ("", (True, False)),  # set by neither: DataLoader's default
        ("persistent_workers=True, ", None),  # the maker's own setting: left to it
        ("**{}, ", None),  # another ** merged in: left to the maker
        ("kwargs.setdefault", None),  # the maker changes its kwargs: left to it
    ],
)
def test_a_maker_of_the_run_forwarding_the_caller_s_kwargs(
    tmp_path: Path, settings: str, persistent: Any
) -> None:
    """pytorch-deeplab-xception: train.py's `make_data_loader(args, **kwargs)`, `kwargs =
    {'num_workers': args.workers, 'pin_memory': True}`, defined in the run's
    dataloaders/__init__.py, whose DataLoaders take the caller's **kwargs whole: what
    neither sets is DataLoader's default (persistent_workers False, EC503 at the call);
    a setting of the maker's own counts; a maker that changes its kwargs, or is out of
    the run, leaves the settings it is not handed unknown (left to the maker, as for one
    out of sight)."""
    (tmp_path / "dataloaders").mkdir()
    maker = MAKER.format(settings="" if settings == "kwargs.setdefault" else settings)
    if settings == "kwargs.setdefault":
        rewrite = "    kwargs.setdefault('drop_last', True)\n"
        maker = maker.replace("    train =", rewrite + "    train =")
    (tmp_path / "dataloaders" / "__init__.py").write_text(maker)
    (tmp_path / "train.py").write_text(MAKER_TRAIN)

    def call(*paths: Path) -> dict[str, Any]:
        ctx = CollectContext(interpreter=interpreter.current(), scripts=paths)
        [found] = [x for x in collect(ctx)["scripts"]["loaders"] if x["path"].endswith("train.py")]
        return found  # type: ignore[no-any-return]

    found = call(tmp_path / "train.py", tmp_path / "dataloaders" / "__init__.py")
    # named alone, train.py reads the package beside it as Python would import it
    assert call(tmp_path / "train.py") == found
    (tmp_path / "dataloaders").rename(tmp_path / "elsewhere")  # out of sight
    alone = call(tmp_path / "train.py")
    assert "persistent_workers" not in alone["args"]
    assert alone["built_by"] == "make_data_loader(), out of this file"
    if persistent is None:
        assert "persistent_workers" not in found["args"]
        return
    setting = found["args"]["persistent_workers"]
    assert (setting["known"], setting["value"]) == persistent
    assert found["args"]["pin_memory"]["value"] is True
    assert found["built_by"].startswith("make_data_loader() in ")


def test_ec503_at_the_call_of_a_maker_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding is placed at the call handed the settings (train.py:7), as for a maker
    out of sight; named alone, train.py reads the maker beside it; with the maker out of
    sight, EC503 cannot say."""
    (tmp_path / "dataloaders").mkdir()
    (tmp_path / "dataloaders" / "__init__.py").write_text(MAKER.format(settings=""))
    (tmp_path / "train.py").write_text(MAKER_TRAIN)
    monkeypatch.chdir(tmp_path)
    both = ["scripts", "train.py", "dataloaders/__init__.py", "--select", "EC503"]
    result = CliRunner().invoke(app, [*both, "--exit-zero"], catch_exceptions=False)
    assert "train.py:7:" in result.stdout and " EC503 " in result.stdout, result.stdout
    alone = CliRunner().invoke(app, [*both[:2], *both[3:], "--exit-zero"])
    assert "train.py:7:" in alone.stdout and " EC503 " in alone.stdout, alone.stdout
    (tmp_path / "dataloaders").rename(tmp_path / "elsewhere")  # out of sight
    unseen = CliRunner().invoke(app, [*both[:2], *both[3:], "--exit-zero"])
    assert " EC503 " not in unseen.stdout, unseen.stdout


SAMPLERS = (
    "import numpy as np\n"
    "class BalancedTrainSampler(object):\n"
    "    def __init__(self, n, batch_size):\n"
    "        self.n, self.batch_size = n, batch_size\n"
    "    def __iter__(self):\n"
    "        while True:\n"
    "            batch = []\n"
    "            for _ in range(self.batch_size):\n"
    "                if np.random.rand() < 0.5:\n"
    "                    break\n"  # leaves the inner loop only
    "                batch.append(np.random.randint(self.n))\n"
    "            yield batch\n"
    "class EvaluateSampler(object):\n"
    "    def __init__(self, n, batch_size):\n"
    "        self.n, self.batch_size = n, batch_size\n"
    "    def __iter__(self):\n"
    "        pointer = 0\n"
    "        while True:\n"
    "            if pointer >= self.n:\n"
    "                break\n"
    "            yield list(range(pointer, pointer + self.batch_size))\n"
    "            pointer += self.batch_size\n"
)
SAMPLED_TRAIN = (
    "import torch\n"
    "from samplers import BalancedTrainSampler, EvaluateSampler\n"
    "balanced = 'balanced'\n"
    "if balanced == 'balanced':\n"
    "    Sampler = BalancedTrainSampler\n"
    "else:\n"
    "    Sampler = EvaluateSampler\n"
    "train_loader = torch.utils.data.DataLoader(dataset, batch_sampler=Sampler(100, 8),\n"
    "    num_workers=8, pin_memory=True)\n"
    "eval_loader = torch.utils.data.DataLoader(dataset, batch_sampler=EvaluateSampler(100, 8),\n"
    "    num_workers=8, pin_memory=True)\n"
)


def test_a_batch_sampler_of_another_file_yielding_without_end(tmp_path: Path) -> None:
    """audioset_tagging_cnn: `batch_sampler=Sampler(...)`, the name bound to a sampler
    class of data_generator.py whose `__iter__` is a `while True:` it never leaves (the
    inner loop's break leaves only that loop): the training loop makes one endless pass,
    its workers never restart (no EC503). A sampler whose loop breaks ends each pass."""
    (tmp_path / "samplers.py").write_text(SAMPLERS)
    (tmp_path / "train.py").write_text(SAMPLED_TRAIN)
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(tmp_path / "train.py",))
    train, evaluate = collect(ctx)["scripts"]["loaders"]
    assert "BalancedTrainSampler(...) yields without end" in train["endless"]
    assert evaluate["endless"] is None
    (tmp_path / "samplers.py").write_text(
        SAMPLERS.replace(
            "            yield batch\n", "            yield batch\n            return\n"
        )
    )
    train, _ = collect(ctx)["scripts"]["loaders"]
    assert train["endless"] is None


POSITIONAL_MAKER = (
    "from torch.utils.data import DataLoader\n"
    "def make_val_loader(path, batch_size, n_cpu):\n"
    "{rebind}"
    "    return DataLoader(Images(path), batch_size=batch_size, num_workers=n_cpu)\n"
)
POSITIONAL_TRAIN = (
    "import argparse\n"
    "from evaluate import make_val_loader\n"
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument('--n_cpu', type=int, default=8)\n"
    "args = parser.parse_args()\n"
    "val_loader = make_val_loader('val.txt', 16, {argument})\n"
    "for epoch in range(50):\n"
    "    for batch in val_loader:\n"
    "        step(batch)\n"
)


@pytest.mark.parametrize(
    "argument, rebind, workers",
    [
        ("args.n_cpu", "", 8),  # positionally, at the maker's parameter
        ("n_cpu=args.n_cpu", "", 8),  # by the parameter's name
        ("args.n_cpu", "    n_cpu = min(n_cpu, 2)\n", None),  # the maker changes it
        ("", "", None),  # not handed: the maker's own business
    ],
)
def test_a_worker_count_handed_positionally_to_a_maker_of_the_run(
    tmp_path: Path, argument: str, rebind: str, workers: Any
) -> None:
    """PyTorch-YOLOv3: train.py's `_create_validation_data_loader(path, bs, size,
    args.n_cpu)`, defined in the run's test.py as `DataLoader(..., num_workers=n_cpu)`:
    the argument at that parameter is the loader's worker count, judged at the call
    (`built_by` names the file); a maker that rebinds the parameter keeps its own."""
    (tmp_path / "evaluate.py").write_text(POSITIONAL_MAKER.format(rebind=rebind))
    if not argument:
        train = POSITIONAL_TRAIN.replace(", {argument})", ")")
    else:
        train = POSITIONAL_TRAIN.format(argument=argument)
    (tmp_path / "train.py").write_text(train)
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(tmp_path / "train.py",))
    loaders = [x for x in collect(ctx)["scripts"]["loaders"] if x["path"].endswith("train.py")]
    if workers is None:
        assert loaders == []
        return
    [found] = loaders
    assert found["args"]["num_workers"]["value"] == workers
    assert found["built_by"].startswith("make_val_loader() in ")
