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
    getattr(torch, x)` then picks None: the model loads in float32, so mixed precision is
    left to `--bf16` (EC507 unknown) and TF32 to `--tf32`, options of the run (EC508)."""
    found = results(tmp_path, DATACLASS_DTYPE)
    assert found["EC507"].status.value == "unknown"
    assert found["EC508"].status.value == "pass"
    assert "off unless --tf32 is passed" in found["EC508"].reason


def test_a_dataclass_dtype_defaulting_to_bfloat16_is_half(tmp_path: Path) -> None:
    source = DATACLASS_DTYPE.replace("field(default=None)", 'field(default="bfloat16")')
    found = results(tmp_path, source)
    assert found["EC508"].status.value != "fail"


REGISTRY_MLP = """
import argparse
import torch
from encoder import ConvEncoder, MLPEncoder

ENCODERS = {"mlp": MLPEncoder, "conv": ConvEncoder}
parser = argparse.ArgumentParser()
parser.add_argument("--encoder", choices=ENCODERS.keys(), default="mlp")
args = parser.parse_args()
model = ENCODERS[args.encoder]().cuda()
optimizer = torch.optim.AdamW(model.parameters())
for images, labels in loader:
    loss = model(images.cuda(), labels.cuda())
    loss.backward()
    optimizer.step()
"""


def test_an_mlp_picked_from_a_registry_by_the_default_option_is_matmul_bound(
    tmp_path: Path,
) -> None:
    """`ENCODERS[args.encoder]()` with --encoder defaulting to "mlp": the default run
    builds `MLPEncoder`, matmul-bound as a direct `MLPEncoder()` is (EC508); picked by
    "conv" it is a convnet, no matmul model."""
    assert results(tmp_path / "mlp", REGISTRY_MLP)["EC508"].status.value == "fail"
    conv = REGISTRY_MLP.replace('default="mlp"', 'default="conv"')
    assert results(tmp_path / "conv", conv)["EC508"].status.value != "fail"


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


REPLAY_AGENT = """
import torch
from torch import optim
from model import DQN

class Agent:
    def __init__(self, args, env):
        self.online_net = DQN(args, env.action_space()).to(device=args.device)
        self.optimiser = optim.Adam(self.online_net.parameters(), lr=args.learning_rate)

    def learn(self, mem):
        states, actions, returns = mem.sample(self.batch_size)
        q = self.online_net(states)[range(self.batch_size), actions]
        loss = ((q - returns) ** 2).mean()
        self.online_net.zero_grad()
        loss.backward()
        self.optimiser.step()
"""


def test_an_agent_sampling_a_replay_memory_is_an_rl_agent(tmp_path: Path) -> None:
    """Rainbow's agent.py imports no Gym: its replay memory sampled for each update, in a
    file of actions, says RL; its network is the caller's, so EC507 is unknown."""
    found = results(tmp_path, REPLAY_AGENT)
    assert found["EC507"].status.value == "unknown"
    assert "reinforcement-learning" in found["EC507"].reason
    plain = REPLAY_AGENT.replace("mem.sample", "mem.take").replace("actions", "labels")
    assert results(tmp_path, plain)["EC507"].status.value == "fail"


PPO_UPDATE = """
import torch
import torch.nn as nn
import torch.optim as optim


class PPO:
    def __init__(self, actor_critic, clip_param, lr=None):
        self.actor_critic = actor_critic
        self.clip_param = clip_param
        self.optimizer = optim.Adam(actor_critic.parameters(), lr=lr)

    def update(self, rollouts):
        advantages = rollouts.returns[:-1] - rollouts.value_preds[:-1]
        for sample in rollouts.feed_forward_generator(advantages, 4):
            obs, actions, old_log_probs, adv = sample
            values, log_probs, entropy = self.actor_critic.evaluate_actions(obs, actions)
            ratio = torch.exp(log_probs - old_log_probs)
            loss = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""


def test_a_ppo_update_over_a_rollout_storage_is_an_rl_agent(tmp_path: Path) -> None:
    """pytorch-a2c-ppo-acktr-gail's algo/ppo.py imports no Gym: the rollout storage its
    update reads, in a file of actions, says RL; the policy is the caller's."""
    found = results(tmp_path, PPO_UPDATE)
    assert found["EC507"].status.value == "unknown"
    assert "rollout storage" in found["EC507"].reason
    plain = PPO_UPDATE.replace("rollouts", "batches").replace("actions", "labels")
    assert results(tmp_path, plain)["EC507"].status.value == "fail"


GAIL_DISCRIMINATOR = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from stable_baselines3.common.running_mean_std import RunningMeanStd


class Discriminator(nn.Module):
    def __init__(self, input_dim, hidden_dim, device):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(input_dim, hidden_dim), nn.Tanh(),
            nn.Linear(hidden_dim, hidden_dim), nn.Tanh(),
            nn.Linear(hidden_dim, 1)).to(device)
        self.optimizer = torch.optim.Adam(self.trunk.parameters())
        self.ret_rms = RunningMeanStd(shape=())

    def update(self, expert_loader, policy_batches):
        for expert, policy in zip(expert_loader, policy_batches):
            loss = F.binary_cross_entropy_with_logits(self.trunk(policy), expert)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""


def test_an_agent_mlp_whose_widths_the_caller_passes_is_not_known(tmp_path: Path) -> None:
    """GAIL's discriminator: an MLP in sight whose hidden width is a constructor parameter
    the training script fills (100): RL networks are often too small to gain, so neither
    EC507 nor EC508 can tell; the same MLP with a wide width written out is judged."""
    found = results(tmp_path, GAIL_DISCRIMINATOR)
    assert found["EC507"].status.value == "unknown"
    assert found["EC508"].status.value == "unknown"
    assert "widths passed by the caller" in found["EC507"].reason
    wide = GAIL_DISCRIMINATOR.replace("(hidden_dim, hidden_dim)", "(hidden_dim, 4096)")
    assert results(tmp_path, wide)["EC507"].status.value == "fail"
    supervised = GAIL_DISCRIMINATOR.replace(
        "from stable_baselines3.common.running_mean_std import RunningMeanStd\n", ""
    ).replace("        self.ret_rms = RunningMeanStd(shape=())\n", "")
    assert results(tmp_path, supervised)["EC507"].status.value == "fail"


LIGHTNING_MODULE = """
import torch
import torch.nn.functional as F
import pytorch_lightning as pl


class Autoencoder(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Conv2d(3, 64, 3)
        self.decoder = torch.nn.ConvTranspose2d(64, 3, 3)

    def training_step(self, batch, batch_idx):
        x = batch["image"]
        loss = F.mse_loss(self.decoder(self.encoder(x)), x)
        self.log("train/loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-4)
"""


def test_a_lightning_module_whose_trainer_is_elsewhere_leaves_benchmark_unknown(
    tmp_path: Path,
) -> None:
    """taming-transformers' vqgan.py: the Trainer (and its `benchmark=`) is main.py's,
    the file that runs the training; a Trainer built in the file decides."""
    found = results(tmp_path, LIGHTNING_MODULE)
    assert found["EC506"].status.value == "unknown"
    assert "not in this file" in found["EC506"].reason
    runner = LIGHTNING_MODULE + "\npl.Trainer(accelerator='gpu').fit(Autoencoder(), loader)\n"
    assert results(tmp_path, runner)["EC506"].status.value == "fail"


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


ESTIMATOR = '''
import torch
from torch.utils.data import DataLoader, TensorDataset


class DeepEstimator:
    """A scikit-learn-style estimator; the network comes from a subclass."""

    def __init__(self, network, device="cuda"):
        self.network = network.to(device)
        self.device = device

    def fit(self, X, y):
        """
        Parameters
        ----------
        X : np.ndarray
            Training features.
        y : np.ndarray
            Targets.
        """
        loader = DataLoader(TensorDataset(X, y), batch_size=1024, shuffle=True)
        optimizer = torch.optim.Adam(self.network.parameters())
        for epoch in range(100):
            for xb, yb in loader:
                xb, yb = xb.to(self.device), yb.to(self.device)
                loss = torch.nn.functional.mse_loss(self.network(xb), yb)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
'''


def test_an_out_of_sight_model_over_handed_feature_arrays_is_tabular(tmp_path: Path) -> None:
    """An estimator's fit(X, y) over arrays it was handed, its network built elsewhere
    (TabNet, wide-and-deep, released corpora): a tabular network, no EC507; the pass says
    why rather than claiming autocast."""
    found = results(tmp_path, ESTIMATOR)
    assert found["EC507"].status.value == "pass"
    assert "in-memory feature arrays" in found["EC507"].reason


def test_an_out_of_sight_model_over_a_dataset_it_was_given_is_still_float32(
    tmp_path: Path,
) -> None:
    source = ESTIMATOR.replace("TensorDataset(X, y)", "self.dataset")
    found = results(tmp_path, source)
    assert found["EC507"].status.value == "fail"


TOY_THROUGH_CONSTRUCTOR = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda")


class Net(nn.Module):
    def __init__(self, d_in, hidden, d_out):
        super().__init__()
        self.l1 = nn.Linear(d_in, hidden)
        self.l2 = nn.Linear(hidden, d_out)
        self.skip = nn.Linear(d_in, d_out)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x))) + self.skip(x)


model = Net(in_dim, 16, n_classes).to(device)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for x, y in loader:
    loss = F.cross_entropy(model(x.to(device)), y.to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_toy_widths_passed_through_the_constructor_are_a_toy(tmp_path: Path) -> None:
    """`Net(in_dim, 16, n_classes)`: the widths reach nn.Linear through the constructor's
    parameters; a 16-unit net is a toy as it is with literal widths, its skip layer from
    the input to the classes (`nn.Linear(d_in, d_out)`) the data's widths (sweep-torch
    class 2)."""
    found = results(tmp_path, TOY_THROUGH_CONSTRUCTOR)
    assert found["EC507"].status.value == "pass"
    assert found["EC508"].status.value == "pass"


def test_wide_layers_passed_through_the_constructor_are_judged(tmp_path: Path) -> None:
    found = results(tmp_path, TOY_THROUGH_CONSTRUCTOR.replace("in_dim, 16,", "in_dim, 1024,"))
    assert found["EC507"].status.value == "fail"
    assert found["EC508"].status.value == "fail"


def test_a_class_of_the_file_named_mlp_is_read_by_its_layers(tmp_path: Path) -> None:
    """The file's own `class MLP` with its 7->16->2 layers in sight is no named
    architecture of unknown size: a toy, as the same class named `Net` is."""
    source = TOY_THROUGH_CONSTRUCTOR.replace("class Net", "class MLP")
    found = results(tmp_path, source.replace("Net(in_dim", "MLP(in_dim"))
    assert found["EC507"].status.value == "pass"


GNN_LAYERS = """
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv

device = torch.device("cuda")


class GCN(torch.nn.Module):
    def __init__(self, d_in, hidden, d_out):
        super().__init__()
        self.convs = torch.nn.ModuleList()
        self.convs.append(GCNConv(d_in, hidden))
        self.convs.append(GCNConv(hidden, d_out))

    def forward(self, x, edge_index):
        for conv in self.convs[:-1]:
            x = F.relu(conv(x, edge_index))
        return self.convs[-1](x, edge_index)


model = GCN(data.num_features, 512, 40).to(device)
opt = torch.optim.Adam(model.parameters())
for epoch in range(500):
    loss = F.cross_entropy(model(data.x, data.edge_index), data.y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_graph_convolutions_are_matmul_layers(tmp_path: Path) -> None:
    """PyG's GCNConv is a Linear plus sparse aggregation, called through a loop
    variable `conv`: no cuDNN convolution (no EC506); a graph network, whose message
    passing is bound by gathers and scatters over the edges, so whether TF32 or autocast
    would gain is not known (unknown, naming the layers), however wide it is."""
    found = results(tmp_path, GNN_LAYERS)
    assert found["EC506"].status.value == "pass"
    for rule in ("EC507", "EC508"):
        assert found[rule].status.value == "unknown"
        assert "graph network (GCNConv)" in found[rule].reason


def test_dgl_graph_layers_are_matmul_layers(tmp_path: Path) -> None:
    source = GNN_LAYERS.replace(
        "from torch_geometric.nn import GCNConv", "import dgl.nn as dglnn"
    ).replace("GCNConv(", "dglnn.SAGEConv(")
    found = results(tmp_path, source.replace("hidden))", 'hidden, "mean"))'))
    assert found["EC506"].status.value == "pass"
    assert found["EC508"].status.value == "unknown"
    assert "graph network (SAGEConv)" in found["EC508"].reason


def test_a_narrow_multi_head_graph_attention_net_is_a_toy(tmp_path: Path) -> None:
    """DGL's GAT example: 8 units x 8 heads, the second layer's input width computed from
    the first's (`hid_size * heads[0]`): a toy on Cora."""
    source = GNN_LAYERS.replace("from torch_geometric.nn import GCNConv", "import dgl.nn as dglnn")
    source = source.replace("hidden, d_out):", "hidden, d_out, heads):")
    source = source.replace("GCNConv(d_in, hidden)", "dglnn.GATConv(d_in, hidden, heads[0])")
    source = source.replace(
        "GCNConv(hidden, d_out)", "dglnn.GATConv(hidden * heads[0], d_out, heads[1])"
    )
    source = source.replace("num_features, 512, 40)", "num_features, 8, 7, heads=[8, 1])")
    found = results(tmp_path, source)
    assert found["EC506"].status.value == "pass"
    assert found["EC507"].status.value == "pass"
    assert found["EC508"].status.value == "pass"


LOSS_FCN = """
import torch
import torch.nn as nn

device = torch.device("cuda")
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 10)).to(device)
loss_fcn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters())
for x, y in loader:
    loss = loss_fcn(model(x.to(device)), y.to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_variable_named_like_an_architecture_is_no_model(tmp_path: Path) -> None:
    """`loss_fcn = nn.CrossEntropyLoss()`: a variable holding a loss, not an FCN model;
    architecture words are read on constructors and classes (class 6)."""
    found = results(tmp_path, LOSS_FCN)
    assert found["EC506"].status.value == "pass"
    assert found["EC508"].status.value == "fail"


BF16_OPTION = """
import argparse
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--dt", type=str, default="float", help="data type(float, bfloat16)")
args = parser.parse_args()
device = torch.device("cuda")
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 10)).to(device)
if args.dt == "bfloat16":
    model = model.to(dtype=torch.bfloat16)
opt = torch.optim.Adam(model.parameters())
for x, y in loader:
    loss = F.cross_entropy(model(x.to(device)), y.to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_bfloat16_behind_a_string_option_is_offered_behind_a_flag(tmp_path: Path) -> None:
    """`--dt` defaults to "float"; `model.to(dtype=torch.bfloat16)` when it says
    "bfloat16": reduced precision behind an option off by default, as --amp is (class 7)."""
    found = results(tmp_path, BF16_OPTION)
    assert found["EC507"].status.value == "pass"
    assert "--dt bfloat16" in str(found["EC507"].reason)
    assert found["EC508"].status.value == "fail"
    assert "unless --dt bfloat16 is passed" in found["EC508"].findings[0].message


def test_bfloat16_by_a_string_option_on_by_default_is_reduced_precision(tmp_path: Path) -> None:
    found = results(tmp_path, BF16_OPTION.replace('default="float"', 'default="bfloat16"'))
    assert found["EC507"].status.value == "pass"
    assert found["EC508"].status.value == "pass"


ACRONYM_CNN = """
import torch
import torch.nn as nn
from model import DGCNN

device = torch.device("cuda")
model = nn.DataParallel(DGCNN(args).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for epoch in range(250):
    for data, label in train_loader:
        loss = torch.nn.functional.cross_entropy(model(data.to(device)), label.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_an_acronym_model_name_ending_in_cnn_is_convolutional(tmp_path: Path) -> None:
    """`DGCNN` (all capitals, no word boundary before CNN) is convolutional as
    `TextCNN` is (class 17)."""
    found = results(tmp_path, ACRONYM_CNN)
    assert found["EC506"].status.value == "fail"


GCN_OUT_OF_SIGHT = """
import argparse
import torch
import torch.nn.functional as F
from pygcn.models import GCN

parser = argparse.ArgumentParser()
parser.add_argument("--hidden", type=int, default=16)
args = parser.parse_args()
model = GCN(nfeat=features.shape[1], nhid=args.hidden, nclass=n_classes).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(200):
    optimizer.zero_grad()
    loss = F.nll_loss(model(features.cuda(), adj.cuda()), labels.cuda())
    loss.backward()
    optimizer.step()
"""


def test_a_graph_network_out_of_sight_given_a_small_hidden_width_is_a_toy(
    tmp_path: Path,
) -> None:
    """pygcn: `GCN(nfeat=..., nhid=args.hidden)` with --hidden defaulting to 16, built in
    another file: a whole graph network of 16 hidden units, a toy (class 2)."""
    found = results(tmp_path, GCN_OUT_OF_SIGHT)
    assert found["EC506"].status.value == "pass"
    assert found["EC507"].status.value == "pass"
    assert found["EC508"].status.value == "pass"


def test_a_graph_network_out_of_sight_given_a_wide_hidden_width_is_judged(
    tmp_path: Path,
) -> None:
    """`GCN(nhid=256)` built out of sight: a graph network however wide (unknown)."""
    found = results(tmp_path, GCN_OUT_OF_SIGHT.replace("default=16", "default=256"))
    assert found["EC507"].status.value == "unknown"
    assert found["EC508"].status.value == "unknown"
    assert "graph network (GCN)" in found["EC508"].reason


def test_model_names_read_acronyms_as_words() -> None:
    """Acronyms read as whole words: DGCNN is a CNN, GraphSAGE a graph network; a graph
    data set, gin's config writer or a `gate` are no model."""
    from envcheck.scripts.model_names import architecture

    assert architecture("DGCNN") == "conv"
    assert architecture("GraphSAGE") == "matmul"
    assert architecture("GCN") == "matmul"
    assert architecture("GINDataset") is None
    assert architecture("write_gin_config") is None
    assert architecture("gather_nodes") is None
    assert architecture("GATE") is None


FSDP2_POLICY = """
import argparse
import torch
from torch import nn
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

parser = argparse.ArgumentParser()
parser.add_argument("--mixed-precision", action="store_true")
args = parser.parse_args()
torch.distributed.init_process_group("nccl")
device = torch.device("cuda", torch.distributed.get_rank())
model = nn.Sequential(*[nn.Linear(4096, 4096) for _ in range(8)]).to(device)
fsdp_kwargs = {}
if args.mixed_precision:
    fsdp_kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16)
fully_shard(model, **fsdp_kwargs)
optim = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(1000):
    loss = model(torch.randn(64, 4096, device=device)).sum()
    loss.backward()
    optim.step()
    optim.zero_grad()
"""


def test_an_fsdp2_policy_behind_a_flag_is_mixed_precision_off_by_default(
    tmp_path: Path,
) -> None:
    """FSDP2's `fully_shard(mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))`
    behind --mixed-precision (pytorch/examples' FSDP2 example): mixed precision the run
    turns on, off by default (sweep-examples class 3)."""
    found = results(tmp_path, FSDP2_POLICY)
    assert found["EC507"].status.value == "pass"
    assert "unless --mixed-precision is passed" in found["EC507"].reason
    assert "unless --mixed-precision is passed" in found["EC508"].findings[0].message


FSDP1_POLICY = """
import torch
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision

torch.distributed.init_process_group("nccl")
device = torch.device("cuda", torch.distributed.get_rank())
bf16 = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
model = FSDP(nn.Sequential(*[nn.Linear(4096, 4096) for _ in range(8)]), mixed_precision=bf16,
             device_id=device)
optim = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(1000):
    loss = model(torch.randn(64, 4096, device=device)).sum()
    loss.backward()
    optim.step()
    optim.zero_grad()
"""


def test_an_fsdp1_bfloat16_policy_is_mixed_precision(tmp_path: Path) -> None:
    """FSDP1's `MixedPrecision(param_dtype=torch.bfloat16)`: the matmuls run in bf16."""
    found = results(tmp_path, FSDP1_POLICY)
    assert found["EC507"].status.value == "pass"
    assert found["EC508"].status.value == "pass"


def test_an_fsdp_policy_in_float32_is_no_mixed_precision(tmp_path: Path) -> None:
    source = FSDP1_POLICY.replace("param_dtype=torch.bfloat16", "param_dtype=torch.float32")
    found = results(tmp_path, source)
    assert found["EC507"].status.value == "fail"


TRANSFER_LEARNING = """
import torch
import torch.nn.functional as F
from torch import nn
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.utilities.model_helpers import get_torchvision_model


class TransferLearningModel(LightningModule):
    def __init__(self, backbone: str = "resnet50"):
        super().__init__()
        net = get_torchvision_model(backbone, weights="DEFAULT")
        self.feature_extractor = nn.Sequential(*list(net.children())[:-1])
        self.fc = nn.Linear(2048, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.fc(self.feature_extractor(x).flatten(1))
        return F.binary_cross_entropy_with_logits(logits, y.view(-1, 1).float())

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


Trainer(max_epochs=15).fit(TransferLearningModel(), loader)
"""


def test_a_backbone_built_by_name_is_a_torchvision_model(tmp_path: Path) -> None:
    """Lightning's `get_torchvision_model(backbone)` with `backbone` defaulting to
    "resnet50": a convolutional torchvision model; cut into `nn.Sequential(*list(
    net.children())[:-1])` under a 2048x1 head it is still a ResNet-50, no small model
    (sweep-examples class 10)."""
    found = results(tmp_path, TRANSFER_LEARNING)
    assert found["EC506"].status.value == "fail"
    assert found["EC507"].status.value == "fail"


def test_a_backbone_picked_from_torchvision_models_by_getattr_is_convolutional(
    tmp_path: Path,
) -> None:
    source = TRANSFER_LEARNING.replace(
        "get_torchvision_model(backbone, weights=", "getattr(torchvision.models, backbone)(weights="
    ).replace("import torch\n", "import torch\nimport torchvision\n", 1)
    found = results(tmp_path, source)
    assert found["EC506"].status.value == "fail"
    assert found["EC507"].status.value == "fail"


def test_a_vision_transformer_built_by_name_is_not_convolutional(tmp_path: Path) -> None:
    found = results(tmp_path, TRANSFER_LEARNING.replace('"resnet50"', '"vit_b_16"'))
    assert found["EC506"].status.value == "pass"


LIGHTNING_CLI_IN_FUNCTION = """
import torch
import torch.nn.functional as F
from torch import nn
from lightning.pytorch import LightningModule
from lightning.pytorch.cli import LightningCLI


class Model(LightningModule):
    def __init__(self, width: int = 256):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, width, 3), nn.ReLU(), nn.Conv2d(width, width, 3),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class MyLightningCLI(LightningCLI):
    def add_arguments_to_parser(self, parser):
        parser.set_defaults({"trainer.max_epochs": 15})


def cli_main():
    MyLightningCLI(Model, seed_everything_default=1234)


if __name__ == "__main__":
    cli_main()
"""


def test_a_lightning_cli_called_in_a_function_is_the_run_trainer(tmp_path: Path) -> None:
    """`MyLightningCLI(Model)` (a LightningCLI subclass) inside `def cli_main()` that the
    main guard calls runs `fit` with the Trainer's 32-true default, as a LightningCLI at
    module level does (sweep-examples class 10)."""
    found = results(tmp_path, LIGHTNING_CLI_IN_FUNCTION)
    assert found["EC507"].status.value == "fail"
    assert found["EC506"].status.value == "fail"


def test_a_lightning_cli_trainer_benchmark_default_is_cudnn_autotuning(tmp_path: Path) -> None:
    """`LightningCLI(..., trainer_defaults={"benchmark": True})`: Lightning sets
    torch.backends.cudnn.benchmark to its Trainer's setting."""
    source = LIGHTNING_CLI_IN_FUNCTION.replace(
        "seed_everything_default=1234", 'trainer_defaults={"benchmark": True}'
    )
    found = results(tmp_path, source)
    assert found["EC506"].status.value == "pass"


LINEAR_SUBCLASS = """
import torch
from torch import nn
from torch.optim import Adam


class Layer(nn.Linear):
    def __init__(self, n_in, n_out):
        super().__init__(n_in, n_out)
        self.opt = Adam(self.parameters(), lr=0.03)

    def forward(self, x):
        x = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return torch.relu(torch.mm(x, self.weight.T) + self.bias.unsqueeze(0))


device = torch.device("cuda")
layers = [Layer(784, 2000).to(device), Layer(2000, 2000).to(device)]
h = torch.randn(50000, 784, device=device)
for layer in layers:
    for i in range(1000):
        loss = layer(h).pow(2).mean()
        layer.opt.zero_grad()
        loss.backward()
        layer.opt.step()
    h = layer(h).detach()
"""


def test_a_subclass_of_linear_is_a_dense_layer(tmp_path: Path) -> None:
    """`class Layer(nn.Linear)` (pytorch/examples' forward-forward MLP, 784-2000-2000 on
    50k rows): its `super().__init__(n_in, n_out)` builds an nn.Linear, so the model is
    in sight and matmul-bound (sweep-examples class 11)."""
    found = results(tmp_path, LINEAR_SUBCLASS)
    assert found["EC508"].status.value == "fail"
    assert "built out of this file" not in found["EC507"].findings[0].message


def test_a_subclass_of_a_convolution_is_a_convolution(tmp_path: Path) -> None:
    source = LINEAR_SUBCLASS.replace("nn.Linear", "nn.Conv2d")
    found = results(tmp_path, source)
    assert found["EC506"].status.value == "fail"
    assert found["EC508"].status.value == "pass"


GRAPH_CONV_NET = """
import torch
import torch.nn.functional as F
from torch import nn


class GraphConv(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(n_in, n_out))

    def forward(self, x, adj):
        return torch.spmm(adj, torch.mm(x, self.kernel))


class GraphConvNet(nn.Module):
    def __init__(self, n_in, hidden, n_out):
        super().__init__()
        self.gc1 = GraphConv(n_in, hidden)
        self.gc2 = GraphConv(hidden, n_out)

    def forward(self, x, adj):
        return self.gc2(torch.relu(self.gc1(x, adj)), adj)


device = torch.device("cuda")
model = GraphConvNet(1433, 16, 7).to(device)
opt = torch.optim.Adam(model.parameters())
for epoch in range(200):
    opt.zero_grad()
    loss = F.cross_entropy(model(x.to(device), adj.to(device)), y.to(device))
    loss.backward()
    opt.step()
"""


def test_a_conv_named_class_of_the_file_is_judged_by_its_layers(tmp_path: Path) -> None:
    """`class GraphConvNet(nn.Module)` made of the file's own `GraphConv` (`torch.mm` and
    `torch.spmm`): no convolution in sight, whatever "Conv" in the names says
    (sweep-examples class 12)."""
    found = results(tmp_path, GRAPH_CONV_NET)
    assert found["EC506"].status.value != "fail"


TRANSFORMER_NET = """
import torch
from torch import nn


class ConvLayer(nn.Module):
    def __init__(self, c_in, c_out, kernel_size, stride):
        super().__init__()
        self.conv2d = nn.Conv2d(c_in, c_out, kernel_size, stride, kernel_size // 2)

    def forward(self, x):
        return self.conv2d(x)


class TransformerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = ConvLayer(3, 32, kernel_size=9, stride=1)
        self.conv2 = ConvLayer(32, 64, kernel_size=3, stride=2)
        self.conv3 = ConvLayer(64, 3, kernel_size=9, stride=1)

    def forward(self, x):
        return self.conv3(torch.relu(self.conv2(torch.relu(self.conv1(x)))))


torch.backends.cudnn.benchmark = True
device = torch.device("cuda")
model = TransformerNet().to(device)
opt = torch.optim.Adam(model.parameters())
for step in range(1000):
    x = torch.randn(4, 3, 256, 256, device=device)
    loss = nn.functional.mse_loss(model(x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_transformer_in_a_class_name_does_not_beat_its_convolutions(tmp_path: Path) -> None:
    """fast_neural_style's `TransformerNet` (an image transformation network) built from
    the file's own conv blocks: convolutional, no transformer (sweep-examples class 13)."""
    found = results(tmp_path, TRANSFORMER_NET)
    assert found["EC507"].status.value == "fail"
    assert found["EC508"].status.value == "pass"


ACCELERATOR_BRANCHING = """
import torch
from accelerate import Accelerator
from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding

accelerator = Accelerator()
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
fp8 = accelerator.mixed_precision == "fp8"
pad_to = 16 if fp8 else (8 if accelerator.mixed_precision != "no" else None)
collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_to)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for epoch in range(3):
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def test_accelerator_whose_precision_the_script_branches_on_is_the_launchers(
    tmp_path: Path,
) -> None:
    """transformers' run_glue_no_trainer: `Accelerator()` and `pad_to_multiple_of` chosen
    on `accelerator.mixed_precision`: the script is written for the precision `accelerate
    launch` or the accelerate config gives, so EC507 cannot tell (sweep-examples class
    14); the default run is still float32 for EC508."""
    found = results(tmp_path, ACCELERATOR_BRANCHING)
    assert found["EC507"].status.value == "unknown"
    assert "accelerate launch --mixed_precision" in found["EC507"].reason
    assert found["EC508"].status.value == "fail"


def test_accelerator_whose_precision_the_script_only_reports_is_float32(tmp_path: Path) -> None:
    source = ACCELERATOR_BRANCHING.replace(
        'fp8 = accelerator.mixed_precision == "fp8"\n', ""
    ).replace(
        'pad_to = 16 if fp8 else (8 if accelerator.mixed_precision != "no" else None)',
        'config = {"mixed_precision": accelerator.mixed_precision}',
    )
    assert "pad_to = 16" not in source
    found = results(tmp_path, source)
    assert found["EC507"].status.value == "fail"


TRANSLATOR_OUT_OF_SIGHT = """
import torch
from src.model import Translator

device = torch.device("cuda")
model = Translator(
    num_encoder_layers=5, num_decoder_layers=5, embed_size=512, num_heads=8,
    src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), dim_feedforward=512,
).to(device)
optim = torch.optim.Adam(model.parameters(), lr=1e-4)
for epoch in range(30):
    for src, tgt in train_dl:
        logits = model(src.to(device), tgt.to(device))
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten().to(device))
        optim.zero_grad()
        loss.backward()
        optim.step()
"""


def test_a_model_out_of_sight_given_attention_heads_is_a_transformer(tmp_path: Path) -> None:
    """pytorch/examples' `Translator(num_encoder_layers=5, num_heads=8, ...)` from the
    project's src.model: a model named for nothing, given attention heads, is a
    transformer (sweep-examples class 15)."""
    found = results(tmp_path, TRANSLATOR_OUT_OF_SIGHT)
    assert found["EC508"].status.value == "fail"
    assert "built out of this file" not in found["EC507"].findings[0].message


def test_attention_heads_passed_positionally_as_an_option_so_named(tmp_path: Path) -> None:
    """Informer's `model_dict[args.model](7, 7, 7, ..., args.d_model, args.n_heads)`: the
    option's name says attention heads, in whatever position."""
    source = TRANSLATOR_OUT_OF_SIGHT.replace(
        "model = Translator(\n    num_encoder_layers=5, num_decoder_layers=5, embed_size=512, "
        "num_heads=8,\n    src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), "
        "dim_feedforward=512,\n)",
        "model = Translator(7, 7, 96, args.d_model, args.n_heads)",
    )
    assert "args.n_heads" in source
    assert results(tmp_path, source)["EC508"].status.value == "fail"
    other = source.replace("args.n_heads", "args.n_layers")
    assert results(tmp_path, other)["EC508"].status.value != "fail"
    # to a method, an option so named is only formatted (SASRec's checkpoint name)
    formatted = other.replace(
        "optim = torch", "name = fname.format(epoch, args.num_heads)\noptim = torch"
    )
    assert results(tmp_path, formatted)["EC508"].status.value != "fail"


ASPECT_RATIO_DETECTOR = """
import torch
import torchvision
from torch.utils.data import DataLoader

dataset = torchvision.datasets.CocoDetection("coco/train2017", "coco/ann.json")
sampler = AspectRatioBasedSampler(dataset, batch_size=2, drop_last=False)
loader = DataLoader(dataset, num_workers=1, batch_sampler=sampler, pin_memory=True,
                    persistent_workers=True)
net = torchvision.models.detection.retinanet_resnet50_fpn(num_classes=80).cuda()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-5)
for epoch in range(100):
    for images, targets in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = sum(net(images.cuda(), targets).values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_images_batched_by_aspect_ratio_change_the_input_size(tmp_path: Path) -> None:
    """pytorch-retinanet's AspectRatioBasedSampler (torchvision's GroupedBatchSampler):
    each batch at its own shape, so cuDNN autotuning would re-run (no EC506)."""
    found = results(tmp_path, ASPECT_RATIO_DETECTOR)
    assert found["EC506"].status.value == "pass"
    assert "batched by aspect ratio" in found["EC506"].reason
    fixed = ASPECT_RATIO_DETECTOR.replace("AspectRatioBasedSampler", "BatchSampler")
    assert results(tmp_path, fixed)["EC506"].status.value == "fail"


def test_a_lightning_cli_trainer_precision_default_is_mixed_precision(tmp_path: Path) -> None:
    source = LIGHTNING_CLI_IN_FUNCTION.replace(
        "seed_everything_default=1234", 'trainer_defaults={"precision": "bf16-mixed"}'
    )
    found = results(tmp_path, source)
    assert found["EC507"].status.value == "pass"


# -- `cudnn.benchmark, cudnn.deterministic = True, False` sets benchmark ---------------------

TUPLE_BENCHMARK = """
import torch
import torch.backends.cudnn as cudnn
import torchvision


def init_seeds(seed=0):
    torch.manual_seed(seed)
    SETTING


if __name__ == "__main__":
    init_seeds(2)
    model = torchvision.models.resnet50().to("cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x.to("cuda")), y.to("cuda"))
        loss.backward()
        optimizer.step()
"""


def test_tuple_assignment_sets_cudnn_benchmark(tmp_path: Path) -> None:
    # the yolov5/yolov7 idiom, plain and chosen by the seed; written False it stays EC506
    for setting, found in [
        ("cudnn.benchmark, cudnn.deterministic = True, False", 0),
        ("cudnn.benchmark, cudnn.deterministic = (True, False) if seed else (False, True)", 0),
        ("cudnn.deterministic, cudnn.benchmark = True, False", 1),
    ]:
        source = TUPLE_BENCHMARK.replace("SETTING", setting)
        assert len(results(tmp_path, source)["EC506"].findings) == found, setting


def test_a_graph_network_named_cnn_is_no_convolution(tmp_path: Path) -> None:
    """GIN's powerful-gnns `GraphCNN(5, 2, 7, args.hidden_dim, ...)`: a graph network
    (MLPs over neighbours) despite "CNN", no cuDNN convolution (EC506), and a toy at
    --hidden_dim 64 passed positionally (EC507); `DGCNN` keeps its Conv2d reading."""
    source = (
        "import argparse\nimport torch\nfrom models.graphcnn import GraphCNN\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--hidden_dim', type=int, default=64)\n"
        "args = parser.parse_args()\n"
        "model = GraphCNN(5, 2, 7, args.hidden_dim, 2, 0.5).to('cuda')\n"
        "opt = torch.optim.Adam(model.parameters())\n"
        "for epoch in range(350):\n"
        "    for graphs, labels in batches:\n"
        "        loss = torch.nn.functional.cross_entropy(model(graphs), labels.cuda())\n"
        "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
    )
    found = results(tmp_path, source)
    assert found["EC506"].status.value != "fail"
    assert found["EC507"].status.value == "pass"
    wide = source.replace("default=64", "default=1024")
    assert results(tmp_path, wide)["EC507"].status.value == "fail"


def test_a_pretrained_class_names_its_kind(tmp_path: Path) -> None:
    """`ResNetForImageClassification.from_pretrained(...)` (Hugging Face), diffusers'
    `UNet2DConditionModel.from_pretrained(...)`: convolutional by their class (EC506);
    `BertForMaskedLM.from_pretrained(...)` is not."""
    source = (
        "import torch\nfrom transformers import ResNetForImageClassification\n"
        "model = ResNetForImageClassification.from_pretrained('microsoft/resnet-50').cuda()\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "for epoch in range(10):\n"
        "    for x, y in loader:\n"
        "        with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "            loss = model(pixel_values=x.cuda(), labels=y.cuda()).loss\n"
        "        loss.backward()\n        opt.step()\n        opt.zero_grad()\n"
    )
    assert results(tmp_path, source)["EC506"].status.value == "fail"
    unet = source.replace(
        "from transformers import ResNetForImageClassification",
        "from diffusers import UNet2DConditionModel",
    )
    unet = unet.replace("ResNetForImageClassification.", "UNet2DConditionModel.")
    assert results(tmp_path, unet)["EC506"].status.value == "fail"
    bert = source.replace("ResNetForImageClassification", "BertForMaskedLM")
    assert results(tmp_path, bert)["EC506"].status.value != "fail"


FABRIC_PRECISION_REASSIGNED = """
import torch
import lightning as L
from litgpt import GPT
from litgpt.utils import get_default_supported_precision


def setup(precision=None, quantize=None):
    precision = precision or get_default_supported_precision(training=True)
    if quantize is not None:
        precision = None
    fabric = L.Fabric(devices=1, precision=precision)
    fabric.launch(main)


def main(fabric):
    model = fabric.setup(GPT())
    optimizer = fabric.setup_optimizers(torch.optim.AdamW(model.parameters()))
    for batch in fabric.setup_dataloaders(loader):
        loss = model(batch)
        fabric.backward(loss)
        optimizer.step()
"""


def test_a_parameter_the_function_reassigns_is_not_its_default(tmp_path: Path) -> None:
    """litgpt: `precision=None` in the signature, then `precision = precision or
    get_default_supported_precision()` (bf16-mixed on an A100) and `precision = None`
    under a test. What reaches Fabric is not the signature's None: unknown, not a
    float32 finding."""
    found = results(tmp_path, FABRIC_PRECISION_REASSIGNED)
    assert found["EC507"].status.value == "unknown"
    plain = FABRIC_PRECISION_REASSIGNED.replace(
        "    precision = precision or get_default_supported_precision(training=True)\n"
        "    if quantize is not None:\n        precision = None\n",
        "",
    )
    assert results(tmp_path, plain)["EC507"].status.value == "fail"


DT_WRAPPED = """
import torch
from torchrl.envs.libs.gym import set_gym_backend
from torchrl.modules.tensordict_module import DecisionTransformerInferenceWrapper
from utils import make_dt_model, make_offline_replay_buffer

device = torch.device("cuda")
buffer = make_offline_replay_buffer()
actor = make_dt_model(device=device)
optim = torch.optim.Adam(actor.parameters())
policy = DecisionTransformerInferenceWrapper(policy=actor, inference_context=5)
for i in range(1000):
    data = buffer.sample().to(device)
    loss = actor(data).sum()
    optim.zero_grad()
    loss.backward()
    optim.step()
"""


def test_a_wrapper_around_a_model_built_elsewhere_names_no_model(tmp_path: Path) -> None:
    """`DecisionTransformerInferenceWrapper(policy=actor)` wraps a policy built out of sight
    (`make_dt_model()`): the wrapper's name says nothing of the size of the model, so an RL
    agent's precision verdicts are unknown, not a float32 transformer's findings."""
    found = results(tmp_path, DT_WRAPPED)
    assert found["EC507"].status.value == "unknown"
    assert found["EC508"].status.value == "unknown"


PPO_ROLLOUTS = """
import gym
import torch
from torch import nn

envs = gym.vector.SyncVectorEnv([lambda: gym.make("BreakoutNoFrameskip-v4")] * 8)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
agent = nn.Sequential(
    nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
    nn.Flatten(), nn.Linear(64 * 9 * 9, 512), nn.ReLU(), nn.Linear(512, 4),
).to(device)
optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4)
obs = torch.zeros((128, 8, 4, 84, 84)).to(device)
next_obs = torch.Tensor(envs.reset()).to(device)
for update in range(1000):
    for step in range(128):
        obs[step] = next_obs
        with torch.no_grad():
            action = agent(next_obs).argmax(1)
        next_obs, reward, done, info = envs.step(action.cpu().numpy())
        next_obs = torch.Tensor(next_obs).to(device)
    loss = agent(obs.flatten(0, 1)).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_an_agent_stepping_its_environment_in_the_training_loop_is_not_known(
    tmp_path: Path,
) -> None:
    """PPO's rollouts: `envs.step(action)` on the CPU in the loop of every update; the run
    waits for the simulator, and the agent's network is small: whether autocast would
    speed it up is not known, whatever network is in sight."""
    found = results(tmp_path, PPO_ROLLOUTS)
    assert found["EC507"].status.value == "unknown"
    assert "steps its environment (envs.step(...) at line" in str(found["EC507"].reason)


def test_an_agent_stepping_no_environment_in_its_update_loop_is_judged(tmp_path: Path) -> None:
    """An agent whose update loop steps no environment (an offline data set) trains its
    convolutional network in float32: the finding stands."""
    source = PPO_ROLLOUTS.replace(
        "next_obs, reward, done, info = envs.step(action.cpu().numpy())",
        "next_obs = replay[step]",
    )
    found = results(tmp_path, source)
    assert found["EC507"].status.value == "fail"


MODEL_BUILT_IN_CONFIG_DTYPE = """
import torch
from nanotron.models import build_model


class Trainer:
    def __init__(self, config):
        self.config = config
        self.model = build_model(model_builder=self.builder, dtype=config.model.dtype)
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def train(self, loader):
        for batch in loader:
            loss = self.model(**{k: v.cuda() for k, v in batch.items()}).loss
            loss.backward()
            self.optimizer.step()
"""


def test_a_model_built_in_a_config_dtype_sets_its_precision_out_of_sight(
    tmp_path: Path,
) -> None:
    """`build_model(..., dtype=config.model.dtype)`: the parameters are made in the run
    config's dtype (bfloat16 in the recipes): precision is a setting, not absent."""
    found = results(tmp_path, MODEL_BUILT_IN_CONFIG_DTYPE)
    assert found["EC507"].status.value == "unknown"
    assert "config.model.dtype" in str(found["EC507"].reason)
    source = MODEL_BUILT_IN_CONFIG_DTYPE.replace("config.model.dtype", "torch.bfloat16")
    assert results(tmp_path, source)["EC507"].status.value == "pass"


GRAPH_TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model.cuda()
        self.optimizer = optimizer

    def train(self, loader):
        for graphs, targets in loader:
            graphs = [g.to("cuda") for g in graphs]
            prediction = self.model(graphs, task="ef")
            loss = torch.nn.functional.mse_loss(prediction, targets.cuda())
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""


def test_a_model_out_of_sight_fed_graphs_is_not_known(tmp_path: Path) -> None:
    """A trainer handed its model, which it feeds batches of graphs (`self.model(graphs,
    ...)`, or a file on a graph library: `from torchdrug import data`): message passing
    is gather/scatter-bound and such networks are often narrow, so whether autocast
    would gain is not known; the same trainer fed images is judged."""
    found = results(tmp_path, GRAPH_TRAINER)
    assert found["EC507"].status.value == "unknown"
    assert "fed graphs (self.model(graphs, ...) at line" in str(found["EC507"].reason)
    source = "from torchdrug import data\n" + GRAPH_TRAINER.replace("graphs", "images")
    assert results(tmp_path, source)["EC507"].status.value == "unknown"
    images = GRAPH_TRAINER.replace("graphs", "images")
    assert results(tmp_path, images)["EC507"].status.value == "fail"


DIFFUSION_RUNNER = """
import torch
from models.diffusion import Model


class Diffusion:
    def __init__(self, config):
        self.config = config
        self.device = torch.device("cuda")

    def train(self, loader):
        model = Model(self.config).to(self.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
        for epoch in range(100):
            for x, y in loader:
                loss = model(x.to(self.device)).square().mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""


def test_a_model_class_from_a_diffusion_module_is_convolutional(tmp_path: Path) -> None:
    """DDIM's `from models.diffusion import Model`: the noise predictor of an image
    diffusion model is a UNet of convolutions, so cuDNN autotuning applies (EC506) and
    TF32 is cuDNN's already (no EC508); a class that names its own kind
    (`DiffusionTransformer`) is that kind."""
    found = results(tmp_path, DIFFUSION_RUNNER)
    assert found["EC506"].status.value == "fail"
    assert found["EC508"].status.value == "pass"
    source = DIFFUSION_RUNNER.replace("Model", "DiffusionTransformerModel")
    found = results(tmp_path, source)
    assert found["EC506"].status.value == "pass"
    assert found["EC508"].status.value == "fail"


YOLO_LOADED = """
import argparse
import torch
from pytorchyolo.models import load_model

parser = argparse.ArgumentParser()
parser.add_argument("-m", "--model", type=str, default="config/yolov3.cfg")
args = parser.parse_args()
model = load_model(args.model)
optimizer = torch.optim.Adam(model.parameters())
for epoch in range(300):
    for imgs, targets in loader:
        loss = model(imgs.to("cuda")).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_model_loaded_from_a_definition_named_for_its_architecture(tmp_path: Path) -> None:
    """PyTorch-YOLOv3's `load_model(args.model)` with --model defaulting to
    `config/yolov3.cfg`: the definition's name says the architecture (a Darknet of
    convolutions), as timm's `create_model("resnet50")` does; a definition whose name
    says nothing (`config/model.cfg`) leaves the kind unknown, and a function that
    saves a model (`save_model`) builds none."""
    found = results(tmp_path, YOLO_LOADED)
    assert found["EC506"].status.value == "fail"
    source = YOLO_LOADED.replace("yolov3.cfg", "model.cfg")
    assert results(tmp_path, source)["EC506"].status.value == "unknown"
    source = YOLO_LOADED.replace("model = load_model(args.model)", "save_model(args.model)")
    assert results(tmp_path, source)["EC506"].status.value != "fail"


MODULE_BY_NAME = """
import argparse
import importlib
import torch

def main(args):
    MODEL = importlib.import_module(args.model)
    classifier = MODEL.get_model(40).cuda()
    criterion = MODEL.get_loss().cuda()
    optimizer = torch.optim.Adam(classifier.parameters())
    for epoch in range(200):
        for points, target in loader:
            loss = criterion(classifier(points.cuda()), target.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="pointnet_cls")
    main(parser.parse_args())
"""


def test_a_model_made_by_a_module_imported_by_its_architecture_name(tmp_path: Path) -> None:
    """Pointnet_Pointnet2's `MODEL = importlib.import_module(args.model)` then
    `MODEL.get_model(num_class)`, --model defaulting to "pointnet_cls": the module the
    option names says the architecture (PointNet: 1x1 convolutions); a module whose name
    says nothing (`my_model`) leaves the kind unknown."""
    found = results(tmp_path, MODULE_BY_NAME)
    assert found["EC506"].status.value == "fail"
    source = MODULE_BY_NAME.replace("pointnet_cls", "my_model")
    assert results(tmp_path, source)["EC506"].status.value == "unknown"


HF_COMMAND_LINE = """
from dataclasses import dataclass, field
import transformers
from transformers import Trainer


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    model_max_length: int = field(default=512)


def train():
    parser = transformers.HfArgumentParser((TrainingArguments,))
    (training_args,) = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained("facebook/opt-125m")
    trainer = Trainer(model=model, args=training_args, train_dataset=dataset)
    trainer.train()


if __name__ == "__main__":
    train()
"""


def test_hf_arguments_from_the_command_line_offer_tf32(tmp_path: Path) -> None:
    """TrainingArguments parsed by HfArgumentParser: `--tf32` is an option of the run, as
    `--bf16` is for EC507; EC508 passes and says TF32 is off unless it is passed."""
    found = results(tmp_path, HF_COMMAND_LINE)
    assert found["EC508"].status.value == "pass"
    assert "off unless --tf32 is passed" in found["EC508"].reason


TF32_FLAG = """
import argparse
import torch
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--allow_tf32", action="store_true")
args = parser.parse_args()
torch.backends.cuda.matmul.allow_tf32 = args.allow_tf32
model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
opt = torch.optim.AdamW(model.parameters())
for batch in loader:
    loss = model(**batch).loss
    loss.backward()
    opt.step()
"""


def test_tf32_behind_a_flag_off_by_default_is_a_run_setting(tmp_path: Path) -> None:
    """`allow_tf32 = args.allow_tf32` with a store_true flag: the script offers TF32."""
    found = results(tmp_path, TF32_FLAG)
    assert found["EC508"].status.value == "pass"
    assert "off unless --allow_tf32 is passed" in found["EC508"].reason
    found = results(tmp_path, TF32_FLAG.replace("args.allow_tf32\n", "False\n"))
    assert found["EC508"].status.value == "fail"


MODEL_REGISTRY = """
import argparse
import torch
from segment_anything import sam_model_registry

parser = argparse.ArgumentParser()
parser.add_argument("-model_type", type=str, default="vit_b")
args = parser.parse_args()
sam_model = sam_model_registry[args.model_type](checkpoint="sam_vit_b.pth").cuda()
optimizer = torch.optim.AdamW(sam_model.parameters())
for image, mask in loader:
    loss = sam_model(image.cuda()).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_model_picked_from_a_registry_by_an_architecture_name(tmp_path: Path) -> None:
    """segment-anything's `sam_model_registry[args.model_type](...)`, --model_type
    defaulting to "vit_b": the key names the architecture (a ViT, matmul-bound), as
    `modeling.__dict__[opts.model]` does; a key that names none leaves the kind unknown."""
    found = results(tmp_path, MODEL_REGISTRY)
    assert found["EC508"].status.value == "fail"
    source = MODEL_REGISTRY.replace('default="vit_b"', 'default="default"')
    assert results(tmp_path, source)["EC508"].status.value == "unknown"


CTR_BASE_MODEL = """
import torch
import torch.nn as nn


class BaseModel(nn.Module):
    def __init__(self, feature_map, embedding_initializer=None):
        super().__init__()
        self._feature_map = feature_map

    def reset_parameters(self):
        def reset_param(m):
            if type(m) == nn.ModuleDict:
                for k, v in m.items():
                    if type(v) == nn.Embedding:
                        if "pretrained_emb" in self._feature_map.feature_specs[k]:
                            continue
                        nn.init.normal_(v.weight, std=1e-4)
        self.apply(reset_param)

    def train_one_epoch(self, data_generator):
        self.to("cuda")
        for batch_data in data_generator:
            self.optimizer.zero_grad()
            loss = self.get_total_loss(batch_data)
            loss.backward()
            self.optimizer.step()
"""


def test_a_base_model_keying_embedding_tables_by_input_features_is_small(tmp_path: Path) -> None:
    """FuxiCTR's BaseModel (deepctr-torch's alike, `create_embedding_matrix(
    feature_columns)`): its subclasses, out of sight, look up one embedding table per
    categorical feature, then a few narrow layers; embedding lookups are gathers bound by
    memory, so EC507 passes and says why. A base model with no embedding tables keyed by
    features is still flagged (the gain depends on the model out of sight)."""
    found = results(tmp_path, CTR_BASE_MODEL)
    assert found["EC507"].status.value == "pass"
    assert "embedding tables keyed by its input features" in found["EC507"].reason
    source = CTR_BASE_MODEL.replace("self._feature_map.feature_specs[k]", "k")
    assert results(tmp_path, source)["EC507"].status.value == "fail"


LIGHTNING_ARGPARSE = """
import argparse
import torch
from omegaconf import OmegaConf
from pytorch_lightning import Trainer
from mymodels import VQModel

parser = argparse.ArgumentParser()
parser = Trainer.add_argparse_args(parser)
opt = parser.parse_args()
config = OmegaConf.load(opt.base)
trainer_config = config.lightning.get("trainer", OmegaConf.create())
trainer_opt = argparse.Namespace(**trainer_config)
model = VQModel(embed_dim=256)
trainer = Trainer.from_argparse_args({namespace})
trainer.fit(model, loader)
"""


def test_a_lightning_trainer_from_a_settings_namespace_sets_its_precision_outside(
    tmp_path: Path,
) -> None:
    """taming-transformers: `Trainer.from_argparse_args(argparse.Namespace(
    **trainer_config))` with the settings merged from its YAML config: the precision is
    the config's, out of sight, as for `Trainer(**settings)`: EC507 is unknown. The
    parsed options themselves keep `--precision` at its default 32 (lightning-bolts'
    examples): float32, as for `Trainer()`; a precision keyword decides it."""
    found = results(tmp_path, LIGHTNING_ARGPARSE.format(namespace="trainer_opt"))
    assert found["EC507"].status.value == "unknown"
    assert "Trainer(**trainer_config)" in found["EC507"].reason
    parsed = results(tmp_path, LIGHTNING_ARGPARSE.format(namespace="opt"))
    assert parsed["EC507"].status.value == "fail"
    mixed = LIGHTNING_ARGPARSE.format(namespace='trainer_opt, precision="16-mixed"')
    assert results(tmp_path, mixed)["EC507"].status.value == "pass"


LIGHTNING_HYDRA = """
import hydra
from lightning import LightningDataModule, LightningModule, Trainer
from omegaconf import DictConfig

@hydra.main(version_base="1.3", config_path="../configs", config_name="train.yaml")
def main(cfg: DictConfig) -> None:
    datamodule: LightningDataModule = hydra.utils.instantiate(cfg.data)
    model: LightningModule = hydra.utils.instantiate(cfg.model)
    trainer: Trainer = hydra.utils.instantiate(cfg.trainer, callbacks=[])
    trainer.{method}(model=model, datamodule=datamodule)

if __name__ == "__main__":
    main()
"""


def test_a_lightning_trainer_from_a_hydra_config_sets_its_precision_outside(
    tmp_path: Path,
) -> None:
    """lightning-hydra-template: `trainer = hydra.utils.instantiate(cfg.trainer)` then
    `trainer.fit(...)`: every Trainer setting is in YAML the source does not show, as for
    `Trainer(**settings)`: EC507 is unknown. A config object that is never fitted says
    nothing of the precision."""
    found = results(tmp_path, LIGHTNING_HYDRA.format(method="fit"))
    assert found["EC507"].status.value == "unknown"
    assert "Hydra config" in found["EC507"].reason
    tested = results(tmp_path, LIGHTNING_HYDRA.format(method="test"))
    assert "Hydra config" not in tested["EC507"].reason


def test_a_graph_network_with_a_transformer_beside_it_is_matmul_bound(tmp_path: Path) -> None:
    """Message passing beside a transformer encoder (a graph transformer): the attention
    matmuls dominate, so the float32 finding stands."""
    source = GNN_LAYERS.replace(
        "from torch_geometric.nn import GCNConv",
        "from torch_geometric.nn import GCNConv\nENC = torch.nn.TransformerEncoderLayer(512, 8)",
    )
    found = results(tmp_path, source)
    assert found["EC508"].status.value == "fail"


QUANTIZED_LORA = """
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainer, Seq2SeqTrainingArguments

model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-xxl", load_in_8bit=True)
model = get_peft_model(model, LoraConfig(r=16, target_modules=["q", "v"]))
args = Seq2SeqTrainingArguments(output_dir="out", per_device_train_batch_size=8)
trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=train_dataset)
trainer.train()
"""


def test_a_model_loaded_in_8bit_is_not_float32_training(tmp_path: Path) -> None:
    """A LoRA fine-tune of a base model loaded in 8-bit: its large matmuls are int8
    bitsandbytes kernels, so TrainingArguments without fp16/bf16 is no float32 training
    (sweep V, peft-flan-t5-int8)."""
    found = results(tmp_path, QUANTIZED_LORA)
    assert found["EC507"].status.value == "pass"
    assert "loaded quantized" in found["EC507"].reason
    assert found["EC508"].status.value == "pass"
    # not quantized: the same script trains in float32
    plain = results(tmp_path, QUANTIZED_LORA.replace(", load_in_8bit=True", ""))
    assert plain["EC507"].status.value == "fail"


def test_a_4bit_model_computing_in_a_dtype_not_shown_is_not_known(tmp_path: Path) -> None:
    source = QUANTIZED_LORA.replace("load_in_8bit=True", "quantization_config=bnb").replace(
        "model = AutoModel",
        "from transformers import BitsAndBytesConfig\nbnb = BitsAndBytesConfig(load_in_4bit=True)"
        "\nmodel = AutoModel",
    )
    found = results(tmp_path, source)
    assert found["EC507"].status.value == "unknown"
    assert found["EC508"].status.value == "unknown"
    half = source.replace(
        "load_in_4bit=True)", "load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)"
    )
    assert results(tmp_path, half)["EC507"].status.value == "pass"


WRAPPER_AUTOCAST = """
import argbind
import torch
from audiotools import ml

Accelerator = argbind.bind(ml.Accelerator, without_prefix=True)


def train(accel, model, opt, loader):
    for x in loader:
        with accel.autocast():
            loss = model(x.cuda()).mean()
        opt.zero_grad()
        accel.backward(loss)
        accel.step(opt)


if __name__ == "__main__":
    model = torch.nn.Conv2d(3, 64, 3).cuda()
    with Accelerator() as accel:
        train(accel, model, torch.optim.Adam(model.parameters()), [])
"""


def test_autocast_of_a_wrapper_built_from_the_run_s_config(tmp_path: Path) -> None:
    """descript-audio-codec: the step runs under `accel.autocast()` of audiotools'
    Accelerator (bound by argbind, its `amp=` set by the run's config): whether it casts
    is that construction's, out of sight, so EC507 stays unknown; with no autocast at
    all the float32 step is a finding."""
    assert results(tmp_path, WRAPPER_AUTOCAST)["EC507"].status.value == "unknown"
    plain = WRAPPER_AUTOCAST.replace("with accel.autocast():", "if True:")
    assert results(tmp_path, plain)["EC507"].status.value == "fail"


LAUNCHER_DEEPSPEED = """
import torch
from accelerate import Accelerator


class BaseTrainer:
    def __init__(self, config):
        self.accelerator = Accelerator(log_with=config.tracker)
        if self.accelerator.state.deepspeed_plugin is not None:
            if "fp16" in self.accelerator.state.deepspeed_plugin.deepspeed_config:
                config = self.accelerator.state.deepspeed_plugin.deepspeed_config
                config["fp16"]["auto_cast"] = False
        self.model = self.setup_model()
        self.opt = torch.optim.AdamW(self.model.parameters())

    def learn(self, loader):
        self.model, self.opt, loader = self.accelerator.prepare(self.model, self.opt, loader)
        for batch in loader:
            loss = self.model(**batch).loss
            self.accelerator.backward(loss)
            self.opt.step()
            self.opt.zero_grad()
"""


def test_accelerator_reading_the_launchers_deepspeed_precision_is_not_known(
    tmp_path: Path,
) -> None:
    """trlx's base trainer: `Accelerator()` with no mixed_precision, then `"fp16" in
    accelerator.state.deepspeed_plugin.deepspeed_config`: written for the precision that
    `accelerate launch` and its config give, not Accelerate's float32 default."""
    found = results(tmp_path, LAUNCHER_DEEPSPEED)
    assert found["EC507"].status.value == "unknown"
    plain = LAUNCHER_DEEPSPEED.split("        if self.accelerator.state")[0] + (
        "        self.model = self.setup_model()"
        + LAUNCHER_DEEPSPEED.split("        self.model = self.setup_model()")[1]
    )
    assert results(tmp_path, plain)["EC507"].status.value == "fail"


HF_SUBCLASS_LOOP = """
import torch
from transformers import Trainer


class OurTrainer(Trainer):
    def _inner_training_loop(self, batch_size=None, args=None):
        model = self._wrap_model(self.model_wrapped)
        for epoch in range(int(args.num_train_epochs)):
            for step, inputs in enumerate(self.get_train_dataloader()):
                tr_loss_step = self.training_step(model, inputs)
                if self.do_grad_scaling:
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    self.optimizer.step()
                model.zero_grad()
"""


def test_a_trainer_subclass_given_its_arguments_by_the_caller_is_not_known(
    tmp_path: Path,
) -> None:
    """MeZO's `OurTrainer(Trainer)` copying `_inner_training_loop`: the parent turns on
    autocast and the GradScaler from the TrainingArguments its caller hands it."""
    found = results(tmp_path, HF_SUBCLASS_LOOP)
    assert found["EC507"].status.value == "unknown"
    assert "Trainer subclass OurTrainer" in found["EC507"].reason
