"""Mixed precision set in a DeepSpeed JSON config handed to Accelerate (precision.py).

Time-LLM's run_main.py (sweep AE) builds `Accelerator(deepspeed_plugin=DeepSpeedPlugin(
hf_ds_config="./ds_config_zero2.json"))`, and that shipped file has `"bf16": {"enabled":
true}`: the run trains in bfloat16 though no mixed_precision keyword is in sight. A
config the project does not ship, or one that leaves it to the launcher ("auto"), says
nothing: mixed precision is then set outside the source (EC507 unknown), as under
`accelerate launch`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import project_checks

TRAIN = """\
import torch
import torch.nn as nn
from accelerate import Accelerator, DeepSpeedPlugin

deepspeed_plugin = DeepSpeedPlugin(hf_ds_config="./ds_config.json")
accelerator = Accelerator(deepspeed_plugin=deepspeed_plugin)
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024))
opt = torch.optim.Adam(model.parameters())
model, opt, loader = accelerator.prepare(model, opt, loader)
for x, y in loader:
    loss = (model(x) - y).pow(2).mean()
    opt.zero_grad()
    accelerator.backward(loss)
    opt.step()
"""


def statuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: object) -> dict[str, str]:
    files = {"train.py": TRAIN}
    if config is not None:
        files["ds_config.json"] = json.dumps(config)
    checks = project_checks(tmp_path, files, monkeypatch)
    return {rule: status for rule, (status, _) in checks.items()}


def test_bf16_in_the_shipped_deepspeed_config_is_mixed_precision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = statuses(tmp_path, monkeypatch, {"bf16": {"enabled": True}})
    assert status["EC507"] == "pass"
    assert status["EC508"] == "pass"


def test_a_deepspeed_config_that_does_not_settle_precision_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    auto = statuses(tmp_path, monkeypatch, {"bf16": {"enabled": "auto"}})
    assert auto["EC507"] == "unknown"
    (tmp_path / "ds_config.json").unlink()
    missing = statuses(tmp_path, monkeypatch, None)
    assert missing["EC507"] == "unknown"
