"""An entry point and its trainer split across the project's packages (analyze.py,
device.py, run_options.py, class_kinds.py, padded_batches.py).

MedicalZooPytorch's examples/train_*.py imports no torch: it builds the model, moves it
with `model.cuda()` under `args.cuda`, and runs `train.Trainer(...).training()` of
`import lib.train as train`, whose `__init__.py` re-exports the class from `.trainer`;
`utils.reproducibility(args, seed)` (a star import of `.general`) sets
`cudnn.benchmark = True`. The trainer's batches go to the GPU through
`prepare_input(...)`, a helper of lib/utils/general.py that calls `.cuda()` on what it
returns. kospeech's loader is a `threading.Thread` installing a collate that pads each
batch to its longest utterance, picked by `max(batch, key=seq_length_)`. Each case goes
through the real command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envcheck.cli import app

TARGET = Path(__file__).parent / "fixtures" / "gpu" / "datacenter-8x-a100-foreign-process.json"

ENTRY = """\
import argparse
import lib.train as train
import lib.utils as utils
from lib.models import UNet3D


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true", default=True)
    parser.add_argument("--nEpochs", type=int, default=100)
    args = parser.parse_args()
    {setup}
    model = UNet3D()
    if args.cuda:
        model = model.cuda()
    trainer = train.Trainer(args, model)
    trainer.training()


if __name__ == "__main__":
    main()
"""

MODELS = """\
import torch.nn as nn


class UNet3D(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(4, 32, 3)

    def forward(self, x):
        return self.conv(x)
"""

GENERAL = """\
import torch
import torch.backends.cudnn as cudnn


def reproducibility(args, seed):
    torch.manual_seed(seed)
    cudnn.benchmark = True


def prepare_input(input_tuple, args=None):
    input_tensor, target = input_tuple
    if args.cuda:
        input_tensor, target = {moved}
    return input_tensor, target
"""

TRAINER = """\
import torch
from lib.utils.general import prepare_input


class Trainer:
    def __init__(self, args, model):
        self.args, self.model = args, model

    def training(self):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        for epoch in range(self.args.nEpochs):
            for input_tuple in batches():
                input_tensor, target = prepare_input(input_tuple, args=self.args)
                loss = (self.model(input_tensor) - target).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
"""

MOVED = "input_tensor.cuda(), target.cuda()"


def audit(*paths: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    args = ["scripts", "--format", "json", "--exit-zero", "--target", str(TARGET)]
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, [*args, *paths])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def project(tmp_path: Path, setup: str = "pass", moved: str = MOVED) -> Path:
    (tmp_path / ".git").mkdir()
    lib = tmp_path / "lib"
    for package in ("train", "utils", "models"):
        (lib / package).mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "train" / "__init__.py").write_text("from .trainer import Trainer\n")
    (lib / "train" / "trainer.py").write_text(TRAINER)
    (lib / "utils" / "__init__.py").write_text("from .general import *\n")
    (lib / "utils" / "general.py").write_text(GENERAL.format(moved=moved))
    (lib / "models" / "__init__.py").write_text("from .unet import UNet3D\n")
    (lib / "models" / "unet.py").write_text(MODELS)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "train.py").write_text(ENTRY.format(setup=setup))
    return tmp_path


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["checks"]}


def findings(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in report["findings"]}


def test_an_entry_point_starting_a_trainer_its_package_re_exports_carries_the_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/train.py imports no torch itself; the loop it starts is the class
    lib/train/__init__.py re-exports from .trainer: a float32 GPU run of the 3-D CNN it
    builds and moves with `model.cuda()`."""
    root = project(tmp_path)
    report = audit("examples/train.py", cwd=root, monkeypatch=monkeypatch)
    facts = report["facts"]["scripts"]["file_facts"][0]
    assert facts["train_at"]["loop_in"].endswith("lib/train/trainer.py")
    assert facts["torch"] is True
    assert findings(report)["EC507"]["location"]["path"] == "examples/train.py"
    assert "EC506" in findings(report)  # cudnn.benchmark set nowhere


def test_cudnn_benchmark_set_by_a_helper_of_a_star_imported_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`utils.reproducibility(args, seed)` sets `cudnn.benchmark = True` in its body
    (lib/utils/general.py, through `from .general import *`): the process-wide setting
    holds for the run."""
    root = project(tmp_path, setup="utils.reproducibility(args, 1777)")
    report = audit("examples/train.py", cwd=root, monkeypatch=monkeypatch)
    assert report["facts"]["scripts"]["file_facts"][0]["cudnn_benchmark"] is True
    assert statuses(report)["EC506"] == "pass"
    assert "EC507" in findings(report)


def test_a_trainer_whose_helper_moves_the_batch_to_cuda_trains_on_the_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lib/train/trainer.py named alone: its batches reach CUDA through
    `prepare_input(...)`, which returns them after `.cuda()`: a GPU training loop, not
    one that "never moves the model or data to a GPU"."""
    root = project(tmp_path)
    report = audit("lib/train/trainer.py", cwd=root, monkeypatch=monkeypatch)
    gpu = report["facts"]["scripts"]["file_facts"][0]["gpu"]
    assert gpu["trains"] == "yes", gpu
    assert "prepare_input" in gpu["reason"]
    assert "EC507" in findings(report)


def test_a_helper_returning_what_it_did_not_move_is_no_device_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper that copies to CUDA only a value it drops (`_ = input_tensor.cuda()`)
    returns CPU tensors: the trainer's loop still moves nothing."""
    root = project(tmp_path, moved="input_tensor, target\n        _ = input_tensor.cuda()")
    report = audit("lib/train/trainer.py", cwd=root, monkeypatch=monkeypatch)
    gpu = report["facts"]["scripts"]["file_facts"][0]["gpu"]
    assert gpu["trains"] != "yes", gpu


EVAL_ENTRY = """\
from loop import TrainLoop
from model import MDM

if __name__ == "__main__":
    model = MDM().cuda()
    TrainLoop(model).run_loop()
"""

EVAL_LOOP = """\
import torch
import torch.nn as nn


class TrainLoop:
    def __init__(self, model):
        self.model = model
        self.evaluator = nn.Conv1d(263, 512, 4)  # a motion feature extractor for metrics

    def run_loop(self):
        opt = torch.optim.AdamW(self.model.parameters())
        for x in batches():
            loss = self.model(x.cuda()).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""

EVAL_MODEL = """\
import torch.nn as nn


class MDM(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8), 8)

    def forward(self, x):
        return self.blocks(x)
"""


def test_the_trainer_class_an_entry_point_builds_is_not_its_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """motion-diffusion-model's `TrainLoop(args, ..., model, ...)` builds a convolutional
    evaluator beside the loop: the class that runs the backward passes is the trainer,
    not a convolutional model, so the transformer run gets no cuDNN autotuning finding."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(EVAL_ENTRY)
    (tmp_path / "loop.py").write_text(EVAL_LOOP)
    (tmp_path / "model.py").write_text(EVAL_MODEL)
    report = audit("train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert report["facts"]["scripts"]["file_facts"][0]["conv_layers"] is False
    assert "EC506" not in findings(report)
    assert "EC507" in findings(report)


THREAD_LOADER = """\
import threading
import torch


def _collate_fn(batch, pad_id):
    def seq_length_(p):
        return len(p[0])

    max_seq_sample = max(batch, key=seq_length_)[0]
    seqs = torch.zeros(len(batch), max_seq_sample.size(0), max_seq_sample.size(1))
    for x, sample in enumerate(batch):
        seqs[x].narrow(0, 0, sample[0].size(0)).copy_(sample[0])
    return seqs


class AudioDataLoader(threading.Thread):
    def __init__(self, dataset, queue, batch_size, pad_id):
        threading.Thread.__init__(self)
        self.collate_fn = _collate_fn
        self.dataset, self.queue, self.batch_size = dataset, queue, batch_size
"""

THREAD_TRAINER = """\
import queue
import torch
import torch.nn as nn
from data import AudioDataLoader


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 32, 3)


def train(dataset):
    model = Encoder().cuda()
    opt = torch.optim.Adam(model.parameters())
    loader = AudioDataLoader(dataset, queue.Queue(), 32, 0)
    loader.start()
    while True:
        inputs = loader.queue.get()
        loss = model(inputs.cuda()).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_a_thread_loader_padding_to_the_longest_sample_varies_the_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kospeech's `AudioDataLoader(threading.Thread)` installs a collate that pads each
    batch to the sample `max(batch, key=seq_length_)` picks, re-exported by its
    package: its batches change shape, so cuDNN autotuning is left off rightly."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "__init__.py").write_text("from data.loader import AudioDataLoader\n")
    (tmp_path / "data" / "loader.py").write_text(THREAD_LOADER)
    (tmp_path / "train.py").write_text(THREAD_TRAINER)
    report = audit("train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    facts = report["facts"]["scripts"]["file_facts"][0]
    assert "pads each batch" in str(facts["varying_input"])
    assert statuses(report)["EC506"] == "pass"
