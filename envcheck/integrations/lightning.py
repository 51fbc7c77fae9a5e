"""A PyTorch Lightning callback: envcheck's preflight at fit start, GPU utilisation over
the first N training steps.

    from envcheck.integrations.lightning import EnvcheckCallback
    trainer = lightning.Trainer(callbacks=[EnvcheckCallback(data="/data/train")])

Imports `lightning` (else the older `pytorch_lightning`); import it only where it is
installed. In multi-process (DDP) training only global rank 0 runs the preflight and
watches, so one machine is not audited once per GPU.
"""

from __future__ import annotations

from typing import Any

from envcheck.integrations.watch import WatchedCallback

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the package's name before Lightning 2.0
    from pytorch_lightning.callbacks import Callback


class EnvcheckCallback(WatchedCallback, Callback):  # type: ignore[misc]
    """Run `envcheck.preflight()` in on_fit_start (raise PreflightFailed when findings
    reach `fail_on`, or only warn with `warn_only=True`), then sample GPU utilisation
    (CPU without a GPU) until `watch_steps` training batches have ended and log a one-line
    summary (to stderr, or to `log`). Other keyword arguments (python, data, script,
    select, probe, rules) go to the preflight. After the watch, `.summary` holds the
    numbers and `.report` the doctor's Report."""

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        if trainer.is_global_zero:
            self.watch.begin()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self.watch.step()

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self.watch.end()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.watch.end()
