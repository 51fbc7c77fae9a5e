"""Values and branches followed through calls (sweep V): a float the step already made
with `.item()` and handed to a helper is no tensor there; a periodic test hidden in a
helper predicate (`if should_run_eval(total, 2, step):` returning `step % n == 0`) is
periodic; an opt-in flag written out beside `**config` (`main(use_wandb=args.wandb,
**config)`) is read at its value; a loop calling user-registered callbacks the file never
fills runs nothing by default; a plain generator passed as `validation_data` is read by
Keras's worker threads too (EC521). Snippets go through the real analyser and rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import script_results

HEAD = """
import argparse
import torch
import wandb
from torch.utils.data import DataLoader

loader = DataLoader(torch.randn(64, 4), batch_size=8, num_workers=2, pin_memory=True)
"""


def ec509_lines(tmp_path: Path, body: str) -> list[int]:
    result = script_results(tmp_path, HEAD + body, "train.py")["EC509"]
    return sorted(f.location.line for f in result.findings)


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate((HEAD + source).splitlines(), 1) if text in line)


FLOAT_TO_HELPER = """
def all_reduce_mean(tensor):
    torch.distributed.all_reduce(tensor)
    return tensor / torch.distributed.get_world_size()


def log_stats(pbar, loss_tensor, scheduler):
    wandb.log({"current_loss": loss_tensor, "lr": scheduler.get_last_lr()[0]})
    pbar.set_description(f"Loss: {loss_tensor:.4f}")


def train(model, optimizer, scheduler, pbar):
    for step, batch in enumerate(loader):
        loss = model(batch.cuda())
        loss.backward()
        optimizer.step()
        loss = loss.detach()
        loss = all_reduce_mean(loss).item()
        log_stats(pbar, loss, scheduler)
"""


def test_a_float_already_made_by_item_is_no_tensor_in_the_helper(tmp_path: Path) -> None:
    assert ec509_lines(tmp_path, FLOAT_TO_HELPER) == [line_of(FLOAT_TO_HELPER, ").item()")]


HELPER_PREDICATE = """
def should_run_eval(total_steps, times_to_run, current_step):
    return current_step % (total_steps // times_to_run) == 0


def every_step(current_step):
    return current_step % 1 == 0


def evaluation(model, val_loader):
    losses = 0
    for batch in val_loader:
        with torch.no_grad():
            losses += model(batch.cuda()).float()
    return losses.item()


def train(model, optimizer, val_loader):
    for step, batch in enumerate(loader):
        loss = model(batch.cuda())
        loss.backward()
        optimizer.step()
        if should_run_eval(len(loader), 2, step + 1):
            evaluation(model, val_loader)
        if every_step(step):
            print(f"{loss}")
"""


def test_a_periodic_test_inside_a_helper_predicate_is_periodic(tmp_path: Path) -> None:
    # the eval's .item() runs twice an epoch; a helper whose period is 1 is every step
    assert ec509_lines(tmp_path, HELPER_PREDICATE) == [line_of(HELPER_PREDICATE, 'f"{loss}"')]


OPT_IN_BESIDE_SPREAD = """
def main(name, use_wandb: bool, lr=1e-4, is_debug=False, **kwargs):
    model = torch.nn.Linear(4, 1).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for step, batch in enumerate(loader):
        loss = model(batch.cuda()).mean()
        loss.backward()
        optimizer.step()
        if (not is_debug) and use_wandb:
            wandb.log({"train_loss": loss.item()}, step=step)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--wandb", action="store_true")
    args = parser.parse_args()
    config = dict(lr=1e-3)
    main(name="run", use_wandb=args.wandb, **config)
"""


def test_an_opt_in_flag_written_out_beside_a_spread_config_is_off(tmp_path: Path) -> None:
    assert ec509_lines(tmp_path, OPT_IN_BESIDE_SPREAD) == []
    # the same call with the flag on: the log runs every step
    on = OPT_IN_BESIDE_SPREAD.replace("use_wandb=args.wandb", "use_wandb=True")
    assert ec509_lines(tmp_path, on) == [line_of(on, "wandb.log(")]


CALLBACKS = """
class Trainer:
    def __init__(self, model, step_callbacks=()):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.step_callbacks = step_callbacks

    def train(self):
        for batch in loader:
            loss = self.model(batch.cuda()).mean()
            loss.backward()
            self.optimizer.step()
            for callback in self.step_callbacks:
                callback(self, float(loss.detach()))


Trainer(torch.nn.Linear(4, 1).cuda()).train()
"""


def test_callbacks_the_file_never_registers_run_nothing_by_default(tmp_path: Path) -> None:
    assert ec509_lines(tmp_path, CALLBACKS) == []
    # a callback the file registers itself runs every step
    filled = CALLBACKS.replace(".cuda()).train()", ".cuda(), step_callbacks=[print]).train()")
    assert ec509_lines(tmp_path, filled) == [line_of(filled, "callback(self, float(")]


VALIDATION_GENERATOR = """
import numpy as np
from keras.utils import Sequence


class Batches(Sequence):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return np.zeros((8, 4)), np.zeros((8, 1))


def val_batches():
    while True:
        yield np.zeros((8, 4)), np.zeros((8, 1))


model.fit_generator(
    generator=Batches(),
    validation_data=val_batches(),
    validation_steps=5,
    workers=6,
)
"""


def test_ec521_a_plain_generator_as_validation_data_is_read_by_the_workers(
    tmp_path: Path,
) -> None:
    result: Any = script_results(tmp_path, VALIDATION_GENERATOR, "train.py")["EC521"]
    assert [f.location.line for f in result.findings] == [19]
    assert "val_batches()" in result.findings[0].message
    one = VALIDATION_GENERATOR.replace("workers=6", "workers=1")
    assert script_results(tmp_path, one, "train.py")["EC521"].status.value == "pass"
