"""Loaders whose dataset or sampler another file of the run defines (cross-file reads,
run_options.py): a helper of a project module returning a `TensorDataset` of features
tokenised up front (foreign_datasets.py). Each case goes through the real collector."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envcheck import interpreter
from envcheck.collectors.base import CollectContext
from envcheck.collectors.scripts import collect

PROCESSOR = (
    "import torch\n"
    "from torch.utils.data import TensorDataset\n"
    "class BertProcessor(object):\n"
    "    def __init__(self, vocab_path):\n"
    "        self.vocab_path = vocab_path\n"
    "    def create_dataset(self, features, is_sorted=False):\n"
    "        if is_sorted:\n"
    "            features = sorted(features, key=lambda x: x.input_len)\n"
    "        all_input_ids = torch.tensor([f.input_ids for f in features])\n"
    "        all_label_ids = torch.tensor([f.label_id for f in features])\n"
    "        dataset = {dataset}\n"
    "        return dataset\n"
    "def load_dataset(features):\n"
    "    return {dataset}\n"
)
RUN = (
    "from torch.utils.data import DataLoader, RandomSampler\n"
    "from pkg.io.processor import BertProcessor, load_dataset\n"
    "def run_train(features):\n"
    "    processor = BertProcessor(vocab_path='vocab.txt')\n"
    "    train_dataset = {call}\n"
    "    sampler = RandomSampler(train_dataset)\n"
    "    return DataLoader(train_dataset, sampler=sampler, batch_size=8)\n"
)


def loaders(tmp_path: Path, dataset: str, call: str) -> list[dict[str, Any]]:
    pkg = tmp_path / "pkg" / "io"
    pkg.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "processor.py").write_text(PROCESSOR.format(dataset=dataset))
    (tmp_path / "run_bert.py").write_text(RUN.format(call=call))
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(tmp_path / "run_bert.py",))
    return list(collect(ctx)["scripts"]["loaders"])


@pytest.mark.parametrize(
    "call", ["processor.create_dataset(features, is_sorted=True)", "load_dataset(features)"]
)
def test_a_tensor_dataset_returned_by_a_helper_of_another_file(tmp_path: Path, call: str) -> None:
    """Bert-Multi-Label's run_bert.py: `processor.create_dataset(features)` on a
    `BertProcessor` of pybert/io/bert_processor.py, which returns `TensorDataset(...)` of
    the tokenised features: the loader reads tensors held in memory (EC501/EC502 stand
    down), as it would over the file's own TensorDataset; a top-level helper alike."""
    [loader] = loaders(tmp_path, "TensorDataset(all_input_ids, all_label_ids)", call)
    assert loader["dataset"]["class"] == "TensorDataset"
    assert "processor.py" in loader["dataset"]["text"]


def test_a_helper_returning_another_dataset_stays_out_of_sight(tmp_path: Path) -> None:
    """The same helper returning a Dataset that reads files per item: not in memory."""
    [loader] = loaders(
        tmp_path, "ImageFolder(features)", "processor.create_dataset(features, is_sorted=True)"
    )
    assert loader["dataset"]["class"] != "TensorDataset"
    assert "in_memory" not in loader["dataset"]


CIF_DATA = (
    "import functools\n"
    "from torch.utils.data import DataLoader, Dataset\n"
    "def get_loaders(dataset, collate_fn=None, batch_size=64, num_workers=1):\n"
    "    train = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers)\n"
    "    val = DataLoader({val}, batch_size=batch_size, num_workers=num_workers)\n"
    "    return train, val\n"
    "class CIFData(Dataset):\n"
    "    def __init__(self, root):\n"
    "        self.ids = sorted(root)\n"
    "    def __len__(self):\n"
    "        return len(self.ids)\n"
    "    {cache}\n"
    "    def __getitem__(self, idx):\n"
    "        return load_structure(self.ids[idx])\n"
)
CIF_MAIN = (
    "import argparse\n"
    "from cgdata.data import CIFData, get_loaders\n"
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument('--workers', default=0, type=int)\n"
    "args = parser.parse_args()\n"
    "dataset = CIFData('data')\n"
    "train_loader, val_loader = get_loaders(dataset=dataset, num_workers=args.workers)\n"
)


@pytest.mark.parametrize(
    ("cache", "val", "held"),
    [
        ("@functools.lru_cache(maxsize=None)", "dataset", True),
        ("", "dataset", False),  # reads a structure per item
        ("@functools.lru_cache(maxsize=None)", "other", False),  # not every loader's
    ],
)
def test_a_memoised_dataset_handed_to_a_maker_of_another_file(
    tmp_path: Path, cache: str, val: str, held: bool
) -> None:
    """cgcnn's main.py: `get_train_val_test_loader(dataset=dataset, ...)` of cgcnn/data.py,
    which builds each DataLoader over that parameter, handed `CIFData(...)` whose
    `__getitem__` is memoised without bound there: the maker's loaders serve cached
    samples, and no workers is the design (EC501 stands down, as for the file's own)."""
    pkg = tmp_path / "cgdata"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "data.py").write_text(CIF_DATA.format(cache=cache, val=val))
    (tmp_path / "main.py").write_text(CIF_MAIN)
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(tmp_path / "main.py",))
    [loader] = [x for x in collect(ctx)["scripts"]["loaders"] if x["path"].endswith("main.py")]
    assert "data.py" in loader["built_by"]
    if held:
        assert "memoised" in loader["dataset"]["in_memory"]
    else:
        assert loader["dataset"] is None
