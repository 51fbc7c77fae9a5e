"""Run-level facts of an entry point (analyze.py, processes.py, precision.py).

An entry point that builds the model and hands it to the project's trainer (`trainer_
synapse(args, net, ...)` of trainer.py, read as context) starts a training run whose loop
is out of the file but in sight: the run's precision is the loop's. Named together with
the trainer, the trainer's file carries the finding (where autocast goes). Also: Hugging
Face's `dtype=` (the newer spelling of `torch_dtype=`), and a boilerplate `LOCAL_RANK`
read in an Accelerate script. Each case goes through the real command line.
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
import torch
from networks.gpt import GPT
from trainer import {callee}

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()

if __name__ == "__main__":
    net = GPT(n_layer=12, n_head=12, n_embd=768).cuda()
    {call}
"""

NETWORK = """\
import torch.nn as nn

class GPT(nn.Module):
    def __init__(self, n_layer, n_head, n_embd):
        super().__init__()
        self.blocks = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(n_embd, n_head), n_layer
        )
        self.head = nn.Linear(n_embd, 50257)

    def forward(self, x):
        return self.head(self.blocks(x))
"""

TRAINER = """\
import torch

def train_loop(args, model):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for x, y in batches():
            {step}
            opt.zero_grad()
            loss.backward()
            opt.step()

class Trainer:
    def __init__(self, model, args):
        self.model, self.args = model, args

    def train(self):
        opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        for x, y in batches():
            model = self.model
            {step}
            opt.zero_grad()
            loss.backward()
            opt.step()

def make_batches(n):
    return [torch.randn(8, 16) for _ in range(n)]

def make_step(model, opt):
    def _update(x):
        loss = model(x.cuda()).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return _update

def do_train(args, model):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    update = make_step(model, opt)
    for epoch in range(args.epochs):
        for x, y in batches():
            update(x)
"""

PLAIN = "loss = model(x.cuda()).mean()"
AUTOCAST = (
    "with torch.autocast('cuda', dtype=torch.bfloat16):\n"
    "                loss = model(x.cuda()).mean()"
)


def audit(*paths: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    args = ["scripts", "--format", "json", "--exit-zero", "--target", str(TARGET)]
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, [*args, *paths])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def project(tmp_path: Path, callee: str, call: str, step: str = PLAIN) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "networks").mkdir()
    (tmp_path / "networks" / "gpt.py").write_text(NETWORK)
    (tmp_path / "trainer.py").write_text(TRAINER.format(step=step))
    (tmp_path / "train.py").write_text(ENTRY.format(callee=callee, call=call))
    return tmp_path


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["checks"]}


def findings(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in report["findings"]}


@pytest.mark.parametrize(
    "callee, call",
    [
        ("train_loop", "train_loop(args, net)"),
        ("Trainer", "Trainer(net, args).train()"),
        ("do_train", "do_train(args, net)"),  # its step made by a function of trainer.py
    ],
)
def test_an_entry_point_starting_the_projects_float32_loop_carries_the_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, callee: str, call: str
) -> None:
    """train.py named alone: the loop it starts (a function or a class of trainer.py,
    read as context) trains the GPT it builds in float32: EC507 and EC508 on train.py.
    `do_train` has no backward pass of its own: the step it runs is made by
    `make_step`, a function of its file it calls (reid-strong-baseline's Ignite
    `create_supervised_trainer`)."""
    root = project(tmp_path, callee, call)
    report = audit("train.py", cwd=root, monkeypatch=monkeypatch)
    found = findings(report)
    assert found["EC507"]["location"]["path"] == "train.py"
    assert found["EC507"]["location"]["line"] == 12
    assert "EC508" in found
    facts = report["facts"]["scripts"]["file_facts"][0]
    assert facts["train_at"]["loop_in"] == "trainer.py"


def test_an_entry_point_starting_a_loop_under_autocast_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, "train_loop", "train_loop(args, net)", AUTOCAST)
    report = audit("train.py", cwd=root, monkeypatch=monkeypatch)
    assert statuses(report)["EC507"] == "pass"
    assert statuses(report)["EC508"] == "pass"


def test_a_factory_of_the_trainer_module_is_not_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make_batches(4)` is defined beside the loop but has no backward pass: calling it
    starts no training (mvts_transformer's `pipeline_factory(config)`)."""
    root = project(tmp_path, "make_batches", "make_batches(4)")
    report = audit("train.py", cwd=root, monkeypatch=monkeypatch)
    assert "EC507" not in findings(report)
    assert report["facts"]["scripts"]["file_facts"][0]["trains"] is False


def test_named_with_its_trainer_the_trainer_carries_the_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """detr's main.py and engine.py audited together: the float32 step is engine.py's,
    where autocast goes; main.py runs no training step of its own."""
    root = project(tmp_path, "train_loop", "train_loop(args, net)")
    report = audit("train.py", "trainer.py", cwd=root, monkeypatch=monkeypatch)
    paths = [f["location"]["path"] for f in report["findings"] if f["id"] == "EC507"]
    assert paths == ["trainer.py"]


def test_without_the_trainer_on_disk_the_entry_point_trains_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, "train_loop", "train_loop(args, net)")
    (root / "trainer.py").unlink()
    report = audit("train.py", cwd=root, monkeypatch=monkeypatch)
    assert "EC507" not in findings(report)


HF_LOAD = """\
import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM

def main(args):
    accelerator = Accelerator()
    if args.model_name_or_path:
        model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path, {dtype})
    else:
        model = AutoModelForCausalLM.from_config(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()

if __name__ == "__main__":
    main(Args())
"""

ARGS = """\
from dataclasses import dataclass

@dataclass
class Args:
    model_name_or_path: str = None
"""


@pytest.mark.parametrize("dtype", ["dtype=torch.bfloat16", "torch_dtype=torch.bfloat16"])
def test_a_model_loaded_in_bfloat16_under_a_model_path_test_is_not_float32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dtype: str
) -> None:
    """open-instruct's finetune.py: `from_pretrained(..., dtype=torch.bfloat16)` (the
    newer spelling of torch_dtype) under `if args.model_name_or_path:`, a model the run is
    given: whether that input is given is no precision setting, so the run's precision
    is not settled by the source (unknown), never Accelerate's float32 default."""
    script = tmp_path / "finetune.py"
    script.write_text(ARGS + HF_LOAD.format(dtype=dtype))
    report = audit(str(script), cwd=tmp_path, monkeypatch=monkeypatch)
    assert statuses(report)["EC507"] == "unknown"
    assert "args.model_name_or_path" in next(
        c["reason"] for c in report["checks"] if c["id"] == "EC507"
    )


def test_a_model_loaded_in_bfloat16_unconditionally_is_mixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "finetune.py"
    source = HF_LOAD.format(dtype="dtype=torch.bfloat16").replace(
        "    if args.model_name_or_path:\n        model", "    model"
    )
    source = source.replace(
        "    else:\n        model = AutoModelForCausalLM.from_config(config)\n", ""
    )
    script.write_text(source)
    report = audit(str(script), cwd=tmp_path, monkeypatch=monkeypatch)
    assert statuses(report)["EC507"] == "pass"


ACCELERATE_LOCAL_RANK = """\
import os
import argparse
import torch
from accelerate import Accelerator
from torchvision import datasets, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
args = parser.parse_args()
env_local_rank = int(os.environ.get("LOCAL_RANK", -1))
if env_local_rank != -1 and env_local_rank != args.local_rank:
    args.local_rank = env_local_rank

def main():
    accelerator = Accelerator(mixed_precision="bf16")
    ds = datasets.ImageFolder("data", transform=transforms.ToTensor())
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=1,
                                         persistent_workers=True, pin_memory=True)
    model = torch.nn.Conv2d(3, 8, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for epoch in range(10):
        for x, y in loader:
            loss = model(x).mean()
            accelerator.backward(loss)
            opt.step()

if __name__ == "__main__":
    main()
"""


def test_a_local_rank_read_in_an_accelerate_script_is_no_process_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cloneofsimo/lora's DreamBooth script: diffusers' boilerplate reads LOCAL_RANK, but
    `accelerate launch` starts the processes: 1 worker is not taken for 8 (EC504). The
    same read in a torchrun script is one process per GPU."""
    script = tmp_path / "train.py"
    script.write_text(ACCELERATE_LOCAL_RANK)
    report = audit(str(script), cwd=tmp_path, monkeypatch=monkeypatch)
    assert "EC504" not in findings(report)
    assert report["facts"]["scripts"]["file_facts"][0]["processes_per_node"] is None
    script.write_text(
        ACCELERATE_LOCAL_RANK.replace('Accelerator(mixed_precision="bf16")', "None")
        .replace("accelerator.prepare(model, opt, loader)", "model.cuda(), opt, loader")
        .replace("accelerator.backward(loss)", "loss.backward()")
    )
    report = audit(str(script), cwd=tmp_path, monkeypatch=monkeypatch)
    assert report["facts"]["scripts"]["file_facts"][0]["processes_per_node"] is not None
    assert "EC504" in findings(report)
