"""What a project's model class builds beyond its kind, read in its own file
(class_kinds.layer_traits, run_options.model_traits), and widths read through the
constructor's own attributes (widths.py).

crnn.pytorch's CRNN (models/crnn.py) is a VGG-style Conv2d stack feeding two
`BidirectionalLSTM`s: `nn.LSTM` runs in cuDNN, under the TF32 switch the convolutions
use, so EC508 passes; a CRNN stepping `nn.LSTMCell`s (cuBLAS matmuls) fails. cgcnn's
`CrystalGraphConvNet` is
`nn.Linear` over neighbour features gathered by index (`atom_in_fea[nbr_fea_idx, :]`),
applied in `for conv_func in self.convs`: the loop variable's name says nothing of its
kind, there is no cuDNN convolution (EC506 passes) and the graph network leaves
EC507/EC508 unknown.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import project_checks

from envcheck.scripts.class_kinds import definition_kind, layer_traits

audit = project_checks  # `envcheck scripts` in a project of files


CRNN = """\
import torch.nn as nn


class BidirectionalLSTM(nn.Module):
    def __init__(self, nIn, nHidden, nOut):
        super().__init__()
        self.rnn = nn.LSTM(nIn, nHidden, bidirectional=True)
        self.embedding = nn.Linear(nHidden * 2, nOut)


class CRNN(nn.Module):
    def __init__(self, nc, nclass, nh):
        super().__init__()
        self.cnn = nn.Sequential(nn.Conv2d(nc, 64, 3), nn.ReLU(True), nn.Conv2d(64, 512, 3))
        self.rnn = nn.Sequential(BidirectionalLSTM(512, nh, nh), BidirectionalLSTM(nh, nh, nclass))
"""
CRNN_TRAIN = """\
import argparse

import torch
import torch.backends.cudnn as cudnn

import models.crnn as crnn

parser = argparse.ArgumentParser()
parser.add_argument("--nh", type=int, default=256)
opt = parser.parse_args()
cudnn.benchmark = True

model = crnn.CRNN(1, 37, opt.nh).cuda()
optimizer = torch.optim.Adam(model.parameters())
for image, target in loader:
    optimizer.zero_grad()
    loss = model(image.cuda()).sum()
    loss.backward()
    optimizer.step()
"""

GRAPH = """\
import torch
import torch.nn as nn


class ConvLayer(nn.Module):
    def __init__(self, atom_fea_len, nbr_fea_len):
        super().__init__()
        self.fc_full = nn.Linear(2 * atom_fea_len + nbr_fea_len, 2 * atom_fea_len)

    def forward(self, atom_in_fea, nbr_fea, nbr_fea_idx):
        atom_nbr_fea = atom_in_fea[nbr_fea_idx, :]
        total = torch.cat([atom_nbr_fea, nbr_fea], dim=2)
        return self.fc_full(total).sum(dim=1)


class CrystalGraphConvNet(nn.Module):
    def __init__(self, orig_atom_fea_len, nbr_fea_len, atom_fea_len=64, n_conv=3):
        super().__init__()
        self.embedding = nn.Linear(orig_atom_fea_len, atom_fea_len)
        self.convs = nn.ModuleList(
            [ConvLayer(atom_fea_len=atom_fea_len, nbr_fea_len=nbr_fea_len) for _ in range(n_conv)]
        )
        self.fc_out = nn.Linear(atom_fea_len, 1)

    def forward(self, atom_fea, nbr_fea, nbr_fea_idx):
        atom_fea = self.embedding(atom_fea)
        for conv_func in self.convs:
            atom_fea = conv_func(atom_fea, nbr_fea, nbr_fea_idx)
        return self.fc_out(atom_fea)
"""
GRAPH_TRAIN = """\
import torch

from cgcnn.model import CrystalGraphConvNet

model = CrystalGraphConvNet(92, 41).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for atom_fea, nbr_fea, nbr_fea_idx, target in loader:
    optimizer.zero_grad()
    output = model(atom_fea.cuda(), nbr_fea.cuda(), nbr_fea_idx.cuda())
    loss = (output - target.cuda()).pow(2).mean()
    loss.backward()
    optimizer.step()
"""


def test_conv_backbone_feeding_cudnn_lstms_of_another_file_has_tf32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"models/__init__.py": "", "models/crnn.py": CRNN, "train.py": CRNN_TRAIN}
    checks = audit(tmp_path, files, monkeypatch)
    assert checks["EC508"][0] == "pass", checks["EC508"]  # cuDNN RNNs: TF32 already
    assert checks["EC506"][0] == "pass", checks["EC506"]  # still convolutions, benchmarked


def test_conv_backbone_feeding_lstm_cells_of_another_file_is_matmul_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cells = CRNN.replace("nn.LSTM(nIn, nHidden, bidirectional=True)", "nn.LSTMCell(nIn, nHidden)")
    files = {"models/__init__.py": "", "models/crnn.py": cells, "train.py": CRNN_TRAIN}
    checks = audit(tmp_path, files, monkeypatch)
    assert checks["EC508"][0] == "fail", checks["EC508"]


def test_cnn_with_only_linear_heads_elsewhere_keeps_tf32_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cnn = CRNN.replace("BidirectionalLSTM(512, nh, nh), BidirectionalLSTM(nh, nh, nclass)", "")
    files = {"models/__init__.py": "", "models/crnn.py": cnn, "train.py": CRNN_TRAIN}
    checks = audit(tmp_path, files, monkeypatch)
    assert checks["EC508"][0] == "pass", checks["EC508"]


def test_graph_network_named_conv_is_judged_by_its_layers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"cgcnn/__init__.py": "", "cgcnn/model.py": GRAPH, "main.py": GRAPH_TRAIN}
    checks = audit(tmp_path, files, monkeypatch, script="main.py")
    assert checks["EC506"][0] != "fail", checks["EC506"]
    assert checks["EC507"][0] == "unknown", checks["EC507"]
    assert checks["EC508"][0] == "unknown", checks["EC508"]


def test_layer_traits_and_loop_values() -> None:
    module = ast.parse(GRAPH)
    assert definition_kind(module, "CrystalGraphConvNet", lambda name, depth: None) == "matmul"
    assert layer_traits(module, "CrystalGraphConvNet") == {"graph"}
    assert layer_traits(ast.parse(CRNN), "CRNN") == {"recurrent"}
    # `x[mask]` with a mask handed in is no gather along edges
    masked = GRAPH.replace("nbr_fea_idx", "mask")
    assert layer_traits(ast.parse(masked), "CrystalGraphConvNet") == set()
