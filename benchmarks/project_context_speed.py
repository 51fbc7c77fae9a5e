"""What reading a script's project as context costs (envcheck/scripts/project_context.py).

Builds a synthetic repository in a temporary folder (nothing is downloaded): a package
`proj/` of N modules that import each other in a chain and each define a config class,
a Dataset and a model; `tools/train.py` importing a dozen of them; `proj/trainer.py`
imported by `train.py` at the root; and `--siblings` unrelated *.py files at the root (the
importer search reads their first lines). Then audits, in one process through the CLI:

- `tools/train.py` in place (its imports followed),
- `proj/trainer.py` in place (its entry point found among the siblings),
- the same two files copied alone into an empty folder (no context),

each `--runs` times, and prints the median wall time of each and the difference.

    .venv/bin/python benchmarks/project_context_speed.py [--modules 80] [--siblings 150] [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

MODULE = """\
import torch
from torch import nn
{imports}

class Config{i}:
    num_workers = {i} % 5
    batch_size = 32

class Data{i}(torch.utils.data.Dataset):
    def __init__(self, root):
        self.files = sorted(root.glob("*.jpg"))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, idx):
        return torch.load(self.files[idx])

class Model{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.head = nn.Linear(16, 10)
"""
TRAIN = """\
import torch
from torch.utils.data import DataLoader
{imports}
from proj.m0 import Config0, Data0, Model0

cfg = Config0()
loader = DataLoader(Data0("data"), batch_size=cfg.batch_size, num_workers=cfg.num_workers)
model = Model0().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
TRAINER = """\
import torch
from torch.utils.data import DataLoader

def train(args, dataset, model):
    loader = DataLoader(dataset, batch_size=32, num_workers=args.workers)
    for epoch in range(args.epochs):
        for x, y in loader:
            model(x.cuda()).sum().backward()
"""
ENTRY = """\
import argparse
from proj.trainer import train

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=8)
parser.add_argument("--epochs", type=int, default=90)
args = parser.parse_args()
"""


def build(root: Path, modules: int, siblings: int) -> None:
    (root / ".git").mkdir()
    (root / "proj").mkdir()
    (root / "tools").mkdir()
    (root / "proj" / "__init__.py").write_text("")
    for i in range(modules):
        imports = f"from proj.m{i + 1} import Config{i + 1}" if i + 1 < modules else ""
        (root / "proj" / f"m{i}.py").write_text(MODULE.format(i=i, imports=imports))
    imports = "\n".join(f"import proj.m{i * 5}" for i in range(min(12, modules // 5)))
    (root / "tools" / "train.py").write_text(TRAIN.format(imports=imports))
    (root / "proj" / "trainer.py").write_text(TRAINER)
    (root / "train.py").write_text(ENTRY)
    for i in range(siblings):
        (root / f"script_{i}.py").write_text(f"import os\nimport json\nx = {i}\n" * 20)


def timed(files: list[Path], runs: int) -> tuple[float, int]:
    """Median wall time of `envcheck scripts FILES` in this process, and the number of
    context files the last run read."""
    import json

    from typer.testing import CliRunner

    from envcheck.cli import app

    walls = []
    context = 0
    for _ in range(runs):
        started = time.perf_counter()
        result = CliRunner().invoke(
            app, ["scripts", "--format", "json", "--exit-zero", *map(str, files)]
        )
        walls.append(time.perf_counter() - started)
        if result.exit_code != 0:
            raise SystemExit(f"envcheck scripts exited {result.exit_code}: {result.output[-500:]}")
        context = len(json.loads(result.stdout)["facts"]["scripts"].get("context") or [])
    return statistics.median(walls), context


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=80)
    parser.add_argument("--siblings", type=int, default=150)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "repo"
        root.mkdir()
        build(root, opts.modules, opts.siblings)
        alone = Path(folder) / "alone"
        alone.mkdir()
        for name in ("tools/train.py", "proj/trainer.py"):
            shutil.copy(root / name, alone / Path(name).name)
        timed([root / "tools" / "train.py"], 1)  # warm the imports of envcheck itself
        rows = []
        for name in ("tools/train.py", "proj/trainer.py"):
            in_place, context = timed([root / name], opts.runs)
            copied, _ = timed([alone / Path(name).name], opts.runs)
            rows.append((name, in_place, context, copied))
    print(f"{opts.modules} project modules, {opts.siblings} sibling files, median of {opts.runs}")
    print(f"{'file':<18}{'in place':>10}{'context files':>15}{'alone':>9}{'cost':>9}")
    for name, in_place, context, copied in rows:
        print(f"{name:<18}{in_place:>9.3f}s{context:>15}{copied:>8.3f}s{in_place - copied:>8.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
