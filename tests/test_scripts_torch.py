"""The PyTorch script audit on a corpus of realistic training scripts (tests/scripts_corpus).

Each script goes through the real collector (parsed, never run) and the rules, on a
machine with 16 usable CPUs of 64 visible, Linux unless stated; every script must give
exactly the findings listed. False positives are bugs: the clean script gives none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS, snapshot_from
from typer.testing import CliRunner

from envcheck import interpreter
from envcheck.cli import app
from envcheck.collectors import scripts
from envcheck.collectors.base import CollectContext
from envcheck.engine.evaluate import evaluate
from envcheck.engine.registry import Registry
from envcheck.rulebook import builtin_registry
from envcheck.scripts.analyze import analyze_file
from envcheck.snapshot import Facts

CORPUS = TESTS / "scripts_corpus"
REGISTRY = builtin_registry()
TORCH_RULES = ("EC501", "EC502", "EC503", "EC504", "EC505", "EC509", "EC510")


def audit(
    path: Path, system: str = "Linux", rules: tuple[str, ...] = TORCH_RULES
) -> dict[str, Any]:
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(path,))
    section = scripts.collect(ctx)["scripts"]
    snapshot = snapshot_from(
        {
            "collectors": {"scripts": {"status": "ok", "reason": None}},
            "scripts": section,
            "cpu": {"usable": 16, "logical": 64},
            "platform": {"system": system},
            "gpu": {
                "status": "ok",
                "devices": [
                    {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}
                ],
            },
        }
    )
    results = evaluate(builtin_registry(), Facts(snapshot))
    return {r.id: r for r in results if r.id in rules}


def failing(results: dict[str, Any]) -> list[str]:
    return sorted(i for i, r in results.items() if r.status.value == "fail")


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("torch_imagenet_clean.py", []),
        ("torch_no_workers.py", ["EC501", "EC502"]),
        ("torch_module_level_spawn.py", ["EC505"]),
        ("torch_cpu_count_workers.py", ["EC504"]),
        ("lightning_module.py", ["EC501"]),
        ("torch_opaque_config.py", []),
        ("torch_step_sync.py", ["EC509", "EC510"]),
        ("torch_step_sync_fixed.py", []),
    ],
)
def test_corpus_findings(script: str, expected: list[str]) -> None:
    assert failing(audit(CORPUS / script)) == expected


def test_argparse_default_is_followed() -> None:
    results = audit(CORPUS / "torch_imagenet_clean.py")
    assert results["EC501"].reason == "every DataLoader uses worker processes"


def test_no_workers_finding_points_at_the_call() -> None:
    [finding] = audit(CORPUS / "torch_no_workers.py")["EC501"].findings
    assert finding.location is not None
    assert (finding.location.line, finding.location.column) == (7, 14)
    assert finding.location.code == "loader = DataLoader(dataset, batch_size=64, shuffle=True)"
    assert "num_workers not given (default 0)" in finding.message
    assert finding.fix == (
        "DataLoader(..., num_workers=15, pin_memory=True, persistent_workers=True)"
    )


def test_opaque_kwargs_make_the_rules_unknown() -> None:
    results = audit(CORPUS / "torch_opaque_config.py")
    assert results["EC501"].status.value == "unknown"
    assert "may be set through **cfg.loader" in results["EC501"].reason


def test_module_level_loader_is_fine_on_linux_without_spawn(tmp_path: Path) -> None:
    source = (CORPUS / "torch_module_level_spawn.py").read_text()
    script = tmp_path / "forked.py"
    script.write_text(source.replace('multiprocessing.set_start_method("spawn")\n', ""))
    assert failing(audit(script)) == []
    assert failing(audit(script, system="Darwin")) == ["EC505"]


def test_cpu_count_message_names_both_counts() -> None:
    [finding] = audit(CORPUS / "torch_cpu_count_workers.py")["EC504"].findings
    assert (
        "num_workers=WORKERS (os.cpu_count()) = 64 logical CPUs but the training machine has "
        "only 16 usable CPUs" in finding.message
    )


# bad input ------------------------------------------------------------------------------


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["doctor", "-f", "json", "--exit-zero", *args])


def test_bad_files_are_reported_and_the_others_audited(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def main(:\n    pass\n")
    (tmp_path / "notes.py").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\n# caf\xe9\nfrom torch.utils.data import DataLoader\n"
        b"import torch\nDataLoader(torch.load('x'), batch_size=2).__iter__()\n"
        b"torch.zeros(1).cuda()\n"
    )
    (tmp_path / "huge.py").write_text("x = 1\n" * 400_000)
    result = run("--script", str(tmp_path))
    assert result.exit_code == 2  # the others were audited; the bad ones are input errors
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("envcheck: error: --script: 3 could not be audited: ")
    assert "broken.py:1:10: syntax error" in line
    section = json.loads(result.stdout)["facts"]["scripts"]
    errors = {Path(e["path"]).name: e for e in section["errors"]}
    assert errors["broken.py"]["reason"].startswith("syntax error")
    assert (errors["broken.py"]["line"], errors["broken.py"]["column"]) == (1, 10)
    assert "not a Python source file" in errors["notes.py"]["reason"]
    assert "too large" in errors["huge.py"]["reason"]
    assert [Path(x["path"]).name for x in section["loaders"]] == ["latin.py"]


def test_empty_folder_and_missing_path(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("--script", str(empty), "--script", str(tmp_path / "missing.py"))
    assert result.exit_code == 2 and "2 could not be audited" in result.stderr
    reasons = [e["reason"] for e in json.loads(result.stdout)["facts"]["scripts"]["errors"]]
    assert reasons == ["no *.py or *.ipynb files in this folder", "no such file or folder"]


def test_without_script_the_rules_are_skipped() -> None:
    checks = json.loads(run().stdout)["checks"]
    assert {c["status"] for c in checks if c["id"] in TORCH_RULES} == {"skipped"}


def test_precision_settings_read_from_the_scripts() -> None:
    precision = ("EC506", "EC507", "EC508")
    clean = audit(CORPUS / "torch_imagenet_clean.py", rules=precision)
    # cudnn.benchmark is on for the resnet; float32 without autocast on an A100; no TF32
    # advice for a convolutional model (cudnn.allow_tf32 defaults to True)
    assert failing(clean) == ["EC507"]
    assert "convolutions and cuDNN RNNs already use TF32" in clean["EC508"].reason
    linear = audit(CORPUS / "torch_no_workers.py", rules=precision)
    assert linear["EC506"].status.value == "pass"  # no convolutions


# the training-step loop (EC509, EC510) ---------------------------------------------------


def locations(result: Any) -> list[tuple[int, int]]:
    return [(f.location.line, f.location.column) for f in result.findings]


def test_per_step_syncs_point_at_the_calls() -> None:
    results = audit(CORPUS / "torch_step_sync.py")
    # total += loss.item(); print(f"... {loss}"); not the `if step % 100 == 0:` logging,
    # not the evaluation loop (no backward)
    assert locations(results["EC509"]) == [(47, 23), (48, 15)]
    first = results["EC509"].findings[0]
    assert first.location.code == "total += loss.item()"
    assert ".item() copies a result to the host in every step of the training loop" in (
        first.message
    )
    assert "over loader (line 37)" in first.message
    assert first.fix.startswith("running_loss += loss.detach()")
    # image.to(device) per element; .to(self.device) and .cuda() in Frames.__getitem__
    assert locations(results["EC510"]) == [(40, 32), (22, 36), (23, 36)]
    per_sample, getitem, _ = results["EC510"].findings
    assert "inside the loop `for image in images:` (line 39)" in per_sample.message
    assert per_sample.fix.startswith("x = x.to(device, non_blocking=True)")
    assert "Frames.__getitem__ puts each sample on the GPU with .to(self.device)" in (
        getitem.message
    )


def test_fixed_twin_is_clean_for_every_script_rule() -> None:
    results = audit(
        CORPUS / "torch_step_sync_fixed.py", rules=tuple(f"EC5{n:02d}" for n in range(23))
    )
    assert failing(results) == []


def test_cpu_training_is_judged_only_where_a_gpu_may_run_it(tmp_path: Path) -> None:
    loop = (
        "for x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    print(loss.item())\n"
    )
    head = "import torch\nloader = torch.utils.data.DataLoader(torch.load('t.pt'), batch_size=8)\n"

    def status(source: str, gpu: dict[str, Any]) -> tuple[str, str]:
        script = tmp_path / "cpu.py"
        script.write_text(source)
        ctx = CollectContext(interpreter=interpreter.current(), scripts=(script,))
        section = scripts.collect(ctx)["scripts"]
        facts = {"collectors": {"scripts": {"status": "ok", "reason": None}}, "scripts": section}
        if gpu:
            facts["gpu"] = gpu
        [result] = evaluate(Registry([REGISTRY.get("EC509")]), Facts(snapshot_from(facts)))
        return str(result.status.value), result.reason

    a100 = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}
    with_gpu = {"status": "ok", "devices": [a100]}
    # a PyTorch loop that never moves anything to a GPU trains on the CPU, wherever it runs
    state, reason = status(head + loop, with_gpu)
    assert state == "pass" and "never moves the model or data to a GPU" in reason
    # the device comes from a parameter: the target machine decides
    handed = (
        head
        + "def train(model, device):\n"
        + "".join("    " + line for line in ("model.to(device)\n", *loop.splitlines(keepends=True)))
    )
    assert status(handed, {"status": "ok", "devices": []})[0] == "pass"
    state, reason = status(handed, {})
    assert state == "unknown" and "the device is not determined here" in reason
    assert status(handed, with_gpu)[0] == "fail"
    # a CUDA device reaches the model: judged without asking the machine
    cuda = head + "device = 'cuda'\nmodel.to(device)\n" + loop
    assert status(cuda, {})[0] == "fail"


LOOP_SNIPPETS = [
    (
        # pytorch/examples mnist: the loader reaches train() as an argument; logging is
        # periodic; the test loop has no backward
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def train(args, model, device, train_loader, optimizer, epoch):\n"
        "    for batch_idx, (data, target) in enumerate(train_loader):\n"
        "        data, target = data.to(device), target.to(device)\n"
        "        loss = F.nll_loss(model(data), target)\n"
        "        loss.backward()\n"
        "        if batch_idx % args.log_interval == 0:\n"
        "            print('Loss: {:.6f}'.format(loss.item()))\n"
        "def test(model, device, test_loader):\n"
        "    for data, target in test_loader:\n"
        "        test_loss += F.nll_loss(model(data.to(device)), target).item()\n"
        "def main():\n"
        "    train_loader = torch.utils.data.DataLoader(d1, batch_size=64)\n"
        "    test_loader = torch.utils.data.DataLoader(d2, batch_size=64)\n"
        "    train(args, model, device, train_loader, optimizer, 1)\n"
        "    test(model, device, test_loader)\n"
        "    print(loss.item())\n",
        [],
    ),
    (
        # the 60-minute blitz: the running loss is read every step, printed every 2000
        "import torch\n"
        "trainloader = torch.utils.data.DataLoader(trainset, batch_size=4)\n"
        "for epoch in range(2):\n"
        "    for i, data in enumerate(trainloader, 0):\n"
        "        loss = criterion(net(data[0]), data[1])\n"
        "        loss.backward()\n"
        "        running_loss += loss.item()\n"
        "        if i % 2000 == 1999:\n"
        "            print(f'loss: {running_loss / 2000:.3f}')\n",
        [("host_sync", 7, ".item()")],
    ),
    (
        "import sys\n"
        "import numpy as np\n"
        "import torch\n"
        "from torch.utils.data import DataLoader\n"
        "from tqdm import tqdm\n"
        "class Trainer:\n"
        "    def __init__(self, ds):\n"
        "        self.train_loader = DataLoader(ds, batch_size=8)\n"
        "    def fit(self, device, scaler):\n"
        "        pbar = tqdm(self.train_loader)\n"
        "        for step, batch in enumerate(pbar):\n"
        "            for k in batch:\n"
        "                batch[k] = batch[k].to(device)\n"
        "            for name, value in batch.items():\n"
        "                batch[name] = value.to(device)\n"
        "            for t in (batch['x'], batch['y']):\n"
        "                t.to(device)\n"
        "            for img, lbl in zip(batch['x'], batch['y']):\n"
        "                img.to(torch.float16)\n"
        "                img.unsqueeze(0).to(device)\n"
        "            loss = self.model(batch)\n"
        "            scaler.scale(loss).backward()\n"
        "            value = loss.item()\n"
        "            if not np.isfinite(value):\n"
        "                print(value)\n"
        "                sys.exit(1)\n"
        "            labels = self.head(batch).argmax(1).cpu().numpy().tolist()\n"
        "            m = np.mean(np.ones(3)).item()\n"
        "            print(loss)\n"
        "            pbar.set_description('loss %.3f' % loss)\n"
        "            torch.cuda.synchronize()\n"
        "            if step == 0:\n"
        "                batch['x'].cpu()\n",
        [
            ("per_sample_copy", 20, ".to(device)"),
            ("host_sync", 23, ".item()"),
            ("host_sync", 27, ".cpu()"),
            ("host_sync", 29, "print(loss)"),
            ("host_sync", 30, "'loss %.3f' % loss"),
            ("host_sync", 31, "torch.cuda.synchronize()"),
        ],
    ),
    (
        # a Dataset moving data to a device it is handed (not known here) is not judged;
        # one whose device is a CUDA constant is
        "import torch\n"
        "from torch.utils import data\n"
        "DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "class Handed(data.Dataset):\n"
        "    def __init__(self, device):\n"
        "        self.device = device\n"
        "    def __getitem__(self, i):\n"
        "        return torch.ones(3).to(self.device)\n"
        "class Fixed(data.Dataset):\n"
        "    def __getitem__(self, i):\n"
        "        return torch.ones(3, device=DEVICE)\n",
        [("dataset_cuda", 11, "torch.ones(..., device=DEVICE)")],
    ),
    (
        # torchvision references: train_one_epoch(...) called from the epoch loop, the loader
        # wrapped in metric_logger.log_every(...); one finding per line
        "import torch\n"
        "import utils\n"
        "def train_one_epoch(model, criterion, opt, data_loader, device, args, scaler=None):\n"
        '    metric_logger = utils.MetricLogger(delimiter="  ")\n'
        '    for i, (image, target) in enumerate(metric_logger.log_every(data_loader, 10, "h")):\n'
        "        image, target = image.to(device), target.to(device)\n"
        "        loss = criterion(model(image), target)\n"
        "        if scaler is not None:\n"
        "            scaler.scale(loss).backward()\n"
        "        else:\n"
        "            loss.backward()\n"
        "        acc1, acc5 = utils.accuracy(output, target, topk=(1, 5))\n"
        '        metric_logger.update(loss=loss.item(), lr=optimizer.param_groups[0]["lr"])\n'
        '        metric_logger.meters["acc1"].update(acc1.item(), n=batch_size)\n'
        "def main(args):\n"
        "    data_loader = torch.utils.data.DataLoader(dataset, batch_size=2, num_workers=4)\n"
        "    for epoch in range(10):\n"
        "        train_one_epoch(model, criterion, optimizer, data_loader, device, args)\n",
        [("host_sync", 13, ".item()"), ("host_sync", 14, ".item()")],
    ),
    (
        # backward inside a closure handed to optimizer.step (LBFGS)
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "for x, y in loader:\n"
        "    def closure():\n"
        "        optimizer.zero_grad()\n"
        "        loss = model(x).sum()\n"
        "        loss.backward()\n"
        "        return loss\n"
        "    loss = optimizer.step(closure)\n"
        "    print(float(loss))\n",
        [("host_sync", 10, "float(loss)")],
    ),
    (
        # backward in a per-step helper; assert on a tensor there; .item() over a dict of
        # losses; an f-string with a tensor and .item() on one line is one place
        "import torch\n"
        "def step(model, batch):\n"
        "    loss = model(batch).sum()\n"
        "    loss.backward()\n"
        "    assert torch.isfinite(loss)\n"
        "    return loss\n"
        "def main():\n"
        "    loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "    for batch in loader:\n"
        "        loss = step(model, batch)\n"
        '        losses = {"a": loss, "b": loss}\n'
        "        logs = {k: v.item() for k, v in losses.items()}\n"
        '        print(f"{loss} {loss.item()}")\n',
        [
            ("host_sync", 5, "assert torch.isfinite(loss)"),
            ("host_sync", 12, ".item()"),
            ("host_sync", 13, "f'{loss} {loss.item()}'"),
        ],
    ),
    (
        # numbers made from .item() (arithmetic on it, or an .item() guarded by an
        # isinstance test) are formatted on the host: only the .item() calls sync
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "for batch in loader:\n"
        "    losses = []\n"
        "    loss = model(batch).sum()\n"
        "    loss.backward()\n"
        "    losses.append(loss.detach())\n"
        "    grad_norm = clip(model.parameters(), 1.0)\n"
        "    losses = gather(sum(losses)).sum().item() / (world * steps)\n"
        "    grad_norm = grad_norm.item() if isinstance(grad_norm, torch.Tensor) else grad_norm\n"
        '    print(f"grad norm: {grad_norm} loss: {losses}")\n',
        [("host_sync", 9, ".item()"), ("host_sync", 10, ".item()")],
    ),
    (
        # a while loop drawing batches with next(it)
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "it = iter(loader)\n"
        "step = 0\n"
        "while step < 1000:\n"
        "    x = next(it)\n"
        "    loss = model(x).sum()\n"
        "    loss.backward()\n"
        "    total = loss.tolist()\n"
        "    step += 1\n",
        [("host_sync", 9, ".tolist()")],
    ),
    (
        # two loaders zipped; %-formatting of a tensor
        "import torch\n"
        "a = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "b = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "for xa, xb in zip(a, b):\n"
        "    loss = model(xa, xb)\n"
        "    loss.backward()\n"
        '    print("loss %.3f" % loss)\n',
        [("host_sync", 7, "'loss %.3f' % loss")],
    ),
    (
        # pytorch/examples rpc parameter server: dist_autograd.backward(context_id, [loss]);
        # the context id is not a tensor, so asserting on an RPC result is no sync
        "import torch\n"
        "import torch.distributed.autograd as dist_autograd\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "for x, y in loader:\n"
        "    with dist_autograd.context() as cid:\n"
        "        loss = net(x).sum()\n"
        "        dist_autograd.backward(cid, [loss])\n"
        "        assert remote_method(get_grads, rref, cid) != {}\n"
        "        assert torch.isfinite(loss)\n",
        [("host_sync", 9, "assert torch.isfinite(loss)")],
    ),
    (
        # one statement over several lines is one place: one finding, not one per line
        "import sys\n"
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "for i, (x, y) in enumerate(loader):\n"
        "    loss_a, loss_b = net(x)\n"
        "    (loss_a + loss_b).backward()\n"
        "    sys.stdout.write(\n"
        '        "[a %f] [b %f]"\n'
        "        % (\n"
        "            loss_a.item(),\n"
        "            loss_b.item(),\n"
        "        )\n"
        "    )\n",
        [("host_sync", 10, ".item()")],
    ),
    (
        # periodic through a variable: `flag = i % n == 0` then `if flag:`
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "for i, (x, y) in enumerate(loader):\n"
        "    regularize = i % 16 == 0\n"
        "    loss = net(x)\n"
        "    loss.backward()\n"
        "    if regularize:\n"
        "        print(loss.item())\n"
        "    total = loss.item()\n",
        [("host_sync", 9, ".item()")],
    ),
    (
        # math.isnan / np.isnan and str.format on a tensor (a clipped gradient norm)
        "import math\n"
        "import numpy as np\n"
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "for x, y in loader:\n"
        "    loss = net(x)\n"
        "    loss.backward()\n"
        "    norm = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)\n"
        "    overflow = math.isnan(norm) or np.isinf(norm)\n"
        "    if rank == 0:  # the main process, every step\n"
        '        log("norm {:.6f}".format(norm))\n'
        "    step = 1\n"
        "    bad = math.isnan(step)\n",
        [
            ("host_sync", 9, "math.isnan(norm), np.isinf(norm)"),
            ("host_sync", 11, "'norm {:.6f}'.format(norm)"),
        ],
    ),
    (
        # yolov5: a running mean made on the device (torch.zeros(3, device=device)), %-formatted
        # with a computed format string and a starred tensor; memory_reserved() is a Python int
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "mloss = torch.zeros(3, device=device)\n"
        "for i, (imgs, targets) in enumerate(loader):\n"
        "    loss, loss_items = compute_loss(model(imgs.to(device)), targets.to(device))\n"
        "    scaler.scale(loss).backward()\n"
        "    mloss = (mloss * i + loss_items) / (i + 1)\n"
        '    mem = f"{torch.cuda.memory_reserved() / 1e9:.3g}G"\n'
        '    pbar.set_description(("%11s" * 2 + "%11.4g" * 3) % (f"{i}", mem, *mloss))\n',
        [("host_sync", 9, "('%11s' * 2 + '%11.4g' * 3) % (f'{i}', mem, *mloss)")],
    ),
    (
        # torchtune: the gradient-accumulation branch holds optimizer.step(): it runs every
        # optimizer step, not periodically; the tokens counted on the device make loss_to_log a
        # tensor; the log_every branch inside it stays periodic
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "running, num_tokens = 0, 0\n"
        "for idx, batch in enumerate(loader):\n"
        "    batch = {k: v.to(device) for k, v in batch.items()}\n"
        '    current = (batch["labels"] != -100).sum()\n'
        "    num_tokens += current\n"
        "    loss = model(batch) * current\n"
        "    running += loss\n"
        "    loss.backward()\n"
        "    if (idx + 1) % accumulation_steps == 0:\n"
        "        optimizer.step()\n"
        "        optimizer.zero_grad()\n"
        "        loss_to_log = running.item() / num_tokens\n"
        '        pbar.set_description(f"loss: {loss_to_log}")\n'
        "        if idx % log_every == 0:\n"
        "            print(loss_to_log.item())\n",
        [("host_sync", 14, ".item()"), ("host_sync", 15, "f'loss: {loss_to_log}'")],
    ),
    (
        # stylegan2: a lazy regulariser's own optimizer step under `i % n == 0`, beside the
        # step's unconditional one, stays periodic
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "for i, batch in enumerate(loader):\n"
        "    loss = model(batch.to(device))\n"
        "    loss.backward()\n"
        "    g_optim.step()\n"
        "    if i % reg_every == 0:\n"
        "        reg = regularizer(model)\n"
        "        reg.backward()\n"
        "        g_optim.step()\n"
        "        print(reg.item())\n",
        [],
    ),
    (
        # speechbrain: `if not torch.isfinite(loss):` in a helper, the loss handed in as an argument
        "import torch\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "\n"
        "class Brain:\n"
        "    def fit(self, data):\n"
        "        for batch in DataLoader(data, batch_size=8):\n"
        "            self.fit_batch(batch)\n"
        "\n"
        "    def fit_batch(self, batch):\n"
        '        loss = self.compute(batch.to("cuda"))\n'
        "        scaled = self.scaler.scale(loss)\n"
        "        self.check_finite(scaled)\n"
        "        scaled.backward()\n"
        "        self.optimizer.step()\n"
        "\n"
        "    def check_finite(self, loss):\n"
        "        if not torch.isfinite(loss):\n"
        "            self.bad += 1\n"
        "        if loss is None or self.patience > 3:\n"
        "            return\n",
        [("host_sync", 18, "not torch.isfinite(loss)")],
    ),
    (
        # d2l: helpers shared with other code (Accumulator.add, accuracy through the module's own
        # name, sys.modules[__name__]) are reported where the training step calls them, once per
        # statement; the evaluation loop (no backward) is not
        "import sys\n"
        "\n"
        "import torch\n"
        "\n"
        "this = sys.modules[__name__]\n"
        "\n"
        "\n"
        "class Accumulator:\n"
        "    def __init__(self, n):\n"
        "        self.data = [0.0] * n\n"
        "\n"
        "    def add(self, *args):\n"
        "        self.data = [a + float(b) for a, b in zip(self.data, args)]\n"
        "\n"
        "\n"
        "def accuracy(y_hat, y):\n"
        "    return float((y_hat.argmax(1) == y).sum())\n"
        "\n"
        "\n"
        "def train(net, train_iter, loss, trainer, devices=this.try_all_gpus()):\n"
        "    metric = this.Accumulator(3)\n"
        "    for X, y in train_iter:\n"
        "        X, y = X.to(devices[0]), y.to(devices[0])\n"
        "        pred = net(X)\n"
        "        l = loss(pred, y)\n"
        "        l.sum().backward()\n"
        "        trainer.step()\n"
        "        metric.add(l.sum(), this.accuracy(pred, y), y.numel())\n"
        "\n"
        "\n"
        "def evaluate(net, it):\n"
        "    metric = Accumulator(2)\n"
        "    for X, y in it:\n"
        "        metric.add(accuracy(net(X), y), y.numel())\n",
        [("host_sync", 28, "float(b) in add(), float((y_hat.argmax(1) == y).sum()) in accuracy()")],
    ),
    (
        # monai/Ignite: a step function with no loop of its own (backward and optimizer step),
        # called by the framework every iteration; its inner discriminator loop is read once
        "import torch\n"
        "\n"
        "\n"
        "class GanTrainer:\n"
        "    def _iteration(self, engine, batch):\n"
        "        d_total = torch.zeros(1)\n"
        "        for _ in range(engine.d_steps):\n"
        "            dloss = engine.d_loss(batch)\n"
        "            dloss.backward()\n"
        "            engine.d_optimizer.step()\n"
        "            d_total += dloss.item()\n"
        "        g_loss = engine.g_loss(batch)\n"
        "        g_loss.backward()\n"
        "        engine.g_optimizer.step()\n"
        "        if engine.update_latents:\n"
        "            engine.latents = None\n"
        '        return {"g": g_loss.item(), "d": d_total}\n',
        [("host_sync", 11, ".item()"), ("host_sync", 17, ".item()")],
    ),
    (
        # sentence-transformers: GradScaler.get_scale() is an .item(); the AMP path behind --amp
        # is read (the path EC507 advises), a disabled scaler (enabled=use_amp, False) and an opt-in
        # synchronize are not
        "import argparse\n"
        "\n"
        "import torch\n"
        "\n"
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--amp", action="store_true")\n'
        'parser.add_argument("--sync", action="store_true")\n'
        "args = parser.parse_args()\n"
        "\n"
        "\n"
        "def fit(model, loader, optimizer, use_amp=False):\n"
        "    scaler = torch.cuda.amp.GradScaler() if args.amp else None\n"
        "    quiet = torch.cuda.amp.GradScaler(enabled=use_amp and torch.cuda.is_available())\n"
        '    model.to("cuda")\n'
        "    for features, labels in loader:\n"
        '        labels = labels.to("cuda")\n'
        "        if args.amp:\n"
        '            with torch.autocast(device_type="cuda"):\n'
        "                loss = model(features, labels)\n"
        "            before = scaler.get_scale()\n"
        "            scaler.scale(loss).backward()\n"
        "            scaler.step(optimizer)\n"
        "            scaler.update()\n"
        "            skip = scaler.get_scale() != before\n"
        "        else:\n"
        "            loss = model(features, labels)\n"
        "            loss.backward()\n"
        "            optimizer.step()\n"
        "        if args.sync:\n"
        "            torch.cuda.synchronize()\n"
        "        kept = quiet.get_scale()\n",
        [("host_sync", 20, ".get_scale()"), ("host_sync", 24, ".get_scale()")],
    ),
    (
        # pytorch-metric-learning: backward on self.losses['total_loss'] two helpers deep; the
        # dict entry %-formatted every iteration
        "import torch\n"
        "import tqdm\n"
        "\n"
        "\n"
        "class BaseTrainer:\n"
        "    def train(self, epochs):\n"
        "        for epoch in range(epochs):\n"
        "            pbar = tqdm.tqdm(range(self.iterations))\n"
        "            for self.iteration in pbar:\n"
        "                self.forward_and_backward()\n"
        '                pbar.set_description("total_loss=%.5f" % self.losses["total_loss"])\n'
        "\n"
        "    def forward_and_backward(self):\n"
        "        self.calculate_loss(self.get_batch())\n"
        "        self.backward()\n"
        "        self.optimizer.step()\n"
        "\n"
        "    def backward(self):\n"
        '        self.losses["total_loss"].backward()\n',
        [("host_sync", 11, "'total_loss=%.5f' % self.losses['total_loss']")],
    ),
    (
        # tabnet: the per-batch helper loops over parameters but runs backward outside that loop:
        # the loop calling it per batch is a step loop
        "import torch\n"
        "\n"
        "\n"
        "class TabModel:\n"
        "    def _train_epoch(self, train_loader):\n"
        "        for batch_idx, (X, y) in enumerate(train_loader):\n"
        "            logs = self._train_batch(X, y)\n"
        "            self.callbacks.on_batch_end(batch_idx, logs)\n"
        "\n"
        "    def _train_batch(self, X, y):\n"
        "        X = X.to(self.device).float()\n"
        "        for param in self.network.parameters():\n"
        "            param.grad = None\n"
        "        loss = self.compute_loss(self.network(X), y.to(self.device))\n"
        "        loss.backward()\n"
        "        self._optimizer.step()\n"
        '        return {"loss": loss.cpu().detach().numpy().item()}\n',
        [("host_sync", 17, ".cpu()")],
    ),
    (
        # no sync: isinstance on a tensor, a float from some object's method, a shape, a CUDA
        # allocator counter, `is not None`, dim()
        "import torch\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
        "p = 0.0\n"
        "for i, batch in enumerate(loader):\n"
        "    real = model(batch.to(device))\n"
        "    loss = real.mean()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    assert isinstance(batch, torch.Tensor)\n"
        "    p = augment.tune(real)\n"
        "    size = batch.to(device).shape[0]\n"
        '    print(f"p {p:.4f} size {size} mem {torch.cuda.max_memory_allocated()}")\n'
        "    if loss is not None and batch.dim() == 4:\n"
        "        pass\n",
        [],
    ),
]


@pytest.mark.parametrize(("source", "expected"), LOOP_SNIPPETS)
def test_step_loop_observations(
    tmp_path: Path, source: str, expected: list[tuple[str, int, str]]
) -> None:
    (tmp_path / "loop.py").write_text(source)
    report = analyze_file(tmp_path / "loop.py", "loop.py")
    assert report.error is None
    assert [(c["kind"], c["line"], c["call"]) for c in report.torch_calls] == expected


GPU_RULES = ("EC506", "EC507", "EC509")
STEP = (
    "for x, y in loader:\n"
    "    loss = criterion(model(x.cuda()), y.cuda())\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)


def statuses(tmp_path: Path, source: str) -> dict[str, Any]:
    (tmp_path / "train.py").write_text(source)
    return audit(tmp_path / "train.py", rules=GPU_RULES)


def test_star_imported_pytorch_gets_one_gpu_answer_for_every_rule(tmp_path: Path) -> None:
    """PyTorch behind `from modeling import *`: EC506 and EC507 judge the file EC509
    judges, instead of passing with "no GPU training script"."""
    results = statuses(
        tmp_path,
        "from modeling import *\n"
        "model = DeepLab(num_classes=21).cuda()\n" + STEP + "    total += loss.item()\n",
    )
    assert {i: r.status.value for i, r in results.items()} == {
        "EC506": "fail",
        "EC507": "fail",
        "EC509": "fail",
    }


def test_model_out_of_sight_makes_cudnn_rule_unknown(tmp_path: Path) -> None:
    results = statuses(
        tmp_path, "import torch\nfrom model import Net\nmodel = Net().cuda()\n" + STEP
    )
    assert results["EC506"].status.value == "unknown"
    assert "built out of this file" in results["EC506"].reason


def test_an_rl_agent_with_its_policy_out_of_sight_leaves_mixed_precision_unknown(
    tmp_path: Path,
) -> None:
    """Stable-Baselines3's PPO: the policy network is the caller's (`policy="MlpPolicy"`,
    64x64 by default), built out of this file; RL policies are often too small for
    autocast to gain, so EC507 says unknown, not float32 with the gain unknown."""
    source = "import torch\nfrom gymnasium import spaces\nmodel = Policy().cuda()\n" + STEP
    result = statuses(tmp_path, source)["EC507"]
    assert result.status.value == "unknown"
    assert "reinforcement-learning agent" in result.reason
    # the same loop with the policy network in sight is judged on it
    conv = source.replace("Policy()", "torch.nn.Conv2d(3, 64, 3)")
    assert statuses(tmp_path, conv)["EC507"].status.value == "fail"


def test_apex_amp_behind_a_flag_is_mixed_precision_off_by_default(tmp_path: Path) -> None:
    results = statuses(
        tmp_path,
        "import argparse\nimport torch\n"
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--fp16", action="store_true")\n'
        "args = parser.parse_args()\n"
        "model = ResNet50().cuda()\n"
        "if args.fp16:\n"
        "    from apex import amp\n"
        '    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")\n' + STEP,
    )
    # the script offers AMP: a setting of the run, not a finding (expected.toml's policy)
    assert results["EC507"].status.value == "pass"
    assert "AMP is off unless --fp16 is passed" in results["EC507"].reason


def test_precision_handed_to_the_projects_trainer_is_a_gate(tmp_path: Path) -> None:
    """`MixedPrecisionTrainer(use_fp16=self.use_fp16)`, set by the caller: unknown."""
    results = statuses(
        tmp_path,
        "import torch\nfrom .fp16 import MixedPrecisionTrainer\n"
        "class Loop:\n"
        "    def __init__(self, model, use_fp16=False):\n"
        "        self.use_fp16 = use_fp16\n"
        "        self.model = ResNet50().cuda()\n"
        "        self.mp = MixedPrecisionTrainer(model=self.model, use_fp16=self.use_fp16)\n"
        "    def run(self, loader):\n"
        "        for x, y in loader:\n"
        "            loss = self.model(x.cuda()).sum()\n"
        "            self.mp.backward(loss)\n"
        "            loss.backward()\n",
    )
    assert results["EC507"].status.value == "unknown"
    assert "self.use_fp16" in results["EC507"].reason


def test_loaders_built_in_another_module_make_the_loader_rules_unknown(tmp_path: Path) -> None:
    """`self.train_loader = make_data_loader(args)`, then `for i, b in enumerate(tqdm(...))`:
    the DataLoader settings are out of sight, so the loader rules say unknown, not pass."""
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "from tqdm import tqdm\n"
        "from dataloaders import make_data_loader\n"
        "class Trainer:\n"
        "    def __init__(self, args):\n"
        "        self.train_loader = make_data_loader(args, num_workers=args.workers)\n"
        "    def train(self):\n"
        "        bar = tqdm(self.train_loader)\n"
        "        for i, (x, y) in enumerate(bar):\n"
        "            loss = self.model(x.cuda()).sum()\n"
        "            loss.backward()\n"
    )
    results = audit(tmp_path / "train.py", rules=("EC501", "EC503", "EC504"))
    for result in results.values():
        assert result.status.value == "unknown", result.reason
        # the worker count handed to the maker is not known (args.workers has no
        # argparse default in sight)
        assert "num_workers=args.workers" in result.reason
    (tmp_path / "train.py").write_text(
        (tmp_path / "train.py").read_text().replace(", num_workers=args.workers", "")
    )
    results = audit(tmp_path / "train.py", rules=("EC501", "EC503", "EC504"))
    for result in results.values():
        assert result.status.value == "unknown", result.reason
        assert "self.train_loader, built out of this file" in result.reason


@pytest.mark.parametrize(
    "library", ["from torchrl.envs import GymEnv", "import tianshou", "import dm_env"]
)
def test_an_rl_library_marks_the_agent_as_gym_does(tmp_path: Path, library: str) -> None:
    """TorchRL, Tianshou, dm_env: RL libraries on environments, where the file never
    imports gym itself (TorchRL's diffusion_bc, released7); the policy out of sight
    leaves EC507 unknown as with Gym."""
    source = f"import torch\n{library}\nmodel = Policy().cuda()\n" + STEP
    result = statuses(tmp_path, source)["EC507"]
    assert result.status.value == "unknown"
    assert "reinforcement-learning agent" in result.reason
