"""Real-run rules (EC701-EC704): findings measured on the user's own training run.

Pure functions of the snapshot's `run` section (filled by `envcheck run --measure`) and
`fix` section (`envcheck fix`), so a saved report re-evaluates exactly. Without them
the rules are skipped; a run that measured no step makes them unknown, with the reason.
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
CUDA_SEMANTICS = (
    "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution (CUDA work is "
    "asynchronous; .item(), .cpu(), printing a tensor wait for it)"
)
PAIRED_TRIALS = (
    "envcheck fix: interleaved baseline/candidate runs, 95 % t interval on the paired "
    "log speed ratios (docs/guide.md, `envcheck fix`)"
)
INPUT_BOUND = ("highly-input-bound", "moderately-input-bound")
# envcheck fix's settings that feed batches faster: a kept one is EC701's proven fix.
INPUT_KNOBS = (
    "num_workers",
    "persistent_workers",
    "prefetch_factor",
    "pin_memory",
    "tf_data",
    "tf_prefetch",
    "keras_workers",
)
# A share of step time worth a finding for host syncs and for checkpoint + logging.
SYNC_SHARE = 0.05
SIDE_WORK_SHARE = 0.10


def run_section(facts: Facts) -> Union[dict[str, Any], Outcome]:
    """The run section when it measured steps; otherwise the Outcome to return."""
    section = facts.section("run")
    if isinstance(section, Missing):
        return Outcome(Status.SKIPPED, "needs a measured run: `envcheck run --measure -- CMD`")
    run = dict(section)
    if not run.get("steps") or run.get("input_share") is None:
        return Outcome.unknown(f"the run measured no training step: {run.get('reason')}")
    return run


def _pct(value: Any) -> str:
    return f"{float(value) * 100:.0f}" if isinstance(value, (int, float)) else "?"


def _ms(value: Any) -> str:
    return f"{float(value) * 1000:.1f}" if isinstance(value, (int, float)) else "?"


def kept_trial(facts: Facts, knob: str) -> Optional[dict[str, Any]]:
    """The best kept `envcheck fix` trial of this knob, if one was proven."""
    section = facts.section("fix")
    if isinstance(section, Missing):
        return None
    kept = [
        t
        for t in (section.get("trials") or [])
        if t.get("decision") == "keep" and t.get("knob") == knob
    ]
    return max(kept, key=lambda t: t.get("ratio") or 0.0) if kept else None


def proven_text(trial: dict[str, Any]) -> str:
    """ "num_workers=6: 2.4x, 95 % interval 2.2-2.6, 5 of 5 pairs, loss identical"."""
    low, high = trial.get("interval") or [None, None]
    return (
        f"{trial.get('change')}: {trial.get('ratio'):.2f}x, 95 % interval {low:.2f}-{high:.2f}, "
        f"{trial.get('pairs_won')} of {trial.get('pairs')} pairs, loss {trial.get('loss')}"
    )


def _input_fix(run: dict[str, Any], facts: Facts) -> tuple[str, Optional[Impact]]:
    loader = run.get("loader") or {}
    proven = [kept_trial(facts, knob) for knob in INPUT_KNOBS]
    trial = max(
        (t for t in proven if t is not None), key=lambda t: t.get("ratio") or 0.0, default=None
    )
    if trial is not None:
        impact = Impact(
            round(float(trial["ratio"]), 2), Basis.MEASURED, f"envcheck fix: {proven_text(trial)}"
        )
        return f"{trial['change']}  # proven on this run: {proven_text(trial)}", impact
    share = float(run["input_share"])
    ceiling = Impact(
        round(1.0 / max(1.0 - share, 0.05), 2),
        Basis.ESTIMATED,
        f"upper bound if the measured wait ({share:.0%} of each step) were hidden: 1/(1-share)",
    )
    prove = "; `envcheck fix -- CMD` measures the change on this run"
    if loader.get("framework") == "torch" or loader.get("kind") == "DataLoader":
        workers = loader.get("num_workers")
        if workers == 0:
            return "DataLoader(..., num_workers=N, persistent_workers=True)" + prove, ceiling
        return (
            "make each batch cheaper (its Dataset code takes "
            f"{_ms(loader.get('dataset_s_per_batch'))} ms per batch) or add workers" + prove,
            ceiling,
        )
    if loader.get("framework") in ("tensorflow", "keras"):
        if loader.get("workers") is not None:
            return "PyDataset(..., workers=N, use_multiprocessing=True)" + prove, ceiling
        return (
            "dataset.map(fn, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)"
            + prove,
            ceiling,
        )
    return "feed the model from more loader workers, with prefetching" + prove, ceiling


def _attribution(run: dict[str, Any]) -> str:
    loader = run.get("loader") or {}
    per_batch = loader.get("dataset_s_per_batch")
    if per_batch is None:
        return ""
    where = loader.get("dataset_measured_in") or "the loader"
    share = loader.get("dataset_share_of_wait")
    part = f"; your Dataset code takes {_ms(per_batch)} ms per batch ({where})"
    if share is not None:
        part += f", {_pct(share)} % of the wait"
    return part


def _settings(run: dict[str, Any]) -> str:
    loader = run.get("loader") or {}
    names = (
        "num_workers",
        "pin_memory",
        "prefetch_factor",
        "persistent_workers",
        "batch_size",
        "workers",
        "use_multiprocessing",
    )
    shown = [f"{k}={loader[k]}" for k in names if loader.get(k) is not None]
    kind = loader.get("kind") or "loader"
    return f"{kind}({', '.join(shown)})" if shown else kind


@check(
    id="EC701",
    name="run-input-bound",
    severity=Severity.HIGH,
    category="run",
    summary="Measured on your run: the training step waits for the next batch",
    message="{share} % of each step of your run waits for the next batch ({verdict}; "
    "median step {step} ms over {steps} steps; {loader}){attribution}",
    fix="{fix}",
    evidence=(PROFILER_GUIDE,),
)
def run_input_bound(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A training loop whose step blocks on its data loader: the hook
    times each call for the next batch (a DataLoader or tf.data iterator's `__next__`,
    Keras fit's per-step iterator) in the user's own process, after a warm-up, against
    the whole step; the verdict uses the TensorFlow Profiler's bands. The user's Dataset
    code is timed as well (inside loader workers too), so the wait is attributed.

    **Best practice.** Enough loader workers (or parallel map calls) that a batch is
    always ready; `envcheck fix` tries them on the same run in interleaved pairs and the
    fix then carries the proven speedup.
    """
    run = run_section(facts)
    if isinstance(run, Outcome):
        return run
    share = float(run["input_share"])
    if run.get("verdict") not in INPUT_BOUND:
        return Outcome.passed(f"{share:.1%} of each step waits for the next batch (< 5 %)")
    fix, impact = _input_fix(run, facts)
    return Outcome.failed(
        Hit(
            values={
                "share": _pct(share),
                "verdict": str(run.get("verdict")).replace("-", " "),
                "step": _ms((run.get("step_time_s") or {}).get("median")),
                "steps": run.get("steps"),
                "loader": _settings(run),
                "attribution": _attribution(run),
                "fix": fix,
            },
            evidence={
                "input_share": share,
                "split": run.get("split"),
                "step_time_s": run.get("step_time_s"),
                "loader": run.get("loader"),
            },
            impact=impact,
        ),
        reason=f"{share:.0%} of step time waits for the next batch",
    )


@check(
    id="EC702",
    name="run-host-syncs",
    severity=Severity.MEDIUM,
    category="run",
    summary="Measured on your run: steps wait for the GPU on host syncs",
    message="{share} % of each step of your run is spent in host-device syncs "
    "({count} per step: .item(), .cpu(), printing a tensor, torch.cuda.synchronize)",
    fix="keep values on the device inside the loop: accumulate the loss in a tensor "
    "(running += loss.detach()) and call .item() once every N steps",
    evidence=(CUDA_SEMANTICS,),
)
def run_host_syncs(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A call that copies a value to the host inside every step
    (`.item()`, `.cpu()`, `float(loss)`, printing a CUDA tensor): the CPU stops until the
    GPU has finished all queued work, so the next step's kernels are not queued ahead.
    The hook counts these calls per step and times them; on a GPU their share of the
    step is the cost.

    **Best practice.** Accumulate metrics on the device and read them every N steps. On
    the CPU such calls wait for nothing: the rule passes, the count is still shown.
    """
    run = run_section(facts)
    if isinstance(run, Outcome):
        return run
    share = (run.get("split") or {}).get("host_sync") or 0.0
    count = run.get("host_syncs_per_step") or 0.0
    if run.get("device") != "cuda":
        return Outcome.passed(
            f"{count:g} host syncs per step, but no GPU in this run: nothing to wait for"
        )
    if share < SYNC_SHARE:
        return Outcome.passed(f"host syncs take {share:.1%} of each step ({count:g} per step)")
    return Outcome.failed(
        Hit(
            values={"share": _pct(share), "count": f"{count:g}"},
            evidence={"host_sync_share": share, "host_syncs_per_step": count},
            impact=Impact(
                round(1.0 / (1.0 - min(share, 0.95)), 2),
                Basis.ESTIMATED,
                "upper bound if the sync time were overlapped: 1/(1-share)",
            ),
        ),
        reason=f"host syncs take {share:.0%} of each step",
    )


@check(
    id="EC703",
    name="run-checkpoint-logging",
    severity=Severity.LOW,
    category="run",
    summary="Measured on your run: checkpoints and logging take a large share of steps",
    message="{share} % of your run's step time goes to checkpoint saves ({checkpoint} %) "
    "and logging ({logging} %)",
    fix="save checkpoints every N steps or epochs, not every few steps; log every N steps "
    "and keep printing out of the inner loop",
    evidence=(PROFILER_GUIDE,),
)
def run_checkpoint_logging(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Saving the model or printing and logging so often that the step
    spends a tenth of its time on it: the hook times `torch.save`, Keras `save`, `print`,
    `logging` and Keras callbacks inside each step.

    **Best practice.** Checkpoint and log at a fixed interval of steps or epochs.
    """
    run = run_section(facts)
    if isinstance(run, Outcome):
        return run
    shares = run.get("split") or {}
    checkpoint = float(shares.get("checkpoint") or 0.0)
    logging = float(shares.get("logging") or 0.0)
    total = checkpoint + logging
    if total < SIDE_WORK_SHARE:
        return Outcome.passed(f"checkpoints and logging take {total:.1%} of step time")
    return Outcome.failed(
        Hit(
            values={
                "share": _pct(total),
                "checkpoint": _pct(checkpoint),
                "logging": _pct(logging),
            },
            evidence={"checkpoint_share": checkpoint, "logging_share": logging},
        ),
        reason=f"checkpoints and logging take {total:.0%} of step time",
    )


@check(
    id="EC704",
    name="proven-speedup",
    severity=Severity.HIGH,
    category="run",
    summary="Proven on your run: a change that makes training faster",
    message="{change} made your run {ratio}x faster (95 % interval {low}-{high}, {won} of "
    "{pairs} interleaved pairs, loss {loss})",
    fix="{fix}",
    evidence=(PAIRED_TRIALS,),
)
def proven_speedup(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Leaving a measured speedup on the table: `envcheck fix` ran the
    unchanged command and the command with one injected change in interleaved pairs and
    the 95 % interval of their speed ratio lies above 1, with the loss unchanged. One
    finding per setting: the best value proven for it.

    **Best practice.** Apply the change (the patch `envcheck fix` wrote, or `--apply`).
    """
    section = facts.section("fix")
    if isinstance(section, Missing):
        return Outcome(Status.SKIPPED, "needs `envcheck fix -- CMD`")
    trials = list(section.get("trials") or [])
    if not trials:
        return Outcome.unknown(f"no change was tried: {section.get('reason') or 'none applied'}")
    best: dict[str, dict[str, Any]] = {}
    for trial in trials:
        knob = str(trial.get("knob") or trial.get("change"))
        if trial.get("decision") == "keep" and (
            knob not in best or (trial.get("ratio") or 0.0) > (best[knob].get("ratio") or 0.0)
        ):
            best[knob] = trial
    kept = list(best.values())
    if not kept:
        tried = ", ".join(f"{t.get('change')} ({t.get('decision')})" for t in trials)
        return Outcome.passed(f"no proven win: {tried}")
    patch = section.get("patch")
    hits = []
    for trial in sorted(kept, key=lambda t: -(t.get("ratio") or 0.0)):
        low, high = trial.get("interval") or [None, None]
        hits.append(
            Hit(
                values={
                    "change": trial.get("change"),
                    "ratio": f"{trial.get('ratio'):.2f}",
                    "low": f"{low:.2f}",
                    "high": f"{high:.2f}",
                    "won": trial.get("pairs_won"),
                    "pairs": trial.get("pairs"),
                    "loss": trial.get("loss"),
                    "fix": f"apply {patch}" if patch else str(trial.get("change")),
                },
                evidence={"trial": trial},
                impact=Impact(
                    round(float(trial["ratio"]), 2),
                    Basis.MEASURED,
                    f"envcheck fix: {proven_text(trial)}",
                ),
            )
        )
    return Outcome.failed(*hits, reason=f"{len(kept)} change(s) proven faster")
