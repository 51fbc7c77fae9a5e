"""How the script audit's time grows with the number of DataLoaders in one file.

A file of N `lN = DataLoader(ds)` blocks (alone, each iterated by its own loop, or each
built by its own function) is audited through the public command line, in one process,
for N in 250, 500, 1,000 and 2,000; the median wall time of --runs audits is printed per
N with its ratio to the time at half the N. Linear work doubles with N; the per-loader
rescans this guards against (hostile-input campaign, 2026-11-26) quadrupled it (1,000
loop blocks took about 60 s, 2,000 took 194 s). tests/test_hostile_input.py holds the
same property without a clock (the AST nodes walked).

    .venv/bin/python benchmarks/script_audit_scaling.py [--runs 3] [--sizes 250 500 1000 2000]

Run on demand; the results and the machine go in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from typer.testing import CliRunner

from envcheck.cli import app

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "fixtures" / "gpu" / "datacenter-8x-a100-foreign-process.json"
BLOCKS = {
    "alone": "l{i} = DataLoader(ds)\n",
    "each iterated": "l{i} = DataLoader(ds)\nfor x in l{i}:\n    print(x.item())\n",
    "each built by a function": (
        "def make{i}(ds):\n    if ds is None:\n        return None\n    return DataLoader(ds)\n"
        "l{i} = make{i}(ds)\nfor x in l{i}:\n    print(x.item())\n"
    ),
}


def audit_seconds(path: Path, runs: int) -> float:
    """The median wall time of `envcheck scripts PATH` over `runs` audits."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = CliRunner().invoke(
            app, ["scripts", "--exit-zero", "--format", "json", "--target", str(TARGET), str(path)]
        )
        times.append(time.perf_counter() - started)
        if result.exit_code != 0:
            tail = result.output[-500:]
            raise RuntimeError(f"envcheck scripts exited {result.exit_code}: {tail}")
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="audits per size (median)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    opts = parser.parse_args(argv)
    print(f"{'block':<26} " + " ".join(f"{n:>14}" for n in opts.sizes))
    with tempfile.TemporaryDirectory() as folder:
        for label, block in BLOCKS.items():
            cells = []
            previous = None
            for count in opts.sizes:
                path = Path(folder) / f"loaders_{count}.py"
                path.write_text(
                    "from torch.utils.data import DataLoader\n"
                    + "".join(block.format(i=i) for i in range(count)),
                    encoding="utf-8",
                )
                seconds = audit_seconds(path, opts.runs)
                ratio = f" (x{seconds / previous:.1f})" if previous else ""
                cells.append(f"{seconds:.2f} s{ratio}")
                previous = seconds
            print(f"{label:<26} " + " ".join(f"{c:>14}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
