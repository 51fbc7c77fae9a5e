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
