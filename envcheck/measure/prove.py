"""`prove_fixes(request)`: try each injectable change on the user's own run, in
interleaved pairs against the unchanged command, and keep only what is proven faster.

First one unchanged run (the scout) measures the run as it is and reads the live loader
settings; the candidates follow from them (candidates.py). Each candidate then gets up
to `pairs` pairs of runs, unchanged then changed, each stopped once its window is
measured; after `min_pairs` pairs a candidate whose interval already excludes 1 stops
early. The loss of the first steps is recorded in every run and compared (stats.py).
A kept DataLoader change becomes a unified diff against the script (patch.py), applied
only with `apply`. The whole thing stays within `budget_s`.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from envcheck.measure import candidates as cands
from envcheck.measure import patch, stats
from envcheck.measure.service import MeasureRequest, measure_run

DEFAULT_STEPS = 30
DEFAULT_PAIRS = 5
DEFAULT_BUDGET_S = 900.0
LOADER_KNOBS = ("num_workers", "persistent_workers", "prefetch_factor", "pin_memory")
LOG_TAIL = 600


@dataclass
class FixRequest:
    command: Sequence[str]
    steps: int = DEFAULT_STEPS
    seconds: float = 60.0
    warmup: int = 5
    pairs: int = DEFAULT_PAIRS
    min_pairs: int = 3
    budget_s: float = DEFAULT_BUDGET_S
    only: Sequence[str] = ()
    apply: bool = False
    patch_path: Optional[Path] = None
    cores: int = 1
    loss_steps: int = 20
    progress: Optional[Callable[[str], None]] = None


class Trials:
    """Runs the command (unchanged or with a candidate) quietly, within the budget."""

    def __init__(self, request: FixRequest, logs: Path) -> None:
        self.request = request
        self.logs = logs
        self.started = time.monotonic()
        self.count = 0
        self.run_s = 0.0  # the longest run so far: what the next one may take

    def left(self) -> float:
        return self.request.budget_s - (time.monotonic() - self.started)

    def affordable(self, runs: int) -> bool:
        return self.left() >= runs * self.run_s

    def run(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        self.count += 1
        log = self.logs / f"run-{self.count}.log"
        began = time.monotonic()
        with open(log, "w", encoding="utf-8") as handle:
            section = measure_run(
                MeasureRequest(
                    command=self.request.command,
                    steps=self.request.steps,
                    seconds=self.request.seconds,
                    warmup=self.request.warmup,
                    stop_after=True,
                    overrides=dict(overrides),
                    loss_steps=self.request.loss_steps,
                    sample=self.count == 1,
                    stdout=handle,
                    stderr=handle,
                    timeout_s=max(self.left(), 1.0) + 60.0,
                )
            )
        self.run_s = max(self.run_s, time.monotonic() - began)
        if not section.get("steps"):
            section["log_tail"] = log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]
        return section


def step_s(run: Mapping[str, Any]) -> Optional[float]:
    """Mean step time of the window: throughput, epoch-boundary stalls included."""
    if not run.get("steps") or not run.get("window_s"):
        return None
    return float(run["window_s"]) / int(run["steps"])


def prove_fixes(request: FixRequest) -> dict[str, Any]:
    """{"run": the unchanged run's section, "fix": trials[], patch} for the report."""
    say = request.progress or (lambda _: None)
    with tempfile.TemporaryDirectory(prefix="envcheck-fix-") as folder:
        trials = Trials(request, Path(folder))
        say("envcheck fix: measuring the unchanged run")
        scout = trials.run({})
        fix = _fix_section(request, trials, scout, say)
    fix["elapsed_s"] = round(time.monotonic() - trials.started, 1)
    fix["budget_s"] = request.budget_s
    return {"run": scout, "fix": fix}


def _fix_section(
    request: FixRequest, trials: Trials, scout: dict[str, Any], say: Callable[[str], None]
) -> dict[str, Any]:
    empty: dict[str, Any] = {"status": "nothing-tried", "trials": [], "patch": None}
    if not scout.get("steps"):
        return {**empty, "reason": f"the unchanged run measured no step: {scout.get('reason')}"}
    proposed = cands.propose(scout, request.cores, request.only)
    if not proposed:
        return {**empty, "reason": _nothing_to_try(scout, request)}
    done = [_trial(c, i, len(proposed), request, trials, say) for i, c in enumerate(proposed)]
    tried = [t for t in done if t is not None]
    fix: dict[str, Any] = {
        "status": "ok" if len(tried) == len(proposed) else "budget",
        "reason": None
        if len(tried) == len(proposed)
        else f"the budget of {request.budget_s:g} s ran out after {len(tried)} candidates",
        "trials": tried,
        "patch": None,
        "applied": None,
        "runs": trials.count,
    }
    fix.update(_patch(scout, tried, request))
    return fix


def _nothing_to_try(scout: Mapping[str, Any], request: FixRequest) -> str:
    if request.only:
        return f"none of {', '.join(request.only)} applies to this run"
    loader = scout.get("loader") or {}
    if not loader:
        return "no DataLoader, tf.data pipeline or Keras PyDataset fed the measured steps"
    return (
        f"the loader's settings leave nothing to inject on {request.cores} usable cores "
        f"({loader.get('kind')}, num_workers={loader.get('num_workers')})"
    )


def _trial(
    candidate: cands.Candidate,
    index: int,
    total: int,
    request: FixRequest,
    trials: Trials,
    say: Callable[[str], None],
) -> Optional[dict[str, Any]]:
    baseline: list[float] = []
    changed: list[float] = []
    losses_a: list[list[float]] = []
    losses_b: list[list[float]] = []
    note = None
    interval: list[Optional[float]] = [None, None]
    for pair in range(1, request.pairs + 1):
        if not trials.affordable(2):
            note = f"budget: {len(baseline)} pairs measured"
            break
        say(
            f"envcheck fix: [{index + 1}/{total}] {candidate.change} · pair {pair} of "
            f"{request.pairs} · {trials.left():.0f} s of budget left"
        )
        a = trials.run({})
        b = trials.run(candidate.overrides)
        if not b.get("applied"):
            note = "the hook could not inject the change (no matching loader was built)"
            break
        a_s, b_s = step_s(a), step_s(b)
        if b_s is None and a_s is not None:
            note = f"the changed run failed (exit code {b.get('exit_code')}): {b.get('log_tail')}"
            return _record(candidate, baseline, changed, "unknown", "discard", note)
        if a_s is None or b_s is None:
            note = "the unchanged run measured no step this time"
            break
        baseline.append(a_s)
        changed.append(b_s)
        losses_a.append(list(a.get("losses") or []))
        losses_b.append(list(b.get("losses") or []))
        _, interval, _ = stats.paired_ratio(baseline, changed)
        if pair >= request.min_pairs and stats.settled(interval):
            break
    if not baseline and note and note.startswith("budget"):
        return None
    loss = stats.compare_losses(losses_a, losses_b)
    decision = stats.decide(interval, loss)
    return _record(candidate, baseline, changed, loss, decision, note)


def _record(
    candidate: cands.Candidate,
    baseline: Sequence[float],
    changed: Sequence[float],
    loss: str,
    decision: str,
    note: Optional[str],
) -> dict[str, Any]:
    ratio, interval, won = stats.paired_ratio(baseline, changed)
    return {
        "change": candidate.change,
        "knob": candidate.knob,
        "value": candidate.value,
        "ratio": ratio,
        "interval": interval,
        "pairs": len(baseline),
        "pairs_won": won,
        "decision": decision,
        "loss": loss,
        "baseline_step_s": [round(v, 6) for v in baseline],
        "candidate_step_s": [round(v, 6) for v in changed],
        "note": note,
    }


def _patch(
    scout: Mapping[str, Any], tried: Sequence[Mapping[str, Any]], request: FixRequest
) -> dict[str, Any]:
    """The diff for the best kept value of each DataLoader setting."""
    best: dict[str, Mapping[str, Any]] = {}
    for trial in tried:
        knob = str(trial["knob"])
        better = knob not in best or (trial["ratio"] or 0) > (best[knob]["ratio"] or 0)
        if trial["decision"] == "keep" and knob in LOADER_KNOBS and better:
            best[knob] = trial
    if not best:
        kept = [t for t in tried if t["decision"] == "keep"]
        why = "no change was kept" if not kept else "the kept changes have no source patch"
        return {"patch": None, "patch_reason": why}
    changes = {knob: trial["value"] for knob, trial in best.items()}
    site = (scout.get("loader") or {}).get("site")
    diff, why = patch.loader_patch(site, changes)
    if diff is None:
        return {"patch": None, "patch_reason": why}
    target = request.patch_path or Path(tempfile.mkdtemp(prefix="envcheck-fix-")) / "fix.patch"
    target.write_text(diff, encoding="utf-8")
    applied = str(patch.apply_patch(site, changes)) if request.apply else None
    return {"patch": str(target), "patch_reason": None, "applied": applied, "changes": changes}
