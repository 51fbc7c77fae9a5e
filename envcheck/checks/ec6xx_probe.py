"""Probe rules (EC601-EC607): findings with *measured* impact, from the probe's numbers.

Pure functions of the snapshot's `probe` section (filled by `envcheck probe` or
`doctor --probe`), so a saved report re-evaluates exactly. Without a probe they are
skipped.

Size: seven rules whose docstrings are their reference documentation, and the wording of
measured fixes they share (per-process workers, the node's alternatives); one family stays
in one module.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.model import Basis, Impact, Severity, Status
from envcheck.snapshot import Facts, Missing

PROFILER_GUIDE = (
    "https://www.tensorflow.org/guide/data_performance_analysis (input share of step "
    "time: >= 20 % highly input-bound, 5-20 % moderately, < 5 % not)"
)
DS_ANALYZER = (
    "Mohan et al., Analyzing and Mitigating Data Stalls in DNN Training, VLDB 2021 "
    "(fetch vs prep stalls by differential runs)"
)
INPUT_BOUND = ("highly-input-bound", "moderately-input-bound")
# Reading is "the" bottleneck when it is most of the input time.
FETCH_DOMINANT = 0.5
SLOWDOWN_REASONS = (
    "sw_power_cap",
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
)


def probe_section(facts: Facts) -> Union[dict[str, Any], Outcome]:
    section = facts.section("probe")
    if isinstance(section, Missing):
        return Outcome(Status.SKIPPED, "needs the probe: `envcheck probe` or `doctor --probe`")
    return dict(section)


def measured(facts: Facts) -> Union[dict[str, Any], Outcome]:
    """The probe section when it measured end to end; otherwise the Outcome to return."""
    probe = probe_section(facts)
    if isinstance(probe, Outcome):
        return probe
    if not (probe.get("rates") or {}).get("end_to_end") or probe.get("input_share") is None:
        failure = probe.get("failure") or {}
        why = failure.get("message") or "no end-to-end measurement"
        return Outcome.unknown(f"the probe measured no end-to-end rate: {why}")
    return probe


def where(probe: dict[str, Any]) -> str:
    if probe.get("device") == "cpu":
        return "on the CPU (no GPU: decoding and the model share the same cores)"
    return f"on {probe.get('device_name') or 'the GPU'}"


def _rate(value: Any) -> str:
    return f"{value:,.0f}" if isinstance(value, (int, float)) else "?"


def _worker_fix(probe: dict[str, Any]) -> tuple[str, Optional[Impact]]:
    workers = probe.get("workers") or {}
    used, best = workers.get("used"), workers.get("recommended")
    e2e = (probe.get("rates") or {}).get("end_to_end")
    best_rate = workers.get("recommended_rate")
    tf = probe.get("framework") == "tensorflow"
    if best is not None and used is not None and best > used and best_rate and e2e:
        speedup = round(best_rate / e2e, 2)
        if tf:
            code = f"dataset.map(load, num_parallel_calls={best}).prefetch(tf.data.AUTOTUNE)"
        else:
            code = f"DataLoader(..., num_workers={best}, pin_memory=True, persistent_workers=True)"
        note = f"  # measured {_rate(best_rate)} samples/s, {speedup:g}x" + _per_process(
            probe, best
        )
        source = (
            f"probe: {_rate(e2e)} -> {_rate(best_rate)} samples/s end to end with "
            f"{best} workers instead of {used}"
        )
        return code + note, Impact(speedup, Basis.MEASURED, source)
    if not workers.get("sweep") or len(workers["sweep"]) < 2:
        sweep = "envcheck probe --tune-workers  # measure the worker counts"
        return sweep, None
    best = _best_alternative(probe)
    if best is not None:
        return "more workers measured no faster here; " + _alternative_text(best), None
    return (
        "more workers measured no faster here: make each sample cheaper (resize the images "
        "once, offline; cache decoded tensors) or decode on the GPU (NVIDIA DALI)",
        None,
    )


def _per_process(probe: dict[str, Any], workers: int) -> str:
    """ ", per process: 8 processes x 2 = 16 of 16 cores" when the node runs several."""
    node = probe.get("node") or {}
    processes = node.get("processes")
    if not isinstance(processes, int) or processes < 2:
        return ""
    return (
        f", per process: {processes} processes x {workers} = {processes * workers} workers "
        f"on {node.get('usable_cores')} cores"
    )


# An alternative whose measured speedup is below this is reported as no faster (noise).
ALTERNATIVE_HELPS = 1.05
ALTERNATIVE_FIXES = {
    "pre-resized": "resize the images once, offline (shorter side {short_side} px)",
    "packed-shards": "pack the files into tar shards (WebDataset) or TFRecords",
    "gpu-decode": "decode on the GPU: torchvision.io.decode_jpeg(data, device='cuda')",
    "dali": "run the pipeline on the GPU with NVIDIA DALI",
}


def _alternative_text(item: dict[str, Any]) -> str:
    what = ALTERNATIVE_FIXES.get(str(item.get("name")), str(item.get("name")))
    what = what.format(short_side=item.get("short_side", "?"))
    label = item.get("label")
    if item.get("status") == "measured":
        unit = "files/s read cold" if item.get("name") == "packed-shards" else "samples/s"
        rates = f"{_rate(item.get('baseline_rate'))} -> {_rate(item.get('rate'))} {unit}"
        if item.get("same_filesystem") is False:
            rates += "; the shards were on another filesystem (the temporary folder's)"
        if float(item.get("speedup") or 0) < ALTERNATIVE_HELPS:
            return f"{what} ({label}, measured no faster here: {rates})"
        return f"{what} ({label}, measured {item.get('speedup', 0):.1f}x: {rates})"
    return f"{what} ({label}, not measured: {item.get('reason')})"


def alternatives_fix(probe: dict[str, Any]) -> str:
    """The measured alternatives, fastest first, then those that could not be measured."""
    found = [a for a in probe.get("alternatives") or [] if isinstance(a, dict)]
    if not found:
        return ""
    measured = sorted(
        (a for a in found if a.get("status") == "measured"),
        key=lambda a: -float(a.get("speedup") or 0),
    )
    rest = [a for a in found if a.get("status") != "measured"]
    return "; ".join(_alternative_text(a) for a in measured + rest)


@check(
    id="EC601",
    name="input-bound-training",
    severity=Severity.HIGH,
    category="probe",
    summary="Measured: the model waits for the input pipeline",
    message="{rates} {where}; {share} % of each training step {how} ({verdict})",
    fix="{fix}",
    evidence=(PROFILER_GUIDE, DS_ANALYZER),
)
def input_bound_training(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A training step that waits for its next batch: the probe trains the
    model on the pipeline's batches and times each step's wait separately from the copy to
    the device and the compute, after synchronising the device, so hidden asynchrony
    cannot make a starved GPU look busy. The verdict uses the TensorFlow Profiler's bands
    (input share of step time >= 20 % highly, 5-20 % moderately input-bound). On the CPU
    the pipeline's threads and workers also take cores from the model, so there the share
    is the end-to-end slowdown against the compute ceiling when that is larger.

    **Best practice.** Enough loader workers that a batch is always ready: the fix names
    the smallest worker count the probe's sweep measured within 5 % of the best rate, with
    the measured speedup. If no worker count helps, each sample is too expensive for this
    machine's cores: pre-resize the images, cache decoded data, or decode on the GPU.
    """
    probe = measured(facts)
    if isinstance(probe, Outcome):
        return probe
    share = float(probe["input_share"])
    if probe.get("verdict") not in INPUT_BOUND:
        return Outcome.passed(f"{share:.1%} of each step waits for input (< 5 %)")
    rates = probe.get("rates") or {}
    fix, impact = _worker_fix(probe)
    return Outcome.failed(
        Hit(
            values={
                **_rates_and_how(probe),
                "where": where(probe),
                "share": f"{share * 100:.0f}",
                "verdict": str(probe.get("verdict")).replace("-", " "),
                "fix": fix,
            },
            evidence={
                "rates": rates,
                "input_share": share,
                "workers": probe.get("workers"),
                "device": probe.get("device"),
            },
            impact=impact,
        ),
        reason=f"{share:.0%} of step time waits for input",
    )


def _rates_and_how(probe: dict[str, Any]) -> dict[str, str]:
    """The rates clause and how the share was measured. On the CPU the pipeline alone can
    outrun the model and still slow it down (both take the same cores): say so plainly
    rather than "supplies more than it consumes" next to an input-bound verdict."""
    rates = probe.get("rates") or {}
    supplied, consumed = rates.get("input"), rates.get("compute")
    end_to_end = _rate(rates.get("end_to_end"))
    if probe.get("input_share_basis") != "slowdown":
        how = "waits for input"
    elif (
        isinstance(supplied, (int, float))
        and isinstance(consumed, (int, float))
        and (supplied >= consumed)
    ):
        return {
            "rates": f"alone, the input pipeline supplies {_rate(supplied)} samples/s and the "
            f"model trains {_rate(consumed)} samples/s, but together {end_to_end} samples/s",
            "how": "is lost to input",
        }
    else:
        how = f"goes to input (end to end {end_to_end} samples/s against the ceiling)"
    return {
        "rates": f"the input pipeline supplies {_rate(supplied)} samples/s, the model consumes "
        f"{_rate(consumed)} samples/s",
        "how": how,
    }


@check(
    id="EC602",
    name="input-stall-in-reading",
    severity=Severity.MEDIUM,
    category="probe",
    summary="Measured: reading the files, not decoding them, is the input stall",
    message="{fetch} % of the input time is reading files from {path} (cold reads: "
    "{cold} samples/s; from the page cache: {warm} samples/s)",
    fix="copy the dataset to a local NVMe/SSD (or /dev/shm when it fits in memory), or pack "
    "small files into shards (TFRecord, WebDataset) so reads are large and sequential",
    evidence=(DS_ANALYZER,),
)
def input_stall_in_reading(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** An input stall spent reading: DS-Analyzer's differential runs time
    the pipeline on files whose cached pages were just dropped (fetch + prep) and on
    cached files (prep only); the difference is the fetch stall. When it is most of the
    input time, more decoding workers will not help: the disk (or network share) is the
    bottleneck.

    **Best practice.** Faster storage for the training set (local NVMe, RAM when it
    fits), larger sequential files, or caching after the first epoch.
    """
    probe = measured(facts)
    if isinstance(probe, Outcome):
        return probe
    if probe.get("verdict") not in INPUT_BOUND:
        return Outcome.passed("training is not input-bound: the read rate does not limit it")
    stall = probe.get("stall") or {}
    if stall.get("pages_dropped") is False:
        return Outcome.unknown("cached pages could not be dropped: cold reads not measured")
    fetch = stall.get("fetch_share")
    if fetch is None:
        return Outcome.unknown("no cold-read measurement")
    if fetch < FETCH_DOMINANT:
        return Outcome.passed(f"reading is {fetch:.0%} of the input time; decoding dominates")
    dataset = probe.get("dataset") or {}
    return Outcome.failed(
        Hit(
            values={
                "fetch": f"{fetch * 100:.0f}",
                "path": dataset.get("path") or "the generated dataset",
                "cold": _rate(stall.get("fetch_prep_rate")),
                "warm": _rate(stall.get("prep_rate")),
            },
            evidence={"stall": stall},
        ),
        reason=f"reading is {fetch:.0%} of the input time",
    )


@check(
    id="EC603",
    name="probe-could-not-measure",
    severity=Severity.MEDIUM,
    category="probe",
    summary="The probe could not train: why, and what that says about the setup",
    message="the probe could not measure training ({kind}): {reason}",
    fix="{fix}",
    evidence=("envcheck docs/probe.md (failure kinds)",),
)
def probe_could_not_measure(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A training loop that cannot run at all: the framework is missing or
    cannot see the GPU, the model does not fit in memory even at batch size 1, the
    images cannot be read, or the child crashed or hung. Each is reported by kind with the
    framework's own message, never as a traceback.

    **Best practice.** Fix the named cause and probe again; `--device cpu` measures the
    input pipeline even where the GPU cannot be used.
    """
    probe = probe_section(facts)
    if isinstance(probe, Outcome):
        return probe
    failure = probe.get("failure")
    if not failure:
        return Outcome.passed("the probe ran every phase")
    kind = str(failure.get("kind"))
    on_cpu = probe.get("device") == "cpu"
    fixes = {
        "import": "install the framework into the audited environment, or pick the other "
        "with --framework",
        "device": "see the GPU and frameworks checks above; --device cpu measures the pipeline",
        "oom": "free memory (other processes) or probe a smaller --model / --batch-size"
        if on_cpu
        else "free the GPU (other processes) or probe a smaller --model / --batch-size",
        "timeout": "probe with a smaller --budget, --image-size or --model",
        "data": "point --data at an image folder (class subfolders of JPEG/PNG files)",
        "model": "use a built-in model (small-cnn, deep-cnn) or install torchvision",
    }
    return Outcome.failed(
        Hit(
            values={
                "kind": kind,
                "reason": failure.get("message"),
                "fix": fixes.get(kind, "run `envcheck probe -v` to see the child's output"),
            },
            evidence={"failure": failure, "status": probe.get("status")},
        ),
        reason=f"probe failed: {kind}",
    )


@check(
    id="EC604",
    name="gpu-slowdown-under-load",
    severity=Severity.MEDIUM,
    category="probe",
    summary="Measured: the GPU slowed its clocks for power or heat while training",
    message="during the probe's {phase} phase (GPU {util} % busy) the clocks were held back: "
    "{reasons|join}",
    fix="check cooling and the power limit: nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE",
    evidence=("https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",),
)
def gpu_slowdown_under_load(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Power capping, thermal slowdown or a power brake while the GPU is
    busy: the same model trains slower than the GPU can. At idle these reasons say little;
    the probe samples them at its busiest moment.

    **Best practice.** Restore airflow and cooling, raise a lowered power limit
    (`nvidia-smi -pl`), and check the power supply for power-brake events.
    """
    probe = probe_section(facts)
    if isinstance(probe, Outcome):
        return probe
    if probe.get("device") == "cpu":
        return Outcome(Status.SKIPPED, "the probe ran on the CPU")
    load = probe.get("gpu_under_load") or {}
    reasons = load.get("clocks_event_reasons")
    if reasons is None:
        return Outcome.unknown("no clock event reasons sampled under load")
    slow = [r for r in reasons if r in SLOWDOWN_REASONS]
    if not slow:
        return Outcome.passed(f"no power or thermal slowdown at {load.get('gpu_util')} % busy")
    return Outcome.failed(
        Hit(
            values={"phase": load.get("phase"), "util": load.get("gpu_util"), "reasons": slow},
            evidence={"gpu_under_load": load},
        ),
        reason="slowdown reasons under load",
    )


@check(
    id="EC605",
    name="pcie-link-degraded-under-load",
    severity=Severity.MEDIUM,
    category="probe",
    summary="Measured: the GPU's PCIe link ran below its maximum while training",
    message="under load (GPU {util} % busy) the PCIe link ran at gen {gen} x{width}; "
    "the card and slot can do gen {max_gen} x{max_width}",
    fix="reseat the card in a full x16 slot; check the BIOS PCIe settings and riser cables",
    evidence=("https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html",),
)
def pcie_link_degraded_under_load(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A PCIe link narrower or older than the card's maximum while the GPU
    is busy (idle links legitimately drop to gen 1 to save power, so the doctor's idle
    reading cannot tell): host-to-device copies are slower by the same factor.

    **Best practice.** A full-width slot at the card's generation; check risers and BIOS.
    """
    probe = probe_section(facts)
    if isinstance(probe, Outcome):
        return probe
    if probe.get("device") == "cpu":
        return Outcome(Status.SKIPPED, "the probe ran on the CPU")
    load = probe.get("gpu_under_load") or {}
    keys = ("gen", "max_gen", "width", "max_width")
    if any(not isinstance(load.get(k), int) for k in keys):
        return Outcome.unknown("the PCIe link was not read under load")
    if load["gen"] >= load["max_gen"] and load["width"] >= load["max_width"]:
        return Outcome.passed(f"gen {load['gen']} x{load['width']} under load, its maximum")
    return Outcome.failed(
        Hit(
            values={"util": load.get("gpu_util"), **{k: load[k] for k in keys}},
            evidence={"gpu_under_load": load},
        ),
        reason="PCIe link below its maximum under load",
    )


@check(
    id="EC606",
    name="undecodable-images",
    severity=Severity.LOW,
    category="probe",
    summary="Images in the data folder that cannot be decoded",
    message="{corrupt} of {checked} sampled images in {path} could not be decoded "
    "(e.g. {examples|join})",
    fix='find and remove them: python -c "from PIL import Image; Image.open(p).load()" '
    "for each file (or re-export them)",
    evidence=("https://pillow.readthedocs.io/en/stable/reference/Image.html#PIL.Image.open",),
)
def undecodable_images(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Corrupt or truncated image files in the training set: each one
    raises in a loader worker (ending the epoch) or is silently dropped, and each costs a
    failed decode. The probe reads and decodes every sampled file once.

    **Best practice.** Validate the dataset once, offline, and remove or re-export
    broken files.
    """
    probe = probe_section(facts)
    if isinstance(probe, Outcome):
        return probe
    dataset = probe.get("dataset") or {}
    corrupt = dataset.get("corrupt")
    if corrupt is None:
        return Outcome.unknown("the probe did not check the images")
    if corrupt == 0:
        return Outcome.passed(f"all {dataset.get('checked')} sampled images decoded")
    return Outcome.failed(
        Hit(
            values={
                "corrupt": corrupt,
                "checked": (dataset.get("checked") or 0) + corrupt,
                "path": dataset.get("path") or "the dataset",
                "examples": dataset.get("corrupt_examples") or [],
            },
            evidence={"dataset": dataset},
        ),
        reason=f"{corrupt} undecodable image(s)",
    )


@check(
    id="EC607",
    name="node-cannot-feed-its-processes",
    severity=Severity.HIGH,
    category="probe",
    summary="Measured: all of the node's cores decode less than its training processes consume",
    message="{summary}",
    fix="{fix}",
    evidence=(
        "PyTorch Lightning data_connector.py: num_workers suggestion max(1, cpus // "
        "world_size - 1) per process in DDP",
        "https://pytorch.org/vision/stable/generated/torchvision.io.decode_jpeg.html "
        "(device='cuda': nvJPEG)",
        "https://github.com/webdataset/webdataset (tar shards: sequential reads)",
    ),
)
def node_cannot_feed_its_processes(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** More training processes per node (one per GPU in data-parallel
    training) than the node's CPUs can feed: each process has its own loader workers, all
    on the same cores. The probe measures the model's rate for one process (demand =
    processes x that rate) and the pipeline alone with a worker on every core of the node
    (supply). When supply is below demand, no per-process worker count can fix it.

    **Best practice.** Make each sample cheaper or move the work off the CPU: pre-resized
    images, packed shards when reading is the stall, decoding on the GPU (nvJPEG, DALI).
    The fix lists the alternatives the probe measured on this machine, fastest first,
    labelled CPU or GPU, and says why any could not be measured.
    """
    probe = measured(facts)
    if isinstance(probe, Outcome):
        return probe
    node = probe.get("node")
    if not isinstance(node, dict):
        return Outcome.unknown("the probe has no node view (a report from an older envcheck)")
    balance, summary = node.get("balance"), node.get("summary")
    if not isinstance(balance, (int, float)) or not summary:
        return Outcome.unknown("the node's decode rate on all cores was not measured")
    if node.get("verdict") != "input-bound":
        return Outcome.passed(str(summary))
    alternatives = alternatives_fix(probe)
    workers = node.get("workers") or {}
    per_process = workers.get("per_process")
    fix = alternatives or (
        "envcheck probe --tune-workers  # measures pre-resized images, shards and GPU decoding"
    )
    if per_process is not None and int(node.get("processes") or 1) > 1:
        fix += (
            f"; meanwhile num_workers={per_process} per process "
            f"({node['processes']} x {per_process} = {workers.get('total')} of "
            f"{node.get('usable_cores')} cores)"
        )
    best = _best_alternative(probe)
    impact = None
    if best is not None:
        speedup = round(min(float(best["speedup"]), 1 / float(balance)), 2)
        if speedup > 1:
            impact = Impact(
                speedup,
                Basis.ESTIMATED,
                f"{best['name']} measured {best['speedup']:.2f}x on the input pipeline; the "
                f"node is input-bound {1 / float(balance):.1f}x, so the gain is the smaller",
            )
    return Outcome.failed(
        Hit(
            values={"summary": summary, "fix": fix},
            evidence={"node": node, "alternatives": probe.get("alternatives")},
            impact=impact,
        ),
        reason=f"supply / demand = {balance:.2f}",
    )


def _best_alternative(probe: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The fastest measured alternative that speeds up the whole pipeline (not reads
    only), if any measured faster."""
    candidates = [
        a
        for a in probe.get("alternatives") or []
        if isinstance(a, dict)
        and a.get("status") == "measured"
        and a.get("name") != "packed-shards"
        and isinstance(a.get("speedup"), (int, float))
        and a["speedup"] >= ALTERNATIVE_HELPS
    ]
    return max(candidates, key=lambda a: float(a["speedup"]), default=None)
