"""DataLoader verdicts (EC501-EC504) on shapes seen in swept real code: a worker count
the script's own arithmetic rules out at 0, and a dataset a Lightning callback changes
before every epoch. Each snippet goes through the real analyser and the real rules
against an 8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import run_results, script_results

LOADER_RULES = ("EC501", "EC502", "EC503", "EC504")


def verdicts(found: dict[str, Any]) -> dict[str, str]:
    return {k: v.status.value for k, v in found.items() if k in LOADER_RULES}


# latent-consistency-model's train_lcm_distill_sd_wds.py: the WebDataset pipeline is
# sized per worker, so --dataloader_num_workers 0 (its default) stops the run
DIVIDED_BY_WORKERS = """
import argparse, math
import torch
import webdataset as wds

class Text2ImageDataset:
    def __init__(self, urls, num_train_examples, global_batch_size, num_workers):
        per_worker = math.ceil(num_train_examples / (global_batch_size * num_workers))
        self._train_dataset = wds.DataPipeline(wds.ResampledShards(urls)).with_epoch(per_worker)
        self._train_dataloader = wds.WebLoader(
            self._train_dataset, batch_size=None, shuffle=False, num_workers=num_workers,
            pin_memory=True, persistent_workers=True,
        )

    @property
    def train_dataloader(self):
        return self._train_dataloader

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataloader_num_workers", type=int, default=0)
    args = parser.parse_args()
    model = torch.nn.Linear(4, 4).cuda()
    opt = torch.optim.AdamW(model.parameters())
    dataset = Text2ImageDataset("shards", 1000, 64, args.dataloader_num_workers)
    for batch in dataset.train_dataloader:
        loss = model(batch[0].cuda()).sum()
        loss.backward()
        opt.step()

if __name__ == "__main__":
    main()
"""


def test_a_worker_count_the_function_divides_by_is_not_zero(tmp_path: Path) -> None:
    found = verdicts(script_results(tmp_path, DIVIDED_BY_WORKERS, "train.py"))
    assert found["EC501"] == "unknown"


def test_a_guarded_division_leaves_the_zero_default(tmp_path: Path) -> None:
    guarded = DIVIDED_BY_WORKERS.replace(
        "(global_batch_size * num_workers))",
        "(global_batch_size * num_workers)) if num_workers else 1",
    )
    found = verdicts(script_results(tmp_path, guarded, "train.py"))
    assert found["EC501"] == "fail"


# RWKV-LM's train.py and src/trainer.py: the callback tells the dataset its epoch
CALLBACK_FILE = """
import pytorch_lightning as pl

class train_callback(pl.Callback):
    def __init__(self, args):
        self.args = args

    def on_train_epoch_start(self, trainer, pl_module):
        dataset = trainer.train_dataloader.dataset
        dataset.real_epoch = int(self.args.epoch_begin + trainer.current_epoch)
"""
FITTED_WITH_CALLBACK = """
import argparse
import torch
from torch.utils.data import DataLoader
from pytorch_lightning import Trainer
from callbacks import train_callback
from data import MyDataset
from model import Net

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epoch_begin", type=int, default=0)
    args = parser.parse_args()
    train_data = MyDataset(args)
    model = Net()
    trainer = Trainer(accelerator="gpu", devices=8, max_epochs=100,
                      callbacks=[train_callback(args)])
    data_loader = DataLoader(train_data, shuffle=False, pin_memory=True, batch_size=8,
                             num_workers=1, persistent_workers=False, drop_last=True)
    trainer.fit(model, data_loader)
"""


def test_a_dataset_a_callback_changes_every_epoch(tmp_path: Path) -> None:
    files = {"train.py": FITTED_WITH_CALLBACK, "callbacks.py": CALLBACK_FILE}
    assert verdicts(run_results(tmp_path, files))["EC503"] == "pass"
    # a callback that only logs leaves the loader judged
    logging_only = CALLBACK_FILE.replace("dataset.real_epoch = ", "print(dataset, ")
    logging_only = logging_only.replace("current_epoch)", "current_epoch))")
    files = {"train.py": FITTED_WITH_CALLBACK, "callbacks.py": logging_only}
    assert verdicts(run_results(tmp_path / "b", files))["EC503"] == "fail"
