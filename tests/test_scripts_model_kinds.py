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
from pathlib import Path
from typing import Any

import pytest
from conftest import project_checks

from envcheck.scripts.class_kinds import linear_model

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
    checks = project_checks(tmp_path, {"models.py": models, "train.py": train}, monkeypatch)
    return {rule: status for rule, (status, _) in checks.items()}


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


TABULAR_RESNET = """\
import torch.nn as nn


class ResNet(nn.Module):
    def __init__(self, d_in, d_main, d_out):
        super().__init__()
        self.first_layer = nn.Linear(d_in, d_main)
        self.head = nn.Linear(d_main, d_out)

    @classmethod
    def make_baseline(cls, d_in, d_main, d_out):
        return cls(d_in, d_main, d_out)

    def forward(self, x):
        return self.head(self.first_layer(x))


class ResNetDiffusion(nn.Module):
    def __init__(self, d_in, dim_t=256):
        super().__init__()
        self.resnet = ResNet.make_baseline(d_in, 1024, d_in)
        self.time_embed = nn.Sequential(nn.Linear(dim_t, dim_t), nn.SiLU())

    def forward(self, x, t):
        return self.resnet(x + self.time_embed(t))
"""
TABULAR_TRAIN = """\
import torch
from models import ResNetDiffusion

model = ResNetDiffusion(64).cuda()
opt = torch.optim.AdamW(model.parameters())
for x, t in loader:
    loss = model(x.cuda(), t.cuda()).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_class_named_resnet_of_linear_layers_is_no_cnn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tab-ddpm's `ResNetDiffusion` (sweep U), a tabular MLP-ResNet of nn.Linear defined in
    a file of the run: its layers decide, not its name; `self.resnet(x)`, a layer the class
    holds, names nothing, and `ResNet.make_baseline(...)` builds the module's own ResNet."""
    status = audit(tmp_path, TABULAR_TRAIN, TABULAR_RESNET, monkeypatch)
    assert status["EC506"] == "pass"
    assert status["EC507"] == "fail"  # 1024-wide Linear layers in float32
    conv = TABULAR_RESNET.replace("nn.Linear(d_in, d_main)", "nn.Conv2d(d_in, d_main, 3)")
    assert audit(tmp_path, TABULAR_TRAIN, conv, monkeypatch)["EC506"] == "fail"


def test_a_factory_of_a_class_named_resnet_reads_its_layers() -> None:
    from envcheck.scripts.class_kinds import definition_kind

    module = ast.parse(TABULAR_RESNET)
    assert definition_kind(module, "ResNetDiffusion", lambda name, depth: None) == "matmul"


WRAPPER = """\
import torch.nn as nn


class SimSiam(nn.Module):
    def __init__(self, base_encoder, dim=2048, pred_dim=512):
        super().__init__()
        self.encoder = base_encoder(num_classes=dim, zero_init_residual=True)
        self.predictor = nn.Sequential(
            nn.Linear(dim, pred_dim, bias=False), nn.ReLU(), nn.Linear(pred_dim, dim)
        )

    def forward(self, x1, x2):
        return self.predictor(self.encoder(x1)), self.encoder(x2).detach()
"""
WRAPPER_TRAIN = """\
import argparse
import torch
import torchvision.models as models
from models import SimSiam

parser = argparse.ArgumentParser()
parser.add_argument("--arch", default="{arch}")
args = parser.parse_args()
torch.backends.cudnn.benchmark = True
model = SimSiam({backbone}, 2048, 512).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for x1, x2 in loader:
    p, z = model(x1.cuda(), x2.cuda())
    loss = -(p * z).sum(dim=1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_backbone_handed_to_a_wrapper_is_no_mlp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SimSiam (sweep U): the wrapper calls `base_encoder(...)`, a parameter, so its
    Linear heads are not the whole model (class_kinds: out of sight); the backbone
    handed in by name from torchvision, `models.__dict__[args.arch]` with --arch
    "resnet50", is a CNN, whose convolutions already use TF32."""
    from envcheck.scripts.class_kinds import definition_kind

    assert definition_kind(ast.parse(WRAPPER), "SimSiam", lambda name, depth: None) is None
    train = WRAPPER_TRAIN.format(arch="resnet50", backbone="models.__dict__[args.arch]")
    status = audit(tmp_path, train, WRAPPER, monkeypatch)
    assert status["EC508"] == "pass"
    assert status["EC507"] == "fail"
    # a backbone the source does not show: the kind is not known
    train = WRAPPER_TRAIN.format(arch="resnet50", backbone="make_backbone()")
    assert audit(tmp_path, train, WRAPPER, monkeypatch)["EC508"] == "unknown"
