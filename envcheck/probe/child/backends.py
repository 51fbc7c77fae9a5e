"""The framework backend a probe child (or one of its --concurrent pipelines) measures with."""

from __future__ import annotations

from typing import Any, Dict

from envcheck.probe.child.errors import ProbeFailure


def load_backend(settings: Dict[str, Any]) -> Any:
    framework = settings["framework"]
    try:
        if framework == "torch":
            from envcheck.probe.child.torch_backend import TorchBackend

            return TorchBackend(settings)
        if framework == "tensorflow":
            from envcheck.probe.child.tf_backend import TensorFlowBackend

            return TensorFlowBackend(settings)
    except ProbeFailure:
        raise
    except ImportError as exc:
        raise ProbeFailure("import", f"cannot import {framework}: {exc}") from exc
    raise ProbeFailure("import", f"unknown framework {framework!r}")
