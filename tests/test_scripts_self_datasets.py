"""`DataLoader(self, ...)` in a method of a Dataset class (trlx's `create_loader` of its
prompt pipelines and rollout stores, sweep AD): the dataset is that class, read as any
other Dataset class of the run (datasets.in_memory): in memory when its `__getitem__`, its
own or the one it inherits from a base class of another file, only indexes what it holds,
or builds a plain record (a dataclass of fields only) from those slices. A class whose
`__getitem__` opens files is still judged. Snippets go through the real analyser and
rules."""

from __future__ import annotations

from pathlib import Path

from test_scripts_torch import audit

BASE = """
from dataclasses import dataclass

from torch.utils.data import Dataset


@dataclass
class Element:
    input_ids: list
    rewards: list


class BaseStore(Dataset):
    def __init__(self):
        self.history = []

    def __getitem__(self, index):
        return self.history[index]

    def __len__(self):
        return len(self.history)
"""

STORES = """
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from base import BaseStore, Element


class DialogStore(BaseStore):
    def __init__(self, dialogs):
        super().__init__()
        self.history = [torch.tensor(d) for d in dialogs]

    def create_loader(self, batch_size):
        return DataLoader(self, batch_size=batch_size, shuffle=True)


class RolloutStorage(Dataset):
    def __init__(self, input_ids, rewards):
        self.input_ids = input_ids
        self.rewards = rewards

    def __getitem__(self, ix):
        return Element(self.input_ids[ix], self.rewards[ix])

    def __len__(self):
        return len(self.input_ids)

    def create_loader(self, batch_size):
        return DataLoader(self, batch_size=batch_size, shuffle=True)


class ImageFolder(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __getitem__(self, ix):
        return Image.open(self.paths[ix]).convert("RGB")

    def __len__(self):
        return len(self.paths)

    def create_loader(self, batch_size):
        return DataLoader(self, batch_size=batch_size, shuffle=True)
"""


def test_a_loader_over_self_reads_the_class_it_is_in(tmp_path: Path) -> None:
    (tmp_path / "base.py").write_text(BASE)
    (tmp_path / "stores.py").write_text(STORES)
    result = audit(tmp_path / "stores.py", rules=("EC501",))["EC501"]
    lines = [f.location.line for f in result.findings if f.location is not None]
    assert lines == [44], result.reason  # only the loader over images opened per item
