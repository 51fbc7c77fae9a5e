"""Precision and cudnn.benchmark verdicts on shapes found in public PyTorch code
(issue 11, blind corpora): each test is a snippet that once got a wrong EC506-EC508
verdict. Snippets go through the real analyser and rules against an 8-GPU, 2-CPU Linux
node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import script_results


def results(tmp_path: Path, source: str) -> dict[str, Any]:
    return script_results(tmp_path, source, "train.py")


def lines(result: Any) -> list[int]:
    return sorted(f.location.line for f in result.findings)


ACCELERATOR_KWARGS = """
import torch
from accelerate import Accelerator
from transformers import AutoModelForSequenceClassification

accelerator_log_kwargs = {}
accelerator_log_kwargs["log_with"] = "tensorboard"
accelerator = Accelerator(gradient_accumulation_steps=1, **accelerator_log_kwargs)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
optimizer = torch.optim.AdamW(model.parameters())
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for epoch in range(3):
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def test_accelerator_kwargs_without_mixed_precision_is_float32(tmp_path: Path) -> None:
    """`Accelerator(**kwargs)` with a dict the source spells out and no mixed_precision in
    it: Accelerate's float32 default, as a bare Accelerator() is."""
    found = results(tmp_path, ACCELERATOR_KWARGS)
    assert found["EC507"].status.value == "fail"
    assert "Accelerate's default" in found["EC507"].findings[0].message


def test_accelerator_kwargs_with_mixed_precision_is_mixed(tmp_path: Path) -> None:
    source = ACCELERATOR_KWARGS.replace(
        '"tensorboard"\n', '"tensorboard"\naccelerator_log_kwargs["mixed_precision"] = "bf16"\n'
    )
    found = results(tmp_path, source)
    assert found["EC507"].status.value == "pass"


def test_accelerator_kwargs_out_of_sight_is_not_known(tmp_path: Path) -> None:
    source = ACCELERATOR_KWARGS.replace(
        "accelerator_log_kwargs = {}", "accelerator_log_kwargs = load_kwargs()"
    )
    found = results(tmp_path, source)
    assert found["EC507"].status.value != "fail"


BENCHMARK_TEST_ONLY = """
import argparse
import torch, torchvision


def main(args):
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if args.test_only:
        torch.backends.cudnn.benchmark = False  # evaluation only, then return
        return
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward(); opt.step(); opt.zero_grad()


parser = argparse.ArgumentParser()
parser.add_argument("--test-only", action="store_true")
main(parser.parse_args())
"""


def test_benchmark_off_in_a_test_only_branch_keeps_the_training_setting(tmp_path: Path) -> None:
    """torchvision's references: `if args.test_only: cudnn.benchmark = False; return`,
    a branch the default run (--test-only off) does not take."""
    found = results(tmp_path, BENCHMARK_TEST_ONLY)
    assert found["EC506"].status.value == "pass"


def test_benchmark_off_in_the_branch_the_run_takes_still_counts(tmp_path: Path) -> None:
    source = BENCHMARK_TEST_ONLY.replace(
        '"--test-only", action="store_true"', '"--test-only", default=True'
    )
    found = results(tmp_path, source)
    assert found["EC506"].status.value == "fail"


CONVERT_IMAGE_DTYPE = """
import torch
from torchvision.transforms import ConvertImageDtype, Normalize
from transformers import AutoModel

device = "cuda"
model = AutoModel.from_pretrained("openai/clip-vit-base-patch32").to(device)
prep = torch.nn.Sequential(ConvertImageDtype(torch.float), Normalize([0.5], [0.5]))
optimizer = torch.optim.AdamW(model.parameters())
for batch in loader:
    loss = model(pixel_values=prep(batch["pixel_values"]).to(device)).loss
    loss.backward()
    optimizer.step()
"""


def test_convert_image_dtype_is_no_convolution(tmp_path: Path) -> None:
    """`transforms.ConvertImageDtype` converts a dtype; the transformer it feeds has no
    convolutions for cuDNN to tune."""
    found = results(tmp_path, CONVERT_IMAGE_DTYPE)
    assert found["EC506"].status.value == "pass"


def test_a_conv_layer_is_still_a_convolution(tmp_path: Path) -> None:
    source = CONVERT_IMAGE_DTYPE.replace(
        "ConvertImageDtype(torch.float),",
        "ConvertImageDtype(torch.float), torch.nn.Conv2d(3, 3, 3),",
    )
    found = results(tmp_path, source)
    assert found["EC506"].status.value == "fail"


DATACLASS_DTYPE = """
from dataclasses import dataclass, field
from typing import Optional
import torch
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = "gpt2"
    torch_dtype: Optional[str] = field(default=None)


parser = HfArgumentParser((ModelArguments, TrainingArguments))
model_args, training_args = parser.parse_args_into_dataclasses()
name = model_args.torch_dtype
dtype = model_args.torch_dtype if name in ["auto", None] else getattr(torch, name)
model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, torch_dtype=dtype)
Trainer(model=model, args=training_args, train_dataset=train_dataset).train()
"""


def test_a_dataclass_dtype_defaulting_to_none_loads_float32(tmp_path: Path) -> None:
    """run_clm's `torch_dtype` field defaults to None, and `x if x in ["auto", None] else
    getattr(torch, x)` then picks None: the model loads in float32 (EC508)."""
    found = results(tmp_path, DATACLASS_DTYPE)
    assert found["EC508"].status.value == "fail"


def test_a_dataclass_dtype_defaulting_to_bfloat16_is_half(tmp_path: Path) -> None:
    source = DATACLASS_DTYPE.replace("field(default=None)", 'field(default="bfloat16")')
    found = results(tmp_path, source)
    assert found["EC508"].status.value != "fail"


def test_accelerator_kwargs_in_a_script_reading_the_launch_precision(tmp_path: Path) -> None:
    """A script that reads `accelerator.state.mixed_precision` expects `accelerate launch`
    to set it: the dict without mixed_precision does not settle the run's precision."""
    source = ACCELERATOR_KWARGS + 'if accelerator.state.mixed_precision == "no":\n    pass\n'
    found = results(tmp_path, source)
    assert found["EC507"].status.value != "fail"


TOY_AGENT = """
import gymnasium as gym
import numpy as np
import torch
from torch import nn

env = gym.make("CartPole-v1")
n_obs = np.array(env.observation_space.shape).prod()
agent = nn.Sequential(
    nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2)
).to("cuda")
opt = torch.optim.Adam(agent.parameters(), lr=2.5e-4)
for update in range(1000):
    obs, ret = rollout(env, agent)
    loss = (agent(obs.cuda()).logsumexp(-1) - ret.cuda()).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_small_mlp_with_its_input_width_from_the_environment_is_a_toy(tmp_path: Path) -> None:
    """cleanrl's agents: hidden widths 64, the input width from the environment: nothing
    for tensor cores (no EC507/EC508)."""
    found = results(tmp_path, TOY_AGENT)
    assert found["EC507"].status.value == "pass"
    assert found["EC508"].status.value == "pass"


def test_a_small_mlp_of_constant_widths_over_the_weight_bound_is_a_toy(tmp_path: Path) -> None:
    source = TOY_AGENT.replace("n_obs, 64", "4, 120").replace("64, 64", "120, 84")
    found = results(tmp_path, source.replace("(64, 2)", "(84, 2)"))
    assert found["EC507"].status.value == "pass"


def test_a_wide_mlp_is_still_judged(tmp_path: Path) -> None:
    found = results(tmp_path, TOY_AGENT.replace("64", "1024"))
    assert found["EC507"].status.value == "fail"


def test_a_small_head_on_a_named_architecture_is_no_toy(tmp_path: Path) -> None:
    source = TOY_AGENT.replace(
        "agent = nn.Sequential(",
        "import timm\nbody = timm.create_model('vit_base_patch16_224')\nagent = nn.Sequential(",
    )
    found = results(tmp_path, source)
    assert found["EC507"].status.value == "fail"


GRADIENT_WRT_INPUT = """
import torch
import torch.nn.functional as F
from torch import nn

device = "cuda"
model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device)
model.load_state_dict(torch.load("mlp.pth"))
model.eval()
for data, target in test_loader:
    data, target = data.to(device), target.to(device)
    data.requires_grad = True
    loss = F.nll_loss(model(data), target)
    model.zero_grad()
    loss.backward()
    perturbed = torch.clamp(data + 0.1 * data.grad.sign(), 0, 1)
"""


def test_a_backward_with_no_update_trains_nothing(tmp_path: Path) -> None:
    """FGSM: the gradient with respect to the input, no optimizer, no update: the file
    trains nothing, so the training-precision rules do not judge it."""
    found = results(tmp_path, GRADIENT_WRT_INPUT)
    assert found["EC507"].status.value != "fail"
    assert found["EC508"].status.value != "fail"


def test_a_backward_with_an_optimizer_step_still_trains(tmp_path: Path) -> None:
    source = GRADIENT_WRT_INPUT.replace(
        "model.eval()\n", "model.eval()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    ).replace("    loss.backward()\n", "    loss.backward()\n    opt.step()\n")
    found = results(tmp_path, source)
    assert found["EC507"].status.value == "fail"


AUTOCAST_DTYPE_FLAG = """
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--dtype", type=str, default="float32")
args = parser.parse_args()
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[args.dtype]
ctx = torch.amp.autocast(device_type="cuda", dtype=ptdtype)
device = "cuda"
model = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(768, 12), 12).to(device)
optimizer = torch.optim.AdamW(model.parameters())
for x in batches:
    with ctx:
        loss = model(x.to(device)).float().pow(2).mean()
    loss.backward()
    optimizer.step()
"""


def test_an_autocast_to_float32_by_default_is_no_mixed_precision(tmp_path: Path) -> None:
    """llm.c: `--dtype` defaults to float32, so the autocast runs in float32: TF32 is
    judged (EC508), mixed precision is an option of the run."""
    found = results(tmp_path, AUTOCAST_DTYPE_FLAG)
    assert found["EC508"].status.value == "fail"
    assert "--dtype" in found["EC508"].findings[0].message


def test_an_autocast_to_bfloat16_by_default_is_mixed_precision(tmp_path: Path) -> None:
    found = results(
        tmp_path, AUTOCAST_DTYPE_FLAG.replace('default="float32"', 'default="bfloat16"')
    )
    assert found["EC508"].status.value == "pass"
