"""Theano (EC106, EC108): a retired framework, and its old GPU backend's allocator."""

from __future__ import annotations

from envcheck.checks.facts_helpers import parse_version
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.model import Severity
from envcheck.snapshot import Facts, Missing


@check(
    id="EC106",
    name="theano-installed",
    severity=Severity.LOW,
    category="packages",
    summary="Theano is installed: development ended in 2017, the last release is 1.0.5",
    message="Theano {packages.theano} is installed; Theano is no longer developed (last "
    "release 1.0.5, 2020) and does not support current CUDA, cuDNN or GPUs well",
    fix="port the model to PyTorch or TensorFlow (for PyMC models: pip install pytensor)",
    evidence=(
        "https://github.com/Theano/Theano ('MILA will stop developing Theano')",
        "https://groups.google.com/d/msg/theano-users/7Poq8BZutbY/rNCIfvAEAwAJ (2017-09-28: "
        "the next release, 1.0, will be the last main release)",
        "https://github.com/pymc-devs/pytensor (the maintained successor)",
    ),
)
def theano_installed(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Training with Theano. MILA stopped developing it in 2017; 1.0.5
    (2020) is the last release. Its GPU backends predate current CUDA and cuDNN
    releases ("cuDNN Mixed dnn version" warnings, unsupported GPU architectures), and
    Keras dropped it as a backend. Theano-PyMC, then Aesara, then PyTensor took over the
    code base for PyMC's needs, not for GPU training.

    **Best practice.** Port training code to PyTorch, TensorFlow or JAX.
    """
    version = facts.package_version("theano")
    if isinstance(version, Missing):
        return Outcome.unknown(version.reason)
    if version is None:
        return Outcome.passed("Theano is not installed")
    return Outcome.failed(
        Hit(evidence={"facts": {"packages.theano": version}}), reason=f"theano {version}"
    )


@check(
    id="EC108",
    name="theano-cnmem-disabled",
    severity=Severity.MEDIUM,
    category="packages",
    summary="Theano's old CUDA backend runs without its CNMeM memory pool",
    message="Theano {version} uses the old CUDA backend (device={device}) with lib.cnmem "
    "{cnmem}: it prints 'CNMeM is disabled' and allocates GPU memory call by call",
    fix='export THEANO_FLAGS="$THEANO_FLAGS,lib.cnmem=0.8"   # or [lib] cnmem = 0.8 in ~/.theanorc',
    evidence=(
        "https://github.com/Theano/Theano/blob/rel-0.9.0/theano/sandbox/cuda/__init__.py: "
        "'Using gpu device %d: %s (CNMeM is %s, "
        "cuDNN %s)'",
        "https://github.com/Theano/Theano/blob/rel-0.9.0/theano/configdefaults.py: "
        "lib.cnmem 'Do we enable CNMeM or not (a faster CUDA "
        "memory allocator)' — default 0, not enabled",
        "https://docs.huihoo.com/theano/0.8/library/config.html",
    ),
)
def theano_cnmem_disabled(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Theano up to 0.9 with the old CUDA backend (`device=gpu`,
    `device=gpu0`, ...) and `lib.cnmem` at its default 0. The device banner then reads
    "Using gpu device 0: ... (CNMeM is disabled, ...)": every allocation goes to
    cudaMalloc/cudaFree, which synchronise the GPU. Theano's documentation calls CNMeM
    "a faster CUDA memory allocator"; no primary source gives a speedup figure, so none
    is claimed here.

    Theano 1.0 removed that backend (`device=cuda*`, libgpuarray), and `lib.cnmem` with it;
    its counterpart there is `gpuarray.preallocate`.

    **Best practice.** `lib.cnmem=0.8` (a pool of 80 % of GPU memory), or better, retire
    Theano (EC106).
    """
    version_text = facts.package_version("theano")
    if isinstance(version_text, Missing):
        return Outcome.unknown(version_text.reason)
    if version_text is None:
        return Outcome.passed("Theano is not installed")
    version = parse_version(version_text)
    if version is None:
        return Outcome.unknown(f"theano version {version_text!r} is not a PEP 440 version")
    if version.release >= (0, 10):
        return Outcome.passed(f"Theano {version} has no old CUDA backend (no CNMeM)")
    flags = facts.lookup("theano.flags")
    if isinstance(flags, Missing):
        return Outcome.unknown(flags.reason)
    flags = flags or {}
    device = flags.get("device", "cpu")
    if not device.startswith("gpu"):
        return Outcome.passed(f"Theano device is {device}, not the old CUDA backend")
    cnmem = flags.get("lib.cnmem", "0")
    try:
        enabled = float(cnmem) > 0
    except ValueError:
        return Outcome.unknown(f"lib.cnmem = {cnmem!r} is not a number")
    if enabled:
        return Outcome.passed(f"lib.cnmem = {cnmem}")
    return Outcome.failed(
        Hit(
            values={"version": str(version), "device": device, "cnmem": cnmem},
            evidence={"facts": {"packages.theano": version_text, "theano.flags": flags}},
        ),
        reason=f"device={device}, lib.cnmem={cnmem}",
    )
