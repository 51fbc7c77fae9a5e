"""EC509 in branches a default run never takes, read through two shapes (sweep W class 6):
a flag read from the parsed command line handed on as a dict (`config = vars(args)` in
`main`, then `train(config, ...)` testing `config['deep_supervision']`), and a loop
counter compared with a bound of zero (`if epoch < opt.warm_epoch:` with `--warm_epoch`
0 by default: a counter from `range(...)` or `enumerate(...)` is never negative). What
the caller writes into the dict first, a counter the loop rebinds, and a bound above zero
leave the branch judged. Snippets go through the real analyser and rules."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

from test_scripts_torch import audit

from envcheck.scripts.counters import loop_counters

HANDED = """
import argparse
import torch


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument('--deep_supervision', default=False, type=bool)
    return parser.parse_args()


def train(config, loader, model, criterion, optimizer):
    for input, target in loader:
        input = input.cuda()
        target = target.cuda()
        if config['deep_supervision']:
            loss = criterion(model(input)[-1], target)
            print(loss.item())
        else:
            loss = criterion(model(input), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    config = vars(parse_args())
    SET_BY_MAIN
    model = torch.nn.Linear(3, 3).cuda()
    loader = torch.utils.data.DataLoader(data, batch_size=2, num_workers=1, pin_memory=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        train(config, loader, model, torch.nn.MSELoss(), optimizer)


if __name__ == '__main__':
    main()
"""

WARM_UP = """
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument('--warm_epoch', default=WARM, type=int)
opt = parser.parse_args()


def train_model(model, loader, optimizer, num_epochs=25):
    warm_up = 0.1
    for epoch in EPOCHS:
        for inputs, labels in loader:
            loss = model(inputs.cuda()).sum()
            REBIND
            if epoch < opt.warm_epoch and model.training:
                warm_up = min(1.0, warm_up + 0.1)
                loss = loss * warm_up
                print(loss, warm_up)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


model = torch.nn.Linear(3, 3).cuda()
loader = torch.utils.data.DataLoader(data, batch_size=2, num_workers=1, pin_memory=True)
train_model(model, loader, torch.optim.SGD(model.parameters(), lr=0.1))
"""


def ec509(tmp_path: Path, source: str) -> Any:
    (tmp_path / "train.py").write_text(textwrap.dedent(source))
    return audit(tmp_path / "train.py", rules=("EC509",))["EC509"]


def test_a_flag_of_a_handed_namespace_dict_off_by_default_is_not_taken(tmp_path: Path) -> None:
    result = ec509(tmp_path, HANDED.replace("SET_BY_MAIN", "pass"))
    assert not result.findings


def test_a_flag_the_caller_sets_in_the_dict_is_taken(tmp_path: Path) -> None:
    source = HANDED.replace("SET_BY_MAIN", "config['deep_supervision'] = True")
    assert ec509(tmp_path, source).findings


def test_another_key_the_caller_sets_leaves_the_flag_at_its_default(tmp_path: Path) -> None:
    source = HANDED.replace("SET_BY_MAIN", "config['name'] = 'run'")
    assert not ec509(tmp_path, source).findings


def warm_up(warm: str = "0", epochs: str = "range(num_epochs)", rebind: str = "pass") -> str:
    return WARM_UP.replace("WARM", warm).replace("EPOCHS", epochs).replace("REBIND", rebind)


def test_a_warm_up_of_zero_epochs_never_runs(tmp_path: Path) -> None:
    assert not ec509(tmp_path, warm_up()).findings


def test_a_warm_up_of_some_epochs_runs(tmp_path: Path) -> None:
    assert ec509(tmp_path, warm_up(warm="5")).findings


def test_a_counter_from_a_negative_start_may_be_below_zero(tmp_path: Path) -> None:
    assert ec509(tmp_path, warm_up(epochs="range(-3, num_epochs)")).findings


def test_a_counter_the_loop_rebinds_is_no_counter(tmp_path: Path) -> None:
    assert ec509(tmp_path, warm_up(rebind="epoch = epoch - 1")).findings


def test_loop_counters() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            def f(n, k):
                for a in range(n): pass
                for b in range(2, n, 2): pass
                for c, x in enumerate(loader): pass
                for d, x in enumerate(loader, start=-1): pass
                for e in range(n, 0, -1): pass
                for k in range(n): pass
                for g in range(n): pass
                g = 3
                squares = [h * h for h in range(n)]
            """
        )
    )
    assert loop_counters(tree) == {"a", "b", "c", "h"}


MODES = """
import argparse
import torch
from torch.utils.data import DataLoader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--do_train", action="store_true")
    parser.add_argument("--extra_loader", action="store_true")
    args = parser.parse_args()
    model = torch.nn.Linear(3, 3).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if args.extra_loader:
        extra = DataLoader(data, batch_size=8, num_workers=4)
        for batch in extra:
            print(batch)
    if args.do_train:
        loader = DataLoader(data, batch_size=8, num_workers=4)
        for epoch in range(10):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_store_true_mode_holding_the_training_loop_is_taken(tmp_path: Path) -> None:
    """CodeT5's run_gen.py: `if args.do_train:` (store_true) holds the training loop, so
    it is the mode the script exists for, not an opt-in feature: the loader it builds is
    judged (EC503: 4 workers restarted every epoch), as the loop in it is. A flag whose
    branch trains nothing (`if args.extra_loader:`) still leaves its loader out."""
    (tmp_path / "train.py").write_text(MODES)
    result = audit(tmp_path / "train.py", rules=("EC503",))["EC503"]
    assert result.status.value == "fail"
    assert [f.location.line for f in result.findings if f.location is not None] == [19]
