"""A project class handed `num_workers=` whose count starts no DataLoader workers
(thread_workers.py): kospeech's `SupervisedTrainer(num_workers=...)` sizes a queue and
starts that many `threading.Thread` loaders, read in the files of the run that define the
classes (through the package's re-export). A class handing the count to a DataLoader, or
to anything out of sight, stays a loader maker. Each case audits a project through the
CLI, as a user in the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import project_checks

LOADERS = (
    "import threading\n"
    "class ThreadLoader(threading.Thread):\n"
    "    def __init__(self, dataset, queue, index):\n"
    "        threading.Thread.__init__(self)\n"
    "        self.dataset, self.queue, self.index = dataset, queue, index\n"
    "class MultiDataLoader(object):\n"
    "    def __init__(self, datasets, queue, num_workers):\n"
    "        self.num_workers = num_workers\n"
    "        self.loaders = [ThreadLoader(datasets[i], queue, i)\n"
    "                        for i in range(self.num_workers)]\n"
)
TRAINER = (
    "import queue\n"
    "from torch.utils.data import DataLoader\n"
    "from pkg.data.loader import MultiDataLoader\n"
    "class SupervisedTrainer(object):\n"
    "    def __init__(self, model, datasets, num_workers, device):\n"
    "        self.model, self.datasets, self.device = model, datasets, device\n"
    "        self.num_workers = num_workers\n"
    "    def train(self, epochs):\n"
    "        workers = self.num_workers\n"
    "        train_queue = queue.Queue(self.num_workers << 1)\n"
    "        {loader}\n"
    "        print('left: %d' % workers)\n"
)
TRAIN = (
    "import torch\n"
    "from pkg.model import Net\n"
    "from pkg.trainer import SupervisedTrainer\n"
    "def main():\n"
    "    model = Net().cuda()\n"
    "    trainer = SupervisedTrainer(model=model, datasets=[], num_workers=4, device='cuda')\n"
    "    trainer.train(10)\n"
    "if __name__ == '__main__':\n"
    "    main()\n"
)
MODEL = (
    "import torch.nn as nn\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(8, 2)\n"
)


def _project(loader: str) -> dict[str, str]:
    return {
        "train.py": TRAIN,
        "pkg/__init__.py": "",
        "pkg/model.py": MODEL,
        "pkg/data/__init__.py": "",
        "pkg/data/loader.py": LOADERS,
        "pkg/trainer/__init__.py": "from pkg.trainer.supervised import SupervisedTrainer\n",
        "pkg/trainer/supervised.py": TRAINER.replace("{loader}", loader),
    }


def test_a_trainer_starting_threads_with_its_count_builds_no_dataloader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loader = "loader = MultiDataLoader(self.datasets, train_queue, self.num_workers)"
    checks = project_checks(tmp_path, _project(loader), monkeypatch)
    assert checks["EC504"][0] != "fail", checks["EC504"]


@pytest.mark.parametrize(
    "loader",
    [
        "loader = DataLoader(self.datasets, num_workers=self.num_workers)",
        "loader = DataLoader(self.datasets, num_workers=workers)",
        "loader = build_loader(self.datasets, self.num_workers)",
        "loader = MultiDataLoader(self.datasets, train_queue, **{'num_workers': workers})",
    ],
)
def test_a_trainer_handing_its_count_on_stays_a_loader_maker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: str
) -> None:
    checks = project_checks(tmp_path, _project(loader), monkeypatch)
    assert checks["EC504"][0] == "fail", checks["EC504"]
