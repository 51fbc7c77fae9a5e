"""EC509 through a function another module of the project defines (foreign_helpers.py).

A training step calling `commons.clip_grad_value_(net.parameters(), None)`, whose loop
runs `.item()` per parameter, or `mel(y_hat)` branching on `torch.min(y) < -1.`, waits
for the GPU every step at that call, though the sync is in commons.py. The module is
found on disk beside the script (project_context.py) and read in its own imports; only
what it runs on every call, on device tensors the step hands it, counts; so do the
functions it calls in turn (get_F1 -> get_sensitivity's `float(torch.sum(...))`), down to
a depth limit, and a boolean-mask gather (`output[output == target]`). The last cases
are in one file: a loss module called as `criterion(out, labels)` binds `labels` to its
`forward`'s second parameter, and a test of a data element per inner-loop index is no
one-off `if step == 0:`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from test_scripts_project_context import audit

TRAIN = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
{imports}

def main():
    ds = TensorDataset(torch.randn(1024, 16), torch.randint(0, 4, (1024,)))
    loader = DataLoader(ds, batch_size=64, num_workers=1, pin_memory=True)
    model = torch.nn.Linear(16, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    for epoch in range(10):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            {call}
            opt.step()
            step += 1

if __name__ == "__main__":
    main()
"""

CLIP = """\
import torch

def clip_grad_value_(parameters, clip_value, norm_type=2):
    parameters = list(filter(lambda p: p.grad is not None, parameters))
    total_norm = 0
    for p in parameters:
        param_norm = p.grad.data.norm(norm_type)
        total_norm += param_norm.item() ** norm_type
        if clip_value is not None:
            p.grad.data.clamp_(min=-clip_value, max=clip_value)
    return total_norm ** (1.0 / norm_type)
"""

MEL = """\
import torch

def mel(y, n_fft):
    if torch.min(y) < -1.0:
        print("min value is ", torch.min(y))
    return torch.stft(y, n_fft, return_complex=True).abs()
"""

SLICE = """\
import torch

def slice_segments(x, ids_str, segment_size=4):
    ret = torch.zeros_like(x[:, :segment_size])
    for i in range(x.size(0)):
        idx_str = ids_str[i]
        ret[i] = x[i, idx_str:idx_str + segment_size]
    return ret
"""

ACCURACY = """\
def accuracy(scores, targets, k):
    batch_size = targets.size(0)
    _, ind = scores.topk(k, 1, True, True)
    correct = ind.eq(targets.view(-1, 1).expand_as(ind))
    return correct.view(-1).float().sum().item() * (100.0 / batch_size)
"""

SOLVER = """\
import torch

def _check(t):
    assert (t[1:] > t[:-1]).all(), "t must increase"

def solve(x, t):
    _check(t)
    return x * t.sum()
"""

LOGGED = """\
def report(loss, verbose=False):
    if verbose:
        print(loss.item())
    return loss
"""

LENGTHS = """\
import torch

def length_to_mask(lengths):
    mask = torch.arange(lengths.max()).unsqueeze(0).expand(lengths.shape[0], -1)
    return torch.gt(mask + 1, lengths.unsqueeze(1))

def positions(x):
    return torch.arange(x.size(1), device=x.device).expand(x.shape[0], -1)
"""

HOST_ONLY = """\
def warmup(step, total):
    return float(min(1.0, step / total))
"""

# a metric made of others of its file, each reading its tensors on the host
NESTED = """\
import torch

def recall(pred, y):
    hit = (pred.argmax(1) == y)
    return float(torch.sum(hit)) / (float(y.numel()) + 1e-6)

def precision(pred, y, verbose=False):
    if verbose:
        print(pred.item())
    return pred.mean()

def f1(pred, y, threshold=0.5):
    r = recall(pred, y)
    return 2 * r / (r + 1.0)

def quiet_f1(pred, y):
    return 2 * precision(pred, y)

def shuffled(pred, y):
    return recall(torch.randn(4, 4), torch.zeros(4))
"""

# a loss three functions deep slicing per sample by a CUDA length tensor
DEEP = """\
import torch

def get_mask(source, lengths):
    mask = source.new_ones(source.shape)
    for i in range(source.size(0)):
        mask[i, lengths[i]:] = 0
    return mask

def masked_snr(source, estimate, lengths):
    mask = get_mask(source, lengths)
    return ((source - estimate) * mask).pow(2).mean()

def cal_loss(source, estimate, lengths):
    snr = masked_snr(source, estimate, lengths)
    return 0 - snr

def outer(source, estimate, lengths):
    return cal_loss(source, estimate, lengths)

def outermost(source, estimate, lengths):
    return outer(source, estimate, lengths)
"""

# a metric imported by the helper from another module of the project
REEXPORTED = """\
from metrics import recall

def summary(pred, y):
    return {"recall": recall(pred, y)}
"""

MASKED = """\
import torch

def intersection(output, target, ignore=255):
    output = output.view(-1)
    target = target.view(-1)
    output[target == ignore] = ignore
    hit = output[output == target]
    return torch.histc(hit.float(), bins=4, min=0, max=3)

def filled(output, target, ignore=255):
    output[target == ignore] = ignore
    return output
"""

CASES = {
    "an .item() per parameter of the model's gradients": (
        {"commons.py": CLIP},
        "import commons",
        "commons.clip_grad_value_(model.parameters(), None)",
        True,
    ),
    "an .item() per master parameter apex's amp keeps (its fp16 path)": (
        {"commons.py": CLIP},
        "import commons\nfrom apex import amp",
        "commons.clip_grad_value_(amp.master_params(opt), None)",
        True,
    ),
    "a branch on a tensor's minimum": (
        {"audio.py": MEL},
        "from audio import mel",
        "m = mel(out, 4)",
        True,
    ),
    "a slice bounded by a device index tensor per element": (
        {"commons.py": SLICE},
        "import commons",
        "seg = commons.slice_segments(out, y)",
        True,
    ),
    "an .item() returned through a star import": (
        {"utils.py": ACCURACY},
        "from utils import *",
        "top = accuracy(out, y, 2)",
        True,
    ),
    "a device tensor's maximum as arange's size": (
        {"utils.py": LENGTHS},
        "from utils import length_to_mask",
        "mask = length_to_mask(y)",
        True,
    ),
    "a tensor's shape as arange's size": (
        {"utils.py": LENGTHS},
        "from utils import positions",
        "pos = positions(out)",
        False,
    ),
    "an .item() in a module of a package": (
        {"pkg/__init__.py": "", "pkg/metrics.py": ACCURACY},
        "from pkg.metrics import accuracy",
        "top = accuracy(out, y, 2)",
        True,
    ),
    "an .item() only under an opt-in branch of the helper": (
        {"logs.py": LOGGED},
        "from logs import report",
        "report(loss)",
        False,
    ),
    "a helper handed no device tensor": (
        {"sched.py": HOST_ONLY},
        "from sched import warmup",
        "lr = warmup(step, 100)",
        False,
    ),
    "a float() in a function of its file the helper calls": (
        {"metrics.py": NESTED},
        "from metrics import f1",
        "score = f1(out, y)",
        True,
    ),
    "a function the helper calls syncing only under an opt-in branch": (
        {"metrics.py": NESTED},
        "from metrics import quiet_f1",
        "score = quiet_f1(out, y)",
        False,
    ),
    "a function the helper calls handed no device tensor": (
        {"metrics.py": NESTED},
        "from metrics import shuffled",
        "score = shuffled(out, y)",
        False,
    ),
    "a slice by a CUDA length three functions deep": (
        {"pit.py": DEEP},
        "from pit import cal_loss",
        "l2 = cal_loss(out, out.detach(), y)",
        True,
    ),
    "a slice by a CUDA length past the depth followed": (
        {"pit.py": DEEP},
        "from pit import outermost",
        "l2 = outermost(out, out.detach(), y)",
        False,
    ),
    "a float() in a function the helper imports from another module": (
        {"metrics.py": NESTED, "report.py": REEXPORTED},
        "from report import summary",
        "s = summary(out, y)",
        True,
    ),
    "a boolean-mask gather of device tensors": (
        {"util/__init__.py": "", "util/util.py": MASKED},
        "from util.util import intersection",
        "inter = intersection(out.argmax(1), y)",
        True,
    ),
    "a fill through a boolean mask (masked_fill, no count)": (
        {"util/__init__.py": "", "util/util.py": MASKED},
        "from util.util import filled",
        "inter = filled(out.argmax(1), y)",
        False,
    ),
    "a helper re-exported by its package's __init__ (star import)": (
        {"utils/__init__.py": "from .util import *\n", "utils/util.py": ACCURACY},
        "from utils import accuracy",
        "a = accuracy(out, y, 2)",
        True,
    ),
    "a helper re-exported by its package's __init__ (by name)": (
        {"utils/__init__.py": "from .util import accuracy\n", "utils/util.py": ACCURACY},
        "import utils",
        "a = utils.accuracy(out, y, 2)",
        True,
    ),
    "a re-exported API's internals are the package's (its calls are not read)": (
        {"solver/__init__.py": "from .api import solve\n", "solver/api.py": SOLVER},
        "from solver import solve",
        "z = solve(out, y)",
        False,
    ),
    "a syncing helper called under a periodic branch": (
        {"utils.py": ACCURACY},
        "from utils import accuracy",
        "if step % 100 == 0: print(accuracy(out, y, 2))",
        False,
    ),
}


SCORE = """\
import numpy as np

def text_score(pred, gt, meter):
    pred = pred.data.cpu().numpy()
    gt = gt.data.cpu().numpy()
    meter.update(gt, pred > 0.5)
    scores, _ = meter.get_scores()
    return scores
"""

DEVICE_SCORE = """\
def text_score(pred, gt, meter):
    hits = (pred.argmax(1) == gt).float()
    print(pred.cpu().sum())
    return hits.mean()
"""


@pytest.mark.parametrize(
    "helper, host",
    [(SCORE, True), (DEVICE_SCORE, False)],
    ids=["returns host values", "returns a device tensor"],
)
def test_a_helper_returning_host_values_makes_no_tensor_of_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helper: str, host: bool
) -> None:
    """cal_text_score (DBNet) copies the maps it is handed to NumPy and returns the
    meter's scores: the sync is the call's; logging the scores reads no tensor. One
    that returns a tensor computed from them still makes its result a tensor."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    (root / "utils").mkdir()
    (root / "utils" / "__init__.py").write_text("from .util import *\n")
    (root / "utils" / "util.py").write_text(helper)
    call = "s = text_score(out, y, meter)"
    logged = "writer.add_scalar('acc', s, step)"
    imports = (
        "from torch.utils.tensorboard import SummaryWriter\n"
        "from utils import text_score\n"
        "from metrics import Meter\n"
        "writer = SummaryWriter()\n"
        "meter = Meter()"
    )
    train = TRAIN.format(imports=imports, call=f"{call}\n            {logged}")
    (root / "train.py").write_text(train)
    line = next(i for i, text in enumerate(train.splitlines(), 1) if call in text)
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    found = [f for f in report["findings"] if f["id"] == "EC509"]
    assert [f["location"]["line"] for f in found] == ([line] if host else [line, line + 1])
    if host:
        assert "text_score()" in found[0]["message"]


def sync_lines(report: dict[str, Any]) -> list[int]:
    return [f["location"]["line"] for f in report["findings"] if f["id"] == "EC509"]


@pytest.mark.parametrize("files, imports, call, syncs", CASES.values(), ids=list(CASES))
def test_a_step_calling_a_project_module_s_function(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    imports: str,
    call: str,
    syncs: bool,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    train = TRAIN.format(imports=imports, call=call)
    (root / "train.py").write_text(train)
    line = next(i for i, text in enumerate(train.splitlines(), 1) if call in text)
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    assert sync_lines(report) == ([line] if syncs else []), report["findings"]


def test_the_finding_names_the_helper_and_the_place_of_its_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    (root / "commons.py").write_text(CLIP)
    call = "commons.clip_grad_value_(model.parameters(), None)"
    (root / "train.py").write_text(TRAIN.format(imports="import commons", call=call))
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    [finding] = [f for f in report["findings"] if f["id"] == "EC509"]
    assert "commons.clip_grad_value_()" in finding["message"]
    assert "commons.py:8" in finding["message"]


LOSS_MODULE = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


class Loss(torch.nn.Module):
    def build_target(self, pred, labels):
        counts = (labels.sum(dim=2) > 0).sum(dim=1)
        mask = torch.zeros(4)
        target = torch.zeros_like(pred)
        for b in range(pred.shape[0]):
            n = int(counts[b])
            for t in range(n):
                if mask[t] == 1:
                    target[b, t] = labels[b, t, 0].cpu()
        return target

    def forward(self, xin, labels=None):
        target = self.build_target(xin, labels)
        return ((xin - target) ** 2).mean()


def main():
    ds = TensorDataset(torch.randn(256, 8, 4), torch.randn(256, 8, 5))
    loader = DataLoader(ds, batch_size=16, num_workers=1, pin_memory=True)
    model = torch.nn.Linear(4, 4).cuda()
    criterion = Loss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, boxes in loader:
        images = images.cuda()
        boxes = boxes.to(device="cuda")
        loss = criterion(model(images), boxes)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_loss_module_s_helper_reads_the_labels_it_is_handed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`criterion(out, boxes)` runs `forward(self, xin, labels)`: `boxes` is `labels`,
    so `int(counts[b])` reads a device tensor; `if mask[t] == 1:` tests an element per
    index of the inner loop, no one-off `if step == 0:`, and the `.cpu()` under it runs
    every step too."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "train.py").write_text(textwrap.dedent(LOSS_MODULE))
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    lines = LOSS_MODULE.splitlines()
    expected = [
        next(i for i, text in enumerate(lines, 1) if "int(counts[b])" in text),
        next(i for i, text in enumerate(lines, 1) if ".cpu()" in text),
    ]
    assert sync_lines(report) == expected, report["findings"]


EPOCH = """\
from utils import calculate_accuracy


def train_epoch(data_loader, model, criterion, optimizer, device):
    model.train()
    for i, (inputs, targets) in enumerate(data_loader):
        targets = targets.to(device, non_blocking=True)
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        acc = calculate_accuracy(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

CALCULATE = """\
import torch


def calculate_accuracy(outputs, targets):
    with torch.no_grad():
        batch_size = targets.size(0)
        _, pred = outputs.topk(1, 1, largest=True, sorted=True)
        pred = pred.t()
        correct = pred.eq(targets.view(1, -1))
        return correct.float().sum().item() / batch_size
"""


def test_a_tensor_compared_with_a_device_tensor_is_on_the_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3D-ResNets' train_epoch moves only the targets (DataParallel scatters the inputs),
    and the model is a parameter: `outputs` is not known to be on the device, but
    `pred.eq(targets.view(1, -1))` combines `pred` with a CUDA tensor, so both are
    there (CPU and CUDA tensors do not mix) and the `.item()` of its sum waits."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    (root / "utils.py").write_text(CALCULATE)
    (root / "training.py").write_text(EPOCH)
    report = audit(root / "training.py", cwd=root, monkeypatch=monkeypatch)
    line = next(i for i, text in enumerate(EPOCH.splitlines(), 1) if "calculate_accuracy(" in text)
    assert sync_lines(report) == [line], report["findings"]


GRAD_LOGGER = """\
import torch

def grad_logger(named_params, verbose=False):
    norms = []
    for n, p in named_params:
        if (p.grad is not None) and not (n.endswith(".bias") or len(p.shape) == 1):
            norms.append(float(torch.norm(p.grad.data)))
    return norms
"""

TIMER = """\
import torch

def gpu_timer(closure, log_timings=True):
    log_timings = log_timings and torch.cuda.is_available()
    if log_timings:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
    result = closure()
    if log_timings:
        end.record()
        torch.cuda.synchronize()
    return result, 0.0
"""

CLOSURE_STEP = """\
import numpy as np
import torch
from timer import gpu_timer


def main(loader):
    model = torch.nn.Linear(16, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for itr, (x, y) in enumerate(loader):
        x = x.to("cuda")

        def train_step():
            loss = model(x).sum()
            loss.backward()
            opt.step()
            return (float(loss), 1)

        (loss, lr), etime = gpu_timer({flag})
        assert not np.isnan(loss)
"""


@pytest.mark.parametrize(
    "helper, syncs",
    [
        (GRAD_LOGGER, True),
        (GRAD_LOGGER.replace("(p.grad is not None)", "verbose"), False),
    ],
    ids=["a loop over named_parameters filtered by name", "a flag's branch"],
)
def test_a_helper_filtering_the_parameters_it_loops_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helper: str, syncs: bool
) -> None:
    """ijepa's grad_logger reads `float(torch.norm(p.grad))` for the weights it picks
    with `if p.grad is not None and not n.endswith(".bias")`: a test of the loop's own
    names filters the parameters, its body runs on every call."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    (root / "logs.py").write_text(helper)
    call = "grads = logs.grad_logger(model.named_parameters())"
    train = TRAIN.format(imports="import logs", call=call)
    (root / "train.py").write_text(train)
    line = next(i for i, text in enumerate(train.splitlines(), 1) if call in text)
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    assert sync_lines(report) == ([line] if syncs else []), report["findings"]


@pytest.mark.parametrize(
    "flag, syncs",
    [("train_step", True), ("train_step, log_timings=False", False)],
    ids=["timing flag left at its default True", "timing turned off"],
)
def test_a_closure_the_loop_defines_and_hands_to_a_timer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, syncs: bool
) -> None:
    """ijepa defines `train_step()` in its loop and runs it as `gpu_timer(train_step)`,
    whose `if log_timings:` (default True, `and torch.cuda.is_available()`) calls
    torch.cuda.synchronize(): the loop is the step loop, the timer syncs every step, and
    the closure's names are its own (the loop's `loss` is a float, asserting on it reads
    no tensor)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    (root / "timer.py").write_text(TIMER)
    train = CLOSURE_STEP.format(flag=flag)
    (root / "train.py").write_text(train)
    line = next(i for i, text in enumerate(train.splitlines(), 1) if "gpu_timer(" in text)
    report = audit(root / "train.py", cwd=root, monkeypatch=monkeypatch)
    closure = line - 2  # `return (float(loss), 1)`: a sync of the step in either case
    assert sync_lines(report) == ([closure, line] if syncs else [closure]), report["findings"]
