"""A config named on an entry point's command line and handed to another file's classes
(handed_configs.py, config_files.chosen_load).

donut's train.py parses `--config` (required), loads it with `sconf.Config(args.config)`
and hands it to `DonutDataPLModule(config)` through its own `train(config)`; the data
module, in lightning_module.py, keeps it as `self.config` and builds its loader with
`num_workers=self.config.num_workers`, 8 in every YAML file of config/. The named file is
lightning_module.py: its workers come from the shipped configs only when every one of
them sets the same value and the object is the one the entry point handed in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import audit_report, rule_status

TARGET = Path(__file__).parent / "fixtures" / "gpu" / "datacenter-8x-a100-foreign-process.json"

MODULE = """\
import pytorch_lightning as pl
from torch.utils.data import DataLoader


class DataModule(pl.LightningDataModule):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.train_dataset = None

    def train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=8, shuffle=True,
                          num_workers=self.config.num_workers, pin_memory=True)
{extra}
"""

ENTRY = """\
import argparse

import pytorch_lightning as pl
import torch
from sconf import Config

from lightning_module import DataModule


def train(config):
    data_module = DataModule(config)
    trainer = pl.Trainer(accelerator="gpu", devices=torch.cuda.device_count(),
                         strategy="ddp", max_epochs=config.max_epochs)
    trainer.fit(torch.nn.Linear(4, 4), data_module)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=str, {option})
    args, left_argv = parser.parse_known_args()
    config = Config(args.config)
    config.argv_update(left_argv)
    train(config)
"""


def repo(
    tmp_path: Path,
    configs: Optional[dict[str, str]] = None,
    option: str = "required=True",
    extra: str = "",
) -> Path:
    root = tmp_path / "repo"
    (root / "config").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "lightning_module.py").write_text(MODULE.format(extra=extra))
    (root / "train.py").write_text(ENTRY.format(option=option))
    for name, text in (
        configs or {"a.yaml": "num_workers: 8\n", "b.yaml": "num_workers: 8\n"}
    ).items():
        (root / "config" / name).write_text(text)
    return root


def audit(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return audit_report(root, "lightning_module.py", monkeypatch)


status = rule_status


def test_workers_every_shipped_config_agrees_on_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = audit(repo(tmp_path), monkeypatch)
    found = next(f for f in report["findings"] if f["id"] == "EC504")
    assert "num_workers = 8 in config/a.yaml" in found["message"]
    assert "config/b.yaml" in found["message"]


@pytest.mark.parametrize(
    ("configs", "why"),
    [
        ({"a.yaml": "num_workers: 8\n", "b.yaml": "num_workers: 2\n"}, "disagree"),
        ({"a.yaml": "num_workers: 8\n", "b.yaml": "batch_size: 2\n"}, "not set in every"),
        ({"a.yaml": "batch_size: 2\n", "b.yaml": "num_workers: 8\n"}, "some of the config"),
    ],
)
def test_shipped_configs_that_do_not_settle_it_are_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configs: dict[str, str], why: str
) -> None:
    report = audit(repo(tmp_path, configs), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"
    assert why in status(report, "EC504")[1]


def test_an_option_with_a_default_names_no_run_time_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = audit(repo(tmp_path, option="default='other.yaml'"), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"


def test_an_attribute_another_class_sets_otherwise_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = """
class Other:
    def __init__(self):
        self.config = {"num_workers": 1}
"""
    report = audit(repo(tmp_path, extra=extra), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"
