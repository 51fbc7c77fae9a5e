"""DataLoader facts on shapes from released library code (issue 11): values behind
platform branches, constants returned by a function of the file, `self.x` set by a base
class's constructor, datasets that serve samples from memory, data modules that choose no
device, and Lightning's read-once test hooks. Each snippet goes through the real analyser
and, where a verdict is asserted, the real rules against an 8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import script_results

from envcheck.scripts.analyze import analyze_file

LOADER_RULES = ("EC501", "EC502", "EC503", "EC504")


def analyse(tmp_path: Path, source: str) -> Any:
    (tmp_path / "data.py").write_text(source)
    report = analyze_file(tmp_path / "data.py", "data.py")
    assert report.error is None
    return report


def workers(report: Any) -> list[Any]:
    return [x["args"]["num_workers"]["value"] for x in report.loaders]


def verdicts(tmp_path: Path, source: str) -> dict[str, Any]:
    found = script_results(tmp_path, source)
    return {k: v for k, v in found.items() if k in LOADER_RULES}


# Lightning's demo MNISTDataModule: workers turned off on Windows only
WINDOWS_ONLY = """
from torch.utils.data import DataLoader
from lightning.fabric.utilities.imports import _IS_WINDOWS

class MNISTDataModule:
    def __init__(self, batch_size=32, num_workers=16):
        if num_workers and _IS_WINDOWS:
            num_workers = 0
        self.num_workers = num_workers

    def train_dataloader(self):
        return DataLoader(self.dataset, num_workers=self.num_workers, pin_memory=True)
"""


def test_a_windows_only_branch_is_not_the_linux_path(tmp_path: Path) -> None:
    assert workers(analyse(tmp_path, WINDOWS_ONLY)) == [16]


def test_platform_conditions(tmp_path: Path) -> None:
    source = "from torch.utils.data import DataLoader\nimport os, sys, platform\nn = 4\n"
    for condition in (
        'sys.platform == "win32"',
        'sys.platform.startswith("darwin")',
        'platform.system() == "Windows"',
        'os.name == "nt"',
        'sys.platform in ("win32", "cygwin")',
        "IS_MACOS and fast",
    ):
        source += f"if {condition}:\n    n = 0\n"
    source += "DataLoader(ds, num_workers=n)\n"
    assert workers(analyse(tmp_path, source)) == [4]
    # a branch Linux may take leaves two candidate values: not known
    for other in ("if sys.platform != 'win32':\n", "if not IS_WINDOWS:\n", "if win:\n"):
        assert workers(analyse(tmp_path, source + other + "    n = 2\n")) == [None], other


def test_a_function_of_the_file_returning_a_constant(tmp_path: Path) -> None:
    # d2l: num_workers = d2l.get_dataloader_workers(), d2l = sys.modules[__name__]
    report = analyse(
        tmp_path,
        "import sys\nimport torch\n"
        "d2l = sys.modules[__name__]\n"
        "def get_dataloader_workers():\n"
        "    return 4\n"
        "def varies(n):\n"
        "    return n\n"
        "def load_data(batch_size):\n"
        "    num_workers = d2l.get_dataloader_workers()\n"
        "    a = torch.utils.data.DataLoader(ds, batch_size, num_workers=num_workers)\n"
        "    b = torch.utils.data.DataLoader(ds, num_workers=get_dataloader_workers())\n"
        "    c = torch.utils.data.DataLoader(ds, num_workers=varies(3))\n"
        "    d = torch.utils.data.DataLoader(ds, num_workers=varies(batch_size))\n",
    )
    # varies(3) returns its argument, read at it; varies(batch_size) is not known
    assert workers(report) == [4, 4, 3, None]
    assert report.loaders[0]["args"]["num_workers"]["source"] == (
        "d2l.get_dataloader_workers() returns 4"
    )


def test_self_attribute_set_by_a_base_class_constructor(tmp_path: Path) -> None:
    # torchgeo: GeoDataModule(num_workers=0) -> super().__init__(..., num_workers)
    report = analyse(
        tmp_path,
        "from torch.utils.data import DataLoader\n"
        "class Base:\n"
        "    def __init__(self, dataset_class, batch_size=1, num_workers=0, **kwargs):\n"
        "        self.num_workers = num_workers\n"
        "class Geo(Base):\n"
        "    def __init__(self, dataset_class, batch_size=1, patch=64, num_workers=3):\n"
        "        super().__init__(dataset_class, batch_size, num_workers)\n"
        "    def loader(self):\n"
        "        return DataLoader(self.ds, num_workers=self.num_workers)\n"
        "class Inherits(Base):\n"
        "    def loader(self):\n"
        "        return DataLoader(self.ds, num_workers=self.num_workers)\n"
        "class Spreads(Base):\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        super().__init__(*args, **kwargs)\n"
        "    def loader(self):\n"
        "        return DataLoader(self.ds, num_workers=self.num_workers)\n"
        "class Ignores(Base):\n"
        "    def __init__(self):\n"
        "        pass\n"
        "    def loader(self):\n"
        "        return DataLoader(self.ds, num_workers=self.num_workers)\n",
    )
    assert workers(report) == [3, 0, None, None]


def test_base_class_named_through_the_modules_own_alias(tmp_path: Path) -> None:
    report = analyse(
        tmp_path,
        "import sys\nimport torch\n"
        "d2l = sys.modules[__name__]\n"
        "class DataModule:\n"
        "    def __init__(self, root='../data', num_workers=4):\n"
        "        self.num_workers = num_workers\n"
        "class Fashion(d2l.DataModule):\n"
        "    def __init__(self, batch_size=64):\n"
        "        super().__init__()\n"
        "    def get_dataloader(self, train):\n"
        "        return torch.utils.data.DataLoader(data, num_workers=self.num_workers)\n",
    )
    assert workers(report) == [4]


def test_arguments_kept_as_attributes_by_save_hyperparameters(tmp_path: Path) -> None:
    # d2l: HyperParameters.save_hyperparameters sets the caller's arguments on self
    source = (
        "import inspect, sys\nimport torch\n"
        "d2l = sys.modules[__name__]\n"
        "class HyperParameters:\n"
        "    def save_hyperparameters(self, ignore=[]):\n"
        "        frame = inspect.currentframe().f_back\n"
        "        _, _, _, local_vars = inspect.getargvalues(frame)\n"
        "        self.hparams = {k: v for k, v in local_vars.items() if k not in ignore}\n"
        "        for k, v in self.hparams.items():\n"
        "            setattr(self, k, v)\n"
        "class DataModule(d2l.HyperParameters):\n"
        "    def __init__(self, root='../data', num_workers=4):\n"
        "        self.save_hyperparameters()\n"
        "class FashionMNIST(d2l.DataModule):\n"
        "    def __init__(self, batch_size=64, resize=(28, 28)):\n"
        "        super().__init__()\n"
        "        self.save_hyperparameters(ignore=['resize'])\n"
        "    def get_dataloader(self, train):\n"
        "        return torch.utils.data.DataLoader(\n"
        "            data, self.batch_size, num_workers=self.num_workers)\n"
    )
    report = analyse(tmp_path, source)
    assert workers(report) == [4]
    assert report.loaders[0]["args"]["batch_size"]["value"] == 64


# lightning-hydra-template's MNISTDataModule: Lightning's save_hyperparameters() keeps the
# arguments in self.hparams
LIGHTNING_HPARAMS = """
from lightning import LightningDataModule
from torch.utils.data import DataLoader

class MNISTDataModule(LightningDataModule):
    def __init__(self, data_dir="data/", batch_size=64, num_workers=0, pin_memory=False):
        super().__init__()
        self.save_hyperparameters(logger=False)

    def train_dataloader(self):
        return DataLoader(self.data_train, batch_size=self.hparams.batch_size,
                          num_workers=self.hparams.num_workers,
                          pin_memory=self.hparams["pin_memory"], shuffle=True)
"""


def test_arguments_kept_in_hparams_by_lightning_save_hyperparameters(tmp_path: Path) -> None:
    report = analyse(tmp_path, LIGHTNING_HPARAMS)
    assert workers(report) == [0]
    assert report.loaders[0]["args"]["pin_memory"]["value"] is False
    assert "save_hyperparameters" in report.loaders[0]["args"]["num_workers"]["source"]


@pytest.mark.parametrize(
    "change",
    [
        "self.save_hyperparameters(ignore=['num_workers'])",  # not kept
        "self.save_hyperparameters('batch_size')",  # only batch_size kept
        "self.save_hyperparameters(config)",  # an object's hparams, not the arguments
        "self.save_hyperparameters()\n        self.hparams.update(overrides)",
        "self.save_hyperparameters()\n        self.hparams.num_workers = 4",
        "if stage:\n            self.save_hyperparameters()",  # not on every construction
    ],
)
def test_hparams_the_arguments_do_not_settle_stay_unknown(tmp_path: Path, change: str) -> None:
    source = LIGHTNING_HPARAMS.replace("self.save_hyperparameters(logger=False)", change)
    assert workers(analyse(tmp_path, source)) == [None]


def test_hparams_passed_by_the_file_s_construction(tmp_path: Path) -> None:
    source = LIGHTNING_HPARAMS + "\ndef main():\n    dm = MNISTDataModule(num_workers=8)\n"
    assert workers(analyse(tmp_path, source)) == [8]
    passed = LIGHTNING_HPARAMS + "\ndef main():\n    dm = MNISTDataModule(num_workers=n)\n"
    assert workers(analyse(tmp_path, passed)) == [None]


IN_MEMORY = """
import torch
from torch.utils.data import Dataset, DataLoader

class PTBDataset(Dataset):
    def __init__(self, centers, contexts):
        self.centers, self.contexts = centers, contexts

    def __getitem__(self, index):
        return (self.centers[index].float(), self.contexts[index])

class Images(Dataset):
    def __getitem__(self, index):
        return self.transform(Image.open(self.paths[index]))

class Mapped(Dataset):
    def __init__(self, path):
        self.data = np.memmap(path, dtype=np.uint16, mode="r")

    def __getitem__(self, index):
        return self.data[index]

model = torch.nn.LSTM(32, 32).to("cuda")
a = DataLoader(PTBDataset(c, x), batch_size=512)
b = DataLoader(Images(), batch_size=512)
c = DataLoader(Mapped("train.bin"), batch_size=512)
for batch in a:
    model(batch[0].to("cuda")).sum().backward()
evaluate(model, b, c)  # read: a loader nothing reads is not judged
"""


def test_a_dataset_of_the_file_serving_samples_from_memory(tmp_path: Path) -> None:
    report = analyse(tmp_path, IN_MEMORY)
    assert [x["dataset"].get("in_memory") for x in report.loaders] == [
        "PTBDataset.__getitem__ only indexes data it holds (self.centers, self.contexts)",
        None,
        None,
    ]
    results = verdicts(tmp_path, IN_MEMORY)
    for rule in ("EC501", "EC502"):
        flagged = [f.location.line for f in results[rule].findings]
        assert flagged == [25, 26], (rule, results[rule].reason)


def test_in_memory_batches_copied_non_blocking_still_want_pinning(tmp_path: Path) -> None:
    source = IN_MEMORY.replace('batch[0].to("cuda")', 'batch[0].to("cuda", non_blocking=True)')
    results = verdicts(tmp_path, source)
    assert [f.location.line for f in results["EC501"].findings] == [25, 26]
    assert [f.location.line for f in results["EC502"].findings] == [24, 25, 26]


RANDOM_WINDOW = """
import torch
from torch.utils.data import Dataset, DataLoader

class TextSampler(Dataset):
    def __init__(self, data, seq_len):
        self.data, self.seq_len = data, seq_len

    def __getitem__(self, index):
        start = torch.randint(0, self.data.size(0) - self.seq_len - 1, (1,))
        return self.data[start : start + self.seq_len + 1].long().to("cuda")

model = torch.nn.Embedding(256, 256).to("cuda")
loader = DataLoader(TextSampler(data, 1024), batch_size=4)
for batch in loader:
    model(batch).mean().backward()
"""


def test_a_random_window_of_data_held_in_memory_is_in_memory(tmp_path: Path) -> None:
    """x-transformers' enwik8 sampler: a random offset (torch.randint) into a tensor held,
    its size read, the slice moved to the GPU (EC510's finding): nothing to read or decode,
    and workers or pinned memory would not help (CUDA in forked workers fails)."""
    report = analyse(tmp_path, RANDOM_WINDOW)
    assert report.loaders[0]["dataset"].get("in_memory") == (
        "TextSampler.__getitem__ only indexes data it holds (self.data)"
    )
    results = verdicts(tmp_path, RANDOM_WINDOW)
    assert not results["EC501"].findings and not results["EC502"].findings
    reading = RANDOM_WINDOW.replace(".long()", ".long() + decode(self.paths[index])")
    assert analyse(tmp_path, reading).loaders[0]["dataset"].get("in_memory") is None


AUGMENTED_ARRAYS = """
import numpy as np
import torch
from torch.utils.data import Dataset, DataLoader


def translate(points):
    scale = np.random.uniform(low=2.0 / 3.0, high=3.0 / 2.0, size=[3])
    shift = np.random.uniform(low=-0.2, high=0.2, size=[3])
    return np.add(np.multiply(points, scale), shift).astype("float32")


class PointClouds(Dataset):
    def __init__(self, data, labels, partition):
        self.data, self.label, self.partition = data, labels, partition

    def __getitem__(self, item):
        points = self.data[item][:1024]
        if self.partition == "train":
            points = translate(points)
            np.random.shuffle(points)
        return points, self.label[item]

    def __len__(self):
        return self.data.shape[0]


model = torch.nn.Linear(3, 40).to("cuda")
loader = DataLoader(PointClouds(data, labels, "train"), batch_size=32)
for points, label in loader:
    model(points.to("cuda")).sum().backward()
"""


def test_arrays_held_with_light_numpy_augmentation_are_in_memory(tmp_path: Path) -> None:
    """dgcnn's ModelNet40: point clouds loaded whole at construction, `__getitem__` slicing
    one and scaling, shifting and shuffling it with numpy, through a function of the file
    that does no more: nothing is read or decoded per sample, no EC501/EC502. A numpy
    file read in that function (`np.load`), or a helper the file defines twice, is not."""
    report = analyse(tmp_path, AUGMENTED_ARRAYS)
    assert report.loaders[0]["dataset"].get("in_memory") == (
        "PointClouds.__getitem__ only indexes data it holds (self.data, self.label)"
    )
    results = verdicts(tmp_path, AUGMENTED_ARRAYS)
    assert not results["EC501"].findings and not results["EC502"].findings
    reading = AUGMENTED_ARRAYS.replace(
        "    return np.add(", "    points = np.load(points)\n    return np.add("
    )
    assert analyse(tmp_path, reading).loaders[0]["dataset"].get("in_memory") is None
    redefined = AUGMENTED_ARRAYS + "\ndef translate(points):\n    return decode(points)\n"
    assert analyse(tmp_path, redefined).loaders[0]["dataset"].get("in_memory") is None
    assert verdicts(tmp_path, reading)["EC501"].findings


ALIASED_FIELDS = """
import torch
import torch.utils.data as data

class Pairs(data.Dataset):
    def __init__(self, features, labels):
        self.features_ps, self.labels = features, labels

    def ng_sample(self):
        self.features_fill = self.features_ps + draw(self.features_ps)

    def __getitem__(self, idx):
        features = self.features_fill if self.is_training else self.features_ps
        labels = self.labels
        return features[idx][0], features[idx][1], labels[idx]

model = torch.nn.Embedding(100, 8).cuda()
loader = data.DataLoader(Pairs(train_data, labels), batch_size=256)
for user, item, label in loader:
    model(user.cuda()).sum().backward()
"""


def test_a_local_name_for_data_held_is_indexed_data_held(tmp_path: Path) -> None:
    """NCF's `features = self.features_fill if self.is_training else self.features_ps`,
    then `features[idx][0]`: a sample indexes what the instance holds, as
    `self.features_ps[idx]` would. A name also bound to a read is not."""
    report = analyse(tmp_path, ALIASED_FIELDS)
    assert report.loaders[0]["dataset"].get("in_memory") == (
        "Pairs.__getitem__ only indexes data it holds "
        "(self.features_fill, self.features_ps, self.labels)"
    )
    results = verdicts(tmp_path, ALIASED_FIELDS)
    assert not results["EC501"].findings and not results["EC502"].findings
    read = ALIASED_FIELDS.replace(
        "        labels = self.labels\n",
        "        labels = self.labels\n        features = load(self.paths[idx])\n",
    )
    assert analyse(tmp_path, read).loaders[0]["dataset"].get("in_memory") is None


TENSOR_FILE = """
import os
import torch
from a2c_ppo_acktr.algo import gail

def main(args):
    model = torch.nn.Linear(8, 1).cuda()
    file_name = os.path.join(args.experts_dir, "trajs_{}.pt".format(args.env_name))
    expert_dataset = gail.ExpertDataset(file_name, num_trajectories=4, subsample_frequency=20)
    loader = torch.utils.data.DataLoader(dataset=expert_dataset, batch_size=128, shuffle=True)
    for epoch in range(10):
        for states, actions in loader:
            model(states.cuda()).sum().backward()
"""


@pytest.mark.parametrize(
    ("change", "held"),
    [
        ("", True),
        ('f"{args.experts_dir}/trajs_{args.env_name}.pth"', True),
        ('"trajs_{}.pkl".format(args.env_name)', False),  # pickled records may hold paths
        ("args.experts_dir", False),  # a directory: files read per sample
    ],
)
def test_a_dataset_out_of_sight_handed_one_torch_saved_file(
    tmp_path: Path, change: str, held: bool
) -> None:
    """GAIL's `ExpertDataset("trajs_halfcheetah.pt", num_trajectories=4)`: torch.load
    reads the file whole, so the class out of sight serves tensors from memory."""
    source = TENSOR_FILE
    if change:
        source = source.replace(
            'os.path.join(args.experts_dir, "trajs_{}.pt".format(args.env_name))', change
        )
    report = analyse(tmp_path, source)
    assert bool(report.loaders[0]["dataset"].get("in_memory")) is held
    results = verdicts(tmp_path, source)
    assert bool(results["EC501"].findings) is not held
    assert bool(results["EC502"].findings) is not held
    other = source.replace("num_trajectories=4", "split=args.split")  # a string, unknown
    assert analyse(tmp_path, other).loaders[0]["dataset"].get("in_memory") is None
    # torch.load itself may return any pickled object, a Dataset reading files included
    loaded = source.replace(
        "gail.ExpertDataset(file_name, num_trajectories=4, subsample_frequency=20)",
        "torch.load(file_name)",
    )
    assert analyse(tmp_path, loaded).loaders[0]["dataset"].get("in_memory") is None


def test_a_data_module_leaves_pinning_to_its_importer(tmp_path: Path) -> None:
    """A file that neither trains nor names a device: EC502 is unknown (where its batches
    go is decided elsewhere), while EC501 still judges the worker count."""
    results = verdicts(
        tmp_path,
        "from torch.utils.data import DataLoader\n"
        "class DataModule:\n"
        "    def train_dataloader(self):\n"
        "        return DataLoader(self.train_set, batch_size=64)\n",
    )
    assert results["EC502"].status.value == "unknown"
    assert "a data module" in results["EC502"].reason
    assert results["EC501"].status.value == "fail"


def test_lightning_test_and_predict_loaders_are_read_once(tmp_path: Path) -> None:
    results = verdicts(tmp_path, WINDOWS_ONLY + TEST_HOOKS)
    assert [f.location.line for f in results["EC503"].findings] == [12]
    assert [f.location.line for f in results["EC504"].findings] == [12, 15, 18]
    assert not results["EC501"].findings


TEST_HOOKS = """
    def test_dataloader(self):
        return DataLoader(self.dataset, num_workers=self.num_workers, pin_memory=True)

    def predict_dataloader(self):
        return DataLoader(self.dataset, num_workers=self.num_workers, pin_memory=True)
"""


# timm's create_loader: settings are the function's defaults, the loader class is chosen
# through a variable, and an `except TypeError:` retries the same loader for old PyTorch
LIBRARY_FUNCTION = """
import torch

class MultiEpochsDataLoader(torch.utils.data.DataLoader):
    pass

def create_loader(dataset, num_workers=1, pin_memory=False, persistent_workers=True,
                  use_multi_epochs_loader=False, device=torch.device("cuda")):
    loader_class = torch.utils.data.DataLoader
    if use_multi_epochs_loader:
        loader_class = MultiEpochsDataLoader
    loader_args = dict(
        num_workers=num_workers,
        pin_memory=pin_memory,
        persistent_workers=persistent_workers and num_workers > 0,
    )
    try:
        loader = loader_class(dataset, **loader_args)
    except TypeError:
        loader_args.pop("persistent_workers")
        loader = loader_class(dataset, **loader_args)
    return PrefetchLoader(loader, device=device)
"""


def test_a_library_function_judged_at_its_defaults(tmp_path: Path) -> None:
    report = analyse(tmp_path, LIBRARY_FUNCTION)
    [loader] = report.loaders  # the fallback in the except handler is the same loader
    assert loader["line"] == 18
    args = {k: v["value"] for k, v in loader["args"].items()}
    assert args == {"num_workers": 1, "pin_memory": False, "persistent_workers": True}
    assert loader["args"]["pin_memory"]["source"] == ("via **loader_args, default pin_memory=False")
    results = verdicts(tmp_path, LIBRARY_FUNCTION)
    assert [f.location.line for f in results["EC502"].findings] == [18]
    for rule in ("EC501", "EC503", "EC504"):
        assert results[rule].status.value == "pass", results[rule].reason


def test_a_default_the_files_one_call_overrides_takes_the_passed_value(tmp_path: Path) -> None:
    report = analyse(tmp_path, LIBRARY_FUNCTION + "\ncreate_loader(ds, pin_memory=True)\n")
    assert report.loaders[0]["args"]["pin_memory"]["value"] is True
    assert "passed by the file's call" in report.loaders[0]["args"]["pin_memory"]["source"]
    assert report.loaders[0]["args"]["num_workers"]["value"] == 1


def test_a_default_the_files_calls_override_differently_is_not_known(tmp_path: Path) -> None:
    calls = "\ncreate_loader(ds, pin_memory=True)\ncreate_loader(ds, pin_memory=False)\n"
    report = analyse(tmp_path, LIBRARY_FUNCTION + calls)
    assert report.loaders[0]["args"]["pin_memory"]["known"] is False
    assert report.loaders[0]["args"]["num_workers"]["value"] == 1


def test_comparisons_and_logic_on_known_values(tmp_path: Path) -> None:
    report = analyse(
        tmp_path,
        "from torch.utils.data import DataLoader\n"
        "n = 0\n"
        "DataLoader(ds, num_workers=n, persistent_workers=n > 0)\n"
        "DataLoader(ds, num_workers=2, persistent_workers=flag and n > 0)\n"
        "DataLoader(ds, num_workers=2, persistent_workers=n > 0 and flag)\n"
        "DataLoader(ds, num_workers=2, persistent_workers=n == 0 or flag)\n",
    )
    # `flag and n > 0` is false whatever flag is: an unknown operand does not matter
    # once another one ends the chain
    assert [x["args"]["persistent_workers"]["value"] for x in report.loaders] == [
        False,
        False,
        False,
        True,
    ]
    assert [x["args"]["persistent_workers"]["known"] for x in report.loaders] == [True] * 4


def test_logic_with_an_unknown_operand_that_decides_stays_unknown(tmp_path: Path) -> None:
    report = analyse(
        tmp_path,
        "from torch.utils.data import DataLoader\n"
        "n = 2\n"
        "DataLoader(ds, num_workers=2, persistent_workers=flag and n > 0)\n"
        "DataLoader(ds, num_workers=2, persistent_workers=n == 0 or flag)\n",
    )
    assert [x["args"]["persistent_workers"]["known"] for x in report.loaders] == [False] * 2


# lightning-bolts' SimCLR: a data module of another package given the worker count
FACTORY = """
from argparse import ArgumentParser
from pytorch_lightning import Trainer
from pl_bolts.datamodules import CIFAR10DataModule

parser = ArgumentParser()
parser.add_argument("--num_workers", default=8, type=int)
args = parser.parse_args()
dm = CIFAR10DataModule(data_dir=".", batch_size=256, num_workers=args.num_workers)
kwargs = {"num_workers": args.num_workers}
other = make_loaders(args, **kwargs)
trainer = Trainer(gpus=1)
trainer.fit(model, datamodule=dm)
"""


def test_a_loader_factory_out_of_sight_given_the_worker_count(tmp_path: Path) -> None:
    """The worker count handed to an imported factory is judged (EC504), directly or
    through `**kwargs`; what the factory does with the rest is out of sight (EC502, EC503
    unknown)."""
    report = analyse(tmp_path, FACTORY)
    assert [loader["callee"] for loader in report.loaders] == [
        "pl_bolts.datamodules.CIFAR10DataModule",
        "make_loaders",
    ]
    assert all(loader["built_by"] for loader in report.loaders)
    results = verdicts(tmp_path, FACTORY)
    assert [f.location.line for f in results["EC504"].findings] == [9, 11]
    assert results["EC501"].status.value == "pass"
    for rule in ("EC502", "EC503"):
        assert results[rule].status.value == "unknown"
        assert "CIFAR10DataModule" in results[rule].reason


STATISTICS = """
import torch


def get_mean_and_std(dataset):
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=1, num_workers=2)
    mean = torch.zeros(3)
    for inputs, targets in dataloader:
        mean += inputs.mean()
    return mean / len(dataset)


if __name__ == "__main__":
    preview = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=0)
    for ii, sample in enumerate(preview):
        show(sample["image"].numpy())
        if ii == 1:
            break
"""


def test_a_local_loader_read_by_one_loop_is_iterated_once(tmp_path: Path) -> None:
    """Dataset statistics over one pass: persistent workers would serve nothing; a
    preview that stops after two batches needs no workers at all."""
    found = verdicts(tmp_path, STATISTICS)
    assert found["EC503"].status.value == "pass"
    assert found["EC501"].status.value == "pass"
    assert "only reads 2 batches (the loop at line 15 stops)" in found["EC501"].reason


def test_a_local_loader_read_every_epoch_keeps_its_findings(tmp_path: Path) -> None:
    source = STATISTICS.replace(
        "    for inputs, targets in dataloader:\n        mean += inputs.mean()\n",
        "    for epoch in range(10):\n        for inputs, targets in dataloader:\n"
        "            mean += inputs.mean()\n",
    ).replace("        if ii == 1:\n            break\n", "")
    found = verdicts(tmp_path, source)
    assert found["EC503"].status.value == "fail"
    assert found["EC501"].status.value == "fail"


FLAX_TRAINING = """
import jax
import optax
import torch
from flax.training import train_state
from torchvision import transforms


def main(args, dataset, state):
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, shuffle=True)

    def train_step(state, batch):
        grads = jax.grad(loss_fn)(state.params, batch)
        return state.apply_gradients(grads=grads)

    for epoch in range(args.epochs):
        for batch in loader:
            state = train_step(state, batch)
"""


def test_a_torch_loader_feeding_jax_training_is_judged_for_workers_only(tmp_path: Path) -> None:
    """Flax training that reads a torch DataLoader (diffusers' *_flax.py examples): the
    loader still decodes in the training process (EC501), but pinning serves torch's
    copies only, and the PyTorch precision rules do not apply."""
    found = verdicts(tmp_path, FLAX_TRAINING)
    assert found["EC501"].status.value == "fail"
    assert found["EC502"].status.value == "pass"
    assert "JAX" in found["EC502"].reason
    report = analyse(tmp_path, FLAX_TRAINING)
    assert report.facts["torch"] is False
    assert report.facts["trains_with"] == "jax"


def test_jax_imported_beside_torch_training_stays_torch(tmp_path: Path) -> None:
    source = FLAX_TRAINING.replace(
        "            state = train_step(state, batch)\n",
        "            state = train_step(state, batch)\n            model(batch).sum().backward()\n",
    )
    assert analyse(tmp_path, source).facts["torch"] is True


TRAIN_FUNCTION_AND_MODEL_TRAIN = """
import torch


def train(opt, model, dataset):
    valid_loader = torch.utils.data.DataLoader(dataset, num_workers=2, pin_memory=True)
    model.cuda()
    while True:
        loss = model(next(batches).cuda()).sum()
        loss.backward()
        if step % 2000 == 0:
            model.eval()
            validation(model, valid_loader)
            model.train()


if __name__ == "__main__":
    train(opt, model, dataset)
"""


def test_model_train_in_a_loop_is_not_a_call_of_the_files_train(tmp_path: Path) -> None:
    """`model.train()` inside the step loop calls the model's method, not the file's
    `def train(...)`: the loader train() builds once is not rebuilt, and it is read at
    every validation, so its workers should persist."""
    found = verdicts(tmp_path, TRAIN_FUNCTION_AND_MODEL_TRAIN)
    assert found["EC503"].status.value == "fail"
    looped = TRAIN_FUNCTION_AND_MODEL_TRAIN.replace(
        "    train(opt, model, dataset)\n",
        "    for fold in range(5):\n        train(opt, model, dataset)\n",
    )
    assert verdicts(tmp_path, looped)["EC503"].status.value == "pass"


HANDED_ONCE = """
import torch


def validation(model, criterion, evaluation_loader, opt):
    for i, (images, labels) in enumerate(evaluation_loader):
        preds = model(images.cuda())


def test(opt, model, data):
    evaluation_loader = torch.utils.data.DataLoader(data, num_workers=2, pin_memory=True)
    validation(model, criterion, evaluation_loader, opt)
"""


def test_a_loader_handed_once_to_a_function_that_reads_it_once(tmp_path: Path) -> None:
    """clovaai's test(): the loader goes once to validation(), whose one loop reads it:
    a single pass, so persistent workers would serve nothing."""
    assert verdicts(tmp_path, HANDED_ONCE)["EC503"].status.value == "pass"
    report = analyse(tmp_path, HANDED_ONCE)
    assert report.loaders[0]["read_once"].startswith("it is handed once to validation()")
    every_epoch = HANDED_ONCE.replace(
        "    validation(model, criterion, evaluation_loader, opt)\n",
        "    for epoch in range(10):\n"
        "        validation(model, criterion, evaluation_loader, opt)\n",
    )
    assert analyse(tmp_path, every_epoch).loaders[0]["read_once"] is None


IMPORTED_LOADER_CLASS = """
import pytorch_lightning as pl
from schnetpack.data import AtomsLoader
from loaders import make_loader


class AtomsDataModule(pl.LightningDataModule):
    def __init__(self, batch_size=32, num_workers=8):
        self.batch_size = batch_size
        self.num_workers = num_workers
        self._train_dataloader = None

    def train_dataloader(self):
        if self._train_dataloader is None:
            self._train_dataloader = AtomsLoader(
                self.train_dataset, batch_size=self.batch_size, shuffle=True,
                num_workers=self.num_workers, pin_memory=False)
        return self._train_dataloader

    def val_dataloader(self):
        return AtomsLoader(self.val_dataset, batch_size=self.batch_size,
                           num_workers=self.num_workers, persistent_workers=True)

    def test_dataloader(self):
        return make_loader(self.test_dataset, num_workers=self.num_workers)
"""


def test_an_imported_loader_class_given_dataloader_keywords_is_a_dataloader(
    tmp_path: Path,
) -> None:
    """schnetpack's `AtomsLoader(dataset, batch_size=..., num_workers=..., pin_memory=...)`,
    deepspeech's `AudioDataLoader`: an imported class named like a loader and given only
    DataLoader's own keywords is a DataLoader subclass, so what it is not given is
    DataLoader's default (persistent_workers=False: EC503 holds for the cached train
    loader Lightning re-iterates every epoch); a lowercase maker (`make_loader`) stays
    out of sight."""
    report = analyse(tmp_path, IMPORTED_LOADER_CLASS)
    assert [bool(loader.get("built_by")) for loader in report.loaders] == [False, False, True]
    results = verdicts(tmp_path, IMPORTED_LOADER_CLASS)
    assert [f.location.line for f in results["EC503"].findings] == [15]
    assert [f.location.line for f in results["EC504"].findings] == [15, 21, 25]


GPU_ONLY_SETTINGS = """
import torch


class Config:
    def __init__(self, batch_size=64, no_cuda=True):
        self.batch_size = batch_size
        self.no_cuda = no_cuda


def prepare_loaders(conf, use_cuda=False):
    kwargs = {'num_workers': 1, 'pin_memory': True} if use_cuda else {}
    return torch.utils.data.DataLoader(ds, batch_size=conf.batch_size, shuffle=True, **kwargs)


def main():
    conf = Config()
    use_cuda = not conf.no_cuda and torch.cuda.is_available()
    device = torch.device('cuda' if use_cuda else 'cpu')
    loader = prepare_loaders(conf, use_cuda)
    model = Net().to(device)
    for epoch in range(10):
        for x, y in loader:
            model(x.to(device)).sum().backward()
"""


def test_settings_a_gpu_run_gets_in_a_file_that_trains_on_the_cpu(tmp_path: Path) -> None:
    """torch-optimizer's mnist example: `{'num_workers': 1, ...} if use_cuda else {}`
    is what a GPU run gets, but the file trains on the CPU (`Config().no_cuda` is True):
    its workers are not the run's, so EC503 does not judge them."""
    results = verdicts(tmp_path, GPU_ONLY_SETTINGS)
    assert results["EC503"].status.value == "pass"
    assert results["EC501"].status.value == "pass"


STATISTICS_PASS = """
import torch
import torchvision
from torch.utils.data import DataLoader

def get_mean_and_std(dataset):
    loader = DataLoader(dataset, batch_size=256)
    total, n = 0, 0
    for data, _ in loader:
        total += torch.mean(data, dim=[0, 2, 3])
        n += 1
    return total / n

model = torchvision.models.resnet18().cuda()
mean = get_mean_and_std(raw)
"""


def test_a_statistics_pass_on_the_cpu_feeds_no_gpu(tmp_path: Path) -> None:
    """SER's get_mean_and_std: one loop that only reduces its batches with torch functions
    and tensor methods: nothing is copied to a GPU, and no GPU waits on it."""
    results = verdicts(tmp_path, STATISTICS_PASS)
    assert not results["EC501"].findings and not results["EC502"].findings
    assert "stay on the CPU" in results["EC502"].reason
    moved = STATISTICS_PASS.replace("torch.mean(data,", "torch.mean(data.cuda(),")
    assert [f.location.line for f in verdicts(tmp_path, moved)["EC502"].findings] == [7]


# ngp_pl: validation once, at the end of fit (check_val_every_n_epoch = max_epochs)
VALIDATED_AT_THE_END = """
import argparse
import pytorch_lightning as pl
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--num_epochs", type=int, default=30)
parser.add_argument("--val_only", action="store_true", default=False)
hparams = parser.parse_args()


class System(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self.model(batch["rays"].cuda()).mean()

    def train_dataloader(self):
        return DataLoader(self.train_dataset, num_workers=2, persistent_workers=True,
                          pin_memory=True)

    def val_dataloader(self):
        return DataLoader(self.test_dataset, num_workers=2, pin_memory=True)


trainer = pl.Trainer(max_epochs=hparams.num_epochs,
                     check_val_every_n_epoch=hparams.num_epochs,
                     accelerator="gpu", devices=1,
                     num_sanity_val_steps=-1 if hparams.val_only else 0)
trainer.fit(System())
"""


@pytest.mark.parametrize(
    "change, once",
    [
        (None, True),
        ("check_val_every_n_epoch=hparams.num_epochs", False),
        ("num_sanity_val_steps=-1 if hparams.val_only else 0", False),
        ("-1 if hparams.val_only else 0", False),
    ],
)
def test_a_validation_loader_read_once_per_fit(
    tmp_path: Path, change: str | None, once: bool
) -> None:
    """Validation every max_epochs epochs with no sanity check: one pass per fit. Every
    epoch, a sanity check (the default 2 steps, or `-1` in the default run) or a value
    not settled keeps EC503 judging the loader."""
    source = VALIDATED_AT_THE_END
    if change == "check_val_every_n_epoch=hparams.num_epochs":
        source = source.replace(change, "check_val_every_n_epoch=1")
    elif change == "num_sanity_val_steps=-1 if hparams.val_only else 0":
        source = source.replace(",\n                     " + change, "")
    elif change is not None:
        source = source.replace(change, "hparams.sanity")
    results = verdicts(tmp_path, source)
    lines = [f.location.line for f in results["EC503"].findings]
    line = next(i for i, t in enumerate(source.splitlines(), 1) if "self.test_dataset" in t)
    assert lines == ([] if once else [line]), results["EC503"]
    if once:
        assert results["EC503"].status.value == "pass"
        assert "validates once per trainer.fit()" in results["EC503"].reason


# latent-diffusion's main.py: hooks installed from private methods when the config has
# the split; the file runs fit and test, never predict
STAGES = """
import pytorch_lightning as pl
from functools import partial
from torch.utils.data import DataLoader
from torchvision import datasets


class Data(pl.LightningDataModule):
    def __init__(self, test=None, predict=None):
        super().__init__()
        self.dataset = datasets.ImageFolder("data")
        if test is not None:
            self.test_dataloader = partial(self._test_dataloader, shuffle=False)
        if predict is not None:
            self.predict_dataloader = self._predict_dataloader

    def train_dataloader(self):
        return DataLoader(self.dataset, batch_size=8, num_workers=1, persistent_workers=True)

    def _test_dataloader(self, shuffle=False):
        return DataLoader(self.dataset, batch_size=8, num_workers=1)

    def _predict_dataloader(self):
        return DataLoader(self.dataset, batch_size=8, num_workers=1)


if __name__ == "__main__":
    trainer = pl.Trainer(accelerator="gpu", devices=1)
    data = Data(test=True, predict=True)
    trainer.fit(model, data)
    trainer.test(model, data)
"""


def test_a_loader_of_a_lightning_stage_the_file_never_runs_is_not_judged(
    tmp_path: Path,
) -> None:
    """The predict hook's loader (line 24) is never read: the file's Trainer runs fit and
    test, never predict. The test hook's (line 21) is read, once. Once the file runs
    trainer.predict, the predict loader is judged too."""
    results = verdicts(tmp_path, STAGES)
    assert [f.location.line for f in results["EC502"].findings] == [18, 21]
    predicting = STAGES + "    trainer.predict(model, data)\n"
    results = verdicts(tmp_path, predicting)
    assert [f.location.line for f in results["EC502"].findings] == [18, 21, 24]


# monodepth2's trainer: the val loader read a batch at a time through a long-lived
# iterator attribute, in val(), called every N steps
PERIODIC = """
import torch
from torch.utils.data import DataLoader
from torchvision import datasets


class Trainer:
    def __init__(self):
        self.model = torch.nn.Conv2d(3, 8, 3).cuda()
        self.train_loader = DataLoader(datasets.ImageFolder("t"), batch_size=8, num_workers=1)
        self.val_loader = DataLoader(datasets.ImageFolder("v"), batch_size=8, num_workers=1)
        self.val_iter = iter(self.val_loader)

    def train(self):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(20):
            for step, (x, y) in enumerate(self.train_loader):
                self.model(x.cuda()).mean().backward()
                opt.step()
                early = step % 250 == 0 and step < 2000
                late = step % 2000 == 0
                if early or late:
                    self.val()

    def val(self):
        try:
            x, y = self.val_iter.next()
        except StopIteration:
            self.val_iter = iter(self.val_loader)
            x, y = self.val_iter.next()
        with torch.no_grad():
            print(self.model(x.cuda()).mean())


Trainer().train()
"""


@pytest.mark.parametrize(
    "change",
    [None, "                if early or step > 5:", "                if True:", "(Base)"],
)
def test_a_loader_read_now_and_then_through_an_open_iterator_keeps_its_workers(
    tmp_path: Path, change: str | None
) -> None:
    """The val loader (line 11) is read one batch at a time through self.val_iter, made
    again only at StopIteration, by val(), which the training loop calls only under a
    periodic branch: one pass spans many epochs, so EC503 leaves it. Called every step
    (a branch that is not periodic, or none), or from a class with a base class (a
    framework may call val() itself), it is judged."""
    source = PERIODIC
    if change == "(Base)":
        source = source.replace("class Trainer:", "class Trainer(Base):")
    elif change is not None:
        source = source.replace("                if early or late:", change)
    results = verdicts(tmp_path, source)
    lines = [f.location.line for f in results["EC503"].findings]
    assert lines == ([10] if change is None else [10, 11]), results["EC503"]
