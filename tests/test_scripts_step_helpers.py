"""Per-step host reads inside the file's helpers reached through objects in a PyTorch
loop (envcheck/scripts/step_helpers.py): `self.model.training_step(batch)` runs the one
`training_step` of the file's class hierarchy, `self.plot(...)` runs the method of the
caller's class, a module lambda `numpy = lambda x: x.detach().numpy()` reads its argument
on the host, and what a helper returns into a tensor that `backward` is called on is a
tensor in the helper too. Snippets go through the real analyser and rules."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from test_scripts_torch import audit

SOURCE = """
import sys
import torch
d2l = sys.modules[__name__]
numpy = lambda x, *args: x.detach().numpy(*args)
to = lambda x, *args: x.to(*args)


def cpu():
    return torch.device("cpu")


class Board:
    def draw(self, x, y, every_n=1):
        self.points.append((x, y))


class Module(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.board = Board()

    def plot(self, key, value, train):
        self.board.draw(key, d2l.numpy(d2l.to(value, d2l.cpu())), every_n=2)

    def training_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("loss", l, train=True)
        return l

    def validation_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("loss", l, train=False)


class Classifier(d2l.Module):
    def training_step(self, batch):
        return self.loss(self(*batch[:-1]), batch[-1])


class Trainer:
    def prepare_model(self, model):
        model.to("cuda")
        self.model = model

    def fit_epoch(self):
        for batch in self.train_dataloader:
            loss = self.model.training_step(batch)
            self.optim.zero_grad()
            loss.backward()
            self.optim.step()
"""


def ec509(tmp_path: Path, source: str) -> Any:
    (tmp_path / "train.py").write_text(textwrap.dedent(source))
    return audit(tmp_path / "train.py", rules=("EC509",))["EC509"]


def test_a_method_reached_through_the_model_reads_the_loss_every_step(tmp_path: Path) -> None:
    result = ec509(tmp_path, SOURCE)
    assert [f.location.line for f in result.findings] == [28]  # in plot, two calls from the loop
    message = result.findings[0].message
    assert "d2l.numpy(" in message and "copies a tensor to the host (numpy)" in message


def test_two_unrelated_classes_defining_the_method_are_not_guessed(tmp_path: Path) -> None:
    """`obj.training_step` on an object the file does not build means the one method of a
    class hierarchy; with an unrelated class also defining it, nothing is assumed."""
    source = SOURCE + "\n\nclass Other:\n    def training_step(self, batch):\n        return 0\n"
    assert list(ec509(tmp_path, source).findings) == []


def test_the_module_s_own_cpu_function_is_no_tensor_copy(tmp_path: Path) -> None:
    """`d2l.cpu()` is the file's function, not `Tensor.cpu()`; with the loss plotted as
    a plain number nothing is read on the host."""
    source = SOURCE.replace("d2l.numpy(d2l.to(value, d2l.cpu()))", "key, d2l.cpu()")
    assert list(ec509(tmp_path, source).findings) == []
