"""Per-step host syncs (EC509) and per-sample copies (EC510) in PyTorch training loops:
classes of mistakes found on blind public code (issue 11).

Snippets go through the real analyser and rules against an 8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path

from conftest import script_results

HEAD = """
import torch
from torch import nn

torch.set_float32_matmul_precision("high")
"""


def sync_lines(tmp_path: Path, source: str) -> list[int]:
    """Lines of the EC509 findings, counted from the snippet's first line (after HEAD)."""
    result = script_results(tmp_path, HEAD + source, "train.py")["EC509"]
    offset = HEAD.count("\n")
    return sorted(f.location.line - offset for f in result.findings)


# -- an RL step's action and new priorities must reach the host -----------------------------

RL_STEP = """
q = nn.Sequential(nn.Linear(4, 120), nn.ReLU(), nn.Linear(120, 2)).to("cuda")
opt = torch.optim.Adam(q.parameters(), lr=2.5e-4)
obs, _ = env.reset()
for global_step in range(500000):
    action = torch.argmax(q(torch.tensor(obs, device="cuda")), dim=-1).cpu().numpy()
    obs, reward, terminated, truncated, info = env.step(action)
    s, a, r, idx = rb.sample(128)
    td = q(s).gather(1, a).squeeze() - r
    loss = td.pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    rb.update_priority(idx, td.abs().detach().cpu().numpy())
    next_obs, *_ = envs.step(q(s).argmax(-1).item())
    print(loss.item())
"""


def test_rl_action_and_priorities_are_no_sync(tmp_path: Path) -> None:
    # the action for env.step and the priorities for the CPU sum-tree are required on
    # the host every step; the printed loss is still a sync to avoid
    assert sync_lines(tmp_path, RL_STEP) == [14]


# -- a tensor built on the CPU copies nothing from the GPU ----------------------------------

CPU_TO_CPU = """
device = "cuda"
emb, gru = nn.Embedding(8000, 500).to(device), nn.GRU(500, 500).to(device)
opt = torch.optim.Adam(list(emb.parameters()) + list(gru.parameters()))
for it in range(4000):
    seqs = [torch.randint(8000, (n,)) for n in torch.randint(1, 10, (64,)).sort()[0].tolist()]
    lengths = torch.tensor([len(s) for s in seqs])
    padded = nn.utils.rnn.pad_sequence(seqs).to(device)
    lengths = lengths.to("cpu")
    out, _ = gru(nn.utils.rnn.pack_padded_sequence(emb(padded), lengths))
    loss = out.data.pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    sizes = torch.tensor([3, 4], device=device).tolist()
    last = loss.cpu()
    print(last.tolist())
"""


def test_cpu_tensor_tolist_is_no_sync(tmp_path: Path) -> None:
    # the factory on the GPU and the loss's copy are syncs; `.tolist()` of what `.cpu()`
    # returned is reported once, at the copy
    assert sync_lines(tmp_path, CPU_TO_CPU) == [13, 14]


# -- a loop nested in a step loop is read with it, not as a step loop of its own ------------

PERIODIC_INNER_LOOP = """
actor = nn.Sequential(nn.Linear(17, 256), nn.ReLU(), nn.Linear(256, 6)).cuda()
log_alpha = torch.zeros(1, requires_grad=True, device="cuda")
a_opt = torch.optim.Adam([log_alpha])
opt = torch.optim.Adam(actor.parameters())
for global_step in range(1000000):
    obs = next(batches).cuda()
    loss = actor(obs).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    if global_step % 2 == 0:
        for _ in range(2):
            alpha_loss = -(log_alpha.exp() * actor(obs).detach().mean())
            a_opt.zero_grad(); alpha_loss.backward(); a_opt.step()
            alpha = log_alpha.exp().item()
    for k in range(3):
        loss_k = actor(obs).sum()
        loss_k.backward()
        print(loss_k.item())
"""


def test_inner_loop_under_periodic_branch_is_periodic(tmp_path: Path) -> None:
    # the inner loop under `% 2` runs every other step; the one outside runs every step
    assert sync_lines(tmp_path, PERIODIC_INNER_LOOP) == [18]


# -- the only caller of a step function, running it once, is the step ----------------------

TASK_STEP = """
class Task:
    def __init__(self):
        self.model = nn.Linear(512, 10).cuda()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.losses = []

    def train_step(self):
        sample = next(self.data_iterator)
        output = self.model(sample["input"].cuda())
        loss = nn.functional.cross_entropy(output, sample["target"].cuda())
        self.losses.append(loss.data.cpu().item())
        self.update_meters(output, sample)
        self.run_optimizer(loss)

    def run_optimizer(self, loss):
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def update_meters(self, output, sample):
        output = output.detach().cpu()
"""


def test_caller_of_step_function_is_the_step(tmp_path: Path) -> None:
    # a trainer out of sight runs train_step every batch; it hands the loss to the
    # method with the backward pass and the optimizer step
    assert sync_lines(tmp_path, TASK_STEP) == [12, 22]
