"""Values followed through mutation and indirection, on shapes from real scripts: loader
arguments merged into dicts, mixed precision behind partials, variables and flags, and
which model builders count as convolutional. Each snippet goes through the real analyser."""

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


def loader_args(report: Any) -> list[dict[str, Any]]:
    return [{k: v["value"] for k, v in x["args"].items()} for x in report.loaders]


def test_pytorch_examples_mnist_kwargs_update(tmp_path: Path) -> None:
    # pytorch/examples mnist/main.py: the CUDA settings merged in place under `if use_cuda:`
    report = analyse(
        tmp_path,
        "import torch\n"
        "def main(args):\n"
        "    use_cuda = torch.cuda.is_available()\n"
        "    train_kwargs = {'batch_size': args.batch_size}\n"
        "    if use_cuda:\n"
        "        cuda_kwargs = {'num_workers': 1, 'pin_memory': True, 'shuffle': True}\n"
        "        train_kwargs.update(cuda_kwargs)\n"
        "    loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)\n",
    )
    assert loader_args(report) == [{"batch_size": None, "num_workers": 1, "pin_memory": True}]
    assert report.loaders[0]["opaque_kwargs"] == []


def test_a_dict_chosen_for_gpu_runs(tmp_path: Path) -> None:
    # pytorch/examples vae/main.py: the loader settings a GPU run gets
    report = analyse(
        tmp_path,
        "import torch\n"
        "use_accel = not args.no_accel and torch.accelerator.is_available()\n"
        "kwargs = {'num_workers': 1, 'pin_memory': True} if use_accel else {}\n"
        "a = torch.utils.data.DataLoader(ds, batch_size=8, **kwargs)\n"
        "other = {'num_workers': 1} if fast else {}\n"
        "b = torch.utils.data.DataLoader(ds, batch_size=8, **other)\n",
    )
    assert loader_args(report) == [
        {"batch_size": 8, "num_workers": 1, "pin_memory": True},
        {"batch_size": 8},
    ]
    assert report.loaders[1]["opaque_kwargs"] == ["other"]


def test_dict_merges(tmp_path: Path) -> None:
    report = analyse(
        tmp_path,
        "import torch\n"
        "base = {'batch_size': 4}\n"
        "extra = {'num_workers': 8}\n"
        "a = torch.utils.data.DataLoader(ds, **(base | extra))\n"
        "b = torch.utils.data.DataLoader(ds, **{**base, 'pin_memory': True})\n"
        "kw = dict(base, persistent_workers=True)\n"
        "kw['num_workers'] = 2\n"
        "kw.update(prefetch_factor=4)\n"
        "c = torch.utils.data.DataLoader(ds, **kw)\n"
        "opaque = {**cfg.loader}\n"
        "d = torch.utils.data.DataLoader(ds, **opaque)\n",
    )
    assert loader_args(report) == [
        {"batch_size": 4, "num_workers": 8},
        {"batch_size": 4, "pin_memory": True},
        {"batch_size": 4, "num_workers": 2, "persistent_workers": True, "prefetch_factor": 4},
        {},
    ]
    assert report.loaders[3]["opaque_kwargs"] == ["opaque"]


PRECISION = [
    (
        "torchvision references: GradScaler behind --amp (store_true), autocast enabled by it",
        "import argparse, torch, torchvision\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--amp', action='store_true', help='Use AMP')\n"
        "parser.add_argument('--model', default='resnet18')\n"
        "args = parser.parse_args()\n"
        "model = torchvision.models.get_model(args.model)\n"
        "scaler = torch.cuda.amp.GradScaler() if args.amp else None\n"
        "with torch.cuda.amp.autocast(enabled=scaler is not None):\n"
        "    pass\n",
        {
            "autocast": False,
            "amp_gate": {"text": "args.amp", "option": "--amp", "default": False},
            "conv_layers": True,
        },
    ),
    (
        "functools.partial(torch.autocast, ...) and a ViT from timm",
        "import functools, torch, timm\n"
        "autocast = functools.partial(torch.autocast, device_type='cuda', dtype=torch.bfloat16)\n"
        "model = timm.create_model('vit_base_patch16_224')\n",
        {"autocast": True, "amp_gate": None, "conv_layers": False},
    ),
    (
        "autocast chosen through a variable the source does not settle",
        "import torch\n"
        "from contextlib import nullcontext\n"
        "ctx = torch.autocast if use_amp else nullcontext\n"
        "model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3))\n",
        {
            "autocast": False,
            "amp_gate": {"text": "use_amp", "option": None, "default": None},
            "conv_layers": True,
        },
    ),
    (
        "pytorch/examples imagenet: models.__dict__[args.arch]()",
        "import torch\n"
        "import torchvision.models as models\n"
        "parser.add_argument('-a', '--arch', default='resnet18')\n"
        "model = models.__dict__[args.arch]()\n",
        {"autocast": False, "amp_gate": None, "conv_layers": True},
    ),
    (
        "Lightning precision and a timm CNN",
        "import lightning as L\nfrom timm.models import create_model\n"
        "trainer = L.Trainer(precision='16-mixed')\n"
        "model = create_model('resnet50')\n",
        {"autocast": True, "amp_gate": None, "conv_layers": True},
    ),
    (
        "an AMP flag that defaults to on",
        "import argparse, torch\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--amp', default=True)\n"
        "if args.amp:\n"
        "    scaler = torch.amp.GradScaler()\n",
        {"autocast": True, "amp_gate": None, "conv_layers": False},
    ),
    (
        "Accelerate examples: mixed_precision from a flag whose default None defers to the "
        "launcher",
        "import argparse\nfrom accelerate import Accelerator\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--mixed_precision', type=str, default=None)\n"
        "args = parser.parse_args()\n"
        "accelerator = Accelerator(mixed_precision=args.mixed_precision)\n",
        {
            "autocast": False,
            "amp_gate": {
                "text": "args.mixed_precision (default None: accelerate launch or config)",
                "option": None,
                "default": False,  # float32 unless the launcher's config sets it
            },
        },
    ),
    (
        "Accelerator() without mixed_precision: Accelerate's default 'no', as Fabric()",
        "from accelerate import Accelerator\naccelerator = Accelerator()\n",
        {
            "autocast": False,
            "amp_gate": {
                "text": "Accelerator() at Accelerate's default mixed_precision 'no' (unless "
                "`accelerate launch --mixed_precision` or `accelerate config` changes it)",
                "option": None,
                "default": False,
                "framework_default": True,
            },
        },
    ),
    (
        "Accelerator(**kwargs): the keywords are not known, the launcher may set it",
        "from accelerate import Accelerator\nkw = make()\naccelerator = Accelerator(**kw)\n",
        {
            "autocast": False,
            "amp_gate": {
                "text": "accelerate launch --mixed_precision or accelerate config",
                "option": None,
                "default": False,
                "outside": True,
            },
        },
    ),
    (
        "a --precision flag defaulting to 'no'",
        "import argparse\nfrom accelerate import Accelerator\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--precision', default='no')\n"
        "accelerator = Accelerator(mixed_precision=args.precision)\n",
        {
            "autocast": False,
            "amp_gate": {"text": "args.precision", "option": "--precision", "default": False},
        },
    ),
    (
        "Hugging Face Trainer with TrainingArguments from the command line",
        "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
        "parser = HfArgumentParser((TrainingArguments,))\n"
        "(training_args,) = parser.parse_args_into_dataclasses()\n"
        "Trainer(model=model, args=training_args).train()\n",
        {
            "autocast": False,
            "amp_gate": {
                "text": "--fp16/--bf16 on the command line",
                "option": None,
                "default": False,  # TrainingArguments' fp16/bf16 default to False
                "outside": True,
            },
        },
    ),
    (
        "a model built under a bfloat16 default dtype",
        "import torch\ntorch.set_default_dtype(torch.bfloat16)\nmodel = torch.nn.Transformer()\n",
        {"autocast": True, "amp_gate": None},
    ),
    (
        "a model built under a default dtype from a config",
        "from recipes import training\n"
        "dtype = training.get_dtype(cfg.dtype)\n"
        "with training.set_default_dtype(dtype):\n"
        "    model = build(cfg)\n",
        {"autocast": False, "amp_gate": {"text": "dtype", "option": None, "default": None}},
    ),
    (
        "a float32 default dtype is not low precision",
        "import torch\ntorch.set_default_dtype(torch.float32)\n",
        {"autocast": False, "amp_gate": None},
    ),
    (
        "AMP behind a method parameter that defaults to off",
        "import torch\n"
        "class FitMixin:\n"
        "    def fit(self, loader, use_amp: bool = False):\n"
        "        if use_amp:\n"
        "            if self.device.type == 'cuda':\n"
        "                scaler = torch.cuda.amp.GradScaler()\n",
        {
            "autocast": False,
            "amp_gate": {
                "text": "use_amp (a parameter, default False)",
                "option": None,
                "default": False,
            },
        },
    ),
    (
        "the precision setting handed to the project's autocast helper",
        "from training.precision import get_autocast\n"
        "def train(args):\n"
        "    autocast = get_autocast(args.precision)\n",
        {
            "autocast": False,
            "amp_gate": {"text": "args.precision", "option": None, "default": None},
        },
    ),
    (
        "a --precision flag defaulting to 'amp', handed to the project's autocast helper",
        "import argparse\nfrom training.precision import get_autocast\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--precision', default='amp')\n"
        "args = parser.parse_args()\n"
        "autocast = get_autocast(args.precision)\n",
        {"autocast": True, "amp_gate": None},
    ),
    (
        "a LightningModule whose Trainer is not in the file",
        "from lightning.pytorch import LightningModule\n"
        "class Lit(LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        return self(batch).sum()\n",
        {
            "autocast": False,
            "amp_gate": {
                "text": "the Lightning Trainer that runs this LightningModule (not in this "
                "file) sets its precision",
                "option": None,
                "default": None,
                "outside": True,
            },
        },
    ),
    (
        "a LightningModule and the Trainer that runs it, at its default precision",
        "from pytorch_lightning import LightningModule, Trainer\n"
        "class Lit(LightningModule):\n"
        "    pass\n"
        "Trainer.from_argparse_args(args).fit(Lit())\n",
        {"autocast": False, "amp_gate": None},
    ),
    (
        "a helper named convert_* is not a convolution",
        "from helpers import convert_coco_dataset_to_yolo\nconvert_coco_dataset_to_yolo(opt)\n",
        {"conv_layers": False},
    ),
    (
        "helpers that check, switch or feed a model are not models",
        "from . import utils as U\n"
        "from .text import check_keras_bert\n"
        "if U.bert_data_tuple(train_data):\n"
        "    check_keras_bert()\n"
        "    preproc.activate_transformer(name, layers=[-2])\n",
        {"conv_layers": False, "matmul_layers": []},
    ),
    (
        "a small local function named with fcn (function) is not an FCN",
        "def show(y, names):\n"
        "    class_fcn = lambda x: names[x]\n"
        "    if names is None:\n"
        "        class_fcn = lambda x: str(x)\n"
        "    return [class_fcn(v) for v in y]\n",
        {"conv_layers": False},
    ),
    (
        "a model helper of a package named after its models is not a model (ModelEMA)",
        "from yolox.utils import ModelEMA\nema = ModelEMA(model, 0.9998)\n",
        {"conv_layers": False},
    ),
    (
        "a model put in the channels-last layout, which only convolutions use",
        "import torch\nmodel = load(weights).to(memory_format=torch.channels_last)\n",
        {"conv_layers": True},
    ),
    (
        "a model parameter declared with the project's transformer class",
        "from st.model import SentenceTransformer\n"
        "class Callback:\n"
        "    def __init__(self, model: SentenceTransformer):\n"
        "        self.model = model\n",
        {"conv_layers": False, "matmul_layers": ["SentenceTransformer"]},
    ),
    (
        "a model parameter declared with the project's CNN class",
        "from models import ResNet50\ndef train(net: ResNet50, loader):\n    pass\n",
        {"conv_layers": True, "matmul_layers": []},
    ),
    (
        "a Hugging Face model loaded by its class is matmul-bound",
        "from transformers import AutoModelForSequenceClassification as M\n"
        "model = M.from_pretrained('bert-base-cased')\n",
        {"conv_layers": False, "matmul_layers": ["AutoModelForSequenceClassification"]},
    ),
    (
        "DeepSpeed: precision in its JSON config",
        "import deepspeed\n"
        "engine, optimizer, _, _ = deepspeed.initialize(model=model, config='ds.json')\n",
        {
            "autocast": False,
            "amp_gate": {
                "text": "the DeepSpeed config",
                "option": None,
                "default": None,
                "outside": True,
            },
        },
    ),
]


@pytest.mark.parametrize(
    ("source", "expected"), [pytest.param(*case[1:], id=case[0]) for case in PRECISION]
)
def test_precision_facts(tmp_path: Path, source: str, expected: dict[str, Any]) -> None:
    facts = analyse(tmp_path, source).facts
    assert {k: facts[k] for k in expected} == expected


MODULE_WITH_WORKERS = """
import torch


class Model:
    def __init__(self, data_path, workers: int = 4, batch_size=256):
        self.workers = workers
        self.batch_size = batch_size

    def train_dataloader(self):
        return torch.utils.data.DataLoader(
            self.dataset, batch_size=self.batch_size, num_workers=self.workers
        )
"""


def test_self_attribute_from_the_constructors_default(tmp_path: Path) -> None:
    # Lightning's ImageNet example: num_workers=self.workers, `workers: int = 4` in __init__
    report = analyse(tmp_path, MODULE_WITH_WORKERS)
    assert loader_args(report) == [{"batch_size": 256, "num_workers": 4}]
    source = report.loaders[0]["args"]["num_workers"]["source"]
    assert "self.workers = workers in __init__" in source


def test_self_attribute_default_kept_when_the_file_passes_other_arguments(tmp_path: Path) -> None:
    report = analyse(tmp_path, MODULE_WITH_WORKERS + "\nmodel = Model('data', batch_size=64)\n")
    assert loader_args(report) == [{"batch_size": None, "num_workers": 4}]


@pytest.mark.parametrize(
    "construct", ["Model('data', workers=8)", "Model('data', 8)", "Model(**settings)"]
)
def test_self_attribute_unknown_when_the_file_passes_the_argument(
    tmp_path: Path, construct: str
) -> None:
    report = analyse(tmp_path, MODULE_WITH_WORKERS + f"\nmodel = {construct}\n")
    assert report.loaders[0]["args"]["num_workers"]["known"] is False


FALLBACK_WORKERS = """
import torch


class Data:
    def __init__(self, num_workers: int = 8, num_val_workers=None, num_test_workers=None):
        self.num_workers = num_workers
        self.num_val_workers = self.num_workers
        if num_val_workers is not None:
            self.num_val_workers = num_val_workers
        self.num_test_workers = num_test_workers or num_workers

    def val_dataloader(self):
        return torch.utils.data.DataLoader(self.val, num_workers=self.num_val_workers)

    def test_dataloader(self):
        return torch.utils.data.DataLoader(self.test, num_workers=self.num_test_workers)
"""


def test_self_attribute_falling_back_to_another_one(tmp_path: Path) -> None:
    # schnetpack's AtomsDataModule: `self.num_val_workers = self.num_workers`, replaced
    # only `if num_val_workers is not None` (None by default); or `num_test_workers or
    # num_workers`: both are num_workers (8) at the defaults
    report = analyse(tmp_path, FALLBACK_WORKERS)
    assert loader_args(report) == [{"num_workers": 8}, {"num_workers": 8}]


def test_self_attribute_fallback_unknown_when_the_file_passes_the_override(
    tmp_path: Path,
) -> None:
    report = analyse(tmp_path, FALLBACK_WORKERS + "\ndata = Data(num_val_workers=2)\n")
    assert report.loaders[0]["args"]["num_workers"]["known"] is False


def test_loader_settings_from_a_helper_returning_a_dict_on_gpu_runs(tmp_path: Path) -> None:
    # pytorch-warmup's cifar10 example: `kwargs = dataloader_options(device, args.workers)`,
    # a helper returning {} on the CPU and dict(num_workers=workers, ...) otherwise: a GPU
    # run gets the second, its parameters bound to what the call passes
    report = analyse(
        tmp_path,
        "import argparse, torch\n"
        "def dataloader_options(device, workers, pin=True):\n"
        "    if device.type == 'cpu':\n"
        "        return {}\n"
        "    kwargs = dict(num_workers=workers, pin_memory=pin)\n"
        "    if workers > 0:\n"
        "        kwargs.update(dict(persistent_workers=True))\n"
        "    return kwargs\n"
        "def main():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--workers', type=int, default=0)\n"
        "    args = parser.parse_args()\n"
        "    device = torch.device('cuda')\n"
        "    kwargs = dataloader_options(device, args.workers)\n"
        "    loader = torch.utils.data.DataLoader(ds, batch_size=8, **kwargs)\n",
    )
    assert loader_args(report) == [
        {"batch_size": 8, "num_workers": 0, "pin_memory": True, "persistent_workers": True}
    ]
    assert report.loaders[0]["opaque_kwargs"] == []


def test_cudnn_benchmark_under_a_test_of_a_list_filled_in_a_loop(tmp_path: Path) -> None:
    # Person_reID train.py: `gpu_ids = []` filled from --gpu_ids in a loop, then
    # `if len(gpu_ids) > 0: cudnn.benchmark = True`; the list is not its empty literal
    report = analyse(
        tmp_path,
        "import argparse\n"
        "import torch.backends.cudnn as cudnn\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--gpu_ids', default='0', type=str)\n"
        "opt = parser.parse_args()\n"
        "gpu_ids = []\n"
        "for str_id in opt.gpu_ids.split(','):\n"
        "    gid = int(str_id)\n"
        "    if gid >= 0:\n"
        "        gpu_ids.append(gid)\n"
        "if len(gpu_ids) > 0:\n"
        "    cudnn.benchmark = True\n",
    )
    assert report.facts["cudnn_benchmark"] is True
