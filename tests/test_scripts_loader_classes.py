"""Classes of DataLoader verdicts found wrong on public code (issue 11): a loader built
and never read, one iterated a single time through a builder function. Snippets go
through the real analyser and rules against an 8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import script_results

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
