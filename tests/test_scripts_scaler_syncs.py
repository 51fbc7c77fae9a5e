"""EC509: a GradScaler's scale read every step, directly or through a project's wrapper.

`GradScaler.get_scale()` returns `self._scale.item()` and `GradScaler.state_dict()` calls
`get_scale()` (torch/amp/grad_scaler.py): each waits for the GPU. timm-style training code
logs `loss_scaler.state_dict()["scale"]` every step, where `loss_scaler` is a
`NativeScaler` wrapper of utils.py holding `self._scaler = torch.cuda.amp.GradScaler()`,
and often gets the wrapper as a parameter of its `train_one_epoch` (Swin-Transformer's
main.py builds it in `main()`; VideoMAE's engine is handed it by run_class_finetuning.py,
handed_instances.py). A scaler disabled by a flag the source does not settle, a wrapper
holding none, a method not reading the scale and callers handing two classes are no
finding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_scripts_project_context import audit

SCALER = """\
import torch


class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self{init_args}):
        self._scaler = torch.cuda.amp.GradScaler({enabled})

    def __call__(self, loss, optimizer):
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()

    def state_dict(self):
        return self._scaler.state_dict()

    def load_state_dict(self, state_dict):
        self._scaler.load_state_dict(state_dict)


class PlainScaler:
    def __call__(self, loss, optimizer):
        loss.backward()
        optimizer.step()

    def state_dict(self):
        return {{}}
"""

ENGINE = """\
import torch


def train_one_epoch(model, loader, optimizer, loss_scaler, device):
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.cuda.amp.autocast():
            loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss_scaler(loss, optimizer)
        {read}
"""

MAIN = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
{imports}


def main(deepspeed=False):
    ds = TensorDataset(torch.randn(1024, 16), torch.randint(0, 4, (1024,)))
    loader = DataLoader(ds, batch_size=64, num_workers=1, pin_memory=True)
    model = torch.nn.Linear(16, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if deepspeed:
        loss_scaler = None
    else:
        loss_scaler = {made}
    for epoch in range(10):
        train_one_epoch(model, loader, opt, loss_scaler, "cuda")
    {other}

if __name__ == "__main__":
    main()
"""


def sync_lines(report: dict[str, Any], name: str) -> list[int]:
    return [
        f["location"]["line"]
        for f in report["findings"]
        if f["id"] == "EC509" and f["location"]["path"].endswith(name)
    ]


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_a_grad_scaler_s_state_dict_read_every_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train = ENGINE.format(read='scale = loss_scaler.state_dict()["scale"]').replace(
        "loss_scaler(loss, optimizer)",
        "loss_scaler.scale(loss).backward()\n"
        "        loss_scaler.step(optimizer)\n"
        "        loss_scaler.update()",
    )
    train += (
        "\n\nif __name__ == '__main__':\n"
        "    from torch.utils.data import DataLoader, TensorDataset\n"
        "    ds = TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,)))\n"
        "    model = torch.nn.Linear(16, 4).cuda()\n"
        "    loss_scaler = torch.cuda.amp.GradScaler()\n"
        "    train_one_epoch(model, DataLoader(ds, batch_size=8), "
        "torch.optim.SGD(model.parameters(), lr=0.1), loss_scaler, 'cuda')\n"
    )
    # a scaler named at the top level of the file: its state_dict() is get_scale()'s read
    train = train.replace("loss_scaler", "scaler")
    root = project(tmp_path, {"train.py": train})
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    line = next(i for i, t in enumerate(train.splitlines(), 1) if "state_dict()" in t)
    assert sync_lines(report, "train.py") == [line], report["findings"]
    [finding] = [f for f in report["findings"] if f["id"] == "EC509"]
    assert "get_scale()" in finding["message"]


CASES = {
    "the wrapper's state_dict, the wrapper built by the caller in the file": (
        {"imports": "from utils import NativeScaler", "made": "NativeScaler()"},
        {"init_args": "", "enabled": ""},
        'scale = loss_scaler.state_dict()["scale"]',
        True,
    ),
    "the wrapper renamed on import": (
        {"imports": "import utils as u", "made": "u.NativeScaler()"},
        {"init_args": "", "enabled": "enabled=True"},
        'scale = loss_scaler.state_dict()["scale"]',
        True,
    ),
    "a scaler enabled by a flag": (
        {"imports": "from utils import NativeScaler", "made": "NativeScaler(False)"},
        {"init_args": ", amp", "enabled": "enabled=amp"},
        'scale = loss_scaler.state_dict()["scale"]',
        False,
    ),
    "a wrapper holding no GradScaler": (
        {"imports": "from utils import PlainScaler", "made": "PlainScaler()"},
        {"init_args": "", "enabled": ""},
        'scale = loss_scaler.state_dict()["scale"]',
        False,
    ),
    "a method not reading the scale": (
        {"imports": "from utils import NativeScaler", "made": "NativeScaler()"},
        {"init_args": "", "enabled": ""},
        "loss_scaler.load_state_dict({})",
        False,
    ),
}


@pytest.mark.parametrize("main, scaler, read, syncs", CASES.values(), ids=list(CASES))
def test_a_scaler_wrapper_handed_to_the_step_function(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    main: dict[str, str],
    scaler: dict[str, str],
    read: str,
    syncs: bool,
) -> None:
    engine = ENGINE.format(read=read)
    train = MAIN.format(other="", **main).replace(
        "\n\ndef main", "\n\n" + engine.split("\n", 2)[2] + "\n\ndef main"
    )
    root = project(tmp_path, {"utils.py": SCALER.format(**scaler), "train.py": train})
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    line = next(i for i, t in enumerate(train.splitlines(), 1) if read in t)
    assert sync_lines(report, "train.py") == ([line] if syncs else []), report["findings"]


@pytest.mark.parametrize("two_classes", [False, True])
def test_the_step_s_module_judged_with_the_entry_point_handing_the_wrapper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_classes: bool
) -> None:
    """engine.py named alone: train.py, the one entry point importing it, hands
    `train_one_epoch` a NativeScaler (None on the DeepSpeed path aside)."""
    read = 'scale = loss_scaler.state_dict()["scale"]'
    other = "train_one_epoch(model, loader, opt, PlainScaler(), 'cuda')" if two_classes else ""
    train = MAIN.format(
        imports="from engine import train_one_epoch\nfrom utils import NativeScaler, PlainScaler",
        made="NativeScaler()",
        other=other,
    )
    files = {
        "utils.py": SCALER.format(init_args="", enabled=""),
        "engine.py": ENGINE.format(read=read),
        "train.py": train,
    }
    root = project(tmp_path, files)
    report = audit(root / "engine.py", cwd=root, monkeypatch=monkeypatch)
    line = next(i for i, t in enumerate(files["engine.py"].splitlines(), 1) if read in t)
    expected = [] if two_classes else [line]
    assert sync_lines(report, "engine.py") == expected, report["findings"]
