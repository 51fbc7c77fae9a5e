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


def test_worker_settings_handed_to_a_maker_in_the_file(tmp_path: Path) -> None:
    report = analyse(
        tmp_path,
        "from torch.utils.data import DataLoader\n"
        "def make_loaders(ds, **kwargs):\n"
        "    return DataLoader(ds, batch_size=8, **kwargs)\n"
        "def main():\n"
        "    kwargs = {'num_workers': 4, 'pin_memory': True}\n"
        "    return make_loaders(ds, **kwargs)\n",
    )
    [loader] = report.loaders
    assert loader["opaque_kwargs"] == []
    assert loader["args"]["num_workers"]["value"] == 4
    assert loader["args"]["pin_memory"]["value"] is True


def test_callers_that_disagree_leave_the_makers_kwargs_opaque(tmp_path: Path) -> None:
    report = analyse(
        tmp_path,
        "from torch.utils.data import DataLoader\n"
        "def make_loader(ds, **kwargs):\n"
        "    return DataLoader(ds, **kwargs)\n"
        "a = make_loader(ds, num_workers=4)\n"
        "b = make_loader(ds, num_workers=0)\n",
    )
    assert report.loaders[0]["opaque_kwargs"] == ["kwargs"]


def test_a_maker_out_of_sight_is_judged_on_its_worker_count_only(tmp_path: Path) -> None:
    """`make_data_loader(args, **kwargs)` (pytorch-deeplab-xception), `create_loader(...,
    num_workers=args.workers)` (timm): EC504 judges the count; pinning and persistent
    workers are the maker's, out of sight: unknown, never 'not given'."""
    from test_scripts_torch import audit

    (tmp_path / "train.py").write_text(
        "import argparse\nimport torch\n"
        "from dataloaders import make_data_loader\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--workers', type=int, default=32)\n"
        "parser.add_argument('--naflex', action='store_true')\n"
        "args = parser.parse_args()\n"
        "kwargs = {'num_workers': args.workers, 'pin_memory': True}\n"
        "train_loader = make_data_loader(args, **kwargs)\n"
        "if args.naflex:\n"
        "    other = make_naflex_loader(args, num_workers=64)\n"
        "options = dict(num_workers=args.workers)\n"
        "model = ResNet50().cuda()\n"
        "for x, y in train_loader:\n"
        "    model(x.cuda()).sum().backward()\n"
    )
    results = audit(tmp_path / "train.py", rules=("EC502", "EC503", "EC504"))
    [finding] = results["EC504"].findings
    assert finding.location.line == 9 and "argparse --workers default" in finding.message
    assert results["EC503"].status.value == "unknown"
    assert "left to make_data_loader(), out of this file" in results["EC503"].reason


def test_a_data_module_that_neither_trains_nor_names_a_device_leaves_pinning_unknown(
    tmp_path: Path,
) -> None:
    """guided-diffusion's image_datasets.py: the trainer elsewhere decides whether (and
    with non_blocking) batches are copied to the GPU; EC501 is still judged."""
    from test_scripts_torch import audit

    (tmp_path / "data.py").write_text(
        "from torch.utils.data import DataLoader\n"
        "def load_data(dataset, batch_size):\n"
        "    loader = DataLoader(dataset, batch_size=batch_size, num_workers=1)\n"
        "    while True:\n"
        "        yield from loader\n"
    )
    results = audit(tmp_path / "data.py", rules=("EC501", "EC502"))
    assert results["EC502"].status.value == "unknown"
    assert "neither trains nor names a device" in results["EC502"].reason
    assert results["EC501"].status.value == "pass"


DEFAULT_KWARGS_METHOD = """
from torch.utils.data import DataLoader


class Trainer:
    def create_train_dataloader(self, batch_size, train_dl_kwargs=None):
        kwargs = self.get_default_train_dl_kwargs(batch_size)
        return DataLoader(dataset=self.train_dataset, **kwargs)

    def get_default_train_dl_kwargs(self, batch_size):
        return {"shuffle": True, "batch_size": batch_size, "num_workers": 4}
"""


def test_loader_settings_from_a_method_returning_a_dict_literal(tmp_path: Path) -> None:
    """pytorch-accelerated's `get_default_train_dl_kwargs()`: the keys of the dict the
    method always returns are the loader's settings; a value built from the method's
    parameters is there but known only when it runs."""
    [loader] = analyse(tmp_path, DEFAULT_KWARGS_METHOD).loaders
    assert loader["opaque_kwargs"] == []
    assert loader["args"]["num_workers"]["value"] == 4
    assert loader["args"]["batch_size"]["known"] is False
    assert "pin_memory" not in loader["args"]  # not given: DataLoader's default


def test_a_method_returning_several_dicts_stays_opaque(tmp_path: Path) -> None:
    source = DEFAULT_KWARGS_METHOD.replace(
        '        return {"shuffle": True,',
        '        if batch_size > 8:\n            return {}\n        return {"shuffle": True,',
    )
    [loader] = analyse(tmp_path, source).loaders
    assert loader["opaque_kwargs"] == ["kwargs"]


def test_settings_chosen_by_cuda_availability_are_the_gpu_run_s(tmp_path: Path) -> None:
    """`num_workers=4 if torch.cuda.is_available() else 0`, `pin_memory=torch.cuda.
    is_available()`: the rules judge GPU runs, where the test is true."""
    [loader] = analyse(
        tmp_path,
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, num_workers=4 if torch.cuda.is_available() else 0,\n"
        "                    pin_memory=torch.cuda.is_available())\n",
    ).loaders
    assert loader["args"]["num_workers"]["value"] == 4
    assert "on a GPU run" in loader["args"]["num_workers"]["source"]
    assert loader["args"]["pin_memory"]["value"] is True


PER_GPU_WORKERS = """
import os
import torch
from torch.utils.data import DataLoader


def create_train_dataloader(ds, batch_size, train_dl_kwargs=None):
    kwargs = {
        "batch_size": batch_size,
        "num_workers": max(os.cpu_count() // torch.cuda.device_count(), 1),
    }
    if train_dl_kwargs is not None:
        kwargs.update(train_dl_kwargs)
    return DataLoader(ds, **kwargs)


def train(model, ds):
    loader = create_train_dataloader(ds, 32)
    model.to("cuda")
    for epoch in range(10):
        for batch in loader:
            model(batch.to("cuda")).backward()
"""


def test_a_worker_count_over_cpus_and_gpus_is_evaluated_on_the_target(tmp_path: Path) -> None:
    """`max(os.cpu_count() // torch.cuda.device_count(), 1)` on 2 CPUs and 8 GPUs is 1
    worker; merging `train_dl_kwargs=None` cannot run at its default (dict.update(None)
    raises), so the dict is known."""
    from test_scripts_loaders import verdicts

    found = verdicts(tmp_path, PER_GPU_WORKERS)
    assert found["EC503"].status.value == "fail"
    [finding] = found["EC503"].findings
    assert "= 1 with the training machine's 2 CPUs and 8 GPUs" in finding.message
    assert found["EC501"].status.value == "pass"


STORED_LOADER_OPTIONS = """
import torch
from torch.utils.data import DataLoader


class Trainer:
    def create_train_dataloader(self, batch_size, train_dl_kwargs=None):
        options = {"batch_size": batch_size, "num_workers": 1, "shuffle": True}
        if train_dl_kwargs is not None:
            options.update(train_dl_kwargs)
        self._train_dl_kwargs = options
        return DataLoader(self.train_dataset, **self._train_dl_kwargs)

    def train(self, model):
        loader = self.create_train_dataloader(32)
        model.to("cuda")
        for epoch in range(10):
            for batch in loader:
                model(batch.to("cuda")).backward()
"""


def test_options_stored_on_the_object_are_read_back_in_the_same_method(tmp_path: Path) -> None:
    """`self._dl_kwargs = options` then `DataLoader(**self._dl_kwargs)`: the stored dict
    is the one just built, so the loader's worker count is known."""
    from test_scripts_loaders import verdicts

    found = verdicts(tmp_path, STORED_LOADER_OPTIONS)
    assert found["EC503"].status.value == "fail"
    [finding] = found["EC503"].findings
    assert "via **self._train_dl_kwargs" in finding.message


def test_an_attribute_assigned_twice_in_the_method_stays_unknown(tmp_path: Path) -> None:
    """Two different dicts stored under one attribute: which one reaches the loader
    depends on the run, so nothing is judged from either."""
    from test_scripts_loaders import verdicts

    source = STORED_LOADER_OPTIONS.replace(
        "        self._train_dl_kwargs = options\n",
        "        self._train_dl_kwargs = options\n"
        "        if batch_size > 64:\n"
        "            self._train_dl_kwargs = train_dl_kwargs\n",
    )
    found = verdicts(tmp_path, source)
    assert found["EC503"].status.value == "unknown"


OVERRIDDEN_WORKERS = """
import argparse
import torch
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=4)
parser.add_argument("--dataset", default="")
parser.add_argument("--debug", action="store_true")
args = parser.parse_args()


def main(dataset, model):
    eval_workers = args.workers
    if args.distributed and "tfds" in args.dataset:
        eval_workers = min(2, args.workers)
    loader = DataLoader(dataset, num_workers=eval_workers, pin_memory=True)
    model.cuda()
    for epoch in range(10):
        for batch in loader:
            model(batch.cuda(non_blocking=True)).backward()
"""


def test_an_override_under_a_test_false_at_the_defaults_is_not_taken(tmp_path: Path) -> None:
    """`if args.distributed and 'tfds' in args.dataset:` is false at the defaults (the
    dataset is ''), whatever args.distributed is: the loader gets args.workers = 4."""
    from test_scripts_loaders import verdicts

    found = verdicts(tmp_path, OVERRIDDEN_WORKERS)
    assert found["EC504"].status.value == "fail"
    [finding] = found["EC504"].findings
    assert "argparse --workers default" in finding.message


@pytest.mark.parametrize(
    ("test", "status"),
    [
        ("args.debug", "fail"),  # store_true: False at the defaults, override skipped
        ("not args.debug", "pass"),  # taken at the defaults: 2 workers on 2 CPUs
        ("args.distributed", "unknown"),  # set at run time: the source does not settle it
        ("torch.cuda.is_available()", "pass"),  # a GPU run takes it
    ],
)
def test_an_override_is_taken_as_its_test_holds_at_the_defaults(
    tmp_path: Path, test: str, status: str
) -> None:
    from test_scripts_loaders import verdicts

    source = OVERRIDDEN_WORKERS.replace(
        'if args.distributed and "tfds" in args.dataset:', f"if {test}:"
    )
    assert verdicts(tmp_path, source)["EC504"].status.value == status


def test_an_assignment_in_a_loop_leaves_the_value_undecided(tmp_path: Path) -> None:
    from test_scripts_loaders import verdicts

    source = OVERRIDDEN_WORKERS.replace(
        '    if args.distributed and "tfds" in args.dataset:\n',
        "    for _ in range(args.workers):\n",
    )
    assert verdicts(tmp_path, source)["EC504"].status.value == "unknown"


PLACEHOLDER_WORKERS = """
from dataclasses import dataclass
import torch
from torch.utils.data import DataLoader


@dataclass
class TrainerConfig:
    max_epochs: int = None
    data_loader_workers: int = None


class Trainer:
    def __init__(self, config: TrainerConfig, model, dataset):
        self.config = config
        self.loader = DataLoader(dataset, num_workers=self.config.data_loader_workers)
        self.model = model.to("cuda")

    def train(self):
        for epoch in range(self.config.max_epochs):
            for batch in self.loader:
                self.model(batch.to("cuda")).sum().backward()
"""


def test_a_none_worker_count_is_a_placeholder_the_run_fills(tmp_path: Path) -> None:
    """A config field defaulting to None (filled from YAML at run time): DataLoader
    rejects num_workers=None, so the count is not judged from it."""
    from test_scripts_loaders import verdicts

    found = verdicts(tmp_path, PLACEHOLDER_WORKERS)
    for rule in ("EC501", "EC503", "EC504"):
        assert found[rule].status.value == "unknown", rule
        assert "placeholder" in found[rule].reason


NAMESPACE_DICT = """
import argparse
import torch
from torch.utils.data import DataLoader


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_workers", default=4, type=int)
    parser.add_argument("--epochs", default=100, type=int)
    config = parser.parse_args()
    return config


def main():
    config = vars(parse_args())
    config["name"] = "run"
    loader = DataLoader(ds, batch_size=16, num_workers=config["num_workers"], pin_memory=True)
    model = Net().cuda()
    for epoch in range(config["epochs"]):
        for x, y in loader:
            model(x.cuda()).sum().backward()
"""


@pytest.mark.parametrize(
    ("change", "value", "source"),
    [
        ({}, 4, "argparse --num_workers default"),  # pytorch-nested-unet
        ({'config["num_workers"]': 'config.get("num_workers")'}, 4, "argparse --num_workers"),
        ({"vars(parse_args())": "parse_args().__dict__"}, 4, "argparse --num_workers"),
        ({"vars(parse_args())": "vars(self)"}, None, "computed at run time"),
        ({"config = vars(parse_args())": "args = parse_args(); config = vars(args)"}, 4, "argp"),
        ({"config = vars(parse_args())": "args = parse_args(); config = args.__dict__"}, 4, "argp"),
        ({'config["name"] = "run"': 'config["num_workers"] = 0'}, None, "is set in the file"),
        ({'config["name"] = "run"': "config.update(load_yaml())"}, None, "is set in the file"),
        ({'config["num_workers"]': 'config["workers"]'}, None, "not an argparse option"),
        ({"vars(parse_args())": "load_config()"}, None, "computed at run time"),
    ],
)
def test_an_option_read_from_the_namespace_as_a_dict(
    tmp_path: Path, change: dict[str, str], value: Any, source: str
) -> None:
    """`config = vars(parse_args())` then `config['num_workers']`: the argparse option at
    its default, as `args.num_workers` is; unknown where the file sets the key itself or
    the dict is not the parsed command line."""
    text = NAMESPACE_DICT
    for old, new in change.items():
        assert old in text
        text = text.replace(old, new)
    [found] = workers(analyse(tmp_path, text))
    assert found["value"] == value and found["known"] is (value is not None)
    assert source in found["source"]


SET_AFTER_PARSING = """
import argparse
import torch
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=4)
parser.add_argument("--debug", action="store_true")
args = parser.parse_args()
args.gpus = torch.cuda.device_count()
OVERRIDE


def main(dataset, model):
    loader = DataLoader(dataset, num_workers=args.workers, pin_memory=True)
    model.cuda()
    for epoch in range(10):
        for batch in loader:
            model(batch.cuda(non_blocking=True)).backward()


if __name__ == "__main__":
    main(ds, Net())
"""


@pytest.mark.parametrize(
    ("override", "status"),
    [
        ("pass", "fail"),  # as parsed: 4 workers on 2 CPUs
        ("args.workers = 4 * args.gpus if args.gpus else 8", "fail"),  # ViT-CIFAR: 32
        ("args.workers = 4 * args.gpus if not args.gpus else 1", "pass"),
        ("args.workers = 2 if args.gpus else 8", "pass"),
        ("args.workers = 0", "pass"),  # the file's own value, not the option's default
        ("args.workers = min(args.workers, 2)", "pass"),  # reads the parsed 4
        ("args.workers = 1\nargs.workers *= 4", "fail"),
        ("if args.debug:\n    args.workers = 0", "fail"),  # store_true: not taken
        ("if not args.debug:\n    args.workers = 0", "pass"),
        ("if args.gpus:\n    args.workers = 2", "pass"),  # a GPU run has one
        ("if __name__ == '__main__':\n    args.workers = 2", "pass"),
        # a test the source does not settle: passed over, as parsed (imagenet's
        # per-process split under `if args.distributed:`)
        ("if args.distributed:\n    args.workers = 1", "fail"),
        ("args.workers, args.rank = 2, 0", "unknown"),
        ("other.workers = 0", "fail"),  # another object's attribute
    ],
)
def test_an_option_set_on_the_namespace_after_parsing(
    tmp_path: Path, override: str, status: str
) -> None:
    """`args.num_workers = 4 * args.gpus if args.gpus else 8` after `parse_args()`
    (ViT-CIFAR): the file's assignment, not the option's default, is what the loader
    gets; the GPU count is the training machine's (8 here), and tested for truth it
    holds on a GPU run."""
    from test_scripts_loaders import verdicts

    source = SET_AFTER_PARSING.replace("OVERRIDE", override)
    assert verdicts(tmp_path, source)["EC504"].status.value == status


def test_an_assignment_after_the_read_in_the_same_function_is_not_its_value(
    tmp_path: Path,
) -> None:
    from test_scripts_loaders import verdicts

    source = SET_AFTER_PARSING.replace("OVERRIDE", "pass").replace(
        "    model.cuda()\n", "    model.cuda()\n    args.workers = 0\n"
    )
    assert verdicts(tmp_path, source)["EC504"].status.value == "fail"


def test_a_worker_count_only_the_file_sets_on_the_namespace(tmp_path: Path) -> None:
    """ViT-CIFAR: `args.num_workers` is no option; `args.gpus =
    torch.cuda.device_count()` then `args.num_workers = 4*args.gpus if args.gpus else 8`
    gives 32 on the 8-GPU node (both branches above its 2 CPUs)."""
    from test_scripts_loaders import verdicts

    source = SET_AFTER_PARSING.replace(
        "OVERRIDE", "args.num_workers = 4*args.gpus if args.gpus else 8"
    ).replace("num_workers=args.workers", "num_workers=args.num_workers")
    found = verdicts(tmp_path, source)["EC504"]
    assert found.status.value == "fail"
    assert "4 * torch.cuda.device_count() = 32" in found.findings[0].message


# pytorchvideo's KineticsDataModule keeps the parsed namespace: `self.args = args`
NAMESPACE_ON_THE_OBJECT = """
import argparse
from torch.utils.data import DataLoader

class KineticsDataModule:
    def __init__(self, args):
        self.args = args

    def train_dataloader(self):
        return DataLoader(ds, batch_size=self.args.batch_size, num_workers=self.args.workers)

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", default=8, type=int)
    parser.add_argument("--batch_size", default=32, type=int)
    args = parser.parse_args()
    data = KineticsDataModule(args)
"""


def test_a_namespace_kept_on_the_object_reads_the_options_defaults(tmp_path: Path) -> None:
    [found] = workers(analyse(tmp_path, NAMESPACE_ON_THE_OBJECT))
    assert found["known"] and found["value"] == 8
    assert "self.args = args in __init__" in found["source"]
    assert "--workers default" in found["source"]


def test_a_namespace_kept_on_the_object_with_an_unknown_option(tmp_path: Path) -> None:
    source = NAMESPACE_ON_THE_OBJECT.replace("self.args.workers", "self.args.loader_workers")
    [found] = workers(analyse(tmp_path, source))
    assert not found["known"]


HPARAMS_MODULE = """\
class HParams:
    def __init__(self, **kwargs):
        self.data = {}
        for key, value in kwargs.items():
            self.data[key] = value

    def __getattr__(self, key):
        return self.data[key]

    def set_hparam(self, key, value):
        self.data[key] = value


hparams = HParams(batch_size=16, num_workers=16, lr=1e-4)
"""


def test_an_object_keeping_its_keyword_arguments_gives_them_as_attributes(
    tmp_path: Path,
) -> None:
    """Wav2Lip's `hparams = HParams(num_workers=16, ...)`, a class storing its **kwargs
    behind a `__getattr__`: `hparams.num_workers` is 16, in the file and in a file of the
    run that imports it; EasyDict/Namespace too. A key the source changes on the object
    (`hparams.set_hparam("num_workers", 4)`) or one **settings may hold is unknown."""
    report = analyse(
        tmp_path,
        HPARAMS_MODULE + "from torch.utils.data import DataLoader\n"
        "from easydict import EasyDict\n"
        "opts = EasyDict(workers=3)\n"
        "a = DataLoader(ds, num_workers=hparams.num_workers)\n"
        "b = DataLoader(ds, num_workers=opts.workers)\n",
    )
    assert [(w["known"], w["value"]) for w in workers(report)] == [(True, 16), (True, 3)]
    assert "HParams(num_workers=16)" in workers(report)[0]["source"]
    report = analyse(
        tmp_path,
        HPARAMS_MODULE + "from torch.utils.data import DataLoader\n"
        "from argparse import Namespace\n"
        "opts = Namespace(**base)\n"
        "hparams.set_hparam('num_workers', 4)\n"
        "a = DataLoader(ds, num_workers=hparams.num_workers)\n"
        "b = DataLoader(ds, num_workers=opts.workers)\n",
    )
    assert [w["known"] for w in workers(report)] == [False, False]


def test_keyword_objects_imported_from_another_file_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_scripts_project_context import audit

    (tmp_path / "setup.py").write_text("")
    (tmp_path / "hparams.py").write_text(HPARAMS_MODULE)
    (tmp_path / "train.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "from hparams import hparams\n"
        "def main():\n"
        "    loader = DataLoader(ds, batch_size=hparams.batch_size,\n"
        "                        num_workers=hparams.num_workers, pin_memory=True)\n"
        "    model = torch.nn.Conv2d(3, 8, 3).cuda()\n"
        "    for x in loader:\n"
        "        model(x.cuda()).sum().backward()\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    )
    report = audit(tmp_path / "train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    found = {f["id"]: f for f in report["findings"]}
    assert "EC504" in found and "HParams(num_workers=16)" in found["EC504"]["message"]


@pytest.mark.parametrize(
    "settings",
    [
        "dnnlib.EasyDict(pin_memory=True, num_workers=3, prefetch_factor=2)",
        "HParams(num_workers=3)",
    ],
)
def test_a_settings_object_given_num_workers_is_no_loader_maker(
    tmp_path: Path, settings: str
) -> None:
    """stylegan2-ada's `args.data_loader_kwargs = dnnlib.EasyDict(num_workers=3, ...)`:
    an attribute dict of settings, handed to the loader built in another module, where
    it is judged; not a loader maker out of sight at this line."""
    report = analyse(
        tmp_path,
        HPARAMS_MODULE + f"import dnnlib\nimport torch\nkwargs = {settings}\nlaunch(kwargs)\n",
    )
    assert report.loaders == []


TRAIN_UTIL = """\
def add_training_arguments(parser, support_dreambooth):
    parser.add_argument("--max_data_loader_n_workers", type=int, default=8)
    parser.add_argument("--persistent_data_loader_workers", action="store_true")
    parser.add_argument("--mixed_precision", default="no", choices=["no", "fp16", "bf16"])


def prepare_accelerator(args):
    from accelerate import Accelerator
    return Accelerator(mixed_precision=args.mixed_precision)
"""

FINE_TUNE = """\
import argparse
import os
import torch
import library.train_util as train_util

def train(args):
    accelerator = train_util.prepare_accelerator(args)
    n_workers = min(args.max_data_loader_n_workers, os.cpu_count())
    loader = torch.utils.data.DataLoader(ds, batch_size=1, num_workers=n_workers,
        persistent_workers=args.persistent_data_loader_workers, pin_memory=True)
    model = torch.nn.Linear(768, 768)
    model = accelerator.prepare(model)
    for epoch in range(10):
        for x in loader:
            with accelerator.autocast():
                loss = model(x).sum()
            accelerator.backward(loss)

def setup_parser():
    parser = argparse.ArgumentParser()
    train_util.add_training_arguments(parser, False)
    parser.add_argument("--train_text_encoder", action="store_true")
    return parser

if __name__ == "__main__":
    parser = setup_parser()
    args = parser.parse_args()
    train(args)
"""


def test_options_added_to_the_files_parser_by_a_helper_of_another_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kohya's sd-scripts: `train_util.add_training_arguments(parser, False)` adds
    --max_data_loader_n_workers (8) and --persistent_data_loader_workers (off) to the
    file's own parser: min(8, 2 CPUs) = 2 workers restarted every epoch (EC503), none
    too many (EC504). `accelerator.autocast()` on the Accelerator train_util builds is
    mixed precision set out of sight: EC507 unknown, not 'without torch.autocast'."""
    from test_scripts_project_context import audit

    (tmp_path / "setup.py").write_text("")
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "__init__.py").write_text("")
    (tmp_path / "library" / "train_util.py").write_text(TRAIN_UTIL)
    (tmp_path / "fine_tune.py").write_text(FINE_TUNE)
    report = audit(tmp_path / "fine_tune.py", cwd=tmp_path, monkeypatch=monkeypatch)
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["EC503"]["status"] == "fail"
    assert checks["EC504"]["status"] == "pass"
    assert checks["EC507"]["status"] == "unknown"
    assert "Accelerator accelerator.autocast() uses" in checks["EC507"]["reason"]
