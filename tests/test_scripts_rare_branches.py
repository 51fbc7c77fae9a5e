"""EC509 in PyTorch step loops: branches that do not run every step and helpers the step
alone calls. A branch that ends the loop with `break` runs once; the body of a
non-finite guard (`if not torch.isfinite(norm): logging.warning(f"... {norm}")`) runs
only on a bad step (the guard's own test is still a per-step read); a helper the loop
calls twice (`with model.no_sync(): step(batch)` / `else: step(batch)`) is no helper
shared with other code, so its syncs are reported where they are. A step that returns
`output_transform(x, y, y_pred, loss)` with the parameter left at a lambda default that
reads the loss (`lambda x, y, y_pred, loss: loss.item()`) syncs every step; a step that
calls PyTorch/XLA runs on a TPU. An optional output of code out of sight
(`reg = outputs.get("reg_loss")` ... `if reg is not None:`) is not judged.
Snippets go through the real analyser and rules."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from test_scripts_torch import audit

HEAD = """
import logging
import torch
from torch.utils.data import DataLoader

device = "cuda"
loader = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=True)
"""


def ec509(tmp_path: Path, body: str) -> Any:
    (tmp_path / "train.py").write_text(HEAD + textwrap.dedent(body))
    return audit(tmp_path / "train.py", rules=("EC509",))["EC509"]


def lines(result: Any) -> list[int]:
    return [f.location.line for f in result.findings]


def test_a_branch_that_breaks_out_of_the_step_loop_runs_once(tmp_path: Path) -> None:
    result = ec509(
        tmp_path,
        """
        for step, (x, y) in enumerate(loader):
            loss = model(x.to(device), y.to(device))
            loss.backward()
            optimizer.step()
            if step >= max_steps:
                stop = torch.tensor([1], device=device)
                stopped = stop.any().item()
                break
        """,
    )
    assert result.status.value == "pass"


def test_a_break_of_an_inner_loop_does_not_end_the_step(tmp_path: Path) -> None:
    result = ec509(
        tmp_path,
        """
        for x, y in loader:
            loss = model(x.to(device), y.to(device))
            loss.backward()
            optimizer.step()
            while True:
                if ready:
                    total = loss.item()
                    break
        """,
    )
    assert lines(result) == [15]


def test_the_body_of_a_non_finite_guard_runs_only_on_a_bad_step(tmp_path: Path) -> None:
    result = ec509(
        tmp_path,
        """
        for x, y in loader:
            loss = model(x.to(device), y.to(device))
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if not torch.isfinite(norm):
                logging.warning(f"The grad norm is {norm}. Skipping.")
                optimizer.zero_grad()
                continue
            optimizer.step()
        """,
    )
    assert lines(result) == [13]  # the guard's test, not the warning in its body
    assert "tests a tensor's value" in result.findings[0].message


def test_a_finite_branch_is_no_guard(tmp_path: Path) -> None:
    result = ec509(
        tmp_path,
        """
        for x, y in loader:
            loss = model(x.to(device), y.to(device))
            loss.backward()
            if torch.isfinite(loss):
                logging.info(f"loss {loss}")
            optimizer.step()
        """,
    )
    assert lines(result) == [12, 13]


HELPER = """
class Trainer:
    def train_epoch(self, loader):
        for step, batch in enumerate(loader):
            if step % accumulation:
                with self.model.no_sync():
                    self.forward_backward(batch)
            else:
                self.forward_backward(batch)
            self.optimizer.step()

    def forward_backward(self, batch):
        x, y = batch
        loss = self.model(x.to(device), y.to(device))
        self.tracker.update(
            loss.detach().mean().item(),
            len(x),
        )
        loss.backward()
"""


def test_a_helper_the_loop_alone_calls_twice_is_read_in_place(tmp_path: Path) -> None:
    result = ec509(tmp_path, HELPER)
    assert lines(result) == [23]  # the .item() of the multi-line statement
    assert "in forward_backward()" not in result.findings[0].message


def test_a_trainer_method_shared_with_an_evaluation_loop_is_reported_at_its_sync(
    tmp_path: Path,
) -> None:
    """The statement to change is the sync inside the method, whoever else calls it."""
    evaluation = """
    def evaluate(self, loader):
        with torch.no_grad():
            for batch in loader:
                self.forward_backward(batch)
"""
    result = ec509(tmp_path, HELPER + evaluation)
    assert lines(result) == [23]


FACTORY = """
def training_step(
    model, optimizer, loss_fn, device, output_transform=lambda x, y, y_pred, loss: loss.item()
):
    def update(engine, batch):
        model.train()
        x, y = batch[0].to(device), batch[1].to(device)
        y_pred = model(x)
        loss = loss_fn(y_pred, y)
        loss.backward()
        optimizer.step()
        return output_transform(x, y, y_pred, loss)

    return update
"""


def test_a_default_output_transform_reading_the_loss_syncs_every_step(tmp_path: Path) -> None:
    result = ec509(tmp_path, FACTORY)
    assert lines(result) == [19]
    assert "the default output_transform: lambda x, y, y_pred, loss" in result.findings[0].message


def test_an_output_transform_returning_tensors_is_no_sync(tmp_path: Path) -> None:
    source = FACTORY.replace("loss: loss.item()", "loss: loss")
    assert ec509(tmp_path, source).status.value == "pass"


def test_a_pytorch_xla_step_runs_on_a_tpu(tmp_path: Path) -> None:
    source = FACTORY.replace(
        "optimizer.step()", "xm.optimizer_step(optimizer, barrier=True)"
    ).replace("def training_step(", "import torch_xla.core.xla_model as xm\n\n\ndef training_step(")
    assert lines(ec509(tmp_path, source)) == []


def test_an_optional_model_output_is_not_judged(tmp_path: Path) -> None:
    result = ec509(
        tmp_path,
        """
        for x, y in loader:
            outputs = model(x.to(device), y.to(device))
            loss = outputs["loss"]
            reg = outputs.get("reg_loss")
            loss.backward()
            optimizer.step()
            if reg is not None:
                reg = reg / 2
                total_reg += reg.item()
        """,
    )
    assert result.status.value == "pass"


def test_an_output_with_a_default_is_judged(tmp_path: Path) -> None:
    result = ec509(
        tmp_path,
        """
        for x, y in loader:
            outputs = model(x.to(device), y.to(device))
            loss = outputs["loss"]
            reg = outputs.get("reg_loss", loss)
            loss.backward()
            optimizer.step()
            if reg is not None:
                total_reg += reg.item()
        """,
    )
    assert lines(result) == [16]


def test_a_loss_scaled_by_a_context_manager_is_a_device_tensor(tmp_path: Path) -> None:
    source = FACTORY.replace(
        "        loss.backward()\n",
        "        with amp.scale_loss(loss, optimizer) as scaled_loss:\n"
        "            scaled_loss.backward()\n",
    ).replace("batch[0].to(device), batch[1].to(device)", "prepare_batch(batch, device=device)")
    assert "scale_loss" in source and "prepare_batch" in source
    result = ec509(tmp_path, source)
    assert lines(result) == [20]


STOP_PROTOCOL = """
def train(distributed=False):
    for x, y in loader:
        if distributed:
            done = torch.tensor(0, device=device)
            torch.distributed.all_reduce(done)
            if done.item() > 0:
                break
        loss = model(x.to(device), y.to(device))
        loss.backward()
        optimizer.step()
"""


def test_the_multi_process_stop_protocol_off_by_default_is_not_per_step(
    tmp_path: Path,
) -> None:
    """`if distributed: all_reduce(done); done.item()`: processes agreeing to stop on
    uneven data, only in a multi-process run the file does not choose by default."""
    assert lines(ec509(tmp_path, STOP_PROTOCOL)) == []


def test_the_stop_protocol_on_by_default_reads_the_flag_every_step(tmp_path: Path) -> None:
    source = STOP_PROTOCOL.replace("distributed=False", "distributed=True")
    assert lines(ec509(tmp_path, source)) == [14]


def test_the_else_of_a_branch_on_by_default_is_the_opt_out_path(tmp_path: Path) -> None:
    """`if not opt.disable_dp: ... else: ...` with `--disable-dp` off by default: the
    default run takes the first branch, so only its sync is the step's (opacus' DCGAN)."""
    result = ec509(
        tmp_path,
        """
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--disable-dp", action="store_true", default=False)
        opt = parser.parse_args()
        for x, y in loader:
            loss = model(x.to(device), y.to(device))
            loss.backward()
            optimizer.step()
            if not opt.disable_dp:
                bar.set_description(f"loss {loss.item()} private")
            else:
                bar.set_description(f"loss {loss.item()}")
        """,
    )
    assert lines(result) == [18]  # the first branch only, not 20


def test_a_wall_clock_throttle_runs_seldom(tmp_path: Path) -> None:
    """`if now - last_logging > 60:` whose body resets `last_logging = now` runs once a
    minute, a periodic log; without the reset, or with a test that is no clock reading,
    it runs every step."""
    source = """
        import time
        last_logging = time.time()
        for step, (x, y) in enumerate(loader):
            loss = model(x.to(device), y.to(device))
            loss.backward()
            optimizer.step()
            now = time.time()
            if now - last_logging > 60:
                print(loss.item())
                last_logging = now
            if time.perf_counter() - last_logging >= 60:
                print(loss.item())
            if step - last_step > 60:
                print(loss.item())
                last_step = step
        """
    assert lines(ec509(tmp_path, source)) == [20, 22]


def test_a_latch_runs_once(tmp_path: Path) -> None:
    """`if not self.logged and ...:` whose body sets `self.logged = True` runs at most
    once; one whose body sets the flag false runs every step."""
    source = """
        for step, (x, y) in enumerate(loader):
            loss = model(x.to(device), y.to(device))
            loss.backward()
            optimizer.step()
            if not state.logged and step > 10:
                state.logged = True
                print(loss.item())
            if not state.shown:
                print(loss.item())
                state.shown = False
        """
    assert lines(ec509(tmp_path, source)) == [17]


def test_a_branch_for_an_old_pytorch_is_dead(tmp_path: Path) -> None:
    # Person_reID train.py: `version = torch.__version__`, then the PyTorch 0.3 `else`
    # (`loss.data[0]`) beside the current `loss.item()`; and `< "0.4"` written as a string
    result = ec509(
        tmp_path,
        """
        version = torch.__version__
        for x, y in loader:
            loss = model(x.to(device), y.to(device))
            loss.backward()
            optimizer.step()
            if int(version[0]) > 0 or int(version[2]) > 3:
                running = loss.item()
            else:
                running = f"{loss.data[0]:.4f}"
            if torch.__version__ < "0.4":
                old = f"{loss.data[0]:.4f}"
        """,
    )
    assert lines(result) == [15]
