"""Which framework and loader settings the probe uses: flags > script audit > defaults."""

from __future__ import annotations

from typing import Any

import pytest

from envcheck.errors import UsageError
from envcheck.probe.plan import choose_framework, loader_from_scripts, plan
from envcheck.probe.settings import ProbeSettings

BOTH = {"torch": {"version": "2.5.1"}, "tensorflow": {"version": "2.17.0"}}


def _facts(frameworks: dict[str, Any], scripts: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "interpreter": {"executable": "/env/bin/python"},
        "frameworks": {"torch": None, "tensorflow": None, **frameworks},
        "scripts": scripts,
    }


def _arg(value: Any, text: str | None = None) -> dict[str, Any]:
    return {"known": True, "value": value, "text": text or repr(value)}


TORCH_SCRIPT = {
    "loaders": [
        {
            "path": "train.py",
            "line": 42,
            "args": {"num_workers": _arg(0), "batch_size": _arg(128), "pin_memory": _arg(True)},
            "opaque_kwargs": [],
        }
    ]
}
TF_SCRIPT = {
    "tf_pipelines": [
        {
            "path": "tf_train.py",
            "line": 10,
            "ends_with_prefetch": False,
            "operations": [{"op": "map", "line": 11, "num_parallel_calls": None}],
        }
    ]
}


def test_framework_from_the_script_when_installed() -> None:
    assert choose_framework(_facts(BOTH, TF_SCRIPT), None) == ("tensorflow", "the training script")
    assert choose_framework(_facts(BOTH, TORCH_SCRIPT), "auto")[0] == "torch"


def test_framework_installed_when_no_script() -> None:
    framework, why = choose_framework(_facts({"tensorflow": {"version": "2.17"}}), None)
    assert framework == "tensorflow" and "/env/bin/python" in why


def test_no_framework_is_a_usage_error_naming_the_interpreter() -> None:
    with pytest.raises(UsageError, match="neither torch nor tensorflow is installed in /env/bin"):
        choose_framework(_facts({}), None)
    with pytest.raises(UsageError, match="--framework tensorflow: not installed"):
        choose_framework(_facts({"torch": {"version": "2.5"}}), "tensorflow")


def test_torch_loader_settings_come_from_the_script_with_their_place() -> None:
    found, origin = loader_from_scripts(_facts(BOTH, TORCH_SCRIPT), "torch", 8)
    assert found == {"workers": 0, "batch_size": 128, "pin_memory": True}
    assert origin["workers"] == "train.py:42"


def test_a_loader_without_num_workers_uses_the_default_zero() -> None:
    script = {"loaders": [{"path": "t.py", "line": 3, "args": {}, "opaque_kwargs": []}]}
    found, origin = loader_from_scripts(_facts(BOTH, script), "torch", 8)
    assert found["workers"] == 0 and origin["workers"] == "t.py:3 (default)"


def test_tf_serial_map_and_autotune() -> None:
    found, _ = loader_from_scripts(_facts(BOTH, TF_SCRIPT), "tensorflow", 8)
    assert found == {"workers": 0, "prefetch": None}
    autotune = {
        "tf_pipelines": [
            {
                "path": "t.py",
                "line": 1,
                "ends_with_prefetch": True,
                "operations": [
                    {
                        "op": "map",
                        "line": 2,
                        "num_parallel_calls": {"known": False, "text": "tf.data.AUTOTUNE"},
                    }
                ],
            }
        ]
    }
    found, _ = loader_from_scripts(_facts(BOTH, autotune), "tensorflow", 8)
    assert found == {"workers": 8, "prefetch": -1}


def test_flags_win_over_the_script() -> None:
    settings = plan(
        _facts(BOTH, TORCH_SCRIPT),
        ProbeSettings(),
        None,
        {"workers": 4, "pin_memory": None, "prefetch": None, "batch_size": None},
        cores=8,
    )
    assert settings.framework == "torch"
    assert settings.workers == 4 and settings.settings_from["workers"] == "flag"
    assert settings.batch_size == 128 and settings.settings_from["batch_size"] == "train.py:42"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"batch_size": 0}, "--batch-size"),
        ({"image_size": 8}, "--image-size"),
        ({"budget_s": 1.0}, "--budget"),
        ({"workers": -1}, "--workers"),
        ({"device": "tpu"}, "--device"),
    ],
)
def test_bad_settings_are_usage_errors(change: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        ProbeSettings(**change).validated()
