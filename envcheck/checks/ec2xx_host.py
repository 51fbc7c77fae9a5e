"""Host checks (EC2xx) that compare several facts: thread pools against usable CPUs."""

from __future__ import annotations

from envcheck.checks.facts_helpers import env_int
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.model import Severity
from envcheck.snapshot import Facts, Missing

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
FRAMEWORKS = ("torch", "tensorflow", "tensorflow-cpu", "tensorflow-gpu", "jax")


@check(
    id="EC202",
    name="thread-count-above-usable-cpus",
    severity=Severity.MEDIUM,
    category="cpu",
    summary="A thread-count variable asks for more threads than there are usable CPUs",
    message="{variable}={threads} but only {usable} CPUs are usable by this process: "
    "the threads time-slice the same cores and every parallel operator waits for the slowest",
    fix="export {variable}={suggested}",
    evidence=(
        "https://pytorch.org/docs/stable/notes/multiprocessing.html (CPU oversubscription: "
        "the maximum num_thread should be floor(N/M) for N vCPUs and M processes)",
        "https://github.com/pytorch/pytorch/issues/19825 (an example twice as slow; "
        "OMP_NUM_THREADS=1 restored the usual time)",
        "https://github.com/pytorch/pytorch/issues/18183",
    ),
)
def thread_count_above_usable_cpus(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `OMP_NUM_THREADS`, `MKL_NUM_THREADS` or `OPENBLAS_NUM_THREADS` set
    higher than the CPUs this process may run on (the smaller of its affinity mask and
    its container's CPU quota). OpenMP and BLAS then start more busy-waiting threads
    than cores; they preempt each other, and with DataLoader workers each worker's pool
    multiplies the excess.

    **Best practice.** At most the usable CPUs, divided among the processes that share
    them (with N loader workers or N ranks per node, `usable // N`).
    """
    usable = facts.lookup("cpu.usable")
    if isinstance(usable, Missing) or usable is None:
        reason = usable.reason if isinstance(usable, Missing) else "usable CPUs not known"
        return Outcome.unknown(reason)
    hits = []
    for variable in THREAD_VARIABLES:
        threads = env_int(facts, variable)
        if isinstance(threads, Missing):
            return Outcome.unknown(threads.reason)
        if threads is not None and threads > usable:
            hits.append(
                Hit(
                    values={
                        "variable": variable,
                        "threads": threads,
                        "usable": usable,
                        "suggested": usable,
                    },
                    evidence={"facts": {f"environment.{variable}": threads, "cpu.usable": usable}},
                )
            )
    if hits:
        return Outcome.failed(*hits, reason=f"{len(hits)} variable(s) above {usable} CPUs")
    return Outcome.passed(f"no thread-count variable above {usable} usable CPUs")


@check(
    id="EC204",
    name="cpu-quota-below-visible-cores",
    severity=Severity.MEDIUM,
    category="cpu",
    summary="A container CPU quota is far below the cores that thread pools size themselves by",
    message="This container may use {quota} CPUs but sees {logical} cores, and no thread "
    "count is set: framework thread pools (and worker counts taken from os.cpu_count()) "
    "size themselves to the host's cores, and the quota throttles them",
    fix="export OMP_NUM_THREADS={suggested} MKL_NUM_THREADS={suggested}",
    evidence=(
        "https://github.com/pytorch/pytorch/issues/64864 (PyTorch sizes its thread pool from "
        "the host's cores, not the CPUs available to the process)",
        "https://docs.kernel.org/scheduler/sched-bwc.html (CFS bandwidth control throttles a "
        "group once its quota for the period is used)",
        "https://github.com/pytorch/pytorch/issues/22260 (performance dropped with more "
        "processes until OMP_NUM_THREADS = cpu threads / processes)",
    ),
)
def cpu_quota_below_visible_cores(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A container limited by a CPU quota (`docker run --cpus`, a
    Kubernetes CPU limit) on a many-core host. The quota does not change the cores a
    process sees: `os.cpu_count()` and OpenMP's default thread count still report every
    core of the host, so PyTorch (whose default is the host's physical cores,
    pytorch/pytorch#64864), TensorFlow and NumPy start a thread per host core,
    and the kernel's CFS bandwidth control stops the whole group each period once the
    quota is spent. Throughput drops and step times jitter.

    Checked only when a framework is installed and no thread count is set; flagged when
    the quota is less than half the visible cores.

    **Best practice.** Set `OMP_NUM_THREADS` (and `MKL_NUM_THREADS`) to the quota, and
    size DataLoader workers from the quota, not from `os.cpu_count()`.
    """
    quota = facts.lookup("cpu.cgroup_quota_cpus")
    logical = facts.lookup("cpu.logical")
    if isinstance(quota, Missing):
        return Outcome.unknown(quota.reason)
    if isinstance(logical, Missing):
        return Outcome.unknown(logical.reason)
    if quota is None:
        return Outcome.passed("no cgroup CPU quota")
    if not logical:
        return Outcome.unknown("the number of visible cores is not known")
    if isinstance(facts.section("packages"), Missing):
        return Outcome.unknown("installed packages are not known")
    installed = [n for n in FRAMEWORKS if facts.package_version(n)]
    if not installed:
        return Outcome.passed("no ML framework installed")
    for variable in THREAD_VARIABLES[:2]:
        threads = env_int(facts, variable)
        if isinstance(threads, Missing):
            return Outcome.unknown(threads.reason)
        if threads is not None:
            return Outcome.passed(f"{variable}={threads} is set")
    if quota * 2 > logical:
        return Outcome.passed(f"quota {quota:g} CPUs is at least half of {logical} cores")
    suggested = max(1, int(quota))
    return Outcome.failed(
        Hit(
            values={"quota": f"{quota:g}", "logical": logical, "suggested": suggested},
            evidence={"facts": {"cpu.cgroup_quota_cpus": quota, "cpu.logical": logical}},
        ),
        reason=f"quota {quota:g} CPUs, {logical} cores visible",
    )
