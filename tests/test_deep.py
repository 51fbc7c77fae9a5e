"""deep_check: each framework imported in a child of the audited interpreter, with a timeout.

The "frameworks" here are fake packages on PYTHONPATH, run by this very interpreter; the
child inherits the environment, so each test points PYTHONPATH at its own fakes.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FW_PYTHON

from envcheck import deep

REAL_FW_PYTHON = FW_PYTHON  # make frameworks

TORCH_FIELDS = [
    "ok",
    "error",
    "seconds",
    "cuda_available",
    "device_count",
    "arch_list",
    "capabilities",
    "cuda_init_error",
]
TENSORFLOW_FIELDS = ["ok", "error", "seconds", "gpus", "built_with_cuda"]

# torch on a two-GPU machine; the import is noisy on stdout, even at the fd level, and
# even with a line that looks like the answer
TORCH_WITH_GPUS = {
    "torch/__init__.py": """
        import os
        print("torch: loading the CUDA kernels")
        os.write(1, b'{"ok": false, "error": "impostor"}\\n')
        from . import cuda
    """,
    "torch/cuda/__init__.py": """
        def is_available():
            return True
        def device_count():
            return 2
        def get_arch_list():
            return ["sm_80", "sm_90"]
        def get_device_capability(index):
            return (9, 0) if index else (8, 0)
        def init():
            pass
    """,
}

# a CUDA build of torch on a machine without the driver
TORCH_NO_DRIVER = {
    "torch/__init__.py": "from . import cuda\n",
    "torch/cuda/__init__.py": """
        import warnings
        def is_available():
            warnings.warn("CUDA initialization: Found no NVIDIA driver on your system.")
            return False
        def device_count():
            return 0
        def get_arch_list():
            return ["sm_50", "sm_80", "sm_90"]
        def init():
            raise RuntimeError("Found no NVIDIA driver on your system. Please check that you"
                               " have an NVIDIA GPU and installed a driver")
    """,
}

# is_available() only warns, and init() has nothing more to say
TORCH_WARNING_ONLY = {
    "torch/__init__.py": "from . import cuda\n",
    "torch/cuda/__init__.py": """
        import warnings
        def is_available():
            warnings.warn("CUDA initialization: CUDA unknown error - this may be due to an\\n"
                          "incorrectly set up environment")
            return False
        def device_count():
            return 1
        def get_arch_list():
            return []
        def init():
            pass
    """,
}

TORCH_IMPORT_ERROR = {
    "torch/__init__.py": """
        import sys
        sys.stderr.write("Traceback (most recent call last): ...\\n")
        raise ImportError(
            "libcudnn.so.9: cannot open shared object file: No such file or directory"
        )
    """,
}

TORCH_HANGS = {"torch/__init__.py": "import time\ntime.sleep(600)\n"}

TORCH_CRASHES = {
    "torch/__init__.py": """
        import os, sys
        sys.stderr.write("Illegal instruction (core dumped)\\n")
        sys.stderr.flush()
        os._exit(132)
    """,
}

TENSORFLOW_WITH_GPU = {
    "tensorflow/__init__.py": """
        import os, types
        print("2024-01-01 00:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc")
        class _Device:
            def __init__(self, name):
                self.name = name
        config = types.SimpleNamespace(
            list_physical_devices=lambda kind: [_Device("/physical_device:GPU:0")]
        )
        # TF_CPP_MIN_LOG_LEVEL is reported through is_built_with_cuda, to check the child's env
        test = types.SimpleNamespace(
            is_built_with_cuda=lambda: os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "2"
        )
    """,
}

# TensorFlow 1.14: only tf.config.experimental.list_physical_devices
TENSORFLOW_114_CPU = {
    "tensorflow/__init__.py": """
        import types
        experimental = types.SimpleNamespace(list_physical_devices=lambda kind: [])
        config = types.SimpleNamespace(experimental=experimental)
        test = types.SimpleNamespace(is_built_with_cuda=lambda: False)
    """,
}


def fake_packages(folder: Path, files: dict[str, str], monkeypatch) -> Path:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(folder))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")  # the child sets its own
    return folder


def _torch(files: dict[str, str], tmp_path: Path, monkeypatch, timeout: float = 60.0) -> dict:
    fake_packages(tmp_path / "fakes", files, monkeypatch)
    result = deep.deep_check(sys.executable, {"torch": True}, timeout=timeout)
    assert list(result) == ["deep"]
    assert result["deep"]["tensorflow"] is None
    torch = result["deep"]["torch"]
    assert list(torch) == TORCH_FIELDS
    assert isinstance(torch["seconds"], float)
    return dict(torch)


def test_torch_with_two_gpus(tmp_path, monkeypatch) -> None:
    torch = _torch(TORCH_WITH_GPUS, tmp_path, monkeypatch)
    del torch["seconds"]
    assert torch == {
        "ok": True,
        "error": None,
        "cuda_available": True,
        "device_count": 2,
        "arch_list": ["sm_80", "sm_90"],
        "capabilities": ["8.0", "9.0"],
        "cuda_init_error": None,
    }


def test_torch_without_a_driver_reports_the_init_error(tmp_path, monkeypatch) -> None:
    torch = _torch(TORCH_NO_DRIVER, tmp_path, monkeypatch)
    assert torch["ok"] is True
    assert torch["error"] is None
    assert torch["cuda_available"] is False
    assert torch["device_count"] == 0
    assert torch["arch_list"] == ["sm_50", "sm_80", "sm_90"]
    assert torch["capabilities"] == []
    assert torch["cuda_init_error"] == (
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
        "NVIDIA GPU and installed a driver"
    )


def test_torch_init_warning_is_the_fallback(tmp_path, monkeypatch) -> None:
    torch = _torch(TORCH_WARNING_ONLY, tmp_path, monkeypatch)
    assert torch["cuda_available"] is False
    assert torch["capabilities"] == []
    assert (
        torch["cuda_init_error"]
        == "CUDA initialization: CUDA unknown error - this may be due to an"
    )


def test_torch_import_error(tmp_path, monkeypatch) -> None:
    torch = _torch(TORCH_IMPORT_ERROR, tmp_path, monkeypatch)
    assert torch["ok"] is False
    assert torch["error"] == (
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    )
    for field in TORCH_FIELDS[3:]:
        assert torch[field] is None


def test_torch_import_timeout(tmp_path, monkeypatch) -> None:
    torch = _torch(TORCH_HANGS, tmp_path, monkeypatch, timeout=0.5)
    assert torch["ok"] is False
    assert torch["error"] == "did not finish importing within 0.5 s"
    assert torch["cuda_available"] is None


def test_child_that_dies_without_an_answer(tmp_path, monkeypatch) -> None:
    torch = _torch(TORCH_CRASHES, tmp_path, monkeypatch)
    assert torch["ok"] is False
    assert torch["error"] == (
        "exited with code 132 without an answer: Illegal instruction (core dumped)"
    )


def test_tensorflow_with_a_gpu(tmp_path, monkeypatch) -> None:
    fake_packages(tmp_path / "fakes", TENSORFLOW_WITH_GPU, monkeypatch)
    result = deep.deep_check(sys.executable, {"tensorflow": True, "torch": False})
    tf = result["deep"]["tensorflow"]
    assert list(tf) == TENSORFLOW_FIELDS
    assert tf["ok"] is True
    assert tf["error"] is None
    assert tf["gpus"] == ["/physical_device:GPU:0"]
    assert tf["built_with_cuda"] is True  # the fake's way of saying TF_CPP_MIN_LOG_LEVEL=2
    assert result["deep"]["torch"] is None


def test_tensorflow_114_config_experimental(tmp_path, monkeypatch) -> None:
    fake_packages(tmp_path / "fakes", TENSORFLOW_114_CPU, monkeypatch)
    tf = deep.deep_check(sys.executable, {"tensorflow": True})["deep"]["tensorflow"]
    assert (tf["ok"], tf["gpus"], tf["built_with_cuda"]) == (True, [], False)


def test_both_frameworks_in_one_call(tmp_path, monkeypatch) -> None:
    fake_packages(tmp_path / "fakes", {**TENSORFLOW_114_CPU, **TORCH_NO_DRIVER}, monkeypatch)
    result = deep.deep_check(sys.executable, {"tensorflow": True, "torch": True})
    assert list(result["deep"]) == ["tensorflow", "torch"]
    assert result["deep"]["tensorflow"]["ok"] is True
    assert result["deep"]["torch"]["ok"] is True


def test_interpreter_that_cannot_start(tmp_path) -> None:
    missing = str(tmp_path / "no-such-python")
    torch = deep.deep_check(missing, {"torch": True})["deep"]["torch"]
    assert torch["ok"] is False
    assert torch["error"].startswith(f"cannot run {missing}: ")


def test_not_installed_is_null_without_running_anything() -> None:
    result = deep.deep_check(sys.executable, {"tensorflow": False, "torch": False})
    assert result == {"deep": {"tensorflow": None, "torch": None}}
    assert deep.deep_check(sys.executable, {}) == result


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is not None, reason="torch is installed here after all"
)
def test_real_interpreter_without_torch(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # nothing there
    torch = deep.deep_check(sys.executable, {"torch": True})["deep"]["torch"]
    assert torch["ok"] is False
    assert torch["error"] == "ModuleNotFoundError: No module named 'torch'"


def test_empty_sys_path_entry_is_dropped(tmp_path, monkeypatch) -> None:
    # a torch/ folder in the working directory must not be what the child imports
    fake_packages(tmp_path / "cwd", TORCH_IMPORT_ERROR, monkeypatch)
    fake_packages(tmp_path / "fakes", TORCH_WITH_GPUS, monkeypatch)
    monkeypatch.chdir(tmp_path / "cwd")
    torch = deep.deep_check(sys.executable, {"torch": True})["deep"]["torch"]
    assert torch["ok"] is True


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        ('{"ok": true}\n', {"ok": True}),
        ('banner\n{"ok": true, "n": 1}\n{broken\n[1, 2]\n\n', {"ok": True, "n": 1}),
        ('{"first": 1}\n{"second": 2}\n', {"second": 2}),
        ("no json at all\n", None),
        ("", None),
    ],
)
def test_last_json_object(stdout: str, expected) -> None:
    assert deep.last_json_object(stdout) == expected


@pytest.mark.slow
@pytest.mark.skipif(not REAL_FW_PYTHON.exists(), reason="no framework venv (make frameworks)")
def test_real_cpu_frameworks() -> None:
    result = deep.deep_check(str(REAL_FW_PYTHON), {"tensorflow": True, "torch": True})["deep"]
    tf, torch = result["tensorflow"], result["torch"]
    assert (tf["ok"], tf["error"], tf["gpus"], tf["built_with_cuda"]) == (True, None, [], False)
    assert (torch["ok"], torch["cuda_available"], torch["device_count"]) == (True, False, 0)
    assert torch["capabilities"] == []
    assert "not compiled with CUDA" in torch["cuda_init_error"]
