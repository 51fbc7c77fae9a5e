"""Benchmarks of `envcheck run --measure` and `envcheck fix` (issue 15, section 4).

    .venv/bin/python benchmarks/measure_bench.py overhead [--pairs 5] [--steps 1000]
    .venv/bin/python benchmarks/measure_bench.py verdict
    .venv/bin/python benchmarks/measure_bench.py fix [--budget 900]

The framework environment is ENVCHECK_FW_PYTHON (default .venv-fw/bin/python). Results
are printed as JSON lines and written down in benchmarks/results/measure.md.

overhead: tests/measure_programs/torch_train.py at ~100 steps/s (a 10 ms sleep in the
  forward, no input cost) without and with the hook measuring every step (a window as
  long as the run), in interleaved pairs; the program times its own loop, so start-up is
  not in it. The overhead is (hooked - plain) / plain loop time, and per step in µs.
verdict: seconds from the command's start to the verdict (the end of the window), and
  from its first training step, for PyTorch and Keras with the default window (5 warm-up
  + 100 steps) at ~20 steps/s.
fix: `envcheck fix`'s wall time on a loader with one worker (three candidates:
  num_workers=2, persistent_workers=True, prefetch_factor=4 on two cores).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envcheck.measure import launch  # noqa: E402
from envcheck.measure.prove import FixRequest, prove_fixes  # noqa: E402
from envcheck.measure.service import MeasureRequest, measure_run  # noqa: E402

FW = os.environ.get("ENVCHECK_FW_PYTHON") or str(ROOT / ".venv-fw" / "bin" / "python")
TORCH_TRAIN = ROOT / "tests" / "measure_programs" / "torch_train.py"
TF_TRAIN = ROOT / "tests" / "measure_programs" / "tf_train.py"
LOOP = re.compile(r"trained (\d+) steps in ([0-9.]+) s \(([0-9.]+) s of CPU\)")


def loop_seconds(hooked: bool, steps: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the program's own training loop."""
    command = [FW, str(TORCH_TRAIN), "--compute-ms", "10", "--batch", "8", "--batches", str(steps)]
    env = dict(os.environ)
    if hooked:
        out = Path(os.environ.get("TMPDIR", "/tmp")) / f"envcheck-bench-{os.getpid()}"
        out.mkdir(exist_ok=True)
        settings = launch.HookSettings(warmup=0, steps=10**9, seconds=1e9)
        env = launch.child_env(env, settings, out)
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    found = LOOP.search(result.stdout)
    assert found, result.stdout + result.stderr
    return float(found.group(2)), float(found.group(3))


def overhead(pairs: int, steps: int) -> dict[str, Any]:
    """Wall time is what the user sees but swings with the machine's load; CPU time of
    the training process is what the hook itself adds, and much steadier."""
    plain, hooked = [], []
    for _ in range(pairs):
        plain.append(loop_seconds(False, steps))
        hooked.append(loop_seconds(True, steps))
    wall = [h[0] / p[0] - 1.0 for p, h in zip(plain, hooked, strict=True)]
    cpu_us = [(h[1] - p[1]) / steps * 1e6 for p, h in zip(plain, hooked, strict=True)]
    step_s = statistics.median(p[0] for p in plain) / steps
    return {
        "bench": "overhead",
        "steps": steps,
        "pairs": pairs,
        "plain_step_ms_median": round(step_s * 1000, 3),
        "hooked_step_ms_median": round(statistics.median(h[0] for h in hooked) / steps * 1000, 3),
        "wall_overhead_median": round(statistics.median(wall), 4),
        "wall_overhead_range": [round(min(wall), 4), round(max(wall), 4)],
        "cpu_us_per_step_median": round(statistics.median(cpu_us), 1),
        "cpu_us_per_step_range": [round(min(cpu_us), 1), round(max(cpu_us), 1)],
        "cpu_overhead_share_of_step": round(statistics.median(cpu_us) / 1e6 / step_s, 4),
        # the least disturbed run of each kind: contention only ever adds CPU time
        "cpu_us_per_step_of_minima": round(
            (min(h[1] for h in hooked) - min(p[1] for p in plain)) / steps * 1e6, 1
        ),
        "plain_cpu_s": [round(p[1], 4) for p in plain],
        "hooked_cpu_s": [round(h[1], 4) for h in hooked],
    }


def verdict() -> list[dict[str, Any]]:
    rows = []
    cases = {
        "torch": [FW, str(TORCH_TRAIN), "--load-ms", "20", "--compute-ms", "30", "--batches=400"],
        "keras fit tf.data": [
            FW,
            str(TF_TRAIN),
            "--mode=fit-data",
            "--load-ms=50",
            "--batches=400",
        ],
    }
    for name, command in cases.items():
        with open(os.devnull, "w") as quiet:
            began = time.monotonic()
            run = measure_run(
                MeasureRequest(command=command, stop_after=True, stdout=quiet, stderr=quiet)
            )
            wall = time.monotonic() - began
        rows.append(
            {
                "bench": "verdict",
                "case": name,
                "steps": run["steps"],
                "median_step_ms": round(run["step_time_s"]["median"] * 1000, 1),
                "startup_s": run["startup_s"],
                "time_to_verdict_s": run["time_to_verdict_s"],
                "past_startup_s": round(run["time_to_verdict_s"] - run["startup_s"], 2),
                "wall_s": round(wall, 2),
                "verdict": run["verdict"],
                "input_share": run["input_share"],
            }
        )
    return rows


def fix(budget: float) -> dict[str, Any]:
    command = [FW, str(TORCH_TRAIN), "--load-ms", "60", "--compute-ms", "40", "--workers", "1"]
    command += ["--batches", "200"]
    began = time.monotonic()
    result = prove_fixes(
        FixRequest(
            command=command,
            budget_s=budget,
            cores=2,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    )
    return {
        "bench": "fix",
        "wall_s": round(time.monotonic() - began, 1),
        "runs": result["fix"].get("runs"),
        "trials": [
            {k: t[k] for k in ("change", "ratio", "interval", "pairs", "decision", "loss")}
            for t in result["fix"]["trials"]
        ],
        "patch": result["fix"].get("patch"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["overhead", "verdict", "fix"])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--budget", type=float, default=900.0)
    args = parser.parse_args()
    if args.what == "overhead":
        print(json.dumps(overhead(args.pairs, args.steps)))
    elif args.what == "verdict":
        for row in verdict():
            print(json.dumps(row))
    else:
        print(json.dumps(fix(args.budget)))


if __name__ == "__main__":
    main()
