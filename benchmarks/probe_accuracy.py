"""Accuracy of the probe on scenarios whose answer is known by construction.

    .venv/bin/python benchmarks/probe_accuracy.py --python .venv-fw/bin/python \
        [--framework torch tensorflow] [--budget 12] [--out benchmarks/results/x.json]

Scenarios (each for every framework given):
  serial       generated ImageNet-sized JPEGs, no loader workers, a light model:
               must read input-bound. With a full worker sweep: the recommended count's
               rate vs the best found (target >= 90 %), then a second run *with* the
               recommendation: predicted vs realised speedup (target within 25 %).
  workers      the same pipeline with a worker per usable core: less input-bound.
  compute      a heavy model on cheap (32x32 PNG) images: must read not input-bound.
  delay        cheap images plus a known sleep per batch: run once without and once with
               the delay; the expected input share follows from the first run's step
               time; the measured share must be within a few points.
  slow-read    cold reads capped at 2 MB/s (a slow-disk stand-in; cached reads stay
               fast): the stall must be attributed to fetch, not prep.
Prints a table and writes every probe section (timelines dropped) as JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from envcheck.probe.session import measure
from envcheck.probe.settings import ProbeSettings, usable_cores


def tiny_pngs(root: Path, count: int = 96) -> Path:
    from PIL import Image

    rng = random.Random(0)
    for i in range(count):
        folder = root / f"class_{i % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        pixels = bytes(rng.randrange(256) for _ in range(32 * 32 * 3))
        Image.frombytes("RGB", (32, 32), pixels).save(folder / f"{i}.png")
    return root


def run(python: Path, **settings: Any) -> dict[str, Any]:
    facts = {"interpreter": {"executable": str(python)}, "gpu": {}}
    started = time.monotonic()
    probe = measure(facts, ProbeSettings(**settings).validated(), show_progress=False)
    probe.pop("timeline", None)
    probe["wall_s"] = round(time.monotonic() - started, 1)
    return probe


def scenarios(python: Path, framework: str, budget: float, pngs: Path) -> list[dict[str, Any]]:
    cores = usable_cores()
    light = {"framework": framework, "image_size": 64, "batch_size": 16, "budget_s": budget}
    out: list[dict[str, Any]] = []

    serial = run(python, **light, workers=0, sweep="full")
    rec = serial["workers"]["recommended"]
    sweep = serial["workers"]["sweep"]
    best = max((p["rate"] for p in sweep if p["rate"]), default=None)
    rec_rate = serial["workers"]["recommended_rate"]
    applied = run(python, **light, workers=rec, sweep="off") if rec is not None else None
    e2e = serial["rates"]["end_to_end"]
    predicted = rec_rate / e2e if rec_rate and e2e else None
    realised = applied["rates"]["end_to_end"] / e2e if applied and e2e else None
    out.append(
        {
            "scenario": "serial",
            "expect": "highly-input-bound",
            "probe": serial,
            "recommended_vs_best": rec_rate / best if rec_rate and best else None,
            "predicted_speedup": predicted,
            "realised_speedup": realised,
            "applied": applied,
        }
    )
    out.append(
        {
            "scenario": "workers",
            "expect": "less input-bound than serial",
            "probe": run(python, **light, workers=cores, sweep="off"),
        }
    )
    out.append(
        {
            "scenario": "compute",
            "expect": "not-input-bound",
            "probe": run(
                python,
                framework=framework,
                data=pngs,
                model="deep-cnn",
                image_size=128,
                batch_size=8,
                workers=0,
                budget_s=budget,
                sweep="off",
            ),
        }
    )
    cheap = {
        "framework": framework,
        "data": pngs,
        "image_size": 64,
        "batch_size": 16,
        "workers": 0,
        "budget_s": budget,
        "sweep": "off",
    }
    base = run(python, **cheap)
    delay = 0.05
    step = 16 / base["rates"]["end_to_end"]
    expected = (delay + base["input_share"] * step) / (delay + step)
    delayed = run(python, **cheap, inject_delay_s=delay)
    out.append(
        {
            "scenario": "delay",
            "expect": f"input share {expected:.3f}",
            "expected_share": expected,
            "probe": delayed,
            "without_delay": base,
        }
    )
    out.append(
        {
            "scenario": "slow-read",
            "expect": "fetch_share > 0.5",
            "probe": run(
                python,
                **light,
                workers=0,
                sweep="off",
                cold_end_to_end=True,
                throttle_read_bps=2e6,
            ),
        }
    )
    return out


def row(framework: str, item: dict[str, Any]) -> str:
    p = item["probe"]
    stall = p["stall"]
    extra = ""
    if item["scenario"] == "serial":
        extra = (
            f"rec {p['workers']['recommended']} = {item['recommended_vs_best']:.0%} of best; "
            f"speedup predicted {item['predicted_speedup']:.2f}x, "
            f"realised {item['realised_speedup']:.2f}x"
        )
    if item["scenario"] == "delay":
        extra = f"expected share {item['expected_share']:.3f}"
    share = p["input_share"]
    return (
        f"| {framework} | {item['scenario']} | {p['verdict']} | "
        f"{share:.3f} | {stall['fetch_share']} / {stall['prep_share']} | "
        f"{p['rates']['compute']} / {p['rates']['input']} / {p['rates']['end_to_end']} | "
        f"{extra} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", type=Path, required=True, help="interpreter with frameworks")
    parser.add_argument("--framework", nargs="+", default=["torch", "tensorflow"])
    parser.add_argument("--budget", type=float, default=12.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "usable_cores": usable_cores(),
        },
        "budget_s": args.budget,
        "scenarios": {},
    }
    print(
        "| framework | scenario | verdict | input share | fetch / prep | compute / input / "
        "end-to-end (samples/s) | notes |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as temp:
        pngs = tiny_pngs(Path(temp) / "pngs")
        for framework in args.framework:
            items = scenarios(args.python, framework, args.budget, pngs)
            results["scenarios"][framework] = items
            for item in items:
                print(row(framework, item), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
