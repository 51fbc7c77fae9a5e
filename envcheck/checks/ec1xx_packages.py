"""Package checks (EC1xx) that need more than a version specifier."""

from __future__ import annotations

from envcheck.checks.facts_helpers import providers
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.model import Severity
from envcheck.snapshot import Facts, Missing


def _shadowing(facts: Facts, module: str) -> Outcome:
    names = providers(facts, module)
    if isinstance(names, Missing):
        return Outcome.unknown(names.reason)
    if len(names) < 2:
        if not names:
            return Outcome.passed(f"no distribution provides the {module} module")
        return Outcome.passed(f"the {module} module comes from {names[0]} alone")
    versions = {n: facts.package_version(n) for n in names}
    listed = ", ".join(f"{n} {v}" for n, v in versions.items())
    return Outcome.failed(
        Hit(
            values={"providers": listed, "winner": names[0], "others": " ".join(names[1:])},
            evidence={"facts": {f"modules.providers.{module}": names, "versions": versions}},
        ),
        reason=f"{module} is provided by {listed}",
    )


@check(
    id="EC103",
    name="tensorflow-installed-twice",
    severity=Severity.HIGH,
    category="packages",
    summary="Two TensorFlow distributions installed side by side shadow each other",
    message="The tensorflow module is installed by {providers}; `import tensorflow` loads "
    "{winner}'s files and the other build is silently ignored (or their files are mixed)",
    fix="pip uninstall -y {others} && pip install --force-reinstall {winner}",
    evidence=(
        "https://github.com/tensorflow/tensorflow/issues/22472 ('I found there is a "
        "tensorflow1.9.0 in my packages, when I uninstall it, everything works well')",
        "https://github.com/keras-team/keras/issues/6997 (install order decides whether the "
        "GPU or the CPU build is used)",
    ),
)
def tensorflow_installed_twice(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `tensorflow` together with `tensorflow-gpu`, `tensorflow-cpu`,
    `tf-nightly` or another distribution that ships the same `tensorflow/` package. pip
    installs both into one folder: the files of the one installed last overwrite the
    other's, and uninstalling one leaves the other broken. A CPU-only build can end up
    loaded on a GPU machine, or a version other than the one pinned
    (tensorflow/tensorflow#22472).

    Only distributions that actually ship `tensorflow/` files count: the `tensorflow`
    metapackage that merely depends on `tensorflow-intel` (Windows) or
    `tensorflow-macos` is not a second copy.

    **Best practice.** Exactly one TensorFlow distribution per environment; uninstall all
    of them and reinstall the one you want.
    """
    return _shadowing(facts, "tensorflow")


@check(
    id="EC107",
    name="pynvml-module-shadowed",
    severity=Severity.LOW,
    category="packages",
    summary="Two distributions provide the pynvml module (old pynvml and nvidia-ml-py)",
    message="The pynvml module is installed by {providers}; GPU monitoring imports "
    "{winner}'s copy, and old copies lack NVML calls of newer drivers",
    fix="pip uninstall -y pynvml && pip install --force-reinstall nvidia-ml-py",
    evidence=(
        "https://pypi.org/project/pynvml/",
        "https://pypi.org/project/nvidia-ml-py/",
    ),
)
def pynvml_module_shadowed(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** The `pynvml` distribution before release 12 shipped its own copy of
    the `pynvml` module; NVIDIA's `nvidia-ml-py` ships a module of the same name. With
    both installed, install order decides which one `import pynvml` gets, and monitoring
    (utilization, clocks, throttle reasons) may run against bindings older than the
    driver, failing on calls such as `nvmlDeviceGetCurrentClocksEventReasons`.

    **Best practice.** Depend on `nvidia-ml-py` only: `pynvml` 12 and later is deprecated
    and only depends on it.
    """
    return _shadowing(facts, "pynvml")
