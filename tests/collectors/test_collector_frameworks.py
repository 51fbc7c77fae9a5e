"""frameworks collector: TensorFlow, torch and JAX builds read from files, never imported."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Any, Optional, Sequence

import pytest
from conftest import FW_PYTHON

from envcheck import subprocess_runner
from envcheck.collectors import frameworks
from envcheck.collectors.base import CollectContext, run_collector
from envcheck.interpreter import current, target

from .conftest import write

REAL_FW_PYTHON = FW_PYTHON  # make frameworks

# build_info.py as the wheels ship it (the license header trimmed).
TF_215_GPU = """\
\"\"\"Auto-generated module providing information about the build.\"\"\"
import collections

build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-17/bin/clang'), \
('cuda_compute_capabilities', ['sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), \
('cuda_version', '12.2'), ('cudnn_version', '8'), ('is_cuda_build', True), \
('is_rocm_build', False), ('is_tensorrt_build', True)])
"""

# tensorflow-cpu 2.21.0 (and every CPU wheel since 2.4)
TF_CPU = """\
\"\"\"Auto-generated module providing information about the build.\"\"\"
import collections

build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False), \
('is_tensorrt_build', False)])
"""

# Windows GPU wheels record the DLL suffixes: cudart64_112.dll, cudnn64_8.dll
TF_210_WINDOWS = """\
\"\"\"Auto-generated module providing information about the build.\"\"\"
import collections

build_info = collections.OrderedDict([('cpu_compiler', 'C:/Program Files (x86)/cl.exe'), \
('cuda_compute_capabilities', ['sm_35', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), \
('cuda_version', '64_112'), ('cudart_dll_name', 'cudart64_112.dll'), \
('cudnn_dll_name', 'cudnn64_8.dll'), ('cudnn_version', '64_8'), ('is_cuda_build', True), \
('is_rocm_build', False), ('is_tensorrt_build', False), \
('msvcp_dll_names', 'msvcp140.dll,msvcp140_1.dll'), ('nvcuda_dll_name', 'nvcuda.dll')])
"""

# TensorFlow 2.3 wrote a plain dict
TF_23_WINDOWS = """\
\"\"\"Auto-generated module providing information about the build.\"\"\"
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

build_info = {'cuda_version': '64_101', 'cudnn_version': '64_7', \
'cuda_compute_capabilities': ['sm_35', 'sm_37', 'sm_52', 'sm_60', 'sm_61', 'compute_70'], \
'is_rocm_build': False, 'is_cuda_build': True, 'cudart_dll_name': 'cudart64_101.dll'}
"""

# TensorFlow 1.13 to 2.2: module constants
TF_115_CONSTANTS = """\
\"\"\"Generates a Python module containing information about the build.\"\"\"
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

is_rocm_build = False
is_cuda_build = True

cuda_version_number = '10.0'
cudnn_version_number = '7'
"""

# TensorFlow 1.12 and older: is_cuda_build alone
TF_112_CONSTANTS = """\
\"\"\"Generates a Python module containing information about the build.\"\"\"
from __future__ import absolute_import

is_cuda_build = True
"""


def torch_version_py(version: str, cuda: Optional[str], hip: Optional[str] = None) -> str:
    """torch/version.py as torch 2.x generates it (annotated assignments)."""
    return (
        "from typing import Optional\n\n"
        "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        f"__version__ = {version!r}\n"
        "debug = False\n"
        f"cuda: Optional[str] = {cuda!r}\n"
        "git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'\n"
        f"hip: Optional[str] = {hip!r}\n"
    )


# `ldconfig -p` of a CUDA 12 machine with the driver, cuDNN 9 and NCCL from the
# NVIDIA apt repository (trimmed); the i386 libcuda and the libcudnn_* sub-libraries
# must not leak into the wrong keys.
LDCONFIG_P = """\
1532 libs found in cache `/etc/ld.so.cache'
\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1
\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-ml.so.1
\tlibnvidia-ml.so.1 (libc6) => /lib/i386-linux-gnu/libnvidia-ml.so.1
\tlibnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2
\tlibnccl.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so
\tlibcudnn_ops.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_ops.so.9
\tlibcudnn_graph.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_graph.so.9
\tlibcudnn.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn.so.9
\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12
\tlibcudart.so.11.0 (libc6,x86-64) => /usr/local/cuda-11.8/lib64/libcudart.so.11.0
\tlibcudadebugger.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudadebugger.so.1
\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1
\tlibcuda.so.1 (libc6) => /lib/i386-linux-gnu/libcuda.so.1
\tlibcuda.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so
\tlibcublasLt.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/lib64/libcublasLt.so.12
\tlibcublas.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/lib64/libcublas.so.12
Cache generated by: ldconfig (GNU libc) stable release version 2.35
"""


def dist_info(
    site: Path,
    name: str,
    version: str,
    *,
    top_level: Optional[Sequence[str]] = None,
    record: Optional[Sequence[str]] = None,
) -> Path:
    folder = site / f"{name}-{version}.dist-info"
    write(folder / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    if top_level is not None:
        write(folder / "top_level.txt", "".join(f"{m}\n" for m in top_level))
    if record is not None:
        write(folder / "RECORD", "".join(f"{line},,\n" for line in record))
    return folder


def tensorflow_wheel(
    site: Path, dist: str, version: str, build_info: Optional[str], *, core: bool = False
) -> Optional[Path]:
    """A tensorflow package (tensorflow_core/ behind a shim when `core`) and its dist-info."""
    package = "tensorflow_core" if core else "tensorflow"
    write(site / "tensorflow" / "__init__.py", "# the real one imports everything\n")
    record = ["tensorflow/__init__.py", f"{package}/python/platform/build_info.py"]
    dist_info(site, dist, version, record=record)
    if build_info is None:
        return None
    return write(site / package / "python" / "platform" / "build_info.py", build_info)


def torch_wheel(site: Path, version: str, version_py: Optional[str]) -> Optional[Path]:
    write(site / "torch" / "__init__.py")
    dist_info(site, "torch", version, top_level=["functorch", "torch", "torchgen"])
    if version_py is None:
        return None
    return write(site / "torch" / "version.py", version_py)


@pytest.fixture(autouse=True)
def recorded_ldconfig(monkeypatch) -> list[list[str]]:
    """Every test sees the recorded `ldconfig -p`; the calls are kept for inspection."""
    calls: list[list[str]] = []

    def fake_run(argv: Sequence[str], timeout: float) -> subprocess_runner.Completed:
        calls.append([*argv, f"timeout={timeout:g}"])
        return subprocess_runner.Completed(0, LDCONFIG_P, "")

    monkeypatch.setattr(subprocess_runner, "run", fake_run)
    return calls


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site-packages"
    folder.mkdir()
    return folder


def _collect(machine, sys_path: Sequence[object]) -> dict[str, Any]:
    interpreter = dataclasses.replace(current(), sys_path=tuple(str(p) for p in sys_path))
    sections = frameworks.collect(machine.ctx(interpreter=interpreter))
    assert list(sections) == ["frameworks"]
    facts: dict[str, Any] = sections["frameworks"]
    assert list(facts) == [
        "tensorflow",
        "torch",
        "jax",
        "nvidia_wheels",
        "system_libraries",
        "reasons",
    ]
    return facts


# --- TensorFlow ------------------------------------------------------------------------


def test_tensorflow_215_gpu_build(machine, site) -> None:
    build_info = tensorflow_wheel(site, "tensorflow", "2.15.0", TF_215_GPU)
    facts = _collect(machine, [site])
    assert facts["tensorflow"] == {
        "distribution": "tensorflow",
        "version": "2.15.0",
        "is_cuda_build": True,
        "is_rocm_build": False,
        "cuda_version": "12.2",
        "cudnn_version": "8",
        "cuda_compute_capabilities": ["sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "source": str(build_info),
    }
    assert not any(key.startswith("tensorflow") for key in facts["reasons"])


def test_tensorflow_cpu_wheel_is_not_a_cuda_build(machine, site) -> None:
    build_info = tensorflow_wheel(site, "tensorflow_cpu", "2.21.0", TF_CPU)
    facts = _collect(machine, [site])
    tf = facts["tensorflow"]
    assert tf["distribution"] == "tensorflow-cpu"
    assert tf["version"] == "2.21.0"
    assert tf["is_cuda_build"] is False
    assert tf["is_rocm_build"] is False
    assert tf["cuda_version"] is None
    assert tf["cudnn_version"] is None
    assert tf["cuda_compute_capabilities"] is None
    assert tf["source"] == str(build_info)
    for field in ("cuda_version", "cudnn_version", "cuda_compute_capabilities"):
        assert facts["reasons"][f"tensorflow.{field}"] == "not a CUDA build"


@pytest.mark.parametrize(
    ("text", "cuda", "cudnn", "capabilities"),
    [
        (TF_210_WINDOWS, "11.2", "8", ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"]),
        (TF_23_WINDOWS, "10.1", "7", ["sm_35", "sm_37", "sm_52", "sm_60", "sm_61", "compute_70"]),
    ],
    ids=["2.10-windows-ordereddict", "2.3-windows-dict"],
)
def test_tensorflow_windows_dll_suffixes_become_versions(
    machine, site, text: str, cuda: str, cudnn: str, capabilities: list[str]
) -> None:
    tensorflow_wheel(site, "tensorflow_gpu", "2.10.0", text)
    tf = _collect(machine, [site])["tensorflow"]
    assert tf["distribution"] == "tensorflow-gpu"
    assert (tf["is_cuda_build"], tf["is_rocm_build"]) == (True, False)
    assert (tf["cuda_version"], tf["cudnn_version"]) == (cuda, cudnn)
    assert tf["cuda_compute_capabilities"] == capabilities


def test_tensorflow_115_constants_in_tensorflow_core(machine, site) -> None:
    build_info = tensorflow_wheel(site, "tensorflow_gpu", "1.15.5", TF_115_CONSTANTS, core=True)
    facts = _collect(machine, [site])
    tf = facts["tensorflow"]
    assert build_info is not None
    assert "tensorflow_core" in build_info.parts
    assert tf == {
        "distribution": "tensorflow-gpu",
        "version": "1.15.5",
        "is_cuda_build": True,
        "is_rocm_build": False,
        "cuda_version": "10.0",
        "cudnn_version": "7",
        "cuda_compute_capabilities": None,
        "source": str(build_info),
    }
    assert facts["reasons"]["tensorflow.cuda_compute_capabilities"] == (
        "not recorded in this TensorFlow's build_info.py"
    )


def test_tensorflow_112_records_only_is_cuda_build(machine, site) -> None:
    tensorflow_wheel(site, "tensorflow_gpu", "1.12.0", TF_112_CONSTANTS)
    facts = _collect(machine, [site])
    tf = facts["tensorflow"]
    assert tf["is_cuda_build"] is True
    assert tf["is_rocm_build"] is None
    assert tf["cuda_version"] is None
    reasons = facts["reasons"]
    assert reasons["tensorflow.is_rocm_build"] == "not recorded in this TensorFlow's build_info.py"
    assert reasons["tensorflow.cuda_version"] == "not recorded in this TensorFlow's build_info.py"


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("build_info = collections.OrderedDict([('is_cuda_build', True)\n", "SyntaxError at line"),
        ("build_info = {'cuda_version': '12.2',\x00}\n", "null bytes"),
    ],
    ids=["syntax-error", "nul-byte"],
)
def test_malformed_build_info_is_null_with_a_reason(machine, site, text: str, detail: str) -> None:
    build_info = tensorflow_wheel(site, "tensorflow", "2.15.0", text)
    interpreter = dataclasses.replace(current(), sys_path=(str(site),))
    outcome = run_collector("frameworks", frameworks.collect, machine.ctx(interpreter=interpreter))
    assert outcome.status == "ok"
    facts = outcome.sections["frameworks"]
    tf = facts["tensorflow"]
    assert (tf["distribution"], tf["version"]) == ("tensorflow", "2.15.0")
    for field in frameworks._TF_FIELDS:
        assert tf[field] is None
        assert facts["reasons"][f"tensorflow.{field}"].startswith(f"cannot parse {build_info}")
    assert detail in facts["reasons"]["tensorflow.cuda_version"]


def test_build_info_values_that_are_not_literals_are_skipped(machine, site) -> None:
    text = (
        "import os\n"
        "is_cuda_build = os.environ.get('X') == '1'\n"
        "build_info = collections.OrderedDict([('cuda_version', '12.3'), ('x', os.sep)])\n"
        "build_info = make()\n"
        "cudnn_version_number: str = '9'\n"
    )
    tensorflow_wheel(site, "tensorflow", "2.16.1", text)
    facts = _collect(machine, [site])
    tf = facts["tensorflow"]
    assert tf["is_cuda_build"] is None
    assert tf["cuda_version"] is None  # the whole OrderedDict(...) call is not a literal
    assert tf["cudnn_version"] == "9"
    assert "tensorflow.is_cuda_build" in facts["reasons"]


def test_tensorflow_without_build_info(machine, site) -> None:
    tensorflow_wheel(site, "tensorflow", "2.15.0", None)
    facts = _collect(machine, [site])
    tf = facts["tensorflow"]
    assert tf["version"] == "2.15.0"
    assert tf["source"] is None
    assert tf["is_cuda_build"] is None
    assert "no tensorflow/python/platform/build_info.py" in facts["reasons"]["tensorflow.source"]


def test_metapackage_is_not_the_provider(machine, site) -> None:
    # tensorflow-gpu 2.12 is an empty metapackage beside the real tensorflow wheel
    dist_info(
        site,
        "tensorflow_gpu",
        "2.12.0",
        record=[
            "tensorflow_gpu-2.12.0.dist-info/METADATA",
            "tensorflow_gpu-2.12.0.dist-info/RECORD",
        ],
    )
    tensorflow_wheel(site, "tensorflow", "2.12.0", TF_215_GPU)
    tf = _collect(machine, [site])["tensorflow"]
    assert (tf["distribution"], tf["version"]) == ("tensorflow", "2.12.0")


def test_tensorflow_intel_behind_the_windows_metapackage(machine, site) -> None:
    dist_info(site, "tensorflow", "2.13.0", record=["tensorflow-2.13.0.dist-info/METADATA"])
    tensorflow_wheel(site, "tensorflow_intel", "2.13.0", TF_CPU)
    tf = _collect(machine, [site])["tensorflow"]
    assert (tf["distribution"], tf["version"]) == ("tensorflow-intel", "2.13.0")


def test_a_metapackage_alone_is_no_tensorflow(machine, site) -> None:
    dist_info(site, "tensorflow_gpu", "2.12.0", record=["tensorflow_gpu-2.12.0.dist-info/RECORD"])
    facts = _collect(machine, [site])
    assert facts["tensorflow"] is None
    assert "tensorflow-gpu 2.12.0 is installed" in facts["reasons"]["tensorflow"]


def test_first_tensorflow_on_sys_path_wins(machine, tmp_path) -> None:
    user_site, venv_site = tmp_path / "user", tmp_path / "venv"
    user_build_info = tensorflow_wheel(user_site, "tensorflow_cpu", "2.21.0", TF_CPU)
    tensorflow_wheel(venv_site, "tensorflow", "2.15.0", TF_215_GPU)
    tf = _collect(machine, [user_site, venv_site])["tensorflow"]
    assert (tf["distribution"], tf["is_cuda_build"]) == ("tensorflow-cpu", False)
    assert tf["source"] == str(user_build_info)
    tf = _collect(machine, [venv_site, user_site])["tensorflow"]
    assert (tf["distribution"], tf["is_cuda_build"]) == ("tensorflow", True)


def test_leftover_folder_without_init_does_not_shadow(machine, tmp_path) -> None:
    leftover, real = tmp_path / "leftover", tmp_path / "real"
    write(leftover / "tensorflow" / "python" / "platform" / "build_info.py", TF_CPU)
    tensorflow_wheel(real, "tensorflow", "2.15.0", TF_215_GPU)
    tf = _collect(machine, [leftover, real])["tensorflow"]
    assert tf["is_cuda_build"] is True


def test_tensorflow_without_metadata(machine, site) -> None:
    write(site / "tensorflow" / "__init__.py")
    write(site / "tensorflow" / "python" / "platform" / "build_info.py", TF_215_GPU)
    facts = _collect(machine, [site])
    tf = facts["tensorflow"]
    assert (tf["distribution"], tf["version"]) == (None, None)
    assert tf["cuda_version"] == "12.2"
    assert "ships the tensorflow package" in facts["reasons"]["tensorflow.version"]


# --- torch -----------------------------------------------------------------------------


def test_torch_cu121_with_the_cudnn_wheel(machine, site) -> None:
    version_py = torch_wheel(site, "2.3.1+cu121", torch_version_py("2.3.1+cu121", "12.1"))
    dist_info(site, "nvidia_cudnn_cu12", "8.9.2.26", top_level=["nvidia"])
    dist_info(site, "nvidia_cublas_cu12", "12.1.3.1", top_level=["nvidia"])
    facts = _collect(machine, [site])
    assert facts["torch"] == {
        "version": "2.3.1+cu121",
        "cuda": "12.1",
        "hip": None,
        "cpu_only": False,
        "cudnn_version": "8.9.2",
        "cudnn_source": "nvidia-cudnn-cu12",
        "source": str(version_py),
    }
    assert not any(key.startswith("torch") for key in facts["reasons"])
    assert facts["nvidia_wheels"] == {
        "nvidia-cublas-cu12": "12.1.3.1",
        "nvidia-cudnn-cu12": "8.9.2.26",
    }


def test_cudnn_wheel_matching_the_cuda_major_is_preferred(machine, site) -> None:
    torch_wheel(site, "2.5.1+cu118", torch_version_py("2.5.1+cu118", "11.8"))
    dist_info(site, "nvidia_cudnn_cu11", "9.1.0.70")
    dist_info(site, "nvidia_cudnn_cu12", "9.5.1.17")
    torch = _collect(machine, [site])["torch"]
    assert (torch["cudnn_version"], torch["cudnn_source"]) == ("9.1.0", "nvidia-cudnn-cu11")


def test_torch_cpu_build(machine, site) -> None:
    torch_wheel(site, "2.13.0+cpu", torch_version_py("2.13.0+cpu", None))
    dist_info(site, "nvidia_ml_py", "13.615.71", top_level=["example", "pynvml"])
    facts = _collect(machine, [site])
    torch = facts["torch"]
    assert torch["version"] == "2.13.0+cpu"
    assert (torch["cuda"], torch["hip"], torch["cpu_only"]) == (None, None, True)
    assert (torch["cudnn_version"], torch["cudnn_source"]) == (None, None)
    assert "CPU-only" in facts["reasons"]["torch.cudnn_version"]
    assert facts["nvidia_wheels"] == {"nvidia-ml-py": "13.615.71"}


def test_torch_with_bundled_libcudnn(machine, site) -> None:
    torch_wheel(site, "2.4.0+cu124", torch_version_py("2.4.0+cu124", "12.4"))
    write(site / "torch" / "lib" / "libcudnn.so.9")
    write(site / "torch" / "lib" / "libcudnn_ops.so.9")
    write(site / "torch" / "lib" / "libtorch_cuda.so")
    torch = _collect(machine, [site])["torch"]
    assert (torch["cudnn_version"], torch["cudnn_source"]) == ("9", "bundled")
    assert torch["cpu_only"] is False


def test_torch_cuda_build_without_any_cudnn(machine, site) -> None:
    torch_wheel(site, "2.4.0+cu124", torch_version_py("2.4.0+cu124", "12.4"))
    facts = _collect(machine, [site])
    assert facts["torch"]["cudnn_version"] is None
    assert "no nvidia-cudnn-cu*" in facts["reasons"]["torch.cudnn_version"]
    assert "torch.cudnn_source" in facts["reasons"]


def test_torch_rocm_build(machine, site) -> None:
    text = torch_version_py("2.3.1+rocm6.0", None, hip="6.0.32830-d62f6a171")
    torch_wheel(site, "2.3.1+rocm6.0", text)
    dist_info(site, "nvidia_cudnn_cu12", "8.9.2.26")  # some other framework's
    facts = _collect(machine, [site])
    torch = facts["torch"]
    assert (torch["cuda"], torch["hip"]) == (None, "6.0.32830-d62f6a171")
    assert torch["cpu_only"] is False
    assert torch["cudnn_version"] is None
    assert "MIOpen" in facts["reasons"]["torch.cudnn_version"]


def test_old_torch_version_py_without_hip(machine, site) -> None:
    text = "__version__ = '1.4.0'\ndebug = False\ncuda = '10.1'\ngit_version = 'abc'\n"
    torch_wheel(site, "1.4.0", text)
    write(site / "torch" / "lib" / "libcudnn.so.7")
    facts = _collect(machine, [site])
    torch = facts["torch"]
    assert (torch["version"], torch["cuda"], torch["hip"], torch["cpu_only"]) == (
        "1.4.0",
        "10.1",
        None,
        False,
    )
    assert torch["cudnn_version"] == "7"
    assert not any(key.startswith("torch") for key in facts["reasons"])


def test_broken_torch_version_py_falls_back_to_metadata(machine, site) -> None:
    version_py = torch_wheel(site, "2.2.0", "__version__ = '2.2.0\n")
    facts = _collect(machine, [site])
    torch = facts["torch"]
    assert torch["version"] == "2.2.0"  # from the dist-info
    assert (torch["cuda"], torch["hip"], torch["cpu_only"], torch["source"]) == (
        None,
        None,
        None,
        None,
    )
    reasons = facts["reasons"]
    assert "torch.version" not in reasons
    assert reasons["torch.cpu_only"].startswith(f"cannot parse {version_py}")


def test_torch_without_version_py(machine, site) -> None:
    version_py = site / "torch" / "version.py"
    torch_wheel(site, "2.2.0", None)
    facts = _collect(machine, [site])
    assert facts["torch"]["version"] == "2.2.0"
    assert facts["reasons"]["torch.cuda"].startswith(f"cannot read {version_py}")


def test_torch_metadata_without_package(machine, site) -> None:
    dist_info(site, "torch", "2.3.1", top_level=["torch"])
    facts = _collect(machine, [site])
    assert facts["torch"] is None
    assert "torch 2.3.1 is installed" in facts["reasons"]["torch"]


# --- JAX -------------------------------------------------------------------------------


def test_jax_with_the_cuda12_plugin(machine, site) -> None:
    dist_info(site, "jax", "0.4.30", top_level=["jax"])
    dist_info(site, "jaxlib", "0.4.30", top_level=["jaxlib"])
    dist_info(site, "jax_cuda12_plugin", "0.4.30", top_level=["jax_cuda12_plugin"])
    dist_info(site, "jax_cuda12_pjrt", "0.4.30", top_level=["jax_plugins"])
    dist_info(site, "nvidia_cudnn_cu12", "9.1.0.70")
    facts = _collect(machine, [site])
    assert facts["jax"] == {
        "version": "0.4.30",
        "jaxlib_version": "0.4.30",
        "cuda_plugins": {"jax-cuda12-pjrt": "0.4.30", "jax-cuda12-plugin": "0.4.30"},
    }
    assert facts["nvidia_wheels"] == {"nvidia-cudnn-cu12": "9.1.0.70"}
    assert facts["torch"] is None  # the cuDNN wheel alone is no torch


def test_old_jaxlib_cuda_variant(machine, site) -> None:
    dist_info(site, "jax", "0.4.7")
    dist_info(site, "jaxlib", "0.4.7+cuda11.cudnn86")
    jax = _collect(machine, [site])["jax"]
    assert jax["cuda_plugins"] == {"jaxlib": "0.4.7+cuda11.cudnn86"}


def test_jaxlib_without_jax(machine, site) -> None:
    dist_info(site, "jaxlib", "0.4.30")
    facts = _collect(machine, [site])
    assert facts["jax"] == {"version": None, "jaxlib_version": "0.4.30", "cuda_plugins": {}}
    assert facts["reasons"]["jax.version"] == "jax is not installed"


# --- nothing installed, nvidia wheels ---------------------------------------------------


def test_nothing_installed(machine, site) -> None:
    dist_info(site, "numpy", "1.26.4")
    facts = _collect(machine, [site])
    assert (facts["tensorflow"], facts["torch"], facts["jax"]) == (None, None, None)
    assert facts["nvidia_wheels"] == {}
    assert facts["reasons"] == {}


def test_nvidia_wheels_first_on_sys_path_wins(machine, tmp_path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    dist_info(first, "nvidia-nccl-cu12", "2.21.5")
    dist_info(second, "nvidia_nccl_cu12", "2.18.1")
    dist_info(second, "nvidia_cuda_runtime_cu12", "12.1.105")
    dist_info(second, "nvidia_ml_py", "12.535.133")
    dist_info(second, "nvidiafake", "1.0")
    wheels = _collect(machine, [first, second])["nvidia_wheels"]
    assert wheels == {
        "nvidia-cuda-runtime-cu12": "12.1.105",
        "nvidia-ml-py": "12.535.133",
        "nvidia-nccl-cu12": "2.21.5",
    }
    assert list(wheels) == sorted(wheels)


# --- system libraries ------------------------------------------------------------------


def test_system_libraries_from_recorded_ldconfig(machine, site, recorded_ldconfig) -> None:
    facts = _collect(machine, [site])
    assert facts["system_libraries"] == {
        "libcudart": ["libcudart.so.11.0", "libcudart.so.12"],
        "libcudnn": ["libcudnn.so.9"],
        "libcublas": ["libcublas.so.12"],
        "libnccl": ["libnccl.so", "libnccl.so.2"],
        "libnvidia-ml": ["libnvidia-ml.so.1"],
        "libcuda": ["libcuda.so", "libcuda.so.1"],
    }
    assert "system_libraries" not in facts["reasons"]
    assert len(recorded_ldconfig) == 1
    argv = recorded_ldconfig[0]
    assert Path(argv[0]).name == "ldconfig"
    assert argv[1:] == ["-p", "timeout=5"]


def test_no_cuda_libraries_in_the_cache(machine, site, monkeypatch) -> None:
    text = "2 libs found in cache `/etc/ld.so.cache'\n\tlibz.so.1 (libc6,x86-64) => /l/libz.so.1\n"
    monkeypatch.setattr(
        subprocess_runner, "run", lambda argv, timeout: subprocess_runner.Completed(0, text, "")
    )
    libraries = _collect(machine, [site])["system_libraries"]
    assert libraries == {lib: [] for lib in frameworks.SYSTEM_LIBRARIES}


def _raiser(exc: BaseException):
    def run(argv: Sequence[str], timeout: float) -> subprocess_runner.Completed:
        raise exc

    return run


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        (
            _raiser(FileNotFoundError(2, "No such file or directory", "ldconfig")),
            "cannot run ldconfig: No such file or directory",
        ),
        (
            _raiser(subprocess.TimeoutExpired(["ldconfig", "-p"], 5.0)),
            "ldconfig -p did not answer within 5 s",
        ),
        (
            lambda argv, timeout: subprocess_runner.Completed(1, "", "ldconfig: bad cache\n"),
            "ldconfig -p exited with code 1: ldconfig: bad cache",
        ),
    ],
    ids=["missing", "timeout", "failed"],
)
def test_ldconfig_trouble_is_empty_with_a_reason(
    machine, site, monkeypatch, behaviour, expected: str
) -> None:
    monkeypatch.setattr(subprocess_runner, "run", behaviour)
    facts = _collect(machine, [site])
    assert facts["system_libraries"] == {}
    assert facts["reasons"]["system_libraries"] == expected


def test_parse_ldconfig_ignores_header_and_footer() -> None:
    parsed = frameworks.parse_ldconfig(LDCONFIG_P)
    assert parsed["libcudnn"] == ["libcudnn.so.9"]
    assert frameworks.parse_ldconfig("") == {lib: [] for lib in frameworks.SYSTEM_LIBRARIES}


# --- never importing, and the real thing ------------------------------------------------


def test_never_imports_the_frameworks(machine, site) -> None:
    trap = "raise SystemExit('imported!')\n"
    tensorflow_wheel(site, "tensorflow", "2.15.0", trap + TF_215_GPU)
    write(site / "tensorflow" / "__init__.py", trap)
    torch_wheel(site, "2.3.1", trap + torch_version_py("2.3.1", "12.1"))
    write(site / "torch" / "__init__.py", trap)
    facts = _collect(machine, [site])
    assert facts["tensorflow"]["cuda_version"] == "12.2"
    assert facts["torch"]["cuda"] == "12.1"


@pytest.mark.skipif(not REAL_FW_PYTHON.exists(), reason="no framework venv (make frameworks)")
def test_real_framework_venv(monkeypatch) -> None:
    monkeypatch.undo()  # the real ldconfig, too
    interpreter = target(str(REAL_FW_PYTHON))
    facts = frameworks.collect(CollectContext(interpreter=interpreter))["frameworks"]
    torch = facts["torch"]
    assert torch["cpu_only"] is True
    assert torch["version"].endswith("+cpu")
    assert torch["source"].endswith("torch/version.py")
    tf = facts["tensorflow"]
    assert tf["distribution"] == "tensorflow-cpu"
    assert tf["is_cuda_build"] is False
    assert tf["is_rocm_build"] is False
    assert tf["source"].endswith("tensorflow/python/platform/build_info.py")
    assert "nvidia-ml-py" in facts["nvidia_wheels"]
