"""GPU device rules (EC307-EC313): clocks, PCIe link, persistence, memory health,
other processes, MIG, mixed models. One finding per affected device, naming it."""

from __future__ import annotations

from typing import Any, Callable, Optional

from envcheck.checks.facts_helpers import outcome_over
from envcheck.checks.gpu_facts import device_hit, devices, label
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.engine.template import human_bytes
from envcheck.model import Severity
from envcheck.snapshot import Facts, Missing

DeviceTest = Callable[[dict[str, Any]], "Optional[Hit] | str"]


def per_device(facts: Facts, test: DeviceTest, none_found: str) -> Outcome:
    """Run `test` on every device: a Hit fails it, a string is an unknown reason."""
    found = devices(facts)
    if isinstance(found, Missing):
        return Outcome.unknown(found.reason)
    if not found:
        return Outcome.passed("no NVIDIA GPU")
    return outcome_over(found, test, label, none_found, "GPU(s)")


def _reason(device: dict[str, Any], field: str) -> str:
    why = (device.get("reasons") or {}).get(field)
    return f"{field} {why}" if why else f"{field} not recorded"


LIMITING_REASONS = {
    "sw_power_cap": "the software power cap",
    "hw_slowdown": "hardware slowdown (power or thermal)",
    "sw_thermal_slowdown": "software thermal slowdown",
    "hw_thermal_slowdown": "hardware thermal slowdown",
    "hw_power_brake_slowdown": "the external power brake",
}


@check(
    id="EC307",
    name="gpu-clocks-limited",
    severity=Severity.HIGH,
    category="gpu",
    summary="GPU clocks held down by power or thermal limits",
    message="{device}: clocks limited by {limits} (SM {sm} of {max_sm} MHz)",
    fix="check cooling and power delivery; `nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE` "
    "shows which limit is active",
    evidence=(
        "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",
        "NVML clock event reasons: SW power cap 0x4, HW slowdown 0x8, SW thermal 0x20, "
        "HW thermal 0x40, HW power brake 0x80",
    ),
)
def gpu_clocks_limited(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A GPU whose clocks are being held below what the workload asks for
    by the power cap, a thermal limit or a hardware slowdown signal. NVML reports why in
    the clock event (formerly "throttle") reasons. Training then runs at the reduced
    clock however well fed the GPU is. Idle and application-clock reasons are not
    flagged. The reasons are most telling under load: the probe samples them during
    training; a reading at idle that already shows one is a strong sign.

    **Best practice.** Fix airflow and power (a dusty heatsink, a blocked fan, a power
    limit set below default with `nvidia-smi -pl`, an underrated PSU cable), then check
    again under load.
    """

    def test(device: dict[str, Any]) -> Optional[Hit] | str:
        reasons = device.get("clocks_event_reasons")
        if reasons is None:
            return _reason(device, "clocks_event_reasons")
        limits = [r for r in reasons if r in LIMITING_REASONS]
        if not limits:
            return None
        clocks = device.get("clocks_mhz") or {}
        return device_hit(
            device,
            {
                "limits": ", ".join(f"{LIMITING_REASONS[r]} ({r})" for r in limits),
                "sm": clocks.get("sm", "?"),
                "max_sm": clocks.get("max_sm", "?"),
            },
            clocks_event_reasons=reasons,
            clocks_mhz=clocks,
        )

    return per_device(facts, test, "no power or thermal clock limit active")


@check(
    id="EC308",
    name="pcie-link-below-max",
    severity=Severity.HIGH,
    category="gpu",
    summary="GPU PCIe link trained below its maximum generation or width under load",
    message="{device}: PCIe Gen{gen} x{width} under load, capable of Gen{max_gen} x{max_width}",
    fix="reseat the GPU in a CPU-attached x16 slot, check the riser and BIOS PCIe settings; "
    "`nvidia-smi -q -d PCIE` shows the link",
    evidence=(
        "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html "
        "(nvmlDeviceGetCurrPcieLinkGeneration/Width vs nvmlDeviceGetMaxPcieLinkGeneration/Width)",
        "local-inference-lab/rtx6kpro PR #88 (a GPU at Gen2 for hours with no error)",
    ),
)
def pcie_link_below_max(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A GPU whose PCIe link runs at a lower generation or width than both
    it and the slot support: a card in an x4 slot or behind a bad riser, a link that
    trained at Gen1 after a marginal connection. Host-to-device copies (every batch)
    slow in proportion, with no error anywhere.

    GPUs lower their link generation when idle to save power, so a reading at idle
    proves nothing: it is reported as *unknown* until a reading under load exists (the
    probe records one). A link at its maximum passes at any load.

    **Best practice.** Put the GPU in a full-width, CPU-attached slot; replace risers and
    extenders; confirm with `nvidia-smi -q -d PCIE` during training.
    """

    def test(device: dict[str, Any]) -> Optional[Hit] | str:
        pcie = device.get("pcie") or {}
        raw = {k: pcie.get(k) for k in ("gen", "max_gen", "width", "max_width")}
        if any(not isinstance(v, int) for v in raw.values()):
            return _reason(device, "pcie")
        values: dict[str, int] = {k: int(v) for k, v in raw.items() if v is not None}
        if values["gen"] >= values["max_gen"] and values["width"] >= values["max_width"]:
            return None
        if not device.get("pcie_sampled_under_load"):
            return (
                f"link Gen{values['gen']} x{values['width']} of Gen{values['max_gen']} "
                f"x{values['max_width']} read at idle (GPUs lower the link when idle; the "
                "probe re-checks under load)"
            )
        return device_hit(device, dict(values), pcie=pcie)

    return per_device(facts, test, "every PCIe link at its maximum")


@check(
    id="EC309",
    name="persistence-mode-off",
    severity=Severity.LOW,
    category="gpu",
    summary="GPU persistence mode is off on Linux: every process start reinitialises the GPU",
    message="{device}: persistence mode is off; each CUDA process start waits for the driver "
    "to initialise the GPU",
    fix="sudo nvidia-smi -pm 1   # or enable the nvidia-persistenced service",
    evidence=("https://docs.nvidia.com/deploy/driver-persistence/index.html",),
)
def persistence_mode_off(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** On Linux without a display server, the driver tears the GPU state
    down when the last client exits, and the next CUDA process pays for initialising it
    again (seconds per GPU on large machines). Short jobs, test suites and every
    DataLoader-heavy restart pay it each time.

    **Best practice.** Run `nvidia-persistenced` (or `nvidia-smi -pm 1`) on training
    hosts. Not checked on Windows, where the setting does not exist.
    """
    system = facts.lookup("platform.system")
    if isinstance(system, Missing):
        return Outcome.unknown(system.reason)
    if system != "Linux":
        return Outcome.passed(f"persistence mode is a Linux setting (this is {system})")

    def test(device: dict[str, Any]) -> Optional[Hit] | str:
        mode = device.get("persistence_mode")
        if mode is None:
            return _reason(device, "persistence_mode")
        if mode:
            return None
        return device_hit(device, {}, persistence_mode=mode)

    return per_device(facts, test, "persistence mode on for every GPU")


@check(
    id="EC310",
    name="gpu-memory-errors",
    severity=Severity.HIGH,
    category="gpu",
    summary="GPU memory has retired pages or remapped rows pending, or row remapping failed",
    message="{device}: {problem}",
    fix="{fix}",
    evidence=(
        "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html",
        "https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html",
    ),
)
def gpu_memory_errors(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A GPU that recorded uncorrectable memory errors and needs a reset
    to take the bad memory out of use (retired pages pending, remapped rows pending), or
    that ran out of spare rows (row remapping failure). Until the reset, jobs on it can
    fail with ECC errors or Xid 48/63/64/94/95 and restart from checkpoints.

    **Best practice.** Drain the node and reset the GPU (`nvidia-smi -r`) or reboot; a
    remapping failure means the board should be replaced.
    """

    def test(device: dict[str, Any]) -> Optional[Hit] | str:
        pages = device.get("retired_pages") or {}
        rows = device.get("remapped_rows") or {}
        problems, fix = [], "drain the node, then reset the GPU: sudo nvidia-smi -r -i {index}"
        if rows.get("failed"):
            problems.append("row remapping failed (no spare rows left)")
            fix = "take the GPU out of service and replace it (row remapping failure)"
        if rows.get("pending"):
            problems.append("remapped rows pending a reset")
        if pages.get("pending"):
            problems.append("retired pages pending a reset")
        if problems:
            return device_hit(
                device,
                {"problem": "; ".join(problems), "fix": fix.format(index=device.get("index"))},
                retired_pages=pages,
                remapped_rows=rows,
            )
        if device.get("retired_pages") is None and device.get("remapped_rows") is None:
            reasons = device.get("reasons") or {}
            if "retired_pages" in reasons and "remapped_rows" in reasons:
                return None  # neither is supported (consumer GPUs): nothing to report
            return "memory health not recorded"
        return None

    return per_device(facts, test, "no pending or failed memory repairs")


FOREIGN_SHARE = 0.10


@check(
    id="EC311",
    name="foreign-gpu-processes",
    severity=Severity.MEDIUM,
    category="gpu",
    summary="Other processes hold a large share of a GPU's memory",
    message="{device}: {count} other process(es) hold {used} of {total} ({share}): {who}",
    fix="stop or move those processes (pids {pids}), or train on another GPU with "
    "CUDA_VISIBLE_DEVICES",
    evidence=(
        "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html "
        "(nvmlDeviceGetComputeRunningProcesses)",
    ),
)
def foreign_gpu_processes(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Training on a GPU that other processes already use: a forgotten
    notebook kernel, another user's job, a zombie from a crashed run. They take memory
    (a smaller batch fits, or training fails with out-of-memory) and time-slice the
    GPU's compute with the training job.

    Flagged when other processes hold at least 10 % of the GPU's memory: below that the
    effect on batch size is small, and display servers routinely hold a few hundred MB.

    **Best practice.** Give each job its own GPUs (the scheduler's GPU allocation, or
    `CUDA_VISIBLE_DEVICES`), and end stray processes.
    """

    def test(device: dict[str, Any]) -> Optional[Hit] | str:
        processes = device.get("processes")
        if processes is None:
            return _reason(device, "processes")
        total = device.get("memory_total_bytes")
        used = sum(p.get("used_bytes") or 0 for p in processes)
        if not processes or not total or used < FOREIGN_SHARE * total:
            return None
        who = ", ".join(
            f"{p.get('pid')} ({p.get('name') or '?'}, {human_bytes(p.get('used_bytes') or 0)})"
            for p in processes
        )
        return device_hit(
            device,
            {
                "count": len(processes),
                "used": human_bytes(used),
                "total": human_bytes(total),
                "share": f"{used / total:.0%}",
                "who": who,
                "pids": " ".join(str(p.get("pid")) for p in processes),
            },
            processes=processes,
            memory_total_bytes=total,
        )

    return per_device(facts, test, "no other process holds 10 % of a GPU's memory")


@check(
    id="EC312",
    name="mig-enabled",
    severity=Severity.MEDIUM,
    category="gpu",
    summary="The GPU is partitioned with MIG: training gets a slice, not the whole GPU",
    message="{device}: MIG mode is {state}; a training process sees one MIG instance, a "
    "fraction of the GPU's compute and memory",
    fix="sudo nvidia-smi -i {index} -mig 0   # when the whole GPU is meant for training "
    "(needs no running processes, then a GPU reset)",
    evidence=("https://docs.nvidia.com/datacenter/tesla/mig-user-guide/",),
)
def mig_enabled(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Training on a GPU partitioned with Multi-Instance GPU: each
    instance has a fixed share of the streaming multiprocessors and memory (for example
    1/7 of an A100 for a 1g.10gb instance), so a job expecting the full GPU runs several
    times slower, and a mode switch that is pending takes effect only after a reset.

    **Best practice.** Use MIG for many small jobs (inference, notebooks), and whole
    GPUs for training. Disabling MIG needs an idle GPU and a reset.
    """

    def test(device: dict[str, Any]) -> Optional[Hit] | str:
        mig = device.get("mig_mode")
        if mig is None:
            reasons = device.get("reasons") or {}
            return (
                None if reasons.get("mig_mode") == "not supported" else _reason(device, "mig_mode")
            )
        if not mig.get("current") and not mig.get("pending"):
            return None
        state = "enabled" if mig.get("current") else "disabled, enabled after the next reset"
        return device_hit(device, {"state": state, "index": device.get("index")}, mig_mode=mig)

    return per_device(facts, test, "MIG off on every GPU")


@check(
    id="EC313",
    name="mixed-gpu-models",
    severity=Severity.MEDIUM,
    category="gpu",
    summary="GPUs of different models in one node: data-parallel training runs at the slowest",
    message="This node mixes GPU models: {models}; data-parallel training waits for the "
    "slowest GPU at every step",
    fix="train on one model only, e.g. CUDA_VISIBLE_DEVICES={one_model_ids}",
    evidence=(
        "https://pytorch.org/docs/stable/notes/ddp.html (gradients are all-reduced every "
        "step: every rank waits for the slowest)",
    ),
)
def mixed_gpu_models(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A node with GPUs of different models (a workstation with an RTX
    3090 and an RTX A4000, a server with one replaced card). Synchronous data-parallel
    training (DDP, Horovod, `tf.distribute.MirroredStrategy`) all-reduces gradients at
    every step, so every GPU waits for the slowest one, and memory limits follow the
    smallest card.

    **Best practice.** Train on GPUs of one model (`CUDA_VISIBLE_DEVICES`), or balance the
    work explicitly.
    """
    found = devices(facts)
    if isinstance(found, Missing):
        return Outcome.unknown(found.reason)
    models: dict[str, list[int]] = {}
    for device in found:
        models.setdefault(str(device.get("name")), []).append(int(device.get("index", -1)))
    if len(models) < 2:
        return Outcome.passed(f"{len(found)} GPU(s) of one model" if found else "no NVIDIA GPU")
    largest = max(models.items(), key=lambda item: len(item[1]))
    listed = ", ".join(
        f"{len(ids)}x {name} (GPU {', '.join(map(str, ids))})" for name, ids in models.items()
    )
    return Outcome.failed(
        Hit(
            values={"models": listed, "one_model_ids": ",".join(map(str, largest[1]))},
            evidence={"facts": {"models": models}},
        ),
        reason=f"{len(models)} models",
    )
