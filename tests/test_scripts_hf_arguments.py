"""DataLoader settings read from a Hugging Face `TrainingArguments` object in a script's
own loop (hf_arguments.py; found on a sweep of real code: parler-tts encodes its raw
audio with `num_workers=training_args.dataloader_num_workers`).

The object comes from `HfArgumentParser((..., TrainingArguments)).parse_args_into_
dataclasses()` or a construction; its DataLoader fields take transformers' documented
defaults (0 workers, pin_memory True) unless a subclass of the file or of the run
declares them again. A name bound to anything else too stays unknown. Snippets go through
the real analyser and rules against an 8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import run_results, script_results

SCRIPT = """
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from transformers import HfArgumentParser, TrainingArguments
{head}

def main():
{bind}
    ds = datasets.ImageFolder("data", transform=transforms.ToTensor())
    loader = DataLoader(
        ds,
        batch_size=64,
        num_workers=training_args.dataloader_num_workers,
        pin_memory=training_args.dataloader_pin_memory,
    )
    model = torch.nn.Conv2d(3, 8, 3).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        for x, y in loader:
            loss = model(x.cuda()).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

if __name__ == "__main__":
    main()
"""
PARSED = (
    "    parser = HfArgumentParser((ModelArguments, {cls}))\n"
    "    model_args, training_args = parser.parse_args_into_dataclasses()\n"
)
MODEL_ARGUMENTS = (
    "from dataclasses import dataclass\n@dataclass\nclass ModelArguments:\n    name: str = 'x'\n"
)


def source(head: str = "", bind: str = PARSED.format(cls="TrainingArguments")) -> str:
    return SCRIPT.format(head=MODEL_ARGUMENTS + head, bind=bind)


def status(found: dict[str, Any], rule: str) -> str:
    return str(found[rule].status.value)


def test_a_parsed_training_arguments_field_takes_the_library_default(tmp_path: Path) -> None:
    """`training_args.dataloader_num_workers` is 0 by default: EC501; its pin_memory
    field is True by default: EC502 passes."""
    found = script_results(tmp_path, source(), "train.py")
    assert status(found, "EC501") == "fail"
    assert "TrainingArguments.dataloader_num_workers default" in found["EC501"].findings[0].message
    assert status(found, "EC502") == "pass"


@pytest.mark.parametrize(
    "declared, rule",
    [("dataloader_num_workers: int = 4", "EC504"), ("lr: float = 0.1", "EC501")],
)
def test_a_subclass_of_the_file(tmp_path: Path, declared: str, rule: str) -> None:
    """A subclass declaring the field again gives its own default (4 on 2 CPUs: EC504);
    one that does not inherits the library's (0: EC501)."""
    head = f"@dataclass\nclass MyArguments(TrainingArguments):\n    {declared}\n"
    found = script_results(tmp_path, source(head, PARSED.format(cls="MyArguments")), "train.py")
    assert status(found, rule) == "fail"


def test_a_subclass_of_another_file_of_the_run(tmp_path: Path) -> None:
    """parler-tts: `ParlerTTSTrainingArguments(Seq2SeqTrainingArguments)` in arguments.py,
    imported by the script."""
    arguments = (
        "from dataclasses import dataclass, field\n"
        "from transformers import Seq2SeqTrainingArguments\n"
        "@dataclass\nclass RunArguments(Seq2SeqTrainingArguments):\n"
        "    eval_workers: int = field(default=0)\n"
    )
    head = "from arguments import RunArguments\n"
    files = {
        "pkg/arguments.py": arguments,
        "pkg/train.py": source(head, PARSED.format(cls="RunArguments")),
    }
    found = run_results(tmp_path, files)
    assert status(found, "EC501") == "fail"
    assert "(RunArguments)" in found["EC501"].findings[0].message


@pytest.mark.parametrize(
    "bind",
    [
        # bound to something else too: which object is read is not known
        PARSED.format(cls="TrainingArguments") + "    training_args = load()\n",
        # a class that is not TrainingArguments
        PARSED.format(cls="ModelArguments"),
        # a construction merging keywords from elsewhere
        "    training_args = TrainingArguments('out', **extra)\n",
    ],
)
def test_otherwise_the_value_stays_unknown(tmp_path: Path, bind: str) -> None:
    found = script_results(tmp_path, source(bind=bind), "train.py")
    assert status(found, "EC501") == "unknown"


def test_a_construction_is_read_by_its_keywords(tmp_path: Path) -> None:
    bind = "    training_args = TrainingArguments('out', dataloader_num_workers=8)\n"
    found = script_results(tmp_path, source(bind=bind), "train.py")
    assert status(found, "EC504") == "fail"
    bind = "    training_args = TrainingArguments('out')\n"
    found = script_results(tmp_path, source(bind=bind), "train.py")
    assert status(found, "EC501") == "fail"
