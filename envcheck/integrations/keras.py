"""A Keras callback: envcheck's preflight at train start, GPU utilisation over the first
N steps.

    from envcheck.integrations.keras import EnvcheckCallback
    model.fit(dataset, epochs=10, callbacks=[EnvcheckCallback(data="/data/train")])

Imports Keras (Keras 3, else tf.keras); import it only where Keras is installed.
"""

from __future__ import annotations

from typing import Any

from envcheck.integrations.watch import WatchedCallback

try:
    import keras
except ImportError:  # TensorFlow without the standalone keras package
    from tensorflow import keras


class EnvcheckCallback(WatchedCallback, keras.callbacks.Callback):  # type: ignore[misc]
    """Run `envcheck.preflight()` in on_train_begin (raise PreflightFailed when findings
    reach `fail_on`, or only warn with `warn_only=True`), then sample GPU utilisation
    (CPU without a GPU) until `watch_steps` training batches have ended and log a one-line
    summary (to stderr, or to `log`). Other keyword arguments (python, data, script,
    select, probe, rules) go to the preflight. After the watch, `.summary` holds the
    numbers and `.report` the doctor's Report."""

    def on_train_begin(self, logs: Any = None) -> None:
        self.watch.begin()

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.watch.step()

    def on_train_end(self, logs: Any = None) -> None:
        self.watch.end()
