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


REDUCED_ON_THE_CPU = """
model = nn.Linear(3, 40).cuda()
opt = torch.optim.Adam(model.parameters())
for points, target in loader:
    points, target = points.cuda(), target.cuda()
    pred = model(points)
    loss = nn.functional.cross_entropy(pred, target)
    correct = pred.data.max(1)[1].eq(target.data).cpu().sum()
    accuracy.append(correct.item() / float(points.size()[0]))
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_item_of_a_sum_taken_after_the_copy_is_no_second_sync(tmp_path: Path) -> None:
    # `.cpu().sum()` sums on the host: the sync is the copy (line 8), and `.item()` of
    # what it gave waits for nothing more
    assert sync_lines(tmp_path, REDUCED_ON_THE_CPU) == [8]


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


# -- a trainer's own method called with what its model returns gets device tensors ---------

TRAINER_METHOD = """
class Trainer:
    def __init__(self, model, optimizer):
        self.model = model.to("cuda")
        self.optimizer = optimizer
        self.criterion = nn.CrossEntropyLoss()

    def contrastive_loss(self, features):
        keep = features.sum(1) > 0
        sim = torch.matmul(features, features.T)
        return sim[keep].mean()

    def train(self, loader):
        for images, _ in loader:
            features = self.model(images.to("cuda"))
            loss = self.contrastive_loss(features)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""


def test_method_parameters_bound_to_held_model_output(tmp_path: Path) -> None:
    # `self.model(x)` is a call of the model the trainer holds: its output is a device
    # tensor, and so is the parameter of the method the step hands it to
    assert sync_lines(tmp_path, TRAINER_METHOD) == [11]


# -- inverted mask names and tensors made with dtype=torch.bool are masks -------------------

BOOL_MASKS = """
device = "cuda"
model = nn.Linear(8, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for images, _ in loader:
    features = model(images.to(device))
    sim = torch.matmul(features, features.T)
    keep = sim > 0
    diag = torch.eye(sim.shape[0], dtype=torch.bool, device=device)
    eye = torch.eye(sim.shape[0], dtype=torch.bool).to(device)
    negatives = sim[~keep]
    off_diagonal = sim[~diag]
    off_eye = sim[~eye]
    rows = sim[eye.float()]
    loss = negatives.mean() + off_diagonal.mean() + off_eye.mean() + rows.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_inverted_and_bool_dtype_masks_sync(tmp_path: Path) -> None:
    # each boolean index waits for the mask's count; a float tensor is no mask
    assert sync_lines(tmp_path, BOOL_MASKS) == [11, 12, 13]


def test_an_in_place_update_through_a_product_of_masks_syncs(tmp_path: Path) -> None:
    """Rainbow's `l[(u > 0) * (l == u)] -= 1`: a product of boolean tensors is a mask, and
    the augmented assignment reads `l[mask]` first; a plain masked write is left alone."""
    source = BOOL_MASKS.replace(
        "    loss = negatives.mean()",
        "    low, high = sim.floor().long(), sim.ceil().long()\n"
        "    low[(high > 0) * (low == high)] -= 1\n"
        "    high[(high > 0) * (low == high)] = 0\n"
        "    loss = negatives.mean()",
    )
    assert sync_lines(tmp_path, source) == [11, 12, 13, 16]


def test_a_mask_converted_to_bool_on_the_device_syncs(tmp_path: Path) -> None:
    """VideoMAE's `bool_masked_pos = mask.to(device).flatten(1).to(torch.bool)` ...
    `patches[bool_masked_pos]`: a conversion to torch.bool makes a mask (inside a
    no_grad block of the step too); one to a float dtype does not."""
    source = """
device = "cuda"
model = nn.Linear(8, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for videos, mask in loader:
    videos = videos.to(device)
    bool_masked_pos = mask.to(device, non_blocking=True).flatten(1).to(torch.bool)
    weights = mask.to(device).to(torch.float16)
    with torch.no_grad():
        labels = videos[bool_masked_pos]
        weighted = videos[weights]
    loss = (model(videos).sum() - labels.sum()) * weighted.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    assert sync_lines(tmp_path, source) == [10]


# -- fields of a batch object moved to the device; equality tests of device tensors ---------

BATCH_OBJECT = """
device = torch.device("cuda")
model = model.to(device)
criterion = torch.nn.BCEWithLogitsLoss()
for step, batch in enumerate(loader):
    batch = batch.to(device)
    if batch.x.shape[0] == 1 or batch.batch[-1] == 0:
        continue
    if batch.num_graphs == 1:
        continue
    if step == 0:
        print(batch.y.sum().item())
    pred = model(batch)
    is_labeled = batch.y == batch.y
    loss = criterion(pred[is_labeled], batch.y[is_labeled])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_moved_batch_fields_and_equality_branches_sync(tmp_path: Path) -> None:
    # `batch.y` of a moved batch is a device tensor (its mask syncs), and so is the
    # `batch.batch[-1] == 0` test; a size (`shape[0] == 1`), a count (`num_graphs`)
    # and a step counter (`step == 0`, run once) are not
    assert sync_lines(tmp_path, BATCH_OBJECT) == [7, 15]


# -- a trainer whose model and data come from the caller trains on the caller's device ------

CALLER_MODEL = """
class PPO:
    def __init__(self, actor_critic, lr):
        self.actor_critic = actor_critic
        self.optimizer = torch.optim.Adam(actor_critic.parameters(), lr=lr)

    def update(self, rollouts, advantages):
        value_loss_epoch = 0.0
        for obs, returns in rollouts.feed_forward_generator(advantages, 32):
            value_loss = (returns - self.actor_critic.get_value(obs)).pow(2).mean()
            self.optimizer.zero_grad()
            value_loss.backward()
            self.optimizer.step()
            value_loss_epoch += value_loss.item()
        return value_loss_epoch
"""


def test_caller_supplied_model_is_judged_on_the_targets_gpus(tmp_path: Path) -> None:
    # the file does not determine the device: the target's GPUs decide, so the .item()
    # of every minibatch is a sync (not CPU training)
    assert sync_lines(tmp_path, CALLER_MODEL) == [14]


# -- options declared through an alias of add_argument are read like direct ones ------------

ALIASED_FLAG = """
import argparse

parser = argparse.ArgumentParser()
arg = parser.add_argument
arg("--only-valid", action="store_true")
args = parser.parse_args()
model = nn.Linear(8, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for sample in loader:
    out, labels = model(sample["image"].cuda()), sample["labels"].cuda()
    if args.only_valid:
        keep = sample["valid"].cuda() > 0
        out, labels = out[keep], labels[keep]
    loss = nn.functional.mse_loss(out, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_store_true_through_an_alias_is_off_by_default(tmp_path: Path) -> None:
    # `arg = parser.add_argument`: --only-valid is a store_true flag, False by default,
    # so the masked branch is not the default run's
    assert sync_lines(tmp_path, ALIASED_FLAG) == []
    direct = ALIASED_FLAG.replace('arg("--only-valid"', 'parser.add_argument("--only-valid"')
    assert sync_lines(tmp_path, direct) == []


# -- a lambda handed to a call runs there; what the call returns may be host numbers -------

HANDED_LAMBDAS = """
from lightning.fabric.utilities.apply_func import apply_to_collection
from torch.utils._pytree import tree_map


def to_float(t):
    return t.item()


model = nn.Linear(1024, 10).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    opt.zero_grad(); loss.backward(); opt.step()
    outputs = {"loss": loss.detach(), "norm": loss.detach() * 2}
    values = apply_to_collection(outputs, torch.Tensor, lambda t: t.item())
    for k, v in values.items():
        print(f"{k}: {v:.3f}")
    floats = tree_map(to_float, outputs)
    print(f"{floats['loss']:.3f}")
    kept = apply_to_collection(outputs, torch.Tensor, lambda t: t * 2)
    print(f"{kept['loss']:.3f}")
    texts = list(map(lambda t: f"{t:.3f}", outputs.values()))
    means = {k: v.item() for k, v in outputs.items()}
    for k, v in means.items():
        print(f"{k}: {v:.3f}")
"""


def test_sync_in_a_handed_lambda_is_the_calls(tmp_path: Path) -> None:
    # the lambdas' `.item()` (16) and format (23) run in their calls, every step; a local
    # def handed over is read in place (7); the floats they return format with no sync
    # (18, 20, 26: the comprehension's own `v` is no tensor), the doubled tensors do (22)
    assert sync_lines(tmp_path, HANDED_LAMBDAS) == [7, 16, 22, 23, 24]


# -- a "periodic" branch whose period is 1 runs every step ---------------------------------

PERIOD_ONE = """
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--log-every", type=int, default=1)
args = parser.parse_args()
log_interval = 1
model = nn.Linear(1024, 10).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def report(loss, step, period=1):
    if step % period == 0:
        print(loss.item())


for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    opt.zero_grad(); loss.backward(); opt.step()
    if step % log_interval == 0:
        print(f"{loss.item():.4f}")
    if (step + 1) % args.log_every == 0:
        print(loss.detach().cpu())
    if step % 1 == 0:
        print(float(loss))
    if step % 100 == 0:
        print(loss.item())
    report(loss, step)
"""


def test_period_of_one_is_every_step(tmp_path: Path) -> None:
    # a constant, an option default, a literal and a parameter default of 1: every step;
    # `% 100` stays periodic
    assert sync_lines(tmp_path, PERIOD_ONE) == [14, 21, 23, 25]


# -- a batch field the step never moves to the GPU is a host tensor -------------------------

UNMOVED_FIELD = """
from torch.utils.data import DataLoader

model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.load("ds.pt"), batch_size=8, num_workers=1, pin_memory=True)
for epoch in range(10):
    for step, (image, gt, boxes) in enumerate(loader):
        boxes_np = boxes.detach().cpu().numpy()
        image, gt = image.to("cuda"), gt.to("cuda")
        loss = (model(image) - gt).pow(2).mean() + float(boxes_np.mean())
        opt.zero_grad(); loss.backward(); opt.step()
        print(gt.cpu())
    for image, boxes in loader:
        loss = model(image).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        print(boxes.cpu())
"""


def test_batch_field_never_moved_is_no_sync(tmp_path: Path) -> None:
    # `boxes` (9) stays on the host while the step moves image and gt: no sync; the moved
    # gt (13) syncs; a loop moving no field may iterate a loader yielding device tensors (17)
    assert sync_lines(tmp_path, UNMOVED_FIELD) == [13, 17]


# -- the variable of a loop over a dict is a key (a string), not a tensor ---------------------

DICT_KEYS = """
model = nn.Linear(512, 512).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in loader:
    for k in batch:
        if k != "meta":
            batch[k] = batch[k].to(device="cuda", non_blocking=True)
    for k in list(batch.keys()):
        if k != "meta":
            batch[k] = batch[k].to(device="cuda", non_blocking=True)
    loss = model(batch["input"]).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    for part in batch["input"]:
        if part.sum() > 0:
            pass
"""


def test_dict_key_loop_variable_is_no_tensor(tmp_path: Path) -> None:
    # `k != "meta"` reads no tensor (6, 9), and one copy per field is no per-sample copy
    # (EC510); iterating a tensor gives tensors (14)
    assert sync_lines(tmp_path, DICT_KEYS) == [14]
    result = script_results(tmp_path, HEAD + DICT_KEYS, "train.py")["EC510"]
    assert not result.findings


# -- a trainer method that runs one step, its backward passes in an accumulation loop -------

ACCUMULATING_STEP = """
def loss_backwards(fp16, loss, optimizer):
    loss.backward()

class Trainer:
    def __init__(self, model, loader):
        self.model = model.cuda()
        self.D_opt = torch.optim.Adam(self.model.parameters())
        self.loader = loader

    def train(self):
        total = torch.tensor(0.).cuda()
        backwards = partial(loss_backwards, False)
        self.D_opt.zero_grad()
        for i in range(4):
            loss = self.model(next(self.loader).cuda()).mean()
            backwards(loss, self.D_opt)
            total += loss.detach().item() / 4
        self.d_loss = float(total)
        self.D_opt.step()
"""


def test_step_method_with_accumulation_loop_is_the_step(tmp_path: Path) -> None:
    # called once per step from another module (a CLI's loop): the .item() in the
    # accumulation loop and float() of the CUDA total are per-step syncs
    source = "from functools import partial\n" + ACCUMULATING_STEP
    assert sync_lines(tmp_path, source) == [19, 20]


# -- a loss module of the file called every step: its forward's syncs run every step --------

LOSS_MODULE = """
class MaskedLoss(nn.Module):
    def __init__(self, *, targets="ef", allow_missing=True):
        super().__init__()
        self.targets = targets
        self.allow_missing = allow_missing
        self.criterion = nn.MSELoss()

    def forward(self, target, pred):
        loss = 0.0
        if "e" in self.targets and self.allow_missing:
            valid = ~torch.isnan(target["e"])
            loss += self.criterion(target["e"][valid], pred["e"][valid])
        if "f" in self.targets and self.allow_missing:
            valid = ~torch.isnan(target["f"])
            loss += self.criterion(target["f"][valid], pred["f"][valid])
        if "m" in self.targets and self.allow_missing:
            valid = ~torch.isnan(target["m"])
            loss += self.criterion(target["m"][valid], pred["m"][valid])
        return loss

class Trainer:
    def __init__(self, model, targets="ef"):
        self.model = model.to("cuda")
        self.targets = targets
        self.criterion = MaskedLoss(targets=self.targets)
        self.optimizer = torch.optim.Adam(model.parameters())

    def train(self, loader):
        for x, target in loader:
            x = x.to("cuda")
            target = {k: v.to("cuda") for k, v in target.items()}
            loss = self.criterion(target, self.model(x))
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""


def test_a_loss_module_forward_is_read_at_the_constructors_arguments(tmp_path: Path) -> None:
    # `self.criterion(...)` runs MaskedLoss.forward every step; `valid`, a mask in each
    # branch, is a mask; the "m" branch is off: the trainer builds the loss with its
    # own default targets="ef"
    assert sync_lines(tmp_path, LOSS_MODULE) == [13, 16]


def test_a_loss_module_bound_to_a_local_name_is_read_too(tmp_path: Path) -> None:
    """pytorch-YOLOv4's `criterion = Yolo_loss(...)` in train(), called every step: a name
    the file binds only to an instance of its own class runs that class's forward."""
    source = LOSS_MODULE.replace("self.criterion = MaskedLoss(", "criterion = MaskedLoss(")
    source = source.replace("loss = self.criterion(target,", "loss = criterion(target,")
    source = source.replace(
        "    def train(self, loader):\n",
        "    def train(self, loader):\n        criterion = MaskedLoss(targets=self.targets)\n",
    )
    # the constructor's arguments are read for `self.criterion` only: here the "m"
    # branch, off at targets="ef", counts as well
    assert sync_lines(tmp_path, source) == [13, 16, 19]
    other = source.replace(
        "        criterion = MaskedLoss(targets=self.targets)\n",
        "        criterion = MaskedLoss(targets=self.targets)\n        criterion = nn.MSELoss()\n",
    )
    assert sync_lines(tmp_path, other) == []


# -- a flag a constructor derives from a list parameter's default is off by default ---------

DERIVED_FLAG = """
def cast_list(el):
    return el if isinstance(el, list) else [el]

class Trainer:
    def __init__(self, model, fq_layers=[]):
        self.model = model.cuda()
        self.fq_layers = cast_list(fq_layers)
        self.has_fq = len(self.fq_layers) > 0
        self.opt = torch.optim.Adam(model.parameters())

    def train(self, loader):
        for x in loader:
            loss, q_loss = self.model(x.cuda())
            if self.has_fq:
                self.q_loss = float(q_loss.detach().item())
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
"""


def test_a_flag_derived_from_a_default_list_is_off(tmp_path: Path) -> None:
    # has_fq = len(cast_list([])) > 0 is False in a default run: no per-step read
    assert sync_lines(tmp_path, DERIVED_FLAG) == []


# -- a helper out of sight named to_numpy reads its tensor on the host --------------------

TO_NUMPY = """
from .torch_tools import to_numpy

def train(model, loader, optimizer):
    model.to("cuda")
    for batch in loader:
        _, metrics = take_step(model, batch, optimizer)

def take_step(model, batch, optimizer):
    batch = batch.to("cuda")
    optimizer.zero_grad()
    loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    return loss, {"loss": to_numpy(loss)}
"""


def test_an_imported_to_numpy_of_the_loss_syncs(tmp_path: Path) -> None:
    assert sync_lines(tmp_path, TO_NUMPY) == [15]


# -- the optimizer-step loop around a nested gradient-accumulation loop ---------------------

NESTED_ACCUMULATION = """
model = nn.Linear(1024, 1024).cuda()
optimizer = torch.optim.AdamW(model.parameters())
for step in range(1000):
    optimizer.zero_grad()
    loss_accum = 0.0
    for micro_step in range(4):
        loss = model(torch.randn(64, 1024, device="cuda")).pow(2).mean() / 4
        loss_accum += loss.detach()
        print(loss.item())
        loss.backward()
    optimizer.step()
    torch.cuda.synchronize()
    print(f"step {step} loss {loss_accum.item():.4f}")
    if step % 100 == 0:
        print(loss_accum.item())
for epoch in range(10):
    for x in range(100):
        loss = model(torch.randn(64, 1024, device="cuda")).mean()
        loss.backward()
        optimizer.step()
    print(loss.item())
"""


def test_optimizer_step_loop_around_an_accumulation_loop_is_the_step(tmp_path: Path) -> None:
    # nanoGPT / llm.c: backward in the micro-step loop, the optimizer step in the outer
    # loop's own body; the micro loop's sync is reported once, `% 100` stays periodic, and
    # an epoch loop around a loop that updates the weights itself is no step loop
    assert sync_lines(tmp_path, NESTED_ACCUMULATION) == [10, 13, 14]


# -- a period a module-level exec() of a config may override is not settled ----------------

CONFIG_EXEC = """
log_interval = 1
exec(open("configurator.py").read())
model = nn.Linear(1024, 10).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    opt.zero_grad(); loss.backward(); opt.step()
    if step % log_interval == 0:
        print(loss.item())
"""


def test_period_a_config_exec_overrides_is_periodic(tmp_path: Path) -> None:
    # nanoGPT's `exec(open('configurator.py').read())` rebinds the defaults above it
    assert sync_lines(tmp_path, CONFIG_EXEC) == []
    assert sync_lines(tmp_path, CONFIG_EXEC.replace("exec(", "print(")) == [10]


# -- a log dict of host values: wandb media and scheduler floats are no tensors ------------

HOST_LOGS = """
import wandb

model = nn.Conv2d(3, 8, 3).cuda()
opt = torch.optim.Adam(model.parameters())
sched = torch.optim.lr_scheduler.ExponentialLR(opt, 0.9)
for i, images in enumerate(loader):
    images = images.cuda(non_blocking=True)
    loss = model(images).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    logs = {}
    if i % 100 == 0:
        logs = {**logs, "images": wandb.Image(images[:4].detach().cpu())}
    if i % 10 == 0:
        logs = {**logs, "loss": loss.item(), "lr": sched.get_last_lr()[0]}
    wandb.log(logs)
    wandb.log({"sample": wandb.Image(images[0])})
"""


def test_a_log_dict_of_host_values_is_no_sync(tmp_path: Path) -> None:
    # wandb.Image holds a host rendering (it runs .cpu().numpy() itself: a sync when
    # given a device tensor, line 17), a torch.optim object is no tensor, nor is its
    # scheduler's learning rate: `wandb.log(logs)` has nothing on the device
    assert sync_lines(tmp_path, HOST_LOGS) == [17]


PHASES = """
device = torch.device("cuda")
model = models.resnet18().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for phase in ["train", "valid"]:
        for x, y in loaders[phase]:
            x, y = x.to(device), y.to(device)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            if phase == "valid":
                valid_losses.append(loss.item())
            if phase == "train":
                loss.backward()
                opt.step()
                opt.zero_grad()
                train_losses.append(loss.item())
"""


def test_a_validation_branch_of_a_loop_shared_by_the_phases_is_not_the_step(
    tmp_path: Path,
) -> None:
    """brain-segmentation-pytorch: one loop over ["train", "valid"] phases; the `.item()`
    under `if phase == "valid":` runs only when evaluating, the one under train is a
    per-step sync."""
    assert sync_lines(tmp_path, PHASES) == [16]


MASK_FIELD = """
device = torch.device("cuda")
data = dataset[0].to(device)
model = GCN().to(device)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(200):
    opt.zero_grad()
    out = model(data.x, data.edge_index)
    loss = F.nll_loss(out[data.train_mask], data.y[data.train_mask])
    rows = out[data.train_idx]
    loss.backward()
    opt.step()
"""


def test_a_mask_field_of_a_graph_on_the_device_syncs(tmp_path: Path) -> None:
    """PyG's full-batch step `out[data.train_mask]`: a boolean field of the graph moved to
    the GPU, indexed every step (the CPU waits for its count); an index field is no mask."""
    assert sync_lines(tmp_path, MASK_FIELD) == [9]


# -- any()/all() over tensors takes each one's truth value -----------------------------------

ANY_NAN = """
model = nn.Linear(8, 1).cuda()
opt = torch.optim.Adam(model.parameters())
loader = torch.utils.data.DataLoader(data, batch_size=32, pin_memory=True)
for x, y in loader:
    g_loss = model(x.cuda()).mean()
    d_loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
    opt.zero_grad(); (g_loss + d_loss).backward(); opt.step()
    if any(torch.isnan(l) for l in (g_loss, d_loss)):
        raise ValueError("NaN")
    if all(k > 0 for k in (1, 2)):
        pass
"""


def test_any_over_tensors_tests_each_value(tmp_path: Path) -> None:
    """`if any(torch.isnan(l) for l in (g_loss, d_loss)):` takes bool() of each device
    tensor every step (stylegan2-pytorch's NaN guard); `all()` over host numbers waits
    for nothing."""
    assert sync_lines(tmp_path, ANY_NAN) == [9]


# -- a gradient hook runs inside every backward --------------------------------------------

NAN_HOOK = """
def raise_if_nan(t):
    if torch.isnan(t):
        raise ValueError("NaN")


def log_grad(t):
    print("backward")


model = nn.Linear(8, 1).cuda()
opt = torch.optim.Adam(model.parameters())
loader = torch.utils.data.DataLoader(data, batch_size=32, pin_memory=True)
for x, y in loader:
    loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
    loss.register_hook(raise_if_nan)
    loss.register_hook(log_grad)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_gradient_hook_tests_its_gradient_every_step(tmp_path: Path) -> None:
    """`loss.register_hook(raise_if_nan)` each step: backward hands the hook the loss's
    gradient, on the device, and `if torch.isnan(t):` waits for it (stylegan2-pytorch);
    a hook that does not read its gradient waits for nothing."""
    assert sync_lines(tmp_path, NAN_HOOK) == [3]


# -- a dict whose every entry the step made a Python number holds no tensor after -----------

CONVERTED_LOSSES = """
model = nn.Linear(8, 2).cuda()
opt = torch.optim.Adam(model.parameters())
for i, (x, y) in enumerate(loader):
    x, y = x.cuda(), y.cuda()
    losses = criterion(model(x), y)
    opt.zero_grad(); losses["loss"].backward(); opt.step()
    text = "loss: {:.4f}".format(losses["loss"])
    for idx, (key, value) in enumerate(losses.items()):
        losses[key] = value.item()
        text += "{}: {:.4f}".format(key, losses[key])
    print(f"{losses['loss']}")
    for key, value in losses.items():
        writer.add_scalar(key, value, i)
"""

CONVERTED_SOMETIMES = """
model = nn.Linear(8, 2).cuda()
opt = torch.optim.Adam(model.parameters())
for i, (x, y) in enumerate(loader):
    x, y = x.cuda(), y.cuda()
    losses = criterion(model(x), y)
    opt.zero_grad(); losses["loss"].backward(); opt.step()
    if flag:
        for key in losses:
            losses[key] = float(losses[key])
    print(f"{losses['loss']}")
"""


def test_entries_converted_to_numbers_are_no_tensors_after(tmp_path: Path) -> None:
    # formatting before the conversion (8) and the .item() of each entry (10) sync; the
    # entry read after its own conversion (11) and the dict after the loop (12, 13-14)
    # do not; a conversion only under `if flag:` does not settle the f-string after it
    assert sync_lines(tmp_path, CONVERTED_LOSSES) == [8, 10]
    assert sync_lines(tmp_path, CONVERTED_SOMETIMES) == [10, 11]


# -- a device scalar used as a slice bound or a size is read on the host ---------------------

DEVICE_BOUNDS = """
model = nn.Linear(16, 16).cuda()
opt = torch.optim.Adam(model.parameters())
for x, y, lengths in loader:
    x, y, lengths = x.cuda(), y.cuda(), lengths.cuda()
    out = model(x)
    loss = 0
    for _out, _y, _len in zip(out, y, lengths):
        loss += nn.functional.cross_entropy(_out[:_len], _y[:_len])
    grid = torch.arange(lengths.max(), device=x.device)
    a = out[:, : y.shape[0]] + out[: y.size(0)] + out[: len(y)]
    n = x.shape[1] // 2
    b = out[:, n:] + torch.zeros(x.shape[0], 16, device=x.device)
    opt.zero_grad(); (loss + a.sum() + b.sum() + grid.sum()).backward(); opt.step()
"""

HANDED_COUNT = """
model = nn.Linear(16, 16).cuda()
opt = torch.optim.Adam(model.parameters())

def last(logits, keep):
    return logits[:, -keep:]

for batch in loader:
    batch = {k: v.cuda() for k, v in batch.items()}
    out = model(batch["x"])
    kept = last(out, batch["keep"]) + out[:, -batch["keep"]:]
    opt.zero_grad(); kept.sum().backward(); opt.step()
"""


def test_a_device_scalar_as_a_bound_or_a_size_syncs(tmp_path: Path) -> None:
    # a length of a lengths tensor on the device bounds a slice (9); the maximum of one is
    # arange's size (10); shapes, sizes and len() are host numbers (11-13)
    assert sync_lines(tmp_path, DEVICE_BOUNDS) == [9, 10]
    # a parameter or a string-keyed batch entry as a bound is a count as often as a tensor
    assert sync_lines(tmp_path, HANDED_COUNT) == []


# -- a per-sample copy of a part of the element, taken in the inner loop ----------------------

PART_COPY = """
import numpy as np
model = nn.Linear(16, 16).cuda()
opt = torch.optim.Adam(model.parameters())
for waves, x in loader:
    x = x.cuda()
    wav = []
    for i in range(len(waves)):
        clip = waves[i][100:200]
        wav.append(torch.from_numpy(clip).to("cuda"))
        n = int(x[i, 0])
        box = torch.zeros(n, 4).to("cuda")
    loss = model(x).sum() + torch.stack(wav).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_part_of_the_element_copied_per_sample(tmp_path: Path) -> None:
    # `clip` is a slice of the i-th wave: one copy per sample (10); a buffer of a size the
    # sample gives (12) copies no sample
    result = script_results(tmp_path, HEAD + PART_COPY, "train.py")["EC510"]
    offset = HEAD.count("\n")
    assert [f.location.line - offset for f in result.findings] == [10]


# -- a branch on a key the model's output may hold is an optional output's ----------------

OPTIONAL_KEY = """
model = Renderer().cuda()
opt = torch.optim.Adam(model.parameters())
for x in loader:
    out = model(x.cuda())
    loss = out["rgb"].mean()
    if "z_variance" in out and "lambda_z" in cfg.loss:
        loss = loss + out["z_variance"][out["opacity"] > 0.5].mean()
    if "depth" in out:
        loss = loss + out["depth"][out["opacity"] > 0.5].mean()
    out["depth"] = out["rgb"]
    for name, p in model.named_parameters():
        if "weight" in name:
            print(loss.item())
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_branch_on_a_key_of_an_out_of_sight_output_is_optional(tmp_path: Path) -> None:
    # no code of the file stores "z_variance": the out-of-sight model returns it only
    # when it chooses (8 not read); "depth" the file stores itself (10); a substring test
    # of a parameter's name is no key test (14)
    assert sync_lines(tmp_path, OPTIONAL_KEY) == [10, 14]


# -- a branch on an int option defaulting to 0 is opt-in ----------------------------------

INT_FLAG = """
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--visdom_epoch", type=int, default=0)
parser.add_argument("--log_every", type=int, default=1)
args = parser.parse_args()
model = nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
vis = torch.zeros(100)
for i, (x, y) in enumerate(loader):
    x, y = x.cuda(), y.cuda()
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    if args.visdom_epoch and i > 0:
        vis[i] = loss.item()
    if args.log_every:
        print(loss.item())
"""


def test_a_branch_on_an_int_option_defaulting_to_0_is_opt_in(tmp_path: Path) -> None:
    # `--visdom_epoch` defaults to 0: a default run never takes its branch (16 not
    # read); `--log_every` defaults to 1, so its branch runs every step (18)
    assert sync_lines(tmp_path, INT_FLAG) == [18]


# -- an index loop over the batch's own list of fields -------------------------------------

FIELD_LIST = """
model = nn.Linear(16, 4).cuda()
opt = torch.optim.Adam(model.parameters())
for step, data in enumerate(loader):
    for i in range(len(data)):
        data[i] = data[i].cuda()
    label = data[0]
    loss = nn.functional.cross_entropy(model(*data[1:]), label)
    opt.zero_grad(); loss.backward(); opt.step()
for step, batch in enumerate(loader):
    for i in range(len(batch)):
        batch[i] = batch[i].cuda()
    loss = model(torch.stack(batch)).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_an_index_loop_over_the_batch_read_by_position_walks_its_fields(
    tmp_path: Path,
) -> None:
    # `data` is read by position (`data[0]`, `data[1:]`): a list of fields, one copy per
    # field (6 not flagged); `batch`, stacked whole, may be a list of samples (12)
    result = script_results(tmp_path, HEAD + FIELD_LIST, "train.py")["EC510"]
    offset = HEAD.count("\n")
    assert [f.location.line - offset for f in result.findings] == [12]


# -- an optimizer step a few helpers below the loop, the backward in a micro-batch loop -----

SPREAD_STEP = """
class TrainLoop:
    def __init__(self, model, data, microbatch=16, use_fp16=False):
        self.model, self.data, self.microbatch = model.cuda(), data, microbatch
        self.use_fp16 = use_fp16
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.step = 0

    def run_loop(self):
        while self.step < 100000:
            batch = next(self.data)
            self.run_step(batch)
            if self.step % 100 == 0:
                print(self.step)
            self.step += 1

    def run_step(self, batch):
        self.forward_backward(batch)
        if self.use_fp16:
            self.optimize_fp16()
        else:
            self.optimize_normal()

    def forward_backward(self, batch):
        self.opt.zero_grad()
        for i in range(0, batch.shape[0], self.microbatch):
            micro = batch[i : i + self.microbatch].to("cuda")
            loss = self.model(micro).mean()
            loss.backward()

    def optimize_fp16(self):
        if any(not torch.isfinite(p.grad).all() for p in self.model.parameters()):
            return
        self.optimize_normal()

    def optimize_normal(self):
        self._log_grad_norm()
        self.opt.step()

    def _log_grad_norm(self):
        sqsum = 0.0
        for p in self.model.parameters():
            sqsum += (p.grad ** 2).sum().item()
        return sqsum
"""


def test_a_step_spread_over_helpers_is_read_to_its_optimizer_step(tmp_path: Path) -> None:
    # improved-diffusion: `while` -> run_step -> forward_backward (a micro-batch loop
    # running backward) and optimize_normal -> opt.step(): each pass is one optimizer
    # step, so _log_grad_norm's .item() per parameter runs every step, and so does the
    # finiteness test of the (hand-rolled, off by default) fp16 path EC507 advises; the
    # micro-batches are copied whole, not sample by sample
    results = script_results(tmp_path, HEAD + SPREAD_STEP, "train.py")
    offset = HEAD.count("\n")
    lines = sorted(f.location.line - offset for f in results["EC509"].findings)
    assert lines == [32, 43]
    assert not results["EC510"].findings


EPOCH_OVER_MINIBATCH_STEPS = """
model = nn.Linear(1024, 10).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

def train_minibatch(x, i):
    if i % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
    loss = model(x).mean()
    loss.backward()
    return loss

def train(epoch, batches):
    for i in range(1000):
        loss = train_minibatch(next(batches), i)
    optimizer.step()
    return loss

for epoch in range(10):
    print(train(epoch, batches).item())
"""


def test_an_epoch_loop_over_a_loop_stepping_in_a_helper_is_no_step(tmp_path: Path) -> None:
    # the inner loop updates the weights itself (in train_minibatch): the loop around
    # train() is an epoch loop, its print once an epoch, however train() ends
    assert sync_lines(tmp_path, EPOCH_OVER_MINIBATCH_STEPS) == []


# -- torch.cuda.empty_cache() every step ------------------------------------------------------

EMPTY_CACHE = """
model = nn.Linear(16, 4).cuda()
opt = torch.optim.Adam(model.parameters())
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    opt.zero_grad(); loss.backward(); opt.step()
    torch.cuda.empty_cache()
    if step % 100 == 0:
        torch.cuda.empty_cache()
"""


def test_emptying_the_cache_every_step_waits_for_the_gpu(tmp_path: Path) -> None:
    # kospeech: cudaFree synchronizes the device, and the next step allocates again (7);
    # every 100 steps is the periodic way (9 not flagged)
    assert sync_lines(tmp_path, EMPTY_CACHE) == [7]


# -- a comprehension copying one item of the batch element by element ------------------------

COMPREHENDED_COPIES = """
model = nn.Linear(16, 4).cuda()
opt = torch.optim.Adam(model.parameters())
for i, (input, target) in enumerate(loader):
    atoms = input[0].cuda()
    index = [crys_idx.cuda(non_blocking=True) for crys_idx in input[1]]
    fields = [t.cuda() for t in input]
    rest = [t.cuda() for t in input[1:]]
    named = [v.cuda() for v in input[2].values()]
    loss = model(atoms, index, fields, rest, named).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_comprehension_over_an_item_of_the_batch_copies_element_by_element(
    tmp_path: Path,
) -> None:
    # cgcnn: one index tensor per crystal copied on its own (6); a comprehension over
    # the batch itself or a slice of it walks its fields, perhaps (7, 8), and one over a
    # dict's values walks fields (9)
    result = script_results(tmp_path, HEAD + COMPREHENDED_COPIES, "train.py")["EC510"]
    offset = HEAD.count("\n")
    assert [f.location.line - offset for f in result.findings] == [6]


# -- a Lightning Callback's per-step hook, handed to the Trainer -----------------------------

CALLBACK_HOOK = """
import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback


class GradNormCallback(Callback):
    @staticmethod
    def gradient_norm(model):
        total_norm = 0.0
        for p in model.parameters():
            if p.grad is not None:
                param_norm = p.grad.detach().data.norm(2)
                total_norm += param_norm.item() ** 2
        return total_norm**0.5

    def on_after_backward(self, trainer, model):
        model.log("train/grad_norm", self.gradient_norm(model))


class UnusedCallback(Callback):
    def on_after_backward(self, trainer, model):
        print(sum(p.grad.norm().item() for p in model.parameters()))


grad_norm_callback = GradNormCallback()
trainer = pl.Trainer(max_epochs=3, callbacks=[grad_norm_callback])
trainer.fit(module, datamodule=data)
"""


def test_a_callback_hook_the_trainer_runs_after_every_backward(tmp_path: Path) -> None:
    # nougat: the Trainer runs GradNormCallback.on_after_backward after every backward,
    # an .item() per parameter (13); a callback the file never hands a Trainer is not run
    # (23 not flagged)
    assert sync_lines(tmp_path, CALLBACK_HOOK) == [13]
