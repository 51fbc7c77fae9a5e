"""Batch samplers that re-read their inner sampler until a set count of batches
(maskrcnn-benchmark's IterationBasedBatchSampler, iteration_samplers.py): one pass over
the loader spans the training, so EC503 has no epochs to keep the workers across. A maker
function chooses the wrapping by a parameter; what the call hands decides it. Snippets go
through the real analyser and rules against an 8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import run_results

SAMPLERS = """\
import torch
from torch.utils.data import BatchSampler


class IterationBasedBatchSampler(BatchSampler):
    def __init__(self, batch_sampler, num_iterations, start_iter=0):
        self.batch_sampler = batch_sampler
        self.num_iterations = num_iterations
        self.start_iter = start_iter

    def __iter__(self):
        iteration = self.start_iter
        while iteration <= self.num_iterations:
            for batch in self.batch_sampler:
                iteration += 1
                if iteration > self.num_iterations:
                    break
                yield batch

    def __len__(self):
        return self.num_iterations


def make_batch_sampler(sampler, batch_size, num_iters=None):
    batch_sampler = BatchSampler(sampler, batch_size, drop_last=True)
    if num_iters is not None:
        batch_sampler = IterationBasedBatchSampler(batch_sampler, num_iters)
    return batch_sampler
"""

TRAIN = """\
import argparse
import torch
import torchvision
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler
from samplers import make_batch_sampler

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=4)
parser.add_argument("--iters", type=int, default=90000)
args = parser.parse_args()
model = torchvision.models.resnet18().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_set = torchvision.datasets.ImageFolder("train")
val_set = torchvision.datasets.ImageFolder("val")
train_loader = DataLoader(train_set, num_workers=args.workers, pin_memory=True,
    batch_sampler=make_batch_sampler(RandomSampler(train_set), 32, args.iters))
val_batches = make_batch_sampler(SequentialSampler(val_set), 32)
val_loader = DataLoader(val_set, num_workers=args.workers, pin_memory=True,
    batch_sampler=val_batches)
for step, (x, y) in enumerate(train_loader):
    loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 1000 == 0:
        with torch.no_grad():
            for x, y in val_loader:
                model(x.cuda())
"""

OWN_MAKER = """\
import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler
from samplers import IterationBasedBatchSampler


def make_loader(dataset, workers=4, max_iter=None):
    batch_sampler = BatchSampler(RandomSampler(dataset), 32, drop_last=False)
    if max_iter is not None:
        batch_sampler = IterationBasedBatchSampler(batch_sampler, max_iter)
    return DataLoader(dataset, num_workers=workers, batch_sampler=batch_sampler,
        pin_memory=True)
"""


def lines(result: Any) -> list[int]:
    return sorted(f.location.line for f in result.findings)


def test_a_loader_over_an_iteration_sampler_is_one_pass(tmp_path: Path) -> None:
    """The train loader's maker is handed a count: its batch sampler re-reads the data
    until then, one pass over the loader; the validation loader's maker is not (the
    parameter stays None), a plain BatchSampler whose workers restart each pass."""
    found = run_results(tmp_path, {"samplers.py": SAMPLERS, "train.py": TRAIN})
    assert lines(found["EC503"]) == [18]


def test_an_iteration_sampler_under_an_unsettled_test_is_unknown(tmp_path: Path) -> None:
    """A maker whose own callers are out of sight wraps the sampler only when handed
    `max_iter`: whether one pass spans the training is not settled."""
    found = run_results(tmp_path, {"samplers.py": SAMPLERS, "build.py": OWN_MAKER})
    assert lines(found["EC503"]) == []
    assert found["EC503"].status.value == "unknown"
    assert "IterationBasedBatchSampler" in found["EC503"].reason
    assert "max_iter is not None" in found["EC503"].reason
