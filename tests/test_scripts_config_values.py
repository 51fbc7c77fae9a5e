"""Values from the file's config objects (dataclass fields, classes named like configs,
objects a function builds and returns), judged at their default as argparse options are;
endless samplers; model names in CamelCase; MPI and Horovod ranks (issue 11, round 4).
Each snippet goes through the real analyser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envcheck.scripts.analyze import analyze_file


def analyse(tmp_path: Path, source: str) -> Any:
    (tmp_path / "train.py").write_text(source)
    report = analyze_file(tmp_path / "train.py", "train.py")
    assert report.error is None
    return report


def workers(report: Any) -> list[dict[str, Any]]:
    return [x["args"]["num_workers"] for x in report.loaders]


def test_dataclass_field_default(tmp_path: Path) -> None:
    report = analyse(
        tmp_path,
        "from dataclasses import dataclass, field\n"
        "from torch.utils.data import DataLoader\n"
        "@dataclass\n"
        "class Data:\n"
        "    num_workers: int = 4\n"
        "    pin: bool = field(default=True)\n"
        "class Module:\n"
        "    def __init__(self, cfg: Data):\n"
        "        self.cfg = cfg\n"
        "    def loader(self):\n"
        "        return DataLoader(\n"
        "            ds, num_workers=self.cfg.num_workers, pin_memory=self.cfg.pin\n"
        "        )\n",
    )
    [found] = workers(report)
    assert found["known"] and found["value"] == 4
    assert "Data.num_workers = 4" in found["source"]
    assert report.loaders[0]["args"]["pin_memory"]["value"] is True


def test_config_built_and_returned_by_a_function(tmp_path: Path) -> None:
    # minGPT's Trainer.get_default_config(): C = CN(); C.num_workers = 4; return C
    report = analyse(
        tmp_path,
        "import torch\n"
        "from torch.utils.data.dataloader import DataLoader\n"
        "class Trainer:\n"
        "    @staticmethod\n"
        "    def get_default_config():\n"
        "        C = CN()\n"
        "        C.num_workers = 4\n"
        "        return C\n"
        "    def __init__(self, config):\n"
        "        self.config = config\n"
        "    def run(self):\n"
        "        config = self.config\n"
        "        return DataLoader(ds, num_workers=config.num_workers)\n",
    )
    [found] = workers(report)
    assert found["known"] and found["value"] == 4
    assert "get_default_config(): C.num_workers = 4" in found["source"]


def test_config_defaults_that_disagree_stay_unknown(tmp_path: Path) -> None:
    report = analyse(
        tmp_path,
        "from torch.utils.data import DataLoader\n"
        "class TrainConfig:\n"
        "    num_workers = 4\n"
        "class EvalConfig:\n"
        "    num_workers = 0\n"
        "def make(cfg):\n"
        "    return DataLoader(ds, num_workers=cfg.num_workers)\n",
    )
    [found] = workers(report)
    assert not found["known"] and "differ" in found["source"]


def test_plain_class_attributes_and_the_objects_own_attributes_are_not_config(
    tmp_path: Path,
) -> None:
    """A class not named like a config is not one; `self.device` is the object's own."""
    report = analyse(
        tmp_path,
        "from torch.utils.data import DataLoader\n"
        "class Model:\n"
        "    num_workers = 4\n"
        "def make(cfg):\n"
        "    return DataLoader(ds, num_workers=cfg.num_workers)\n",
    )
    [found] = workers(report)
    assert not found["known"]


@pytest.mark.parametrize(
    ("sampler", "endless"),
    [
        ("torch.utils.data.RandomSampler(ds, replacement=True, num_samples=int(1e10))", True),
        ("InfiniteSampler(len(ds))", True),
        ("torch.utils.data.RandomSampler(ds)", False),
    ],
)
def test_endless_samplers(tmp_path: Path, sampler: str, endless: bool) -> None:
    report = analyse(
        tmp_path,
        "import torch\n"
        f"loader = torch.utils.data.DataLoader(ds, sampler={sampler}, num_workers=4)\n",
    )
    assert bool(report.loaders[0]["endless"]) is endless


@pytest.mark.parametrize(
    ("model", "conv", "matmul"),
    [
        ("GeneratorResNet(shape, 9)", True, []),
        ("GPT(config)", False, ["GPT"]),
        ("TransformerModel(ntokens)", False, ["TransformerModel"]),
        ("Discriminator(shape)", False, []),
        ("convert_image(x)", False, []),
    ],
)
def test_model_names_in_camel_case(tmp_path: Path, model: str, conv: bool, matmul: Any) -> None:
    report = analyse(tmp_path, f"import torch\nfrom models import *\nmodel = {model}\n")
    assert report.facts["conv_layers"] is conv
    assert report.facts["matmul_layers"] == matmul


def test_a_project_op_module_named_for_convolutions(tmp_path: Path) -> None:
    # stylegan2-pytorch: `from op import conv2d_gradfix` ... conv2d_gradfix.no_weight_gradients()
    report = analyse(
        tmp_path,
        "import torch\nfrom op import conv2d_gradfix\n"
        "with conv2d_gradfix.no_weight_gradients():\n    pass\n",
    )
    assert report.facts["conv_layers"] is True


@pytest.mark.parametrize(
    "source",
    [
        "from mpi4py import MPI\nrank = MPI.COMM_WORLD.Get_rank()\n",
        "from . import dist_util\ndist_util.setup_dist()\n",
        "import horovod.torch as hvd\nhvd.init()\n",
    ],
)
def test_mpi_and_horovod_ranks_are_one_process_per_gpu(tmp_path: Path, source: str) -> None:
    found = analyse(tmp_path, "import torch\n" + source).facts["processes_per_node"]
    assert found is not None and found["per_gpu"] is True and found["count"] is None
