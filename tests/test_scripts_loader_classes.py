"""Classes of DataLoader verdicts found wrong on public code (issue 11): a loader built
and never read, one iterated a single time through a builder function, a worker count
read from a yacs defaults module audited in the same run. Snippets go through the real
analyser and rules against an 8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
