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
from conftest import project_checks, script_results

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


# an LSTM classifier: its 10-class Linear is a head
CLASSIFIER = LSTM_MODEL.replace("nn.Linear(1024, 30000)", "nn.Linear(1024, 10)")
# a seq2seq decoder projecting onto its target vocabulary, sized by the data
SEQ2SEQ = (
    LSTM_MODEL.replace(
        "class Model(nn.Module):\n    def __init__(self):",
        "class Model(nn.Module):\n    def __init__(self, output_dim):",
    )
    .replace("nn.Linear(1024, 30000)", "nn.Linear(1024, output_dim)")
    .replace(
        "model = Model().cuda()",
        "vocab = build_vocab(open('train.txt').read().split())\nmodel = Model(len(vocab)).cuda()",
    )
)
# a word LM's decoder `nn.Linear(nhid, ntoken)`, ntoken a parameter no call settles
WORD_LM = (
    LSTM_MODEL.replace(
        "class Model(nn.Module):\n    def __init__(self):",
        "class Model(nn.Module):\n    def __init__(self, ntoken, nhid=1024):",
    )
    .replace("nn.Linear(1024, 30000)", "nn.Linear(nhid, ntoken)")
    .replace("model = Model().cuda()", "model = Model(*sys.argv[1:]).cuda()")
    .replace("import torch\n", "import sys\n\nimport torch\n", 1)
)
# a CRNN-like recognizer: a 37-class head, `len(alphabet) + 1` with a literal alphabet
CHARACTERS = (
    LSTM_MODEL.replace(
        "class Model(nn.Module):\n    def __init__(self):",
        "alphabet = '0123456789abcdefghijklmnopqrstuvwxyz'\n\n\n"
        "class Model(nn.Module):\n    def __init__(self, nclass):",
    )
    .replace("nn.Linear(1024, 30000)", "nn.Linear(1024, nclass)")
    .replace("model = Model().cuda()", "model = Model(len(alphabet) + 1).cuda()")
)
# an output width nothing tells: a head or a vocabulary's projection
UNREAD = WORD_LM.replace("ntoken", "n_out")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (LSTM_MODEL, "fail"),  # the 30000-wide Linear projects onto a vocabulary
        (CLASSIFIER, "pass"),  # cuDNN's TF32 covers the LSTM, the Linear is its head
        (SEQ2SEQ, "fail"),  # `len(vocab)` outputs: cuBLAS matmuls at every step
        (WORD_LM, "fail"),  # `ntoken` outputs
        (CHARACTERS, "pass"),  # 37 characters: a head
        (UNREAD, "unknown"),
        (CONV_GRU, "pass"),  # convolutions and a GRU: both cuDNN
        (CELL, "fail"),  # an LSTMCell is a cuBLAS matmul per step
        (MULTIHEAD, "fail"),  # attention beside the LSTM
        (ADDITIVE, "fail"),  # the file's own attention of Linear layers beside a GRU
        (SQUEEZE_EXCITE, "pass"),  # a CNN's Linear "attention" block stays a CNN's
    ],
    ids=[
        "lstm-vocab-literal",
        "lstm-classifier",
        "seq2seq-len-vocab",
        "word-lm-ntoken",
        "crnn-alphabet",
        "lstm-unread-width",
        "conv-gru",
        "lstm-cell",
        "lstm-multihead",
        "gru-additive-attention",
        "cnn-se",
    ],
)
def test_cudnn_rnns_are_covered_by_cudnn_tf32(tmp_path: Path, source: str, expected: str) -> None:
    results = script_results(tmp_path, source, name="train.py")
    assert results["EC508"].status.value == expected, results["EC508"]
    assert results["EC507"].status.value == "fail"  # autocast still helps every one


def test_the_reason_names_the_projection(tmp_path: Path) -> None:
    result = script_results(tmp_path, SEQ2SEQ, name="train.py")["EC508"]
    assert "nn.Linear(1024, output_dim)" in result.reason, result
    assert "vocabulary" in result.reason


# A word LM of another file of the project (awd-lstm-lm's model.py): nn.LSTM layers and
# a decoder onto the vocabulary; the training script builds it with `len(corpus.dictionary)`.
WORD_LM_MODEL = """\
import torch.nn as nn

from locked_dropout import LockedDropout


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.lockdrop = LockedDropout()
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type == "LSTM":
            self.rnns = [nn.LSTM(ninp, nhid, 1) for l in range(nlayers)]
        else:
            raise ValueError(rnn_type)
        self.rnns = nn.ModuleList(self.rnns)
        self.decoder = nn.Linear(nhid, ntoken)
"""
WORD_LM_MAIN = """\
import argparse

import torch

import data
import model

parser = argparse.ArgumentParser()
parser.add_argument("--data", default="data/wikitext-2")
args = parser.parse_args()
corpus = data.Corpus(args.data)
ntokens = len(corpus.dictionary)
model = model.RNNModel("LSTM", ntokens, 400, 1150, 3).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=30)
for x, y in corpus.batches():
    optimizer.zero_grad()
    loss = model(x.cuda()).sum()
    loss.backward()
    optimizer.step()
"""
# A speaker encoder of another file: an LSTM and a Linear of a width set in a
# star-imported module of constants (Real-Time-Voice-Cloning's encoder/params_model.py).
SPEAKER_MODEL = """\
import torch
import torch.nn as nn

from params_model import *


class SpeakerEncoder(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.lstm = nn.LSTM(input_size=40, hidden_size=hidden_size, num_layers=3)
        self.linear = nn.Linear(in_features=hidden_size, out_features=embedding_size)
        self.relu = torch.nn.ReLU()
        self.similarity_weight = nn.Parameter(torch.tensor([10.0]))
"""
SPEAKER_TRAIN = """\
import torch

from model import SpeakerEncoder

model = SpeakerEncoder(torch.device("cuda")).cuda()
optimizer = torch.optim.Adam(model.parameters())
for x in loader:
    optimizer.zero_grad()
    loss = model(x.cuda()).sum()
    loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"model.py": WORD_LM_MODEL, "main.py": WORD_LM_MAIN}, "fail"),
        (
            {
                "model.py": WORD_LM_MODEL.replace("nn.Linear(nhid, ntoken)", "nn.Linear(nhid, 10)"),
                "main.py": WORD_LM_MAIN,
            },
            "pass",
        ),
        (
            {
                "params_model.py": "hidden_size = 256\nembedding_size = 256\n",
                "model.py": SPEAKER_MODEL,
                "main.py": SPEAKER_TRAIN,
            },
            "pass",
        ),
        ({"model.py": SPEAKER_MODEL, "main.py": SPEAKER_TRAIN}, "unknown"),
        (
            {
                "model.py": WORD_LM_MODEL.replace("nn.LSTM(", "nn.LSTMCell("),
                "main.py": WORD_LM_MAIN.replace("ntokens, ", "10, "),
            },
            "fail",
        ),
    ],
    ids=["word-lm-decoder", "lstm-classifier", "speaker-encoder", "width-unread", "cells"],
)
def test_rnn_model_of_another_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], expected: str
) -> None:
    checks = project_checks(tmp_path, files, monkeypatch, script="main.py")
    assert checks["EC508"][0] == expected, checks["EC508"]
