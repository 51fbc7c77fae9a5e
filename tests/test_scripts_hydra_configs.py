"""Settings in the config a Hydra entry point composes (config_files.hydra_load).

drqv2's train.py decorates `main(cfg)` with `@hydra.main(config_path='cfgs',
config_name='config')`; its Workspace builds the replay loader with
`num_workers=self.cfg.replay_buffer_num_workers`, 4 in cfgs/config.yaml. The run chooses
that file by name, not by a literal path: its `defaults:` list composes group files that
the command line may swap, so every YAML file under the config folder is a candidate.
When every candidate that sets a key agrees, the value is used and the files named; when
they disagree, or a value is an interpolation or `???`, it is unknown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import audit_report, rule_status

from envcheck.scripts import config_files

TARGET = Path(__file__).parent / "fixtures" / "gpu" / "datacenter-8x-a100-foreign-process.json"

TRAIN = """\
import hydra
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class Workspace:
    def __init__(self, cfg):
        self.cfg = cfg
        ds = datasets.ImageFolder("data", transform=transforms.ToTensor())
        self.loader = DataLoader(ds, batch_size=64, num_workers=self.cfg.workers,
                                 pin_memory=True, persistent_workers=True)

    def train(self):
        model = torch.nn.Conv2d(3, 8, 3).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(10):
            for x, y in self.loader:
                loss = model(x.cuda()).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


@hydra.main(config_path={path!r}, config_name='config')
def main(cfg):
    Workspace(cfg).train()


if __name__ == "__main__":
    main()
"""

PRIMARY = """\
defaults:
  - _self_
  - task@_global_: walk
workers: {workers}
batch_size: 256
"""


def repo(
    tmp_path: Path,
    workers: str = "16",
    groups: Optional[dict[str, str]] = None,
    path: str = "cfgs",
) -> Path:
    root = tmp_path / "repo"
    (root / "cfgs" / "task").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "cfgs" / "config.yaml").write_text(PRIMARY.format(workers=workers))
    for name, text in (groups or {"task/walk.yaml": "task_name: walk\n"}).items():
        (root / "cfgs" / name).write_text(text)
    (root / "train.py").write_text(TRAIN.format(path=path))
    return root


def audit(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return audit_report(root, "train.py", monkeypatch)


status = rule_status


def test_workers_from_the_hydra_primary_config_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = audit(repo(tmp_path), monkeypatch)
    found = next(f for f in report["findings"] if f["id"] == "EC504")
    assert "workers in cfgs/config.yaml" in found["message"]
    assert "none of the 1 other config files" in found["message"]


def test_workers_2_from_the_hydra_config_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = audit(repo(tmp_path, workers="2"), monkeypatch)
    assert status(report, "EC504")[0] == "pass"
    assert status(report, "EC501")[0] == "pass"


def test_group_files_that_agree_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    groups = {"task/walk.yaml": "workers: 16\n", "task/run.yaml": "task_name: run\n"}
    report = audit(repo(tmp_path, groups=groups), monkeypatch)
    found = next(f for f in report["findings"] if f["id"] == "EC504")
    assert "cfgs/task/walk.yaml" in found["message"]


@pytest.mark.parametrize(
    ("workers", "groups", "why"),
    [
        ("16", {"task/walk.yaml": "workers: 2\n"}, "disagree"),
        ("${batch_size}", None, "computed by OmegaConf"),
        ("???", None, "left to the command line"),
        ("16", {"task/walk.yaml": "workers: [2\n"}, "composes"),
    ],
)
def test_a_value_the_candidates_do_not_settle_is_unknown(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    workers: str,
    groups: Optional[dict[str, str]],
    why: str,
) -> None:
    report = audit(repo(tmp_path, workers=workers, groups=groups), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"
    assert why in status(report, "EC504")[1]


def test_too_many_candidates_are_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    groups = {f"task/t{i}.yaml": f"task_name: t{i}\n" for i in range(40)}
    assert len(groups) > config_files.MAX_CANDIDATES
    report = audit(repo(tmp_path, groups=groups), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"
    assert "more than 32" in status(report, "EC504")[1]


def test_a_config_folder_outside_the_project_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.yaml").write_text("workers: 16\n")
    report = audit(repo(tmp_path, path="../elsewhere"), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"
