"""Does the probe's stand-in verdict agree with the real run's on the same data?

    .venv/bin/python benchmarks/probe_agreement.py [--images 256] [--workers 0 2]

Writes an image folder (JPEGs of 500x375, two classes) into a temporary folder, then for
each worker count: `envcheck probe --data DIR --framework torch --workers N` (the stand-in:
the probe's small CNN fed through its torchvision-style recipe) and `envcheck run
--measure`'s measurement of benchmarks/programs/folder_train.py (a user's own loader and
model on the same files, same worker count). Prints one JSON line per worker count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envcheck.measure.service import MeasureRequest, measure_run  # noqa: E402

FW = os.environ.get("ENVCHECK_FW_PYTHON") or str(ROOT / ".venv-fw" / "bin" / "python")
PROGRAM = ROOT / "benchmarks" / "programs" / "folder_train.py"


def make_images(folder: Path, count: int) -> None:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for n in range(count):
        cls = folder / f"class{n % 2}"
        cls.mkdir(parents=True, exist_ok=True)
        pixels = rng.integers(0, 255, size=(375, 500, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(cls / f"{n:05d}.jpg", quality=90)


def probe(data: Path, workers: int, budget: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "envcheck", "probe", "--python", FW]
    command += ["--framework", "torch", "--data", str(data), "--workers", str(workers)]
    command += ["--budget", str(budget), "--device", "cpu", "--format", "json", "--exit-zero"]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=True,
    )
    section = json.loads(result.stdout)["probe"]
    return {k: section.get(k) for k in ("verdict", "input_share", "batch_size", "rates")}


def real(data: Path, workers: int) -> dict[str, Any]:
    command = [FW, str(PROGRAM), "--data", str(data), "--workers", str(workers)]
    with open(os.devnull, "w") as quiet:
        run = measure_run(
            MeasureRequest(
                command=command, steps=20, warmup=3, stop_after=True, stdout=quiet, stderr=quiet
            )
        )
    return {
        "verdict": run["verdict"],
        "input_share": run["input_share"],
        "median_step_s": run["step_time_s"]["median"],
        "dataset_s_per_batch": run["loader"].get("dataset_s_per_batch"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--budget", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="envcheck-agreement-") as folder:
        data = Path(folder) / "images"
        make_images(data, args.images)
        for workers in args.workers:
            stand_in, measured = probe(data, workers, args.budget), real(data, workers)
            print(
                json.dumps(
                    {
                        "workers": workers,
                        "probe": stand_in,
                        "real_run": measured,
                        "agree": stand_in["verdict"] == measured["verdict"],
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
