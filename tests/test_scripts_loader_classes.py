"""Classes of DataLoader verdicts found wrong on public code (issue 11): a loader built
and never read, one iterated a single time through a builder function, a worker count
read from a yacs defaults module audited in the same run. Snippets go through the real
analyser and rules against an 8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import run_results, script_results

HEAD = """
import torch, torchvision
from torch.utils.data import DataLoader

torch.backends.cudnn.benchmark = True
model = torchvision.models.resnet18().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def results(tmp_path: Path, source: str) -> dict[str, Any]:
    return script_results(tmp_path, HEAD + source, "train.py")


def lines(result: Any) -> list[int]:
    return sorted(f.location.line for f in result.findings)


UNUSED = """
train_loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=2, pin_memory=True,
                          persistent_workers=True)
test_loader = DataLoader(test_data, batch_size=64)
for epoch in range(10):
    for x, y in train_loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_loader_in_a_name_nothing_reads_is_not_judged(tmp_path: Path) -> None:
    """`test_loader = DataLoader(...)` is never read: no worker starts for it, no batch
    is pinned, so neither EC501 nor EC502 holds against it."""
    found = results(tmp_path, UNUSED)
    assert found["EC501"].status.value == "pass"
    assert found["EC502"].status.value == "pass"


def test_a_loader_in_a_name_read_later_is_judged(tmp_path: Path) -> None:
    """The same loader read once after training is still judged."""
    found = results(tmp_path, UNUSED + "evaluate(model, test_loader)\n")
    assert lines(found["EC501"]) == [11]


def test_a_loader_handed_on_by_a_call_is_not_unused(tmp_path: Path) -> None:
    """`trainer = fit(DataLoader(...))`: the call consumes the loader even though nothing
    reads `trainer`."""
    found = results(tmp_path, UNUSED + "result = fit(model, DataLoader(test_data, batch_size=8))\n")
    assert lines(found["EC501"]) == [16]  # line 11 is still never read


ONCE = """
def get_inference_loader(workers=2):
    return DataLoader(data, batch_size=64, num_workers=workers, pin_memory=True)


def inference(loader, model):
    with torch.no_grad():
        for x, _ in loader:
            model(x.cuda())


for epoch in range(90):
    for x, y in train_loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_loader_built_by_a_helper_and_iterated_once_keeps_no_workers(tmp_path: Path) -> None:
    """`inference(get_inference_loader(), model)` once, after training: the loader makes
    one pass, so persistent workers would serve nothing (no EC503)."""
    found = results(tmp_path, ONCE + "inference(get_inference_loader(), model)\n")
    assert found["EC503"].status.value == "pass"
    held = ONCE + "loader = get_inference_loader()\nfor x, _ in loader:\n    model(x.cuda())\n"
    assert results(tmp_path, held)["EC503"].status.value == "pass"


def test_a_loader_built_by_a_helper_called_twice_is_judged(tmp_path: Path) -> None:
    """Called twice, the helper's loaders make more than one pass between them."""
    twice = (
        ONCE
        + "inference(get_inference_loader(), model)\ninference(get_inference_loader(), model)\n"
    )
    assert lines(results(tmp_path, twice)["EC503"]) == [10]


YACS_TRAIN = """
import argparse
import torch
from proj.config import cfg

parser = argparse.ArgumentParser()
parser.add_argument("--cfg", default="config/ade20k.yaml")
args = parser.parse_args()
cfg.merge_from_file(args.cfg)
loader = torch.utils.data.DataLoader(data, batch_size=cfg.TRAIN.batch_size,
                                     num_workers=cfg.TRAIN.workers, pin_memory=True,
                                     persistent_workers=True)
model = torch.nn.Linear(8, 8).cuda()
for epoch in range(10):
    for x, y in loader:
        model(x.cuda()).sum().backward()
"""

YACS_DEFAULTS = """
from yacs.config import CfgNode as CN

_C = CN()
_C.TRAIN = CN()
_C.TRAIN.batch_size = 32
_C.TRAIN.workers = 16
_C.VAL = CN()
_C.VAL.workers = 1
"""


def test_a_worker_count_from_a_yacs_defaults_module_of_the_run(tmp_path: Path) -> None:
    """`cfg.TRAIN.workers` with the run's defaults module setting `_C.TRAIN.workers = 16`
    is judged at 16 (on 2 CPUs: EC504), even though the entry script has its own parser;
    `_C.VAL.workers` is another path."""
    found = run_results(
        tmp_path,
        {
            "train.py": YACS_TRAIN,
            "proj/config/defaults.py": YACS_DEFAULTS,
            "proj/config/__init__.py": "from .defaults import _C as cfg\n",
        },
    )
    assert found["EC504"].status.value == "fail"
    assert "_C.TRAIN.workers = 16" in found["EC504"].findings[0].message
    alone = run_results(tmp_path / "alone", {"train.py": YACS_TRAIN, "other.py": "x = 1\n"})
    assert alone["EC504"].status.value == "unknown"


CPU_COUNT_DDP = """
import os
import torch.distributed as dist

dist.init_process_group("nccl")
loader = DataLoader(data, batch_size=64, num_workers=os.cpu_count(), pin_memory=True,
                    persistent_workers=True)
for epoch in range(90):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
"""


def test_cpu_count_workers_in_each_of_several_processes(tmp_path: Path) -> None:
    """`num_workers=os.cpu_count()` under torchrun: every one of the 8 processes asks for
    all 2 CPUs, 16 workers in all (EC504), though one process alone would be fine."""
    found = results(tmp_path, CPU_COUNT_DDP)
    assert lines(found["EC504"]) == [13]
    assert "8 processes per node" in found["EC504"].findings[0].message
    alone = results(tmp_path, CPU_COUNT_DDP.replace('dist.init_process_group("nccl")', ""))
    assert alone["EC504"].status.value == "pass"


LIGHTNING = """
import pytorch_lightning as pl

loader = DataLoader(ds, batch_size=32, num_workers=2, pin_memory=True, persistent_workers=True)
trainer = pl.Trainer(gpus=GPUS, max_epochs=10)
trainer.fit(model, loader)
"""


def test_lightning_gpus_argument_says_the_processes(tmp_path: Path) -> None:
    """Lightning 1.x `Trainer(gpus=2)`: 2 processes of 2 workers on 2 CPUs (EC504, not
    the 8 processes of devices="auto"); `gpus=1` is one process."""
    two = results(tmp_path, LIGHTNING.replace("GPUS", "2"))
    assert lines(two["EC504"]) == [11]
    assert "2 processes per node (Trainer(gpus=2))" in two["EC504"].findings[0].message
    listed = results(tmp_path, LIGHTNING.replace("GPUS", '"0,1"'))
    assert "2 processes per node" in listed["EC504"].findings[0].message
    one = results(tmp_path, LIGHTNING.replace("GPUS", "1"))
    assert one["EC504"].status.value == "pass"


CONFIGURABLE = """
from detectron2.config import configurable


def _test_loader_from_config(cfg, dataset_name):
    return {"dataset": get_dataset(dataset_name), "num_workers": cfg.DATALOADER.NUM_WORKERS}


@configurable(from_config=_test_loader_from_config)
def build_test_loader(dataset, *, num_workers: int = 0):
    return DataLoader(dataset, batch_size=1, num_workers=num_workers, pin_memory=True)


def do_test(cfg, model):
    with torch.no_grad():
        for inputs in build_test_loader(cfg, "coco_2017_val"):
            model(inputs)
"""


def test_a_configurable_builder_default_is_not_the_run_value(tmp_path: Path) -> None:
    """`@configurable(from_config=...)` fills num_workers from the caller's cfg: the
    signature's `num_workers=0` says nothing (EC501 unknown, not a high finding)."""
    found = results(tmp_path, CONFIGURABLE)
    assert found["EC501"].status.value == "unknown"
    assert "@configurable" in str(found["EC501"].reason)
    plain = results(tmp_path, CONFIGURABLE.replace("@configurable", "@functools.lru_cache"))
    assert plain["EC501"].status.value == "fail"


INFERENCE_METHODS = """
import torch
from torch.utils.data import DataLoader


class Model(torch.nn.Module):
    def fit(self, dataset, epochs=10):
        optimizer = torch.optim.Adam(self.parameters())
        loader = DataLoader(dataset, batch_size=32, shuffle=True)
        for epoch in range(epochs):
            for x, y in loader:
                loss = self.loss(x.cuda(), y.cuda())
                optimizer.zero_grad(); loss.backward(); optimizer.step()

    def evaluate(self, dataset):
        loader = DataLoader(dataset, batch_size=1)
        return self._score(loader, len(dataset))

    def _score(self, loader, size):
        total = 0.0
        with torch.no_grad():
            for x, y in tqdm(loader):
                total += self.loss(x.cuda(), y.cuda())
        return total / size

    @torch.no_grad()
    def embed(self, x, batch_size=None):
        loader = [x] if batch_size is None else DataLoader(x, batch_size=batch_size)
        found = []
        for batch in loader:
            found.append(self.encoder(batch.cuda()))
        return torch.cat(found)

    def predict(self, x):
        loader = DataLoader(x, batch_size=64)
        with torch.no_grad():
            for batch in loader:
                yield self(batch.cuda())
"""


def test_a_loader_of_an_inference_method_nothing_calls_is_not_judged(tmp_path: Path) -> None:
    """pyro's `evaluate()`, `embed()`: a library class that trains in `fit` also offers
    methods that build a loader and read it under `torch.no_grad()`; nothing in the file
    calls them, so their loaders are no part of the training it runs (EC501/EC502 pass
    them). The training loader is judged; so is `predict`'s once the file calls it."""
    found = script_results(tmp_path, INFERENCE_METHODS, "model.py")
    assert lines(found["EC501"]) == [9]
    assert lines(found["EC502"]) == [9]
    called = script_results(tmp_path, INFERENCE_METHODS + "\nModel().predict(data)\n", "model.py")
    assert lines(called["EC501"]) == [9, 35]


PIPELINE = """
import torch
from torch.utils.data import DataLoader
from transformers import Trainer


class Pipeline:
    def fit(self, dataset, args):
        trainer = Trainer(model=self.model, args=args, train_dataset=dataset)
        trainer.train()

    @torch.no_grad()
    def predict(self, inputs):
        loader = DataLoader(inputs, batch_size=None)
        found = []
        for batch in loader:
            found.append(self.model(batch.cuda()))
        return found

    def predict_quantiles(self, inputs):
        return self.predict(inputs)

    def predict_df(self, frame):
        return self.predict_quantiles(frame.values)
"""


def test_an_inference_method_called_only_by_other_inference_methods_is_not_judged(
    tmp_path: Path,
) -> None:
    """Chronos2Pipeline: `fit()` trains through a Hugging Face `Trainer`, and `predict()`
    builds a loader it reads under `torch.no_grad()`, called by `predict_quantiles()`, itself
    called only by `predict_df()`: none of them runs in the training the file does, so the
    loader is not judged. Once `fit()` calls `predict_df()` it is."""
    found = script_results(tmp_path, PIPELINE, "pipeline.py")
    assert lines(found["EC501"]) == []
    fitted = PIPELINE.replace("trainer.train()", "trainer.train()\n        self.predict_df(data)")
    called = script_results(tmp_path / "called", fitted, "pipeline.py")
    assert lines(called["EC501"]) == [15]


THIN_SUBCLASS = """
import torch
from monai.data import DataLoader, Dataset

device = torch.device("cuda")
train_loader = DataLoader(Dataset(data=files, transform=augment), batch_size=300, shuffle=True,
                          num_workers=2)
val_loader = DataLoader(Dataset(data=val_files, transform=augment), batch_size=300)
model = DenseNet121(spatial_dims=2, in_channels=1, out_channels=6).to(device)
optimizer = torch.optim.Adam(model.parameters(), 1e-5)
for epoch in range(4):
    for images, labels in train_loader:
        loss = torch.nn.functional.cross_entropy(model(images.to(device)), labels.to(device))
        optimizer.zero_grad(); loss.backward(); optimizer.step()
    with torch.no_grad():
        for images, labels in val_loader:
            model(images.to(device))
"""


def test_monai_dataloader_is_judged_as_torch_dataloader(tmp_path: Path) -> None:
    """`monai.data.DataLoader(dataset, num_workers=0, **kwargs)` is torch's DataLoader
    with the same defaults: its loader without workers gets EC501 (it was not seen at
    all), and both lack pinning (EC502); the one with workers restarts them (EC503)."""
    found = script_results(tmp_path, THIN_SUBCLASS, "train.py")
    assert lines(found["EC501"]) == [8]
    assert lines(found["EC502"]) == [6, 8]
    assert lines(found["EC503"]) == [6]


def test_thin_subclass_positional_parameters_are_its_own(tmp_path: Path) -> None:
    """MONAI's second positional parameter is num_workers (`DataLoader(ds, 4)`: 4
    workers, not a batch of 4); PyG's are batch_size and shuffle, then its own
    follow_batch: `DataLoader(ds, 32, True, follow_batch=["x"])` has no workers."""
    monai = THIN_SUBCLASS.replace("batch_size=300)", "4)")
    found = script_results(tmp_path, monai, "train.py")
    assert lines(found["EC501"]) == []
    assert lines(found["EC503"]) == [6, 8]
    pyg = THIN_SUBCLASS.replace("from monai.data import DataLoader, Dataset", "").replace(
        "val_loader = DataLoader(Dataset(data=val_files, transform=augment), batch_size=300)",
        "from torch_geometric.loader import DataLoader\n"
        'val_loader = DataLoader(val_set, 32, True, follow_batch=["x"])',
    )
    found = script_results(tmp_path / "pyg", pyg, "train.py")
    assert lines(found["EC501"]) == [9]


DGL_UVA = """
import argparse
import torch
from dgl.dataloading import DataLoader, NeighborSampler

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="mixed", choices=["cpu", "mixed", "puregpu"])
args = parser.parse_args()
device = torch.device("cuda")
model = SAGE(100, 256, 47).to(device)
opt = torch.optim.Adam(model.parameters())
use_uva = args.mode == "mixed"
sampler = NeighborSampler([10, 10, 10], prefetch_node_feats=["feat"])
loader = DataLoader(g, train_idx.to(device), sampler, device=device, batch_size=1024,
                    shuffle=True, num_workers=0, use_uva=use_uva)
for epoch in range(10):
    for input_nodes, output_nodes, blocks in loader:
        loss = F.cross_entropy(model(blocks, blocks[0].srcdata["x"]), blocks[-1].dstdata["y"])
        opt.zero_grad(); loss.backward(); opt.step()
"""


def test_dgl_uva_sampling_requires_no_workers(tmp_path: Path) -> None:
    """DGL's `DataLoader(..., use_uva=True)` samples on the GPU and raises "num_workers
    must be 0 if UVA sampling is enabled": num_workers=0 is required there, no EC501.
    With UVA off at the defaults (--mode cpu) the loader samples on the CPU: EC501."""
    found = script_results(tmp_path, DGL_UVA, "train.py")
    assert found["EC501"].status.value == "pass"
    off = script_results(tmp_path, DGL_UVA.replace('default="mixed"', 'default="cpu"'), "train.py")
    assert lines(off["EC501"]) == [14]
    unset = script_results(tmp_path, DGL_UVA.replace(", use_uva=use_uva", ""), "train.py")
    assert lines(unset["EC501"]) == [14]


CACHE_DATASET = """
import torch
from monai.data import CacheDataset

device = torch.device("cuda")
train_ds = CacheDataset(data=train_files, transform=augment, cache_rate=1.0, num_workers=4)
train_loader = DataLoader(train_ds, batch_size=2, shuffle=True, num_workers=1, pin_memory=True,
                          persistent_workers=True)
for epoch in range(600):
    for batch in train_loader:
        loss = loss_function(model(batch["image"].to(device)), batch["label"].to(device))
        opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_dataset_worker_count_is_not_a_loader_worker_count(tmp_path: Path) -> None:
    """MONAI's `CacheDataset(num_workers=4)` sizes the thread pool that fills its cache
    once; the DataLoader's 1 worker fits on 2 CPUs (no EC504 on the dataset)."""
    found = results(tmp_path, CACHE_DATASET)
    assert found["EC504"].status.value == "pass"


PEEK = """
from monai.utils import first

check_loader = DataLoader(check_ds, batch_size=2, num_workers=1)
check_data = first(check_loader)
print(check_data["img"].shape)
x, y = next(iter(DataLoader(full_set, batch_size=50000, num_workers=1)))
train_loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=1, pin_memory=True,
                          persistent_workers=True)
for epoch in range(10):
    for x, y in train_loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_loader_read_for_one_batch_keeps_no_workers(tmp_path: Path) -> None:
    """`first(check_loader)` (MONAI's shape check), `next(iter(loader))` and an inline
    `next(iter(DataLoader(...)))` read one batch once: persistent workers would serve
    nothing (no EC503). Pinning the named one is still judged (EC502), as before."""
    found = results(tmp_path, PEEK)
    assert found["EC503"].status.value == "pass"
    assert lines(found["EC502"]) == [11]
    named = PEEK.replace("first(check_loader)", "next(iter(check_loader))")
    assert results(tmp_path, named)["EC503"].status.value == "pass"
    dotted = PEEK.replace("first(check_loader)", "monai.utils.misc.first(check_loader)")
    assert results(tmp_path, dotted)["EC503"].status.value == "pass"


def test_a_loader_peeked_again_and_again_keeps_its_finding(tmp_path: Path) -> None:
    """`next(iter(val_loader))` inside the epoch loop starts the workers at every peek:
    EC503 stands (the held-out PyTorch-GAN verdict)."""
    again = PEEK.replace("check_data = first(check_loader)\n", "").replace(
        "opt.zero_grad(); loss.backward(); opt.step()",
        "opt.zero_grad(); loss.backward(); opt.step()\n    sample = next(iter(check_loader))",
    )
    assert lines(results(tmp_path, again)["EC503"]) == [11]


WIKITEXT2 = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, random_split

import lightning as L
from lightning.pytorch.demos import Transformer, WikiText2


def get_dataloaders(dataset):
    n = len(dataset)
    train_dataset, val_dataset = random_split(dataset, [n - 2000, 2000])
    return DataLoader(train_dataset, batch_size=20, shuffle=True), DataLoader(val_dataset)


fabric = L.Fabric()
dataset = WikiText2()
train_dataloader, val_dataloader = get_dataloaders(dataset)
model = Transformer(vocab_size=dataset.vocab_size)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = fabric.setup(model, optimizer)
train_dataloader = fabric.setup_dataloaders(train_dataloader)
for epoch in range(20):
    for input, target in train_dataloader:
        loss = F.nll_loss(model(input, target), target.view(-1))
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def test_lightning_wikitext2_demo_dataset_is_in_memory(tmp_path: Path) -> None:
    """`lightning.pytorch.demos.WikiText2` is one in-memory tensor of token ids that
    `__getitem__` slices, also through `random_split` parts: no EC501/EC502. The same
    loaders over a dataset out of sight are judged."""
    found = script_results(tmp_path, WIKITEXT2, "train.py")
    assert found["EC501"].status.value == "pass"
    assert found["EC502"].status.value == "pass"
    other = WIKITEXT2.replace("dataset = WikiText2()", "dataset = ImageFolder(root)")
    assert lines(script_results(tmp_path, other, "train.py")["EC501"]) == [13, 13]


def test_lit_gpt_packed_token_shards_are_pre_tokenised(tmp_path: Path) -> None:
    """TinyLlama / lit-llama pretraining: `CombinedDataset` over `PackedDataset`s of
    pre-tokenised, memory-mapped token shards: nothing to decode, no EC501/EC502."""
    source = WIKITEXT2.replace(
        "from lightning.pytorch.demos import Transformer, WikiText2",
        "from lightning.pytorch.demos import Transformer\n"
        "from lit_gpt.packed_dataset import CombinedDataset, PackedDataset",
    ).replace(
        "dataset = WikiText2()",
        "dataset = CombinedDataset(datasets=[PackedDataset(filenames)], seed=1, weights=[1])",
    )
    found = script_results(tmp_path, source, "train.py")
    assert found["EC501"].status.value == "pass", found["EC501"].reason
    assert "pre-tokenised" in found["EC501"].reason


SELF_TEST = """
import numpy as np
import torch


class PointCloudDataset(torch.utils.data.Dataset):
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        return np.loadtxt(self.files[index], delimiter=",").astype(np.float32), 0


if __name__ == "__main__":
    data = PointCloudDataset(["a.txt", "b.txt"])
    loader = torch.utils.data.DataLoader(data, batch_size=12, shuffle=True)
    for point, label in loader:
        print(point.shape, label.shape)
"""


def test_a_data_module_self_test_loader_is_not_judged(tmp_path: Path) -> None:
    """A data module's `__main__` self-test that prints batch shapes, in a file that never
    trains, is no training loader (no EC501/EC502); one whose loop does more (here a
    forward pass on the GPU) still is."""
    found = script_results(tmp_path, SELF_TEST, "dataset.py")
    assert found["EC501"].status.value == "pass"
    assert found["EC502"].status.value == "pass"
    used = SELF_TEST.replace("print(point.shape, label.shape)", "net(point.cuda())")
    assert lines(script_results(tmp_path, used, "dataset.py")["EC501"]) == [19]


# sweep-torch2 classes: one-batch previews, in-memory datasets with a little Python per
# item, a wrapper class's **kwargs, a tokenizer handed to a dataset of images, and an
# options module reached through sys.path.

PREVIEW_BREAK = """\
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

preview = DataLoader(datasets.ImageFolder("data/train", transforms.ToTensor()), batch_size=8,
    shuffle=True)
for step, (image, label) in enumerate(preview):
    print(image.shape, label.shape)
    break

device = torch.device("cuda")
model = torch.hub.load("pytorch/vision", "resnet18").to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train = DataLoader(torch.load("train.pt"), batch_size=64, num_workers=1, pin_memory=True,
    persistent_workers=True)
for epoch in range(10):
    for x, y in train:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_preview_loop_ending_in_a_plain_break_reads_one_batch(tmp_path: Path) -> None:
    """`for step, batch in enumerate(loader): print(...); break` reads one batch, like
    `if step == 0: break`: no EC501/EC502 for that loader (MedSAM's dataset sanity test)."""
    found = script_results(tmp_path, PREVIEW_BREAK, "train.py")
    assert found["EC501"].status.value == "pass"
    assert found["EC502"].status.value == "pass"


CAST_DATASET = """\
import torch
from torch.utils.data import DataLoader, Dataset


class InstructionDataset(Dataset):
    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, i):
        x, y = self._data[i]["input_ids"], self._data[i]["labels"]
        return x.type(torch.int64), y.type(torch.int64)


device = torch.device("cuda")
model = torch.nn.Embedding(32000, 4096).to(device)
optimizer = torch.optim.AdamW(model.parameters())
loader = DataLoader(InstructionDataset(torch.load("train.pt")), batch_size=4, shuffle=True,
    pin_memory=True)
with torch.autocast("cuda", dtype=torch.bfloat16):
    for input_ids, labels in loader:
        loss = model(input_ids.to(device)).float().mean()
        loss.backward()
        optimizer.step()
"""
CHAR_DATASET = """\
import torch
from torch.utils.data import DataLoader, Dataset


class CharDataset(Dataset):
    def __init__(self, words, chars, max_word_length):
        self.words = words
        self.stoi = {ch: i + 1 for i, ch in enumerate(chars)}
        self.max_word_length = max_word_length

    def __len__(self):
        return len(self.words)

    def encode(self, word):
        return torch.tensor([self.stoi[w] for w in word], dtype=torch.long)

    def __getitem__(self, idx):
        ix = self.encode(self.words[idx])
        x = torch.zeros(self.max_word_length + 1, dtype=torch.long)
        x[1 : 1 + len(ix)] = ix
        return x[:-1], x[1:]


device = "cuda"
model = torch.nn.Embedding(27, 4096).to(device)
optimizer = torch.optim.AdamW(model.parameters())
loader = DataLoader(CharDataset(open("names.txt").read().split(), "abc", 16), batch_size=32,
    shuffle=True)
with torch.autocast("cuda", dtype=torch.bfloat16):
    for epoch in range(10):
        for x, y in loader:
            loss = model(x.to(device)).float().mean()
            loss.backward()
            optimizer.step()
"""


@pytest.mark.parametrize("source", [CAST_DATASET, CHAR_DATASET], ids=["cast", "char-encode"])
def test_an_in_memory_dataset_doing_a_little_python_per_item_is_in_memory(
    tmp_path: Path, source: str
) -> None:
    """`self._data[i]["input_ids"].type(torch.int64)`, or words held in memory encoded
    into a torch.zeros buffer per item: nothing is read or decoded, no EC501/EC502."""
    found = script_results(tmp_path, source, "train.py")
    assert found["EC501"].status.value == "pass"
    assert found["EC502"].status.value == "pass"


WRAPPER_KWARGS = """\
import torch
from torch.utils.data import DataLoader, RandomSampler


class InfiniteDataLoader:
    def __init__(self, dataset, **kwargs):
        sampler = RandomSampler(dataset, replacement=True, num_samples=int(1e10))
        self.train_loader = DataLoader(dataset, sampler=sampler, **kwargs)
        self.data_iter = iter(self.train_loader)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(1024, 1024)


model = Net().to("cuda")
optimizer = torch.optim.AdamW(model.parameters())
batch_loader = InfiniteDataLoader(torch.load("train.pt"), batch_size=32, pin_memory=True,
    num_workers=4)
while True:
    x, y = [t.to("cuda") for t in next(batch_loader.data_iter)]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = (model.fc(x) - y).pow(2).mean()
    loss.backward()
    optimizer.step()
"""


def test_super_init_of_another_class_is_no_call_of_a_wrapper_init(tmp_path: Path) -> None:
    """`InfiniteDataLoader(ds, num_workers=4, pin_memory=True)` binds the wrapper's
    `**kwargs`; the model class's `super().__init__()` does not bind them to nothing.
    One EC504 at the inner DataLoader, none at the construction."""
    found = script_results(tmp_path, WRAPPER_KWARGS, "train.py")
    assert found["EC501"].status.value == "pass"
    assert found["EC502"].status.value != "fail"
    assert lines(found["EC504"]) == [8]


IMAGE_TEXT_DATASET = """\
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms
from transformers import AutoTokenizer


class DreamBoothDataset(Dataset):
    def __init__(self, paths, prompt, tokenizer):
        self.paths, self.prompt, self.tokenizer = paths, prompt, tokenizer
        self.tf = transforms.Compose([transforms.RandomCrop(512), transforms.ToTensor()])

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        ids = self.tokenizer(self.prompt, return_tensors="pt").input_ids[0]
        return {"pixel_values": self.tf(Image.open(self.paths[i]).convert("RGB")), "input_ids": ids}


def main():
    tokenizer = AutoTokenizer.from_pretrained("openai/clip-vit-large-patch14")
    train_dataset = DreamBoothDataset(["a.jpg"] * 100, "a sks dog", tokenizer)
    loader = DataLoader(train_dataset, batch_size=4, num_workers=1, persistent_workers=True)
    unet = torch.nn.Conv2d(3, 3, 3).to("cuda")
    optimizer = torch.optim.AdamW(unet.parameters())
    for epoch in range(100):
        for batch in loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = unet(batch["pixel_values"].to("cuda")).mean()
            loss.backward()
            optimizer.step()
"""


def test_a_dataset_handed_a_tokenizer_that_opens_images_is_not_text(tmp_path: Path) -> None:
    """DreamBooth's Dataset takes the tokenizer but returns 512px pixel_values read with
    Image.open: its batches are images, so EC502 holds (not "a few KB of token ids")."""
    found = script_results(tmp_path, IMAGE_TEXT_DATASET, "train.py")
    assert lines(found["EC502"]) == [24]


OPTS_MODULE = (
    "import argparse\n"
    "class opts(object):\n"
    "    def __init__(self):\n"
    "        self.parser = argparse.ArgumentParser()\n"
    "        self.parser.add_argument('--num_workers', type=int, default=4)\n"
    "    def parse(self, args=''):\n"
    "        return self.parser.parse_args(args)\n"
)
INIT_PATHS = (
    "import os.path as osp\nimport sys\n"
    "sys.path.insert(0, osp.join(osp.dirname(__file__), 'lib'))\n"
)
MAIN_VIA_SYS_PATH = (
    "import _init_paths\n"
    "import torch\n"
    "from opts import opts\n"
    "def main(opt):\n"
    "    model = torch.nn.Linear(8, 8).cuda()\n"
    "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    loader = torch.utils.data.DataLoader(torch.load('t.pt'), batch_size=32,\n"
    "                                         num_workers=opt.num_workers, pin_memory=True)\n"
    "    for epoch in range(9):\n"
    "        for x, y in loader:\n"
    "            loss = (model(x.cuda()) - y.cuda()).pow(2).mean()\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
    "if __name__ == '__main__':\n"
    "    main(opts().parse())\n"
)


@pytest.mark.parametrize("with_init_paths", [True, False])
def test_an_options_module_on_a_sys_path_folder_is_linked(
    tmp_path: Path, with_init_paths: bool
) -> None:
    """`import _init_paths` (which puts src/lib on sys.path), then `from opts import opts`:
    src/lib/opts.py is the module imported, so --num_workers 4 is main.py's (EC503,
    EC504); without any path setup the import names no file of src/lib."""
    files = {"src/main.py": MAIN_VIA_SYS_PATH, "src/lib/opts.py": OPTS_MODULE}
    if with_init_paths:
        files["src/_init_paths.py"] = INIT_PATHS
    found = run_results(tmp_path / "linked", files)
    assert lines(found["EC504"]) == [7]
    assert lines(found["EC503"]) == [7]
    files["src/main.py"] = MAIN_VIA_SYS_PATH.replace("import _init_paths\n", "import os\n")
    files.pop("src/_init_paths.py", None)
    assert run_results(tmp_path / "plain", files)["EC504"].status.value != "fail"


LATCHED = """
loader = DataLoader(data, batch_size=2, shuffle=True, num_workers=2, pin_memory=True)
unfreeze_flag = False
for epoch in range(100):
    if epoch >= 50 and not unfreeze_flag:
        loader = DataLoader(data, batch_size=8, shuffle=True, num_workers=2, pin_memory=True)
        unfreeze_flag = True
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
"""


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, [9, 13]),  # bubbliiiing unet: built once at the unfreeze epoch, read 50 more
        (
            {
                "    if epoch >= 50 and not unfreeze_flag:\n": "    if val_loader is None:\n",
                "        unfreeze_flag = True\n": "        val_loader = loader\n",
            },
            [9, 13],
        ),
        ({"        unfreeze_flag = True\n": ""}, [9]),  # rebuilt every epoch from 50 on
        ({"epoch >= 50 and not unfreeze_flag": "epoch >= 50 or not unfreeze_flag"}, [9]),
        ({"        unfreeze_flag = True\n": "        unfreeze_flag = False\n"}, [9]),
    ],
)
def test_a_loader_built_once_in_the_epoch_loop_under_a_latch(
    tmp_path: Path, change: dict[str, str], expected: list[int]
) -> None:
    """`if ... not flag:` (or `if x is None:`) whose body sets what it tests runs once:
    the loader it builds is not rebuilt each epoch, and is read for every epoch after,
    so EC503 judges it; without the latch it is rebuilt, and persisting gains nothing."""
    source = LATCHED
    for old, new in change.items():
        assert old in source
        source = source.replace(old, new)
    assert lines(results(tmp_path, source)["EC503"]) == expected


ONE_ITERATOR = """
def train():
    data_loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=2, pin_memory=True)
    batch_iterator = iter(data_loader)
    for iteration in range(120000):
        images, targets = next(batch_iterator)
        loss = torch.nn.functional.cross_entropy(model(images.cuda()), targets.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
"""

RESTARTED = """
        try:
            images, targets = next(batch_iterator)
        except StopIteration:
            batch_iterator = iter(data_loader)
            images, targets = next(batch_iterator)
"""


@pytest.mark.parametrize(
    ("source", "status"),
    [
        (ONE_ITERATOR, "pass"),  # ssd.pytorch: one pass, then StopIteration
        (  # restarted when exhausted (FixMatch, patched ssd.pytorch): many passes
            ONE_ITERATOR.replace("        images, targets = next(batch_iterator)\n", RESTARTED),
            "fail",
        ),
        (  # the loader read again elsewhere
            ONE_ITERATOR + "    evaluate(model, data_loader)\n",
            "fail",
        ),
    ],
)
def test_a_loader_read_through_one_iterator_made_once(
    tmp_path: Path, source: str, status: str
) -> None:
    """`batch_iterator = iter(data_loader)` once, then `next(batch_iterator)` per step:
    the loader makes one pass, so persistent workers would have nothing to outlive."""
    assert results(tmp_path, source + "train()\n")["EC503"].status.value == status


RESAMPLED = """
import torch
from torch.utils.data import DataLoader

train_dataset = NCFData(train_data, item_num, train_mat, 4, True)
train_loader = DataLoader(train_dataset, batch_size=256, shuffle=True, num_workers=2)
model = NCF(user_num, item_num).cuda()
for epoch in range(20):
    train_loader.dataset.ng_sample()
    for user, item, label in train_loader:
        model(user.cuda(), item.cuda()).sum().backward()
"""


def test_a_loader_whose_dataset_is_resampled_each_epoch_is_left_alone(tmp_path: Path) -> None:
    """NCF's `train_loader.dataset.ng_sample()` before each epoch: persistent workers
    would keep their first copy of the dataset, so EC503 does not ask for them."""
    found = script_results(tmp_path, RESAMPLED, "main.py")["EC503"]
    assert lines(found) == []
    assert "dataset is changed between passes" in found.reason
    by_name = RESAMPLED.replace("train_loader.dataset.ng_sample()", "train_dataset.scale = epoch")
    assert lines(script_results(tmp_path, by_name, "main.py")["EC503"]) == []
    still = RESAMPLED.replace("train_loader.dataset.ng_sample()", "print(epoch)")
    assert lines(script_results(tmp_path, still, "main.py")["EC503"]) == [6]


def test_a_loop_that_fills_a_dataset_elsewhere_is_no_resampling(tmp_path: Path) -> None:
    """torchreid: `trainset.append(...)` in another method's loop is another object."""
    source = RESAMPLED.replace("    train_loader.dataset.ng_sample()\n", "") + (
        "def other():\n    for part in parts:\n        train_dataset.append(part)\n"
    )
    assert lines(script_results(tmp_path, source, "main.py")["EC503"]) == [6]


LIBRARY_LOADER = """
from torchdrug import data, utils

train_loader = data.DataLoader(train_set, 32, shuffle=True, num_workers=1,
                               persistent_workers=True)
for epoch in range(10):
    for batch in train_loader:
        batch = utils.cuda(batch, device=torch.device("cuda"))
        loss = model(batch)
        opt.zero_grad(); loss.backward(); opt.step()
"""


MEMOISED = """
import functools
from torch.utils.data import Dataset


class Crystals(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    @functools.cache
    def __getitem__(self, idx):
        return convert(load(self.paths[idx]))


class Graphs(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __getitem__(self, idx):
        return torch.load(self.paths[idx])

    def loader(self, num_workers=0):
        return DataLoader(Graphs(self.paths), batch_size=32, num_workers=num_workers)


def get_loader(dataset, num_workers=0):
    return DataLoader(dataset, batch_size=32, num_workers=num_workers)


train_loader = DataLoader(Crystals(paths), batch_size=32)
for epoch in range(10):
    for x, y in train_loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_library_loader_class_leaves_pinning_unknown(tmp_path: Path) -> None:
    """TorchDrug's `data.DataLoader` collates graphs into its own `PackedGraph`, which
    has no `pin_memory()`: what pinning would reach is the class's business, out of
    sight, so EC502 is unknown; torch's own DataLoader in its place is still judged."""
    found = results(tmp_path, LIBRARY_LOADER)
    assert found["EC502"].status.value == "unknown"
    assert "loader class out of sight" in found["EC502"].reason
    torch_loader = LIBRARY_LOADER.replace("data.DataLoader(", "DataLoader(")
    assert lines(results(tmp_path, torch_loader)["EC502"]) == [11]


def test_a_dataset_memoising_its_items_keeps_its_loader_in_process(tmp_path: Path) -> None:
    """`@functools.cache` on `__getitem__` keeps every built sample in the training
    process; workers would each fill a copy that dies every epoch, so no workers is the
    design (chgnet's StructureJsonData). So is a helper of the file over the caller's
    dataset when the file's Dataset classes without a loader of their own (Crystals: the
    ones the helper is for) are all memoised. Graphs reads a file per item, uncached: its
    own loader is still judged (line 33)."""
    found = results(tmp_path, MEMOISED)
    assert lines(found["EC501"]) == [33]


def test_a_bounded_lru_cache_keeps_only_the_latest_items(tmp_path: Path) -> None:
    """`@functools.lru_cache()` holds 128 samples: most are built again every epoch."""
    source = MEMOISED.replace("@functools.cache", "@functools.lru_cache()")
    assert lines(results(tmp_path, source)["EC501"]) == [33, 37, 40]


TWO_WAYS = """

class Data:
    def __init__(self, module, num_workers=0):
        self.module = module
        self.num_workers = num_workers

    def train_dataloader(self):
        if hasattr(self.module, "process_train_dataset"):
            loader = self.module.process_train_dataset(ds, 32, num_workers=self.num_workers)
        else:
            loader = DataLoader(ds, batch_size=32, num_workers=self.num_workers)
        return loader


for epoch in range(10):
    for x, y in Data(model).train_dataloader():
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_maker_in_one_arm_and_a_loader_in_the_other_are_one_loader(tmp_path: Path) -> None:
    """A hook out of sight handed the worker count in the `if` arm whose `else` builds the
    DataLoader with the same count (Lightning Flash's `process_train_dataset`): one
    loader built one of two ways, judged once, at the DataLoader (line 19)."""
    assert lines(results(tmp_path, TWO_WAYS)["EC501"]) == [19]


def test_a_maker_handed_another_count_than_the_other_arm_is_judged(tmp_path: Path) -> None:
    """The other arm's DataLoader with its own count is another loader's settings."""
    source = TWO_WAYS.replace("batch_size=32, num_workers=self.num_workers", "num_workers=0")
    assert lines(results(tmp_path, source)["EC501"]) == [17, 19]


ONE_ITEM = """

def predict(item):
    with torch.no_grad():
        for x in DataLoader([item], batch_size=1):
            return model(x.cuda())


for epoch in range(10):
    for x, y in DataLoader(train_set, batch_size=64, num_workers=2, pin_memory=True):
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
    print(predict(sample))
"""


def test_a_loader_over_a_list_of_one_item_reads_one_batch(tmp_path: Path) -> None:
    """`DataLoader([item])` (fastai's `predict(item)`: `test_dl([item], num_workers=0)`)
    serves a single item: workers and pinning buy nothing for one batch."""
    found = results(tmp_path, ONE_ITEM)
    assert found["EC501"].status.value == "pass"
    assert found["EC502"].status.value == "pass"


def test_a_maker_handed_a_list_of_one_dataset_serves_all_its_samples(tmp_path: Path) -> None:
    """`build_loader([test_set], num_workers=0)` (a maker out of sight concatenating the
    datasets it is handed) names a dataset, not an item: still judged."""
    source = ONE_ITEM.replace(
        "DataLoader([item], batch_size=1)", "data.build_loader([test_set], num_workers=0)"
    )
    assert lines(results(tmp_path, source)["EC501"]) == [12]


RAW_RECORDS = """

def estimate(datasets, tokenizer):
    for dataset in datasets:
        for batch in DataLoader(dataset, batch_size=8, collate_fn=list):
            prompts = [example["prompt"] for example in batch]
            inputs = tokenizer(prompts, return_tensors="pt").to("cuda")
            loss = model(**inputs).loss
            opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_loader_of_raw_records_collated_as_a_list_is_left_alone(tmp_path: Path) -> None:
    """`collate_fn=list` over a dataset out of sight: each batch is the raw records in a
    list that the loop tokenises itself (trl's prompt datasets); nothing is decoded or
    collated in the loader for workers to take over, and no tensor batch to pin."""
    found = results(tmp_path, RAW_RECORDS)
    assert found["EC501"].status.value == "pass"
    assert found["EC502"].status.value == "pass"


def test_raw_records_of_a_dataset_that_decodes_are_judged(tmp_path: Path) -> None:
    """The same collate over an ImageFolder: each item is decoded in __getitem__."""
    source = RAW_RECORDS.replace(
        "for dataset in datasets:",
        "for root in datasets:\n        dataset = torchvision.datasets.ImageFolder(root)",
    )
    assert lines(results(tmp_path, source)["EC501"]) == [13]


KEPT = """
def train():
    val_loaders = []
    for name in val_sets:
        val_loader = DataLoader(name, batch_size=1, num_workers=1, pin_memory=True)
        val_loaders.append(val_loader)
    for epoch in range(100):
        for x, y in train_loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            opt.zero_grad(); loss.backward(); opt.step()
        for loader in val_loaders:
            validate(model, loader)
"""


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, [12]),  # built once per validation set, kept, re-read every epoch
        (  # stored by key, written in the call
            {
                "        val_loader = DataLoader(": "        val_loaders[name] = DataLoader(",
                "        val_loaders.append(val_loader)\n": "",
                "    val_loaders = []\n": "    val_loaders = {}\n",
            },
            [12],
        ),
        (  # the list is made anew in the epoch loop: its loaders are rebuilt
            {
                "    val_loaders = []\n    for name in val_sets:\n": (
                    "    for epoch in range(100):\n"
                    "      val_loaders = []\n      for name in val_sets:\n"
                ),
            },
            [],
        ),
        ({"        val_loaders.append(val_loader)\n": ""}, []),  # not kept: rebuilt
    ],
)
def test_loaders_built_once_per_item_and_kept_in_a_collection(
    tmp_path: Path, change: dict[str, str], expected: list[int]
) -> None:
    """`for name in sets: loaders.append(DataLoader(...))` before the epoch loop builds
    each loader once: they are read from the list at every validation, so EC503 judges
    them; a list made anew inside the epoch loop is rebuilt with its loaders."""
    source = KEPT
    for old, new in change.items():
        assert old in source
        source = source.replace(old, new)
    assert lines(results(tmp_path, source + "train()\n")["EC503"]) == expected


DATA_MODULE = """
import torch, torchvision


def load_dataset(root, batch_size):
    train = torchvision.datasets.ImageFolder(root=root + "/train")
    test = torchvision.datasets.ImageFolder(root=root + "/test")
    train_loader = torch.utils.data.DataLoader(train, batch_size=batch_size, num_workers=4)
    test_loader = torch.utils.data.DataLoader(test, batch_size=batch_size, num_workers=4)
    return train_loader, test_loader
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (DATA_MODULE, [8]),  # the test loader is the importer's, read after training
        (DATA_MODULE.replace("test_loader", "val_loader").replace("test", "val"), [8, 9]),
        (  # a file that trains reads its test loader in sight: judged
            DATA_MODULE
            + "\nmodel = torchvision.models.resnet18().cuda()\n"
            + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            + "train_loader, test_loader = load_dataset('data', 64)\n"
            + "for epoch in range(10):\n"
            + "    for x, y in train_loader:\n"
            + "        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
            + "        opt.zero_grad(); loss.backward(); opt.step()\n"
            + "    for x, y in test_loader:\n"
            + "        model(x.cuda())\n",
            [8, 9],
        ),
    ],
)
def test_a_data_modules_test_loader_is_read_out_of_sight(
    tmp_path: Path, source: str, expected: list[int]
) -> None:
    """A data module (no training, no device of its own) returns its test loader to the
    importer, which reads it after training, by convention once: how often is out of
    sight, so EC503 does not claim a restart every epoch. Its train and validation
    loaders are re-read every epoch and stay judged."""
    assert lines(script_results(tmp_path, source, "data.py")["EC503"]) == expected


REBUILT = """
import numpy as np
train_loader = DataLoader(torchvision.datasets.FakeData(), batch_size=32, num_workers=1)
for epoch in range(10):
    for batch_id, (points, target) in enumerate(train_loader, 0):
        points = points.data.numpy()
        points = points + np.random.normal(0, 0.01, points.shape)
        points = torch.Tensor(points)
        points, target = points.cuda(), target.cuda()
        loss = torch.nn.functional.cross_entropy(model(points), target)
        opt.zero_grad(); loss.backward(); opt.step()
"""


def test_batches_rebuilt_on_the_host_before_the_copy_leave_pinning_unknown(
    tmp_path: Path,
) -> None:
    """PointNet turns each batch into NumPy for augmentation and copies a new tensor:
    pinned pages would be discarded for the points, and what pinning would gain for the
    labels copied as made is not in sight, so EC502 is unknown. Copied as made, the
    same loader fails."""
    found = results(tmp_path, REBUILT)
    assert found["EC502"].status.value == "unknown"
    assert "into NumPy" in found["EC502"].reason
    kept = "\n".join(line for line in REBUILT.splitlines() if "points = points" not in line)
    kept = kept.replace("points = torch.Tensor(points)", "points = points.float()")
    assert lines(results(tmp_path, kept)["EC502"]) == [10]
