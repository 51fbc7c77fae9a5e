"""EC508 and recurrent models: PyTorch runs `nn.LSTM`, `nn.GRU` and `nn.RNN` on a GPU
through cuDNN, whose RNN descriptor takes its math type from the cuDNN TF32 switch
(`allowTF32CuDNN(at::Float32Op::RNN)` in ATen's native/cudnn/RNN.cpp;
`torch.backends.cudnn.rnn.fp32_precision` is "tf32" by default), as convolutions do: an
LSTM with Linear heads already runs in TF32. RNN cells (`nn.LSTMCell`, stepped by hand)
are cuBLAS matmuls, and attention beside an LSTM (`nn.MultiheadAttention`, or the file's
own attention of Linear layers) is matmul work too: those still miss TF32. Mixed
precision (EC507) helps all of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import script_results

LSTM_MODEL = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30000, 512)
        self.rnn = nn.LSTM(512, 1024, num_layers=2, batch_first=True)
        self.out = nn.Linear(1024, 30000)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


model = Model().cuda()
opt = torch.optim.Adam(model.parameters())
data = torch.randint(0, 30000, (64, 128))
for step in range(1000):
    loss = model(data.cuda()).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
CELL = LSTM_MODEL.replace(
    "nn.LSTM(512, 1024, num_layers=2, batch_first=True)", "nn.LSTMCell(512, 1024)"
)
MULTIHEAD = LSTM_MODEL.replace(
    "        self.out = nn.Linear(1024, 30000)\n",
    "        self.attn = nn.MultiheadAttention(1024, 8)\n"
    "        self.out = nn.Linear(1024, 30000)\n",
)
ADDITIVE = LSTM_MODEL.replace("nn.LSTM(", "nn.GRU(").replace(
    "class Model(nn.Module):",
    """class Attention(nn.Module):
    def __init__(self, hid):
        super().__init__()
        self.attn = nn.Linear(hid * 2, hid)
        self.v = nn.Linear(hid, 1, bias=False)


class Model(nn.Module):""",
)
CONV_GRU = LSTM_MODEL.replace(
    "        self.out = nn.Linear(1024, 30000)\n",
    "        self.conv = nn.Conv1d(512, 512, 3)\n        self.out = nn.Linear(1024, 30000)\n",
).replace("nn.LSTM(", "nn.GRU(")
SQUEEZE_EXCITE = CONV_GRU.replace(
    "nn.GRU(512, 1024, num_layers=2, batch_first=True)", "nn.Identity()"
).replace(
    "class Model(nn.Module):",
    """class ChannelAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Linear(c, c // 16)


class Model(nn.Module):""",
)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (LSTM_MODEL, "pass"),  # cuDNN's TF32 covers the LSTM, the Linear is its head
        (CONV_GRU, "pass"),  # convolutions and a GRU: both cuDNN
        (CELL, "fail"),  # an LSTMCell is a cuBLAS matmul per step
        (MULTIHEAD, "fail"),  # attention beside the LSTM
        (ADDITIVE, "fail"),  # the file's own attention of Linear layers beside a GRU
        (SQUEEZE_EXCITE, "pass"),  # a CNN's Linear "attention" block stays a CNN's
    ],
    ids=["lstm", "conv-gru", "lstm-cell", "lstm-multihead", "gru-additive-attention", "cnn-se"],
)
def test_cudnn_rnns_are_covered_by_cudnn_tf32(tmp_path: Path, source: str, expected: str) -> None:
    results = script_results(tmp_path, source, name="train.py")
    assert results["EC508"].status.value == expected, results["EC508"]
    assert results["EC507"].status.value == "fail"  # autocast still helps every one
