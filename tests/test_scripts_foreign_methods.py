"""EC509 through a method of a class another module of the project defines
(foreign_helpers.py, run_options.RunOptions.method_elsewhere).

`dice_loss = DiceLoss(n)` (`from utils import DiceLoss`) called as `dice_loss(out, y)`
runs `DiceLoss.forward`, whose loop over the classes does `dice.item()` with `dice` what
`self._dice(...)` returns; `metric_logger = utils.MetricLogger()` ...
`metric_logger.update(grad_norm=norm)` runs `update(self, **kwargs)`, which converts every
tensor it is handed (`if isinstance(v, torch.Tensor): v = v.item()`). Each waits for the
GPU every step at the step's call. An argument the step may hand as None (`acc = None` in
the branch not computing it), a method given only host numbers, a sync under an opt-in
branch of the method and a name bound to two classes are no finding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_scripts_project_context import audit

TRAIN = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
{imports}

def main(mixup=None):
    ds = TensorDataset(torch.randn(1024, 16), torch.randint(0, 4, (1024,)))
    loader = DataLoader(ds, batch_size=64, num_workers=1, pin_memory=True)
    model = torch.nn.Linear(16, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    {setup}
    for epoch in range(10):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if mixup is None:
                acc = (out.argmax(-1) == y).float().mean()
            else:
                acc = None
            opt.step()
            {call}

if __name__ == "__main__":
    main()
"""

DICE = """\
import torch
from torch import nn


class DiceLoss(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.n_classes = n_classes

    def _dice(self, score, target):
        intersect = torch.sum(score * target)
        return 1 - 2 * intersect / (torch.sum(score * score) + torch.sum(target * target))

    def forward(self, inputs, target, softmax=False, verbose=False):
        if softmax:
            inputs = torch.softmax(inputs, dim=1)
        if verbose:
            print(inputs.sum().item())
        assert inputs.size() == target.size()
        per_class = []
        loss = 0.0
        for i in range(self.n_classes):
            dice = self._dice(inputs[:, i], target[:, i])
            per_class.append(1.0 - dice.item())
            loss += dice
        return loss / self.n_classes
"""

QUIET = """\
import torch
from torch import nn


class SoftLoss(nn.Module):
    def forward(self, inputs, target, verbose=False):
        if verbose:
            print(inputs.sum().item())
        return ((inputs - target) ** 2).mean()


class Scaled:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, inputs, target):
        return self.factor * ((inputs - target) ** 2).mean()
"""

CALLED = """\
import torch


class Checked:
    def __call__(self, inputs, target):
        return self.check(((inputs - target) ** 2).mean())

    def check(self, value):
        if torch.isnan(value):
            raise ValueError("nan")
        return value
"""

LOGGER = """\
from collections import defaultdict

import torch


class Meter:
    def __init__(self):
        self.total = 0.0

    def update(self, value):
        self.total += value


class MetricLogger:
    def __init__(self):
        self.meters = defaultdict(Meter)

    def update(self, **kwargs):
        for k, v in kwargs.items():
            if v is None:
                continue
            if isinstance(v, torch.Tensor):
                v = v.item()
            assert isinstance(v, (float, int))
            self.meters[k].update(v)
"""

CASES = {
    "a loss module's forward reading what its own method returns": (
        {"utils.py": DICE},
        "from utils import DiceLoss",
        "dice_loss = DiceLoss(4)",
        "d = dice_loss(out, torch.nn.functional.one_hot(y, 4), softmax=True)",
        True,
    ),
    "a metric logger converting the grad norm it is handed by keyword": (
        {"utils.py": LOGGER},
        "import utils",
        "metric_logger = utils.MetricLogger()",
        "metric_logger.update(grad_norm=norm)",
        True,
    ),
    "a value made by a call given only keywords": (
        {"utils.py": LOGGER},
        "import utils",
        "metric_logger = utils.MetricLogger()\n    crit = torch.nn.MSELoss()",
        "metric_logger.update(err=crit(input=out, target=out.detach()))",
        True,
    ),
    "an instance's __call__ through a method of its own": (
        {"losses.py": CALLED},
        "from losses import Checked",
        "check = Checked()",
        "c = check(out, out.detach())",
        True,
    ),
    "a metric logger handed host numbers only": (
        {"utils.py": LOGGER},
        "import utils",
        "metric_logger = utils.MetricLogger()",
        "metric_logger.update(lr=opt.param_groups[0]['lr'])",
        False,
    ),
    "an argument the step may hand as None": (
        {"utils.py": LOGGER},
        "import utils",
        "metric_logger = utils.MetricLogger()",
        "metric_logger.update(acc=acc)",
        False,
    ),
    "a sync under an opt-in branch of forward": (
        {"losses.py": QUIET},
        "from losses import SoftLoss",
        "soft = SoftLoss()",
        "s = soft(out, out.detach())",
        False,
    ),
    "a __call__ without a sync": (
        {"losses.py": QUIET},
        "import losses",
        "scaled = losses.Scaled(2.0)",
        "s = scaled(out, out.detach())",
        False,
    ),
    "a name bound to instances of two classes": (
        {"utils.py": DICE, "losses.py": QUIET},
        "from utils import DiceLoss\nfrom losses import SoftLoss",
        "crit = DiceLoss(4) if mixup is None else SoftLoss()\n    crit = SoftLoss()",
        "d = crit(out, torch.nn.functional.one_hot(y, 4))",
        False,
    ),
}


def sync_lines(report: dict[str, Any]) -> list[int]:
    return [f["location"]["line"] for f in report["findings"] if f["id"] == "EC509"]


@pytest.mark.parametrize("files, imports, setup, call, syncs", CASES.values(), ids=list(CASES))
def test_a_step_calling_a_method_of_a_project_class(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    imports: str,
    setup: str,
    call: str,
    syncs: bool,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    train = TRAIN.format(imports=imports, setup=setup, call=call)
    (root / "train.py").write_text(train)
    line = next(i for i, text in enumerate(train.splitlines(), 1) if call in text)
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    assert sync_lines(report) == ([line] if syncs else []), report["findings"]


def test_the_finding_names_the_method_s_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    (root / "utils.py").write_text(LOGGER)
    train = TRAIN.format(
        imports="import utils",
        setup="metric_logger = utils.MetricLogger()",
        call="metric_logger.update(grad_norm=norm)",
    )
    (root / "train.py").write_text(train)
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    [finding] = [f for f in report["findings"] if f["id"] == "EC509"]
    assert "metric_logger.update()" in finding["message"]
    assert "utils.py:23" in finding["message"], finding["message"]
