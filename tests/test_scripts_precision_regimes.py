"""EC506-EC508 on runs whose shape regime or precision another file of the project
settles (sweeps AA and AC): a loader padding each batch to its longest sample (no
fixed shape for cuDNN autotuning), an RL agent whose update, in another file, follows
each environment step, and hand-rolled fp16 training (a model's own `convert_to_fp16`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import project_checks, script_results

from envcheck.scripts.analyze import analyze_file

COLLATE_MODULE = """
import torch


class TextMelCollate:
    def __call__(self, batch):
        max_len = max([x[1].size(1) for x in batch])
        mel = torch.zeros(len(batch), 80, max_len)
        for i, x in enumerate(batch):
            mel[i, :, : x[1].size(1)] = x[1]
        return mel


def pad_list(xs, pad_value):
    max_len = max(x.size(0) for x in xs)
    pad = xs[0].new(len(xs), max_len).fill_(pad_value)
    for i, x in enumerate(xs):
        pad[i, : x.size(0)] = x
    return pad


def _collate_fn(batch):
    return pad_list([torch.from_numpy(b) for b in batch], 0)


class AudioDataLoader(torch.utils.data.DataLoader):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.collate_fn = _collate_fn
"""

CONV_TRAIN = """
import torch
from torch import nn
from torch.utils.data import DataLoader
from data_utils import TextMelCollate, AudioDataLoader

model = nn.Sequential(nn.Conv1d(80, 256, 5), nn.ReLU(), nn.Conv1d(256, 80, 5)).cuda()
optimizer = torch.optim.Adam(model.parameters())
{loader}
for mel in loader:
    mel = mel.cuda()
    loss = model(mel).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize(
    "loader",
    [
        "loader = DataLoader(dataset, batch_size=16, collate_fn=TextMelCollate())",
        "loader = AudioDataLoader(dataset, batch_size=1)",
    ],
)
def test_batches_padded_to_their_longest_sample_vary_in_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: str
) -> None:
    """glow-tts' TextMelCollate, Conv-TasNet's AudioDataLoader installing a collate that
    pads through pad_list: each batch as long as its longest utterance, so cuDNN
    autotuning would re-run for most batches (EC506 passes, saying why)."""
    files = {"data_utils.py": COLLATE_MODULE, "train.py": CONV_TRAIN.format(loader=loader)}
    status, reason = project_checks(tmp_path, files, monkeypatch)["EC506"]
    assert status == "pass"
    assert "pads each batch to its longest sample" in reason


def test_fixed_size_batches_still_want_autotuning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same convolutional run with the default collate: fixed shapes, EC506 fails."""
    files = {
        "data_utils.py": COLLATE_MODULE,
        "train.py": CONV_TRAIN.format(loader="loader = DataLoader(dataset, batch_size=16)"),
    }
    assert project_checks(tmp_path, files, monkeypatch)["EC506"][0] == "fail"


def test_a_collate_of_the_script_padding_to_its_longest_sample(tmp_path: Path) -> None:
    """The padding collate defined in the script itself."""
    source = COLLATE_MODULE + CONV_TRAIN.format(
        loader="loader = DataLoader(dataset, batch_size=16, collate_fn=_collate_fn)"
    ).replace("from data_utils import TextMelCollate, AudioDataLoader\n", "")
    found = script_results(tmp_path, source, "train.py")
    assert found["EC506"].status.value == "pass"


AGENT_MODULE = """
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Actor(nn.Module):
    def __init__(self, state_dim, action_dim):
        super().__init__()
        self.l1 = nn.Linear(state_dim, 256)
        self.l2 = nn.Linear(256, 256)
        self.l3 = nn.Linear(256, action_dim)


class TD3:
    def __init__(self, state_dim, action_dim):
        self.actor = Actor(state_dim, action_dim).to(device)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters())

    def select_action(self, state):
        state = torch.FloatTensor(state.reshape(1, -1)).to(device)
        return self.actor(state).cpu().data.numpy().flatten()

    def train(self, replay_buffer, batch_size=256):
        state = replay_buffer.sample(batch_size)
        loss = self.actor(state).mean()
        self.actor_optimizer.zero_grad()
        loss.backward()
        self.actor_optimizer.step()
"""

AGENT_MAIN = """
import gym
import numpy as np
import torch

import TD3

env = gym.make("HalfCheetah-v2")
policy = TD3.TD3(17, 6)
replay_buffer = ReplayBuffer(17, 6)
state = env.reset()
for t in range(1000000):
    action = policy.select_action(np.array(state))
    next_state, reward, done, _ = env.step(action)
    replay_buffer.add(state, action, next_state, reward, done)
    {update}
"""


def rollouts(tmp_path: Path, update: str) -> object:
    path = tmp_path / "main.py"
    path.write_text(AGENT_MAIN.format(update=update))
    return analyze_file(path, "main.py").facts.get("env_rollouts")


def test_agent_updated_in_another_file_after_each_environment_step(tmp_path: Path) -> None:
    """TD3: `env.step(action)`, then `policy.train(replay_buffer, batch_size)` of the
    agent class in TD3.py, every iteration: the loop steps the environment before each
    update, so the run waits on the simulator (EC507/EC508 then unknown, not failed)."""
    found = rollouts(tmp_path, "policy.train(replay_buffer, 256)")
    assert found is not None and "env.step" in str(found)
    assert rollouts(tmp_path, "agent.learn(replay_buffer)") is not None


@pytest.mark.parametrize("update", ["policy.train()", "pbar.update(1)", "pass"])
def test_mode_switches_and_progress_bars_are_no_agent_update(tmp_path: Path, update: str) -> None:
    """`policy.train()` (a mode switch, no data) or a progress bar's update is no agent
    update: no environment-bound loop."""
    assert rollouts(tmp_path, update) is None


HAND_ROLLED_FP16 = """
import torch


class TrainLoop:
    def __init__(self, model, data, use_fp16=False):
        self.model = model
        self.data = data
        self.use_fp16 = use_fp16
        self.opt = torch.optim.AdamW(self.model.parameters())
        if self.use_fp16:
            self._setup_fp16()

    def _setup_fp16(self):
        self.model.convert_to_fp16()

    def run_loop(self):
        for batch in self.data:
            loss = self.model(batch.to("cuda")).mean()
            if self.use_fp16:
                (loss * 2 ** 16).backward()
            else:
                loss.backward()
            self.opt.step()
"""


def test_hand_rolled_fp16_counts_as_mixed_precision(tmp_path: Path) -> None:
    """improved-diffusion's TrainLoop: the model's own `convert_to_fp16()`, with master
    parameters and a manual loss scale, is mixed precision by hand (no EC507)."""
    found = script_results(tmp_path, HAND_ROLLED_FP16, "train_util.py")
    assert found["EC507"].status.value != "fail"
    plain = HAND_ROLLED_FP16.replace("self.model.convert_to_fp16()", "pass")
    assert script_results(tmp_path, plain, "train_util.py")["EC507"].status.value == "fail"
