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
    assert [f.location.line for f in result.findings] == [24]  # the copy in plot, once
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


TRAINER_SHARING_A_METHOD_WITH_EVALUATION = """
import torch


class Trainer:
    def _update_loss(self, losses, loss):
        if self.state == State.TRAIN:
            losses.append(loss.item())
        elif self.state == State.VALID:
            losses.append(loss.mean().item())

    def train_one_epoch(self, loader):
        losses = []
        for batch in loader:
            loss = self.model(batch.to("cuda"))
            loss.backward()
            self.optimizer.step()
            self._update_loss(losses, loss)

    def validate(self, loader):
        losses = []
        with torch.no_grad():
            for batch in loader:
                self._update_loss(losses, self.model(batch.to("cuda")))
"""


def test_a_trainer_method_shared_with_evaluation_is_reported_at_its_sync(
    tmp_path: Path,
) -> None:
    """A method of the trainer that the step and the evaluation both call: the sync
    statement inside it is what to change (not the step's call), and its branch taken
    only when validating is not the step's path."""
    result = ec509(tmp_path, TRAINER_SHARING_A_METHOD_WITH_EVALUATION)
    assert [f.location.line for f in result.findings] == [8]


def test_a_utility_shared_with_other_code_is_reported_at_the_step_s_call(
    tmp_path: Path,
) -> None:
    """`metric.add(loss)` of a utility class (d2l's Accumulator): the caller hands it a
    device tensor, so the step's call is the place to change."""
    source = TRAINER_SHARING_A_METHOD_WITH_EVALUATION.replace(
        "self._update_loss(losses, loss)", "meter.update(losses, loss)"
    ).replace("self._update_loss(losses, self.model", "meter.update(losses, self.model") + (
        "\n\nclass Meter:\n    def update(self, losses, value):\n"
        "        losses.append(float(value))\n\n\nmeter = Meter()\n"
    )
    result = ec509(tmp_path, source)
    assert [f.location.line for f in result.findings] == [18]


GRAD_CLIPPING = """
import torch


def grad_clipping(net, theta):
    params = [p for p in net.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
    if norm > theta:
        for param in params:
            param.grad[:] *= theta / norm


def train(net, loader, device):
    for X, Y in loader:
        l = net(X.to(device), Y.to(device))
        l.backward()
        grad_clipping(net, 1)
        optimizer.step()
"""


def test_a_norm_of_the_gradients_tested_every_step_is_a_sync(tmp_path: Path) -> None:
    """`p.grad` lives with the parameters, on the device: d2l's grad_clipping compares
    its norm on the host every step."""
    assert [f.location.line for f in ec509(tmp_path, GRAD_CLIPPING).findings] == [8]


SYNC_HELPER_TWICE = """
import time
import torch


def time_wrap(use_gpu):
    if use_gpu:
        torch.cuda.synchronize()
    return time.time()


model = model.to("cuda")
for X, T in train_ld:
    t1 = time_wrap(True)
    loss = model(X.to("cuda"), T.to("cuda"))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    t2 = time_wrap(True)
print(time_wrap(True))
"""


def test_a_shared_sync_helper_called_twice_in_the_step_waits_twice(tmp_path: Path) -> None:
    """A utility shared with other code is reported where the step calls it: at each of
    its calls, the second (after the optimizer step) waiting for the whole step."""
    result = ec509(tmp_path, SYNC_HELPER_TWICE)
    assert [f.location.line for f in result.findings] == [14, 19]


CLOSURE_STEP = """
import torch
from .torch_tools import to_numpy


def train_one_epoch(model, loss_fn, data_loader, optimizer, device):
    for batch in data_loader:
        _, metrics = take_step(model, loss_fn, batch, optimizer, device)


def take_step(model, loss_fn, batch, optimizer, device):
    batch = batch.to(device)

    def closure():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(batch), batch)
        loss.backward()
        return loss

    loss = closure()
    optimizer.step()
    return loss, {"loss": to_numpy(loss)}


def take_step_lbfgs(model, loss_fn, batch, optimizer, device):
    def closure():
        optimizer.zero_grad()
        loss = loss_fn(model(batch.to(device)), batch)
        loss.backward()
        return loss

    return optimizer.step(closure)
"""


def test_a_step_helper_s_own_closure_runs_its_backward(tmp_path: Path) -> None:
    """mace's `take_step` defines `def closure(): ... loss.backward()` and calls it: the
    call runs that closure (not the LBFGS step's of the same name), so the loop calling
    `take_step` per batch trains, and `to_numpy(loss)` after the step reads the loss
    every step."""
    result = ec509(tmp_path, CLOSURE_STEP)
    assert [f.location.line for f in result.findings] == [22]


EPOCH_DRIVER = """
import torch


class Trainer(object):
    def __init__(self, model, optimizer, criterion, epochs):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.epochs = epochs
        self.device = torch.device("cuda")
        self.outputs = []

    def valid_epoch(self, data):
        self.outputs = []
        for step, batch in enumerate(data):
            self.model.eval()
            x, y = tuple(t.to(self.device) for t in batch)
            with torch.no_grad():
                logits = self.model(x)
            self.outputs.append(logits.cpu().detach())
        self.outputs = torch.cat(self.outputs, dim=0).cpu().detach()
        loss = self.criterion(self.outputs, y.cpu())
        return loss.item()

    def train_epoch(self, data):
        self.outputs = []
        for step, batch in enumerate(data):
            self.model.train({mode})
            x, y = tuple(t.to(self.device) for t in batch)
            logits = self.model(x)
            loss = self.criterion(logits, y)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.outputs.append(logits.detach())
        self.outputs = torch.cat(self.outputs, dim=0).cpu().detach()
        return self.outputs

    def train(self, train_data, valid_data{default}):
        for epoch in range(self.epochs):
            self.train_epoch(train_data)
            self.valid_epoch(valid_data)
"""


def test_the_epoch_loop_is_no_helper_of_the_step_loop(tmp_path: Path) -> None:
    """pybert's Trainer: `self.model.train()` in `train_epoch`'s step loop is the
    nn.Module switching to training mode, not the Trainer's own `train(self, train_data,
    valid_data)`, which it cannot bind to. Read as that method, the epoch loop (and
    through it `valid_epoch` and the code after `train_epoch`'s loop) ran per step."""
    result = ec509(tmp_path, EPOCH_DRIVER.format(mode="", default=""))
    assert [f.location.line for f in result.findings] == []


def test_a_helper_calling_back_the_step_loop_s_function_is_its_epoch_loop(
    tmp_path: Path,
) -> None:
    """The same Trainer when the call could bind (`self.model.train(True)`, `train(self,
    train_data, valid_data=None)`): a function that calls the one holding the step loop
    drives it, once an epoch; it is no per-step helper, nor is what it calls."""
    result = ec509(tmp_path, EPOCH_DRIVER.format(mode="True", default="=None"))
    assert [f.location.line for f in result.findings] == []
