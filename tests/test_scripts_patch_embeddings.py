"""Transformers whose only convolution is a patch or token embedding (class_kinds.py).

Donut and Nougat (sweeps AD, AE) build a Swin encoder: timm's `SwinTransformer`, with its
weights taken from `timm.create_model("swin_base_patch4_window12_384").state_dict()`.
Time-LLM's model embeds time-series patches with a `TokenEmbedding` holding one Conv1d
in front of a LLaMA backbone. None of them is a CNN: the one conv projects patches or
tokens into the transformer's width, and cuDNN autotuning would tune that one layer.
A timm model named for a CNN, or an embedding class of several convolutions (a CNN
encoder named `ImageEmbedding`), still is one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import project_checks

from envcheck.scripts.class_kinds import definition_kind

SWIN = """\
import timm
import torch.nn as nn
from timm.models.swin_transformer import SwinTransformer


class SwinEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = SwinTransformer(patch_size=4, embed_dim=128, num_heads=[4, 8, 16, 32])
        weights = timm.create_model("{arch}", pretrained=True).state_dict()
        self.model.load_state_dict(weights)

    def forward(self, x):
        return self.model.layers(self.model.patch_embed(x))
"""
EMBEDDING = """\
import torch.nn as nn


class TokenEmbedding(nn.Module):
    def __init__(self, c_in, d_model):
        super().__init__()
        self.tokenConv = nn.Conv1d(c_in, d_model, kernel_size=3, padding=1)

    def forward(self, x):
        return self.tokenConv(x.permute(0, 2, 1)).transpose(1, 2)


class PatchEmbedding(nn.Module):
    def __init__(self, d_model, patch_len):
        super().__init__()
        self.value_embedding = TokenEmbedding(patch_len, d_model)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(self.value_embedding(x))


class Model(nn.Module):
    def __init__(self, d_model=768, patch_len=16):
        super().__init__()
        self.patch_embedding = PatchEmbedding(d_model, patch_len)
        self.attention = nn.MultiheadAttention(d_model, 8)
        self.head = nn.Linear(d_model, 96)

    def forward(self, x):
        x = self.patch_embedding(x)
        return self.head(self.attention(x, x, x)[0])
"""
TRAIN = """\
import torch
from models import Model

model = Model().cuda()
opt = torch.optim.Adam(model.parameters())
for x, y in loader:
    loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def kind(source: str, name: str) -> object:
    return definition_kind(ast.parse(source), name, lambda name, depth: None)


def test_a_timm_vision_transformer_loaded_for_its_weights_is_no_cnn() -> None:
    assert kind(SWIN.format(arch="swin_base_patch4_window12_384"), "SwinEncoder") == "matmul"
    assert kind(SWIN.format(arch="resnet50"), "SwinEncoder") == "conv"


def test_a_token_embedding_of_one_conv_is_a_projection() -> None:
    assert kind(EMBEDDING, "TokenEmbedding") == "matmul"
    assert kind(EMBEDDING, "Model") == "matmul"
    second = EMBEDDING.replace(
        "        self.tokenConv = nn.Conv1d(c_in, d_model, kernel_size=3, padding=1)\n",
        "        self.tokenConv = nn.Conv1d(c_in, d_model, kernel_size=3, padding=1)\n"
        "        self.second = nn.Conv1d(d_model, d_model, kernel_size=3, padding=1)\n",
    )
    assert kind(second, "Model") == "conv"  # a convolutional encoder named an embedding


def test_a_transformer_with_a_token_embedding_is_not_told_to_autotune_cudnn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks = project_checks(tmp_path, {"models.py": EMBEDDING, "train.py": TRAIN}, monkeypatch)
    assert checks["EC506"][0] == "pass"
    assert checks["EC508"][0] == "fail"  # the attention and the Linear head: TF32 matters
    conv = EMBEDDING.replace("nn.MultiheadAttention(d_model, 8)", "nn.Conv1d(d_model, d_model, 3)")
    checks = project_checks(tmp_path, {"models.py": conv, "train.py": TRAIN}, monkeypatch)
    assert checks["EC506"][0] == "fail"
