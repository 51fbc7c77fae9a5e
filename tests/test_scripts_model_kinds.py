"""The model a script trains, told from the models it only runs (frozen_models.py), and a
project's linear model (class_kinds.linear_model): EC506-EC508 judge the model trained.

SimCLR's linear evaluation builds a pretrained ResNet encoder, keeps it in eval mode and
runs it once over the images to compute features; the only optimizer trains a logistic
regression (one nn.Linear, in the project's modules) on them. The ResNet is no part of the
training step: cuDNN autotuning and mixed precision concern the linear model. A teacher
run in every step of the training loop is part of it and still counts.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.scripts.class_kinds import linear_model

TARGET = Path(__file__).parent / "fixtures" / "gpu" / "datacenter-8x-a100-foreign-process.json"

PROBE = """\
import torch
import torch.nn.functional as F
import torchvision
from models import LinearProbe

encoder = torchvision.models.resnet50()
encoder.load_state_dict(torch.load("ckpt.pt"))
encoder = encoder.cuda()
encoder.eval()


def features(loader):
    out = []
    with torch.no_grad():
        for x, y in loader:
            out.append(encoder(x.cuda()))
    return torch.cat(out)


train_x = features(image_loader)
model = LinearProbe(2048, 10).cuda()
opt = torch.optim.Adam(model.parameters())
for epoch in range(10):
    for x, y in feature_loader:
        {step}loss = F.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
LINEAR = """\
import torch.nn as nn


class LinearProbe(nn.Module):
    def __init__(self, n_features, n_classes):
        super().__init__()
        self.model = nn.Linear(n_features, n_classes)

    def forward(self, x):
        return self.model(x)
"""
MLP = LINEAR.replace(
    "self.model = nn.Linear(n_features, n_classes)",
    "self.model = nn.Sequential(nn.Linear(n_features, 4096), nn.ReLU(), "
    "nn.Linear(4096, n_classes))",
)


def audit(tmp_path: Path, train: str, models: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`envcheck scripts train.py` in a project whose models.py is read as context."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "models.py").write_text(models)
    (tmp_path / "train.py").write_text(train)
    monkeypatch.chdir(tmp_path)
    args = ["scripts", "--format", "json", "--exit-zero", "--target", str(TARGET), "train.py"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    return {c["id"]: c["status"] for c in report["checks"]}


def test_a_frozen_encoder_computing_features_is_not_the_trained_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = audit(tmp_path, PROBE.format(step=""), LINEAR, monkeypatch)
    assert status["EC506"] == "pass"  # the ResNet runs before training, once
    assert status["EC507"] == "pass"  # a linear model: too small to gain
    assert status["EC508"] == "pass"


def test_a_frozen_model_run_in_every_step_still_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A teacher (or a frozen encoder) run inside the loop of backward passes is part of
    each step: its convolutions want cuDNN autotuning."""
    step = "with torch.no_grad():\n            x = encoder(x.cuda())\n        "
    status = audit(tmp_path, PROBE.format(step=step), LINEAR, monkeypatch)
    assert status["EC506"] == "fail"


def test_a_wide_mlp_on_frozen_features_is_still_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = audit(tmp_path, PROBE.format(step=""), MLP, monkeypatch)
    assert status["EC506"] == "pass"
    assert status["EC507"] == "fail"


def test_an_encoder_the_optimizer_trains_is_no_frozen_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fine-tuning: the optimizer takes the encoder's parameters too."""
    train = PROBE.format(step="").replace(
        "torch.optim.Adam(model.parameters())",
        "torch.optim.Adam([*model.parameters(), *encoder.parameters()])",
    )
    status = audit(tmp_path, train, LINEAR, monkeypatch)
    assert status["EC506"] == "fail"


def test_a_linear_model_is_one_linear_layer_and_nothing_else() -> None:
    assert linear_model(ast.parse(LINEAR), "LinearProbe")
    assert not linear_model(ast.parse(MLP), "LinearProbe")
    helper = LINEAR.replace("nn.Linear(n_features, n_classes)", "make_head(n_features)")
    assert not linear_model(ast.parse(helper), "LinearProbe")
