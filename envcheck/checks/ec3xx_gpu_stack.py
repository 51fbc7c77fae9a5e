"""GPU software-stack rules (EC301-EC306, EC314): can this driver, these framework
builds and these libraries use this GPU at all?

Size: seven rules whose docstrings are their reference documentation (anti-pattern, best
practice, the sources); one family stays in one module, so EC3xx is read in one place.
"""

from __future__ import annotations

import re
from typing import Any

from envcheck.checks import cuda_tables
from envcheck.checks.facts_helpers import parse_version, tensorflow_at_least
from envcheck.checks.gpu_facts import (
    arch_supported,
    capability,
    device_hit,
    devices,
    framework_cuda_builds,
    label,
    nvidia_gpu_present,
)
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.model import Severity, Status
from envcheck.snapshot import Facts, Missing


@check(
    id="EC301",
    name="cpu-only-framework-build",
    severity=Severity.CRITICAL,
    category="frameworks",
    summary="A CPU-only framework build on a machine with an NVIDIA GPU",
    message="{framework} is a CPU-only build, but this machine has an NVIDIA GPU: "
    "training runs on the CPU",
    fix="{fix}",
    evidence=(
        "https://pytorch.org/get-started/locally/ (CUDA builds come from the "
        "download.pytorch.org/whl/cuXXX indexes; +cpu wheels have torch.version.cuda None)",
        "https://www.tensorflow.org/install/pip (Linux: pip install 'tensorflow[and-cuda]')",
        "https://docs.jax.dev/en/latest/installation.html (pip install 'jax[cuda12]')",
    ),
)
def cpu_only_framework_build(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A framework build without CUDA support on a machine with an NVIDIA
    GPU: a `+cpu` PyTorch wheel (`torch.version.cuda` is None, often from a
    requirements file that pinned the CPU index, or from a plain `pip install torch` on
    Windows), `tensorflow-cpu`, or `jax` without its CUDA plugin. Nothing fails;
    training silently runs on the CPU, orders of magnitude slower.

    Native Windows with TensorFlow 2.11 or later is EC305. ROCm builds are not flagged.

    **Best practice.** Install the CUDA build that matches the driver: PyTorch from the
    `https://download.pytorch.org/whl/cuXXX` index (at or below the driver's CUDA version),
    `pip install 'tensorflow[and-cuda]'` on Linux, `pip install 'jax[cuda12]'`.
    """
    present = nvidia_gpu_present(facts)
    if isinstance(present, Missing):
        return Outcome.unknown(present.reason)
    if not present:
        return Outcome.passed("no NVIDIA GPU on this machine")
    frameworks = facts.section("frameworks")
    if isinstance(frameworks, Missing):
        return Outcome.unknown(frameworks.reason)
    system = facts.lookup("platform.system")
    driver_cuda = facts.lookup("gpu.cuda_driver_version")
    cuda_hint = (
        f"the driver's CUDA {driver_cuda}"
        if isinstance(driver_cuda, str)
        else "the driver's CUDA version"
    )
    hits = []
    torch = frameworks.get("torch")
    if isinstance(torch, dict) and torch.get("cpu_only"):
        index = cuda_tables.pytorch_index_for(driver_cuda if isinstance(driver_cuda, str) else None)
        hits.append(
            _hit(
                f"torch {torch.get('version')}",
                f"pip install --force-reinstall torch --index-url {index}   # the CUDA build at or "
                f"below {cuda_hint}; pick one your torch version has: "
                "https://pytorch.org/get-started/locally/",
            )
        )
    tf = frameworks.get("tensorflow")
    if isinstance(tf, dict) and tf.get("is_cuda_build") is False and not tf.get("is_rocm_build"):
        version = parse_version(tf.get("version"))
        native_windows_new = (
            system == "Windows" and version is not None and (version.release[:2] >= (2, 11))
        )
        if not native_windows_new:  # that case is EC305
            dist = tf.get("distribution") or "tensorflow"
            hits.append(
                _hit(
                    f"{dist} {tf.get('version')}",
                    f"pip uninstall -y {dist} && pip install 'tensorflow[and-cuda]'",
                )
            )
    jax = frameworks.get("jax")
    if isinstance(jax, dict) and jax.get("version") and not jax.get("cuda_plugins"):
        hits.append(_hit(f"jax {jax.get('version')}", "pip install -U 'jax[cuda12]'"))
    if hits:
        return Outcome.failed(*hits, reason=f"{len(hits)} CPU-only build(s)")
    return Outcome.passed("no CPU-only framework build")


def _hit(framework: str, fix: str) -> Hit:
    return Hit(
        values={"framework": framework, "fix": fix}, evidence={"facts": {"framework": framework}}
    )


@check(
    id="EC302",
    name="gpu-invisible-to-framework",
    severity=Severity.CRITICAL,
    category="frameworks",
    summary="The framework, imported for real (--deep), does not see the GPU",
    message="{framework} does not see the NVIDIA GPU: {cause}",
    fix="{fix}",
    evidence=(
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars "
        "(CUDA_VISIBLE_DEVICES)",
        "https://pytorch.org/docs/stable/notes/cuda.html",
        "https://www.tensorflow.org/install/pip#software_requirements",
    ),
)
def gpu_invisible_to_framework(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Everything looks installed, yet `torch.cuda.is_available()` is
    False or `tf.config.list_physical_devices('GPU')` is empty. Common causes:
    `CUDA_VISIBLE_DEVICES` set to an empty string or -1 (often inherited from a job
    script), CUDA or cuDNN libraries that the framework cannot load (TensorFlow prints
    "Could not load dynamic library" and carries on on the CPU), a driver too old for the
    build (EC303), a GPU architecture missing from the build (EC306).

    Only `envcheck doctor --deep` imports the frameworks (in a child process) to see this;
    without it the rule is skipped.

    **Best practice.** Fix the cause named in the message, then confirm with
    `python -c "import torch; print(torch.cuda.is_available())"`.
    """
    deep = facts.section("deep")
    if isinstance(deep, Missing):
        return Outcome(Status.SKIPPED, "needs `envcheck doctor --deep`")
    present = nvidia_gpu_present(facts)
    if isinstance(present, Missing):
        return Outcome.unknown(present.reason)
    if not present:
        return Outcome.passed("no NVIDIA GPU on this machine")
    visible = facts.lookup("environment.CUDA_VISIBLE_DEVICES")
    hits = []
    torch = deep.get("torch")
    if isinstance(torch, dict) and torch.get("ok") and not torch.get("cuda_available"):
        hits.append(_invisible("torch", torch.get("cuda_init_error"), visible, facts))
    tf = deep.get("tensorflow")
    if isinstance(tf, dict) and tf.get("ok") and tf.get("built_with_cuda") and not tf.get("gpus"):
        hits.append(_invisible("tensorflow", tf.get("error"), visible, facts))
    failed = [
        f"{name}: {d.get('error')}"
        for name, d in deep.items()
        if isinstance(d, dict) and not d.get("ok")
    ]
    if hits:
        return Outcome.failed(*hits, reason=f"{len(hits)} framework(s) without the GPU")
    if failed:
        return Outcome.unknown("import failed: " + "; ".join(failed))
    return Outcome.passed("every installed CUDA framework sees the GPU")


def _invisible(framework: str, error: Any, visible: Any, facts: Facts) -> Hit:
    if isinstance(visible, str) and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        cause = f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
        fix = "unset CUDA_VISIBLE_DEVICES   # or set it to the GPU indices to use, e.g. 0,1"
    elif isinstance(error, str) and error:
        cause = f"CUDA initialisation failed: {error}"
        fix = "see the error; check the driver (EC303) and the CUDA/cuDNN libraries (EC304)"
    else:
        frameworks = facts.section("frameworks")
        build = frameworks.get(framework) if isinstance(frameworks, dict) else None
        if isinstance(build, dict) and (
            build.get("cpu_only") or build.get("is_cuda_build") is False
        ):
            cause = "it is a CPU-only build (EC301)"
            fix = "install the CUDA build (EC301)"
        else:
            cause = "no error was reported; the CUDA libraries may be missing or mismatched"
            fix = "check EC303/EC304 findings; run the framework with its debug logging on"
    return Hit(
        values={"framework": framework, "cause": cause, "fix": fix},
        evidence={
            "facts": {
                "framework": framework,
                "error": error,
                "environment.CUDA_VISIBLE_DEVICES": visible,
            }
        },
    )


@check(
    id="EC303",
    name="driver-too-old-for-framework-cuda",
    severity=Severity.CRITICAL,
    category="frameworks",
    summary="The NVIDIA driver is older than the framework's CUDA version requires",
    message="{framework} is built with CUDA {cuda}, which needs driver >= {minimum} on "
    "{system}; this driver is {driver} (supports CUDA {driver_cuda})",
    fix="upgrade the NVIDIA driver to >= {minimum} (e.g. sudo apt install nvidia-driver-{branch}) "
    "— or install a framework build for CUDA {driver_cuda} or older",
    evidence=(cuda_tables.CUDA_DRIVER_SOURCE,),
)
def driver_too_old_for_framework_cuda(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A framework built with a CUDA major version the installed driver
    cannot run. Under CUDA's minor-version compatibility a build for CUDA 12.x runs on any
    driver from 525.60.13 (Linux) / 527.41 (Windows); CUDA 11.x needs 450.80.02 /
    452.39; CUDA 13.x needs 580. Below that, CUDA initialisation fails ("The NVIDIA
    driver on your system is too old", "CUDA driver version is insufficient for CUDA
    runtime version") and PyTorch or TensorFlow fall back to the CPU or stop.

    **Best practice.** Upgrade the driver, or install the framework build for an older
    CUDA (PyTorch's `cu118` index, an older TensorFlow).
    """
    builds = framework_cuda_builds(facts)
    if isinstance(builds, Missing):
        return Outcome.unknown(builds.reason)
    if not builds:
        return Outcome.passed("no framework built with CUDA")
    if nvidia_gpu_present(facts) is False:
        return Outcome.passed("no NVIDIA GPU on this machine")
    gpu = facts.section("gpu")
    driver = facts.lookup("gpu.driver_version")
    if isinstance(gpu, Missing) or isinstance(driver, Missing) or not driver:
        why = (
            gpu.reason
            if isinstance(gpu, Missing)
            else (f"driver version unknown: {gpu.get('reason') or 'NVML gave none'}")
        )
        return Outcome.unknown(why)
    system = facts.lookup("platform.system")
    if isinstance(system, Missing):
        return Outcome.unknown(system.reason)
    hits, unknown = [], []
    for build in builds:
        minimum = cuda_tables.min_driver(build.major, str(system))
        if minimum is None:
            unknown.append(f"no published minimum driver for CUDA {build.major} on {system}")
            continue
        if cuda_tables.driver_key(str(driver)) >= cuda_tables.driver_key(minimum):
            continue
        hits.append(
            Hit(
                values={
                    "framework": build.framework,
                    "cuda": build.cuda,
                    "minimum": minimum,
                    "system": system,
                    "driver": driver,
                    "branch": minimum.split(".")[0],
                    "driver_cuda": facts.lookup("gpu.cuda_driver_version") or "?",
                },
                evidence={
                    "facts": {
                        "gpu.driver_version": driver,
                        "framework": build.framework,
                        "cuda": build.cuda,
                        "minimum_driver": minimum,
                    }
                },
            )
        )
    if hits:
        return Outcome.failed(*hits, reason=f"driver {driver} too old for {len(hits)} build(s)")
    if unknown:
        return Outcome.unknown("; ".join(unknown))
    return Outcome.passed(f"driver {driver} is new enough for every CUDA build")


@check(
    id="EC304",
    name="tensorflow-cuda-libraries-mismatch",
    severity=Severity.HIGH,
    category="frameworks",
    summary="The CUDA or cuDNN libraries installed differ from TensorFlow's tested build",
    message="TensorFlow {tf_version} was tested with CUDA {tested_cuda} and cuDNN "
    "{tested_cudnn}, but {problem}",
    fix="pip install 'tensorflow[and-cuda]=={tf_version}'   # brings the matching NVIDIA "
    "CUDA/cuDNN wheels (Linux)",
    evidence=(cuda_tables.TF_TESTED_SOURCE,),
)
def tensorflow_cuda_libraries_mismatch(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A TensorFlow GPU build next to CUDA or cuDNN libraries of another
    major version than the one it was built and tested with (tested Linux builds:
    2.18 → CUDA 12.5 / cuDNN 9.3; 2.16-2.17 → 12.3 / 8.9; 2.15 → 12.2 / 8.9; 2.14 →
    11.8 / 8.7; 2.12-2.13 → 11.8 / 8.6; 2.5-2.11 → 11.2 / 8.1; ...). TensorFlow looks
    for `libcudnn.so.<major>` and `libcudart.so.<major>`; with the wrong major it logs
    "Could not load dynamic library" and runs on the CPU, or fails at the first
    convolution ("DNN library is not found").

    The libraries checked are the NVIDIA pip wheels (`nvidia-cudnn-cu12`, ...) and, when
    there are none, those the dynamic loader knows (`ldconfig -p`).

    **Best practice.** On Linux, `pip install 'tensorflow[and-cuda]'` installs the
    matching CUDA and cuDNN wheels; otherwise install the versions in the table.
    """
    tf = facts.lookup("frameworks.tensorflow")
    if isinstance(tf, Missing):
        return Outcome.unknown(tf.reason)
    if not isinstance(tf, dict):
        return Outcome.passed("TensorFlow is not installed")
    if not tf.get("is_cuda_build"):
        return Outcome.passed("not a CUDA build of TensorFlow")
    version = parse_version(tf.get("version"))
    tested = cuda_tables.tf_tested_build(version) if version else None
    if version is None or tested is None:
        return Outcome.unknown(f"TensorFlow {tf.get('version')} is not in the tested-builds table")
    tested_cudnn, tested_cuda = tested
    wheels = facts.lookup("frameworks.nvidia_wheels")
    libraries = facts.lookup("frameworks.system_libraries")
    cudnn = _installed_major(wheels, libraries, r"nvidia-cudnn-cu\d+", "libcudnn")
    cudart = _installed_major(wheels, libraries, r"nvidia-cuda-runtime-cu\d+", "libcudart")
    if (
        cudnn is None
        and cudart is None
        and (isinstance(wheels, Missing) or isinstance(libraries, Missing))
    ):
        return Outcome.unknown("installed CUDA libraries not known")
    problems = []
    if cudnn is None:
        problems.append("no cuDNN library was found (pip wheel or ldconfig)")
    elif cudnn[0] != int(tested_cudnn.split(".")[0]):
        problems.append(f"the cuDNN found is {cudnn[1]} (major {cudnn[0]})")
    if cudart is None:
        problems.append("no CUDA runtime library was found")
    elif cudart[0] != int(tested_cuda.split(".")[0]):
        problems.append(f"the CUDA runtime found is {cudart[1]} (major {cudart[0]})")
    if not problems:
        return Outcome.passed(
            f"cuDNN {cudnn[1] if cudnn else '?'} and CUDA runtime "
            f"{cudart[1] if cudart else '?'} match TensorFlow {version}"
        )
    return Outcome.failed(
        Hit(
            values={
                "tf_version": str(version),
                "tested_cuda": tested_cuda,
                "tested_cudnn": tested_cudnn,
                "problem": "; ".join(problems),
            },
            evidence={"facts": {"frameworks.tensorflow": tf, "cudnn": cudnn, "cudart": cudart}},
        ),
        reason="; ".join(problems),
    )


def _installed_major(
    wheels: Any, libraries: Any, wheel_pattern: str, library: str
) -> tuple[int, str] | None:
    """(major, description) of a CUDA library: the pip wheel first, then ldconfig's soname."""
    if isinstance(wheels, dict):
        for name, version in sorted(wheels.items()):
            parsed = parse_version(version)
            if re.fullmatch(wheel_pattern, name) and parsed is not None:
                return parsed.major, f"{name} {version}"
    if isinstance(libraries, dict):
        for soname in libraries.get(library) or []:
            match = re.search(r"\.so\.(\d+)", soname)
            if match:
                return int(match.group(1)), soname
    return None


@check(
    id="EC305",
    name="tensorflow-native-windows-no-gpu",
    severity=Severity.HIGH,
    category="frameworks",
    summary="TensorFlow 2.11+ on native Windows has no GPU support",
    message="TensorFlow {version} on native Windows runs on the CPU only: 2.10 was the last "
    "release with native Windows GPU support",
    fix="run training in WSL2 (pip install 'tensorflow[and-cuda]' there), or pin "
    "'tensorflow<2.11' with CUDA 11.2 and cuDNN 8.1",
    evidence=(
        "https://www.tensorflow.org/install/pip#windows-native (TensorFlow 2.10 was the last "
        "TensorFlow release that supported GPU on native-Windows)",
        "https://github.com/tensorflow/tensorflow/releases/tag/v2.11.0",
    ),
)
def tensorflow_native_windows_no_gpu(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** TensorFlow 2.11 or later installed on native Windows to train on a
    GPU. Since 2.11 the Windows builds are CPU-only (the release notes point to WSL2 or
    the DirectML plugin); the GPU sits idle without an error.

    **Best practice.** Train under WSL2, where the Linux build with CUDA works; or stay
    on `tensorflow<2.11` with CUDA 11.2 / cuDNN 8.1; or use the DirectML plugin.
    """
    system = facts.lookup("platform.system")
    if isinstance(system, Missing):
        return Outcome.unknown(system.reason)
    if system != "Windows":
        return Outcome.passed(f"not native Windows ({system})")
    tf = tensorflow_at_least(
        facts, (2, 11), "{dist} {version} still has native Windows GPU support"
    )
    if isinstance(tf, Outcome):
        return tf
    dist, version = tf
    present = nvidia_gpu_present(facts)
    if present is False:
        return Outcome.passed("no NVIDIA GPU on this machine")
    return Outcome.failed(
        Hit(
            values={"version": str(version)},
            evidence={"facts": {"platform.system": system, f"packages.{dist}": str(version)}},
        ),
        reason=f"{dist} {version} on Windows",
    )


@check(
    id="EC306",
    name="gpu-architecture-not-in-build",
    severity=Severity.CRITICAL,
    category="frameworks",
    summary="The framework build has no kernels for this GPU's architecture",
    message="{device} (compute capability {capability}) is not supported by {framework}: {why}",
    fix="{fix}",
    evidence=(
        "https://github.com/pytorch/pytorch/issues/150733 (sm_120 with cu12.4 wheels)",
        "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ (CUDA 13.0 drops "
        "Maxwell, Pascal and Volta: compute capability below 7.5)",
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/#binary-compatibility",
    ),
)
def gpu_architecture_not_in_build(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A GPU newer (or much older) than the architectures a framework
    build carries code for. A cubin for `sm_XY` runs only on devices of the same major
    version; PTX for `compute_XY` can be compiled for newer devices at start-up. Without
    either, PyTorch warns "... with CUDA capability sm_120 is not compatible with the
    current PyTorch installation" and kernels fail ("no kernel image is available for
    execution on the device"), as with RTX 50-series cards and cu12.4 wheels
    (pytorch/pytorch#150733). CUDA 13 builds dropped Maxwell, Pascal and Volta
    (compute capability below 7.5).

    TensorFlow's list comes from its installed build information; PyTorch's from
    `torch.cuda.get_arch_list()` in the `--deep` check (otherwise only the CUDA 13 rule
    applies to it).

    **Best practice.** Install a build that includes the GPU's architecture (newer
    PyTorch wheels, e.g. cu128 for sm_120), or a CUDA 12 build for pre-Turing GPUs.
    """
    found = devices(facts)
    if isinstance(found, Missing):
        return Outcome.unknown(found.reason)
    if not found:
        return Outcome.passed("no NVIDIA GPU")
    frameworks = facts.section("frameworks")
    if isinstance(frameworks, Missing):
        return Outcome.unknown(frameworks.reason)
    builds = framework_cuda_builds(facts)
    if isinstance(builds, Missing):
        return Outcome.unknown(builds.reason)
    deep = facts.section("deep")
    arch_lists: dict[str, list[str]] = {}
    tf = frameworks.get("tensorflow")
    if isinstance(tf, dict) and tf.get("is_cuda_build") and tf.get("cuda_compute_capabilities"):
        arch_lists[f"tensorflow {tf.get('version')}"] = list(tf["cuda_compute_capabilities"])
    if isinstance(deep, dict) and isinstance(deep.get("torch"), dict):
        torch_arch = deep["torch"].get("arch_list")
        torch_build = frameworks.get("torch") or {}
        if torch_arch:
            arch_lists[f"torch {torch_build.get('version')}"] = list(torch_arch)
    hits, unknown = [], []
    for device in found:
        cap = capability(device)
        if cap is None:
            unknown.append(f"{label(device)}: compute capability not recorded")
            continue
        for build in builds:
            if build.major >= 13 and cap < cuda_tables.CUDA13_MIN_CAPABILITY:
                hits.append(
                    _arch_hit(
                        device,
                        build.framework,
                        f"CUDA {build.cuda} builds no longer support compute capability below 7.5",
                        "install the framework's CUDA 12 build",
                    )
                )
        for framework, arch_list in arch_lists.items():
            if not arch_supported(cap, arch_list):
                hits.append(
                    _arch_hit(
                        device,
                        framework,
                        f"its build carries {', '.join(arch_list)}",
                        "install a newer build that lists this architecture",
                    )
                )
    if hits:
        return Outcome.failed(*hits, reason=f"{len(hits)} unsupported GPU/build pair(s)")
    if unknown:
        return Outcome.unknown("; ".join(unknown))
    if not builds:
        return Outcome.passed("no framework built with CUDA")
    if not arch_lists:
        return Outcome.passed(
            "no CUDA 13 build on a pre-Turing GPU; architecture lists "
            "not known (PyTorch's needs --deep)"
        )
    return Outcome.passed("every GPU is covered by the builds' architecture lists")


def _arch_hit(device: dict[str, Any], framework: str, why: str, fix: str) -> Hit:
    cap = device.get("compute_capability")
    values = {"capability": cap, "framework": framework, "why": why, "fix": fix}
    return device_hit(device, values, compute_capability=cap, framework=framework)


@check(
    id="EC314",
    name="nvidia-gpu-without-driver",
    severity=Severity.CRITICAL,
    category="gpu",
    summary="An NVIDIA GPU is on the PCI bus but the driver cannot be reached",
    message="{count} NVIDIA GPU(s) on the PCI bus, but NVML is unavailable: {reason}",
    fix="install the NVIDIA driver (e.g. sudo ubuntu-drivers install, or the CUDA "
    "repository's cuda-drivers package) and reboot; in a container, run it with the "
    "NVIDIA Container Toolkit (docker run --gpus all)",
    evidence=(
        "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/",
        "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/",
    ),
)
def nvidia_gpu_without_driver(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** The GPU is physically there (the PCI bus lists an NVIDIA display or
    3D controller) but no driver answers: the driver is not installed, not loaded (a
    kernel update without DKMS rebuild, Secure Boot refusing the module), or a
    container was started without the NVIDIA runtime. Every framework falls back to the
    CPU.

    **Best practice.** Install and load the driver; start containers with `--gpus all`
    (NVIDIA Container Toolkit).
    """
    gpu = facts.section("gpu")
    if isinstance(gpu, Missing):
        return Outcome.unknown(gpu.reason)
    if gpu.get("status") == "ok":
        return Outcome.passed(f"NVML answers (driver {gpu.get('driver_version')})")
    count = gpu.get("pci_nvidia_devices")
    if not isinstance(count, int):
        return Outcome.unknown("NVML unavailable and the PCI bus could not be read")
    if count == 0:
        return Outcome.passed("no NVIDIA GPU on the PCI bus")
    return Outcome.failed(
        Hit(
            values={"count": count, "reason": gpu.get("reason") or "no reason given"},
            evidence={"facts": {"gpu.pci_nvidia_devices": count, "gpu.reason": gpu.get("reason")}},
        ),
        reason=f"{count} GPU(s) without a driver",
    )
