"""A model's kind misread from names (class_kinds.py, model_names.py): EC506-EC508 follow it.

SupContrast's `SupCEResNet` builds its encoder through a local picked from a dict of
ResNet factories (`model_fun, dim_in = model_dict[name]`): those factories decide, not the
`nn.Linear` head beside it. Hugging Face's GPT-2 `Conv1D` is a Linear, and transformers'
`prune_conv1d_layer` prunes one: a GPT-2 copied into a project is no convolutional model.
FastChat's `get_conv_template("vicuna")` builds a chat conversation, no convolution.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from conftest import project_checks

from envcheck.scripts.class_kinds import definition_kind
from envcheck.scripts.model_names import architecture

RESNETS = """\
import torch.nn as nn


class ResNet(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3)


def resnet18():
    return ResNet(18)


def resnet50():
    return ResNet(50)


model_dict = {"resnet18": [resnet18, 512], "resnet50": [resnet50, 2048]}


class SupCEResNet(nn.Module):
    def __init__(self, name="resnet50", num_classes=10):
        super().__init__()
        model_fun, dim_in = model_dict[name]
        self.encoder = model_fun()
        self.fc = nn.Linear(dim_in, num_classes)
"""

GPT2 = """\
import torch.nn as nn
from transformers.modeling_utils import Conv1D, prune_conv1d_layer


class Attention(nn.Module):
    def __init__(self, nx, n_state):
        super().__init__()
        self.c_attn = Conv1D(3 * n_state, nx)
        self.c_proj = Conv1D(n_state, nx)

    def prune_heads(self, index):
        self.c_attn = prune_conv1d_layer(self.c_attn, index, dim=1)
"""


def nowhere(name: str, depth: int) -> None:
    return None


def test_a_factory_picked_from_a_dict_of_resnets_is_convolutional() -> None:
    assert definition_kind(ast.parse(RESNETS), "SupCEResNet", nowhere) == "conv"


def test_a_dict_of_mixed_kinds_says_nothing() -> None:
    mixed = RESNETS.replace(
        'model_dict = {"resnet18": [resnet18, 512],',
        "class MLP(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(8, 8)\n\n\n"
        'model_dict = {"mlp": [MLP, 8],',
    )
    assert definition_kind(ast.parse(mixed), "SupCEResNet", nowhere) is None


def test_transformers_conv1d_is_a_linear_layer() -> None:
    assert definition_kind(ast.parse(GPT2), "Attention", nowhere) == "matmul"
    keras_like = GPT2.replace("from transformers.modeling_utils", "from project.layers")
    assert definition_kind(ast.parse(keras_like), "Attention", nowhere) == "conv"


def test_chat_templates_and_pruning_helpers_name_no_model() -> None:
    assert architecture("get_conv_template") is None
    assert architecture("get_conversation_template") is None
    assert architecture("prune_conv1d_layer") is None
    assert architecture("conv_block") == "conv"
    assert architecture("ConvNet") == "conv"


TINY_MODELS = """\
import torch.nn as nn


class TinyTransformer(nn.Module):
    def __init__(self, hidden_size, n_layer):
        super().__init__()
        layer = nn.TransformerEncoderLayer(hidden_size, 1)
        self.blocks = nn.TransformerEncoder(layer, n_layer)
        self.head = nn.Linear(hidden_size, 1)
"""
TINY_TRAIN = """\
import argparse

import torch
from models import TinyTransformer


def experiment(variant):
    model = TinyTransformer(hidden_size=variant["embed_dim"], n_layer=variant["n_layer"])
    model = model.to("cuda")
    opt = torch.optim.AdamW(model.parameters())
    for x, y in loader:
        loss = ((model(x.cuda()) - y.cuda()) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--embed_dim", type=int, default=128)
    parser.add_argument("--n_layer", type=int, default={layers})
    args = parser.parse_args()
    experiment(variant=vars(args))
"""


def audit(tmp_path: Path, train: str, models: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`envcheck scripts train.py` in a project whose models.py is read as context."""
    checks = project_checks(tmp_path, {"models.py": models, "train.py": train}, monkeypatch)
    return {rule: status for rule, (status, _) in checks.items()}


def test_a_narrow_shallow_transformer_from_option_defaults_is_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision Transformer's GPT-2 of width 128 and 3 layers, its sizes read from the
    argparse defaults through `variant = vars(args)`: nothing for tensor cores."""
    status = audit(tmp_path, TINY_TRAIN.format(layers=3), TINY_MODELS, monkeypatch)
    assert status["EC507"] == "pass"
    assert status["EC508"] == "pass"


def test_a_narrow_but_deep_transformer_is_still_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = audit(tmp_path, TINY_TRAIN.format(layers=24), TINY_MODELS, monkeypatch)
    assert status["EC507"] == "fail"
    wide = TINY_TRAIN.format(layers=3).replace("default=128", "default=768")
    assert audit(tmp_path, wide, TINY_MODELS, monkeypatch)["EC507"] == "fail"
