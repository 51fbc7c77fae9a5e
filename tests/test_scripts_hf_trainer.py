"""A script that trains with transformers' Trainer and imports nothing of PyTorch itself:
it is a PyTorch GPU training (the Trainer runs PyTorch and takes the GPU), so the
precision rules judge its TrainingArguments: float32 at transformers' defaults (fp16 and
bf16 False), mixed precision with `bf16=True`, TF32 with `tf32=True`. Snippets go through
the real analyser and rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_scripts_torch import audit

SCRIPT = """
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=5)
args = TrainingArguments(output_dir="out", per_device_train_batch_size=16ARGS)
trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=test)
trainer.train()
"""


def statuses(tmp_path: Path, extra: str) -> dict[str, str]:
    (tmp_path / "train.py").write_text(SCRIPT.replace("ARGS", extra))
    results = audit(tmp_path / "train.py", rules=("EC507", "EC508"))
    return {rule: result.status.value for rule, result in results.items()}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("", {"EC507": "fail", "EC508": "fail"}),
        (", bf16=True", {"EC507": "pass", "EC508": "pass"}),
        (", tf32=True", {"EC507": "fail", "EC508": "pass"}),
        (", **overrides", {"EC507": "unknown", "EC508": "unknown"}),
    ],
)
def test_training_arguments_decide_the_precision(
    tmp_path: Path, extra: str, expected: dict[str, str]
) -> None:
    assert statuses(tmp_path, extra) == expected


def test_the_finding_names_the_trainer_s_own_switch(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT.replace("ARGS", ""))
    [finding] = audit(tmp_path / "train.py", rules=("EC507",))["EC507"].findings
    assert "TrainingArguments() at transformers' default fp16=False, bf16=False" in (
        finding.message
    )
    assert finding.fix is not None and "bf16=True" in finding.fix


IMAGES = """
from datasets import load_dataset
from torchvision.transforms import Compose, RandomResizedCrop, ToTensor
from transformers import AutoModelForImageClassification, Trainer, TrainingArguments

train_ds = load_dataset("food101", split="train[:5000]")
tf = Compose([RandomResizedCrop(224), ToTensor()])


def preprocess_train(batch):
    batch["pixel_values"] = [tf(im.convert("RGB")) for im in batch["image"]]
    return batch


train_ds.set_transform(preprocess_train)
model = AutoModelForImageClassification.from_pretrained("google/vit-base", num_labels=101)
args = TrainingArguments("out", per_device_train_batch_size=128, fp16=TrueARGS)
Trainer(model, args, train_dataset=train_ds).train()
"""


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("", "fail"),
        (", dataloader_num_workers=8", "pass"),
        (", **overrides", "unknown"),
    ],
)
def test_trainer_over_images_decoded_per_item_needs_workers(
    tmp_path: Path, extra: str, expected: str
) -> None:
    """Trainer builds its DataLoader with dataloader_num_workers (0 by default): a
    set_transform that decodes and crops images then runs in the training process."""
    (tmp_path / "train.py").write_text(IMAGES.replace("ARGS", extra))
    result = audit(tmp_path / "train.py", rules=("EC501",))["EC501"]
    assert result.status.value == expected
    if expected == "fail":
        [finding] = result.findings
        assert finding.location is not None and finding.location.line == 17
        assert finding.fix is not None and "dataloader_num_workers=" in finding.fix


def test_trainer_over_text_tokenised_up_front_is_not_judged(tmp_path: Path) -> None:
    """A text dataset tokenised once by a batched map serves ids from memory."""
    (tmp_path / "train.py").write_text(SCRIPT.replace("ARGS", ""))
    assert audit(tmp_path / "train.py", rules=("EC501",))["EC501"].status.value == "pass"


def test_a_trainer_subclass_building_its_own_loader_is_judged_there(tmp_path: Path) -> None:
    """A subclass overriding get_train_dataloader builds the DataLoader itself:
    dataloader_num_workers does not reach it, so the Trainer call is no loader of its own."""
    source = IMAGES.replace("ARGS", "").replace(
        "Trainer(model, args",
        "class MyTrainer(Trainer):\n"
        "    def get_train_dataloader(self):\n"
        "        return self.loader\n\n\nMyTrainer(model, args",
    )
    (tmp_path / "train.py").write_text(source)
    result = audit(tmp_path / "train.py", rules=("EC501",))["EC501"]
    assert not [f for f in result.findings if "dataloader_num_workers" in (f.fix or "")]
    subclass = source.replace("def get_train_dataloader", "def compute_loss")
    (tmp_path / "train.py").write_text(subclass)
    assert audit(tmp_path / "train.py", rules=("EC501",))["EC501"].status.value == "fail"


PARSED = """
from dataclasses import dataclass
from datasets import load_dataset
from transformers import AutoImageProcessor, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ImageTrainingArguments(TrainingArguments):
    output_dir: str = "out"
    per_device_train_batch_size: int = 64FIELD


parser = HfArgumentParser((ImageTrainingArguments,))
(training_args,) = parser.parse_args_into_dataclasses()
processor = AutoImageProcessor.from_pretrained("openai/clip-vit-base-patch32")


def transform(batch):
    return processor([im.convert("RGB") for im in batch["image"]], return_tensors="pt")


train_ds = load_dataset("parquet", data_files="train.parquet")["train"].with_transform(transform)
Trainer(model=None, args=training_args, train_dataset=train_ds).train()
"""


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("", "fail"),
        ("\n    dataloader_num_workers: int = 8", "pass"),
        ("\n    dataloader_num_workers: int = field(default_factory=count)", "unknown"),
    ],
)
def test_trainer_arguments_parsed_into_a_dataclass_subclass(
    tmp_path: Path, field: str, expected: str
) -> None:
    """peft's FRoD example: the Trainer's arguments come from HfArgumentParser over a
    dataclass subclass of TrainingArguments (hf_arguments.py), not a TrainingArguments(...)
    call: dataloader_num_workers is the subclass's default, else transformers' 0, and the
    finding stands at the Trainer call."""
    (tmp_path / "train.py").write_text(PARSED.replace("FIELD", field))
    result = audit(tmp_path / "train.py", rules=("EC501",))["EC501"]
    assert result.status.value == expected
    if expected == "fail":
        [finding] = result.findings
        assert finding.location is not None and finding.location.line == 23
        assert "transformers TrainingArguments.dataloader_num_workers default" in finding.message


def test_trainer_workers_above_the_cpus_over_text(tmp_path: Path) -> None:
    """CodeT5+'s tune script: `TrainingArguments(dataloader_num_workers=N)` starts N
    workers whatever the dataset (text tokenised up front here): more than the usable CPUs
    is EC504's, at the TrainingArguments call with the fix there; EC501 still does not
    judge a text dataset served from memory."""
    for workers, expected in ((32, "fail"), (8, "pass")):
        extra = f", dataloader_num_workers={workers}"
        (tmp_path / "train.py").write_text(SCRIPT.replace("ARGS", extra))
        results = audit(tmp_path / "train.py", rules=("EC501", "EC504"))
        assert results["EC504"].status.value == expected
        assert results["EC501"].status.value == "pass"
    (tmp_path / "train.py").write_text(SCRIPT.replace("ARGS", ", dataloader_num_workers=32"))
    [finding] = audit(tmp_path / "train.py", rules=("EC504",))["EC504"].findings
    assert finding.location is not None and finding.location.line == 6
    assert finding.fix is not None and "TrainingArguments(..., dataloader_num_workers=" in (
        finding.fix
    )
    (tmp_path / "train.py").write_text(SCRIPT.replace("ARGS", ", dataloader_num_workers=0"))
    assert audit(tmp_path / "train.py", rules=("EC501",))["EC501"].status.value == "pass"


HELPER = """
import argparse
from transformers import Trainer, TrainingArguments


def run_training(args, model, train_data):
    training_args = TrainingArguments(output_dir="out", fp16=args.fp16)
    Trainer(model=model, args=training_args, train_dataset=train_data).train()


def main(args):
    run_training(args, load_model(), load_data())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp16", default=False, action="store_true")
    main(parser.parse_args())
"""


def test_trainer_fp16_from_a_store_true_option_is_amp_behind_a_flag(tmp_path: Path) -> None:
    """`TrainingArguments(fp16=args.fp16)` with a store_true `--fp16`, the options handed
    through helpers' parameters: mixed precision is offered behind the flag, as for
    `Accelerator(mixed_precision=args.mixed_precision)`, not float32 with no choice."""
    (tmp_path / "train.py").write_text(HELPER)
    result = audit(tmp_path / "train.py", rules=("EC507",))["EC507"]
    assert result.status.value != "fail", result.reason
    assert "--fp16" in result.reason
