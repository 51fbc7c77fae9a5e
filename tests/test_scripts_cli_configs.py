"""A LightningCLI's shipped configs give the classes it is handed their arguments and its
Trainer its precision (cli_configs.py).

ClimaX's train.py builds `LightningCLI(model_class=Module, datamodule_class=DataModule,
run=False)` and fits `cli.trainer`; datamodule.py keeps its arguments with
`self.save_hyperparameters()` and builds its loaders with
`num_workers=self.hparams.num_workers` (default 0 in the signature, 1 in every config of
configs/, which also set `trainer.precision: 16`). The named file's settings come from
the configs when they all agree, unknown when they do not; never the signature's default
that no run uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import audit_report, rule_status

TARGET = Path(__file__).parent / "fixtures" / "gpu" / "datacenter-8x-a100-foreign-process.json"

DATAMODULE = """\
from pytorch_lightning import LightningDataModule
from torch.utils.data import DataLoader


class DataModule(LightningDataModule):
    def __init__(self, root_dir, batch_size: int = 64, num_workers: int = 0,
                 pin_memory: bool = False):
        super().__init__()
        self.save_hyperparameters(logger=False)
        self.data_train = None

    def train_dataloader(self):
        return DataLoader(self.data_train, batch_size=self.hparams.batch_size,
                          num_workers=self.hparams.num_workers,
                          pin_memory=self.hparams.pin_memory)
"""

ENTRY = """\
import torch
from pytorch_lightning.cli import LightningCLI

from datamodule import DataModule


class Module(torch.nn.Module):
    pass


def main():
    cli = LightningCLI({handed}, run=False)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)


if __name__ == "__main__":
    main()
"""

CONFIG = """\
trainer:
  accelerator: gpu
  devices: 8
  strategy: ddp
{precision}
model:
  lr: 0.001
data:
  root_dir: /data
{data}
"""


def repo(
    tmp_path: Path,
    configs: Optional[dict[str, tuple[str, str]]] = None,
    handed: str = "model_class=Module, datamodule_class=DataModule",
) -> Path:
    root = tmp_path / "repo"
    (root / "configs").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "datamodule.py").write_text(DATAMODULE)
    (root / "train.py").write_text(ENTRY.format(handed=handed))
    given = configs or {
        "a.yaml": ("  precision: 16", "  num_workers: 1"),
        "b.yaml": ("  precision: 16", "  num_workers: 1"),
    }
    for name, (precision, data) in given.items():
        (root / "configs" / name).write_text(CONFIG.format(precision=precision, data=data))
    return root


def audit(root: Path, monkeypatch: pytest.MonkeyPatch, named: str) -> dict[str, Any]:
    return audit_report(root, named, monkeypatch)


status = rule_status


@pytest.mark.parametrize(
    "handed", ["model_class=Module, datamodule_class=DataModule", "Module, DataModule"]
)
def test_workers_every_config_sets_replace_the_signature_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handed: str
) -> None:
    report = audit(repo(tmp_path, handed=handed), monkeypatch, "datamodule.py")
    assert status(report, "EC501")[0] == "pass"
    found = next(f for f in report["findings"] if f["id"] == "EC503")
    assert "data.num_workers = 1 in the project's LightningCLI configs" in found["message"]
    assert "configs/a.yaml" in found["message"]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("  num_workers: 4", "disagree"),
        ("  batch_size: 8", "the default 0"),
        ("  num_workers: ${oc.env:WORKERS}", "computed"),
    ],
)
def test_configs_that_do_not_settle_the_workers_are_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: str, why: str
) -> None:
    configs = {"a.yaml": ("", "  num_workers: 1"), "b.yaml": ("", data)}
    report = audit(repo(tmp_path, configs), monkeypatch, "datamodule.py")
    assert status(report, "EC501")[0] == "unknown"
    assert why in status(report, "EC501")[1]


def test_a_class_the_cli_is_not_handed_keeps_its_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = audit(repo(tmp_path, handed="model_class=Module"), monkeypatch, "datamodule.py")
    assert status(report, "EC501")[0] == "fail"


def test_precision_every_config_sets_passes_ec507(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = audit(repo(tmp_path), monkeypatch, "train.py")
    assert status(report, "EC507")[0] == "pass"


def test_precision_the_configs_disagree_on_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs = {"a.yaml": ("  precision: 16", ""), "b.yaml": ("  precision: 32", "")}
    report = audit(repo(tmp_path, configs), monkeypatch, "train.py")
    assert status(report, "EC507")[0] == "unknown"
    assert "disagree" in status(report, "EC507")[1]
