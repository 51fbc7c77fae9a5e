"""A model's kind read through the project's own modules (class_kinds.py, run_options.py):
EC506-EC508 judge the model the script trains, not the helpers around it.

3D-ResNets' `generate_model(opt)` dispatches to `resnet.generate_model(...)` of the module
`from models import resnet`: that factory of another file decides. Its
`load_pretrained_model(model, ...)` replaces the head of the model it is handed
(`tmp_model.fc = nn.Linear(...)`): a head on a model built elsewhere, no MLP.
RepDistiller's `LinearEmbed` (one nn.Linear, `x.view(...)` in forward) beside a CIFAR
ResNet is a head too, as `nn.Linear` itself is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import project_checks

audit = project_checks  # `envcheck scripts` in a project of files


RESNET3D = """\
import torch.nn as nn


class ResNet(nn.Module):
    def __init__(self, depth, n_classes):
        super().__init__()
        self.conv1 = nn.Conv3d(3, 64, 7)
        self.fc = nn.Linear(512, n_classes)


def generate_model(model_depth, **kwargs):
    return ResNet(model_depth, **kwargs)
"""
FACTORY = """\
import torch
from torch import nn

from models import resnet


def generate_model(opt):
    if opt.model == "resnet":
        model = resnet.generate_model(model_depth=opt.model_depth, n_classes=opt.n_classes)
    return model


def load_pretrained_model(model, pretrain_path, n_finetune_classes):
    if pretrain_path:
        model.load_state_dict(torch.load(pretrain_path)["state_dict"])
        tmp_model = model
        tmp_model.fc = nn.Linear(tmp_model.fc.in_features, n_finetune_classes)
    return model
"""
TRAIN = """\
import argparse

import torch
from torch.backends import cudnn

from model import generate_model, load_pretrained_model

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="resnet")
parser.add_argument("--model_depth", type=int, default=18)
parser.add_argument("--n_classes", type=int, default=400)
parser.add_argument("--pretrain_path", default=None)
opt = parser.parse_args()
cudnn.benchmark = True
model = generate_model(opt)
model = load_pretrained_model(model, opt.pretrain_path, 10).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(100):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_factory_reaching_a_module_of_resnets_is_convolutional(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"models/__init__.py": "", "models/resnet.py": RESNET3D, "model.py": FACTORY}
    status = audit(tmp_path, {**files, "train.py": TRAIN}, monkeypatch)
    assert status["EC508"][0] == "pass"  # cuDNN already runs the convolutions in TF32
    assert status["EC507"][0] == "fail"  # float32 on tensor cores still
    assert status["EC506"][0] == "pass"


def test_a_head_replaced_on_a_handed_model_builds_no_mlp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alone, the pretrained-weights loader says nothing: the model is out of sight."""
    train = TRAIN.replace("model = generate_model(opt)\n", "model = torch.load('m.pt')\n")
    status = audit(tmp_path, {"model.py": FACTORY, "train.py": train}, monkeypatch)
    assert status["EC508"][0] == "unknown"


CIFAR_MODELS = """\
import torch.nn as nn


class ResNet(nn.Module):
    def __init__(self, num_classes=100):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3)
        self.fc = nn.Linear(64, num_classes)


def resnet8(num_classes=100):
    return ResNet(num_classes)


class LinearEmbed(nn.Module):
    def __init__(self, dim_in=1024, dim_out=128):
        super(LinearEmbed, self).__init__()
        self.linear = nn.Linear(dim_in, dim_out)

    def forward(self, x):
        x = x.view(x.shape[0], -1)
        return self.linear(x)
"""
DISTILL = """\
import torch
import torch.backends.cudnn as cudnn

from models import resnet8, LinearEmbed

cudnn.benchmark = True
model_s = resnet8(num_classes=100).cuda()
embed_s = LinearEmbed(64, 128).cuda()
params = list(model_s.parameters()) + list(embed_s.parameters())
optimizer = torch.optim.SGD(params, lr=0.05)
for epoch in range(240):
    for x, y in loader:
        feat = model_s(x.cuda())
        loss = embed_s(feat).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_project_linear_embedding_beside_a_cnn_is_a_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = audit(tmp_path, {"models.py": CIFAR_MODELS, "train.py": DISTILL}, monkeypatch)
    assert status["EC508"][0] == "pass"
    assert status["EC507"][0] == "fail"
    mlp = CIFAR_MODELS.replace(
        "self.linear = nn.Linear(dim_in, dim_out)",
        "self.linear = nn.Sequential(nn.Linear(dim_in, 4096), nn.Linear(4096, dim_out))",
    )
    status = audit(tmp_path, {"models.py": mlp, "train.py": DISTILL}, monkeypatch)
    assert status["EC508"][0] == "fail"  # a wide MLP beside the CNN is matmul work


def test_a_dataset_class_building_an_stft_is_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AudioLDM's AudioDataset builds an STFT of conv1d filters through a module of the
    project (`Audio.stft.TacotronSTFT(...)`): features for samples, no convolutional model."""
    stft = (
        "import torch.nn as nn\n\n\nclass TacotronSTFT(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv1d(1, 514, 1024)\n"
    )
    dataset = (
        "from torch.utils.data import Dataset\nimport audio.stft as stft_module\n\n\n"
        "class AudioDataset(Dataset):\n    def __init__(self):\n"
        "        self.stft = stft_module.TacotronSTFT()\n"
    )
    train = (
        "import torch\nfrom data import AudioDataset\nfrom builder import build\n\n"
        "loader = torch.utils.data.DataLoader(AudioDataset(), batch_size=8)\n"
        "model = build().cuda()\nopt = torch.optim.Adam(model.parameters())\n"
        "for x in loader:\n    loss = model(x.cuda()).mean()\n    opt.zero_grad()\n"
        "    loss.backward()\n    opt.step()\n"
    )
    files = {"audio/__init__.py": "", "audio/stft.py": stft, "data.py": dataset}
    status = audit(tmp_path, {**files, "train.py": train}, monkeypatch)
    assert status["EC506"][0] == "unknown"  # the model is out of sight, not convolutional


ESTIMATOR = """\
import torch
import torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader


class BaseModelTorch:
    def __init__(self, params, args):
        self.args = args
        self.device = torch.device("cuda")

    def fit(self, X, y):
        optimizer = torch.optim.AdamW(self.model.parameters())
        X = torch.tensor(X).float()
        y = torch.tensor(y)
        loader = DataLoader(TensorDataset(X, y), batch_size=self.args.batch_size)
        for epoch in range(self.args.epochs):
            for batch_X, batch_y in loader:
                out = self.model(batch_X.to(self.device))
                loss = nn.functional.mse_loss(out, batch_y.to(self.device))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""


def test_a_base_estimator_fitting_the_arrays_it_is_handed_trains_a_tabular_net(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TabSurvey's base class: `fit(self, X, y)` wraps the arrays in a TensorDataset and
    trains `self.model`, built by subclasses out of sight: feature rows, a tabular net."""
    status = audit(tmp_path, {"basemodel.py": ESTIMATOR}, monkeypatch, "basemodel.py")
    assert status["EC507"][0] == "pass"
    assert "feature arrays" in status["EC507"][1]
    other = ESTIMATOR.replace("def fit(self, X, y):", "def train(self, X, y):")
    status = audit(tmp_path, {"basemodel.py": other}, monkeypatch, "basemodel.py")
    assert status["EC507"][0] == "fail"  # no estimator's fit: images in memory as well


TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, optimizer, get_batch):
        self.model = model
        self.optimizer = optimizer
        self.get_batch = get_batch

    def train_iteration(self, num_steps):
        for _ in range(num_steps):
            states, actions = self.get_batch()
            loss = ((self.model(states.to("cuda")) - actions.to("cuda")) ** 2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""
EXPERIMENT = """\
import argparse

import torch

from pkg.models.tiny import MLP
from pkg.training.trainer import Trainer

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    args = parser.parse_args()
    model = MLP(hidden_dim=64).to("cuda")
    trainer = Trainer(model, torch.optim.AdamW(model.parameters()), get_batch)
    trainer.train_iteration(100)
"""
TINY_NET = """\
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, hidden_dim):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(11, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 3))
"""


def test_a_trainer_is_judged_by_the_model_its_entry_point_hands_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """decision-transformer: gym/experiment.py builds a tiny model and hands it to
    `pkg/training/trainer.py` (namespace packages, no __init__.py): the importer is found
    beside the top package and its small model is the trainer's."""
    files = {
        "gym/pkg/training/trainer.py": TRAINER,
        "gym/pkg/models/tiny.py": TINY_NET,
        "gym/experiment.py": EXPERIMENT,
    }
    status = audit(tmp_path, files, monkeypatch, "gym/pkg/training/trainer.py")
    assert status["EC507"][0] == "pass"
    assert "gym/experiment.py" in status["EC507"][1]
    conv = TINY_NET.replace(
        "nn.Linear(11, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 3)", "nn.Conv2d(3, 64, 3)"
    )
    files["gym/pkg/models/tiny.py"] = conv
    status = audit(tmp_path, files, monkeypatch, "gym/pkg/training/trainer.py")
    assert status["EC507"][0] == "fail"
    assert status["EC506"][0] == "unknown"  # a larger model: the entry point's to judge
