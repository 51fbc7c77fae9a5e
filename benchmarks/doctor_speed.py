"""How long the static doctor takes, beside `python -m torch.utils.collect_env`.

Builds (once, under benchmarks/.work/) a virtual environment with PyTorch and
TensorFlow installed, and another with 1,000 installed distributions, then times whole
commands as a user runs them:

  A. envcheck installed in the framework environment: `envcheck doctor`
  B. envcheck in its own environment auditing it: `envcheck doctor --python ENV/bin/python`
  C. `ENV/bin/python -m torch.utils.collect_env` in the same environment
  D. envcheck auditing an environment of 1,000 distributions

Each command runs once to warm the page cache, then --runs times; the table gives the
median and the range. Run on demand (`make bench`), never in the test suite:

    python benchmarks/doctor_speed.py [--runs 7] [--torch torch==2.13.0] [--tf tensorflow-cpu]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / ".work"


def sh(*argv: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], check=True, text=True, **kwargs)  # type: ignore[call-overload]


def framework_env(torch_req: str, tf_req: str) -> Path:
    env = WORK / "frameworks"
    python = env / "bin" / "python"
    if not (env / ".ready").exists():
        shutil.rmtree(env, ignore_errors=True)
        sh(sys.executable, "-m", "venv", env)
        sh(python, "-m", "pip", "install", "-q", torch_req)
        sh(python, "-m", "pip", "install", "-q", tf_req)
        sh(python, "-m", "pip", "install", "-q", ROOT)  # envcheck itself, for case A
        (env / ".ready").write_text("")
    return env


def thousand_env(count: int = 1000) -> Path:
    """A venv whose site-packages holds `count` installed distributions.

    They are written as real *.dist-info folders (METADATA with a description body,
    RECORD, top_level.txt), which is all that pip leaves on disk for a pure-Python
    wheel's metadata: the doctor reads exactly these files.
    """
    env = WORK / f"dists{count}"
    if not (env / ".ready").exists():
        shutil.rmtree(env, ignore_errors=True)
        sh(sys.executable, "-m", "venv", "--without-pip", env)
        [site] = (env / "lib").glob("python3*/site-packages")
        body = "Long description line.\n" * 80
        for i in range(count):
            name = f"bench_pkg_{i:04d}"
            meta = site / f"{name}-1.{i % 50}.{i % 7}.dist-info"
            meta.mkdir()
            (meta / "METADATA").write_text(
                f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.{i % 50}.{i % 7}\n"
                f"Summary: benchmark package {i}\nRequires-Dist: requests\n\n{body}"
            )
            (meta / "RECORD").write_text(
                f"{name}/__init__.py,,\n{name}/core.py,,\n{meta.name}/METADATA,,\n"
            )
            (meta / "top_level.txt").write_text(f"{name}\n")
        (env / ".ready").write_text("")
    return env


def timed(argv: list[str], runs: int, env: dict[str, str] | None = None) -> list[float]:
    subprocess.run(argv, capture_output=True, env=env)  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{argv} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return times


def describe(times: list[float]) -> str:
    return (
        f"{statistics.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f}, "
        f"n={len(times)})"
    )


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{platform.system()} {platform.release()} {platform.machine()}, {model}, "
        f"{os.cpu_count()} logical CPUs, {mem:.1f} GiB RAM, Python {platform.python_version()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--torch", default="torch==2.13.0")
    parser.add_argument("--tf", default="tensorflow-cpu")
    parser.add_argument("--framework-env", type=Path, help="reuse a venv with both installed")
    args = parser.parse_args()

    envcheck = shutil.which("envcheck", path=str(Path(sys.executable).parent))
    if envcheck is None:
        raise SystemExit("run with the interpreter that has envcheck installed (make bench)")
    fw = args.framework_env or framework_env(args.torch, args.tf)
    if not (fw / "bin" / "envcheck").exists():
        sh(fw / "bin" / "python", "-m", "pip", "install", "-q", ROOT)
    fw_python = str(fw / "bin" / "python")
    versions = sh(fw_python, "-m", "pip", "list", "--format=freeze", capture_output=True).stdout
    wanted = ("torch", "tensorflow", "tensorflow-cpu")
    pins = [v for v in versions.split() if v.split("==")[0].lower().replace("_", "-") in wanted]
    many = thousand_env()
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    cases = {
        "A. envcheck doctor (installed in the framework env)": (
            [str(fw / "bin" / "envcheck"), "doctor", "--exit-zero"],
            clean_env,
        ),
        "B. envcheck doctor --python FRAMEWORK_ENV": (
            [envcheck, "doctor", "--python", fw_python, "--exit-zero"],
            clean_env,
        ),
        "C. python -m torch.utils.collect_env": (
            [fw_python, "-m", "torch.utils.collect_env"],
            clean_env,
        ),
        "D. envcheck doctor --python ENV_WITH_1000_DISTRIBUTIONS": (
            [envcheck, "doctor", "--python", str(many / "bin" / "python"), "--exit-zero"],
            clean_env,
        ),
    }
    results = {name: timed(argv, args.runs, env) for name, (argv, env) in cases.items()}

    print(f"Machine: {machine()}")
    print(f"Framework environment: {', '.join(pins)}")
    print()
    print("| command | wall time |")
    print("|---|---|")
    for name, times in results.items():
        print(f"| {name} | {describe(times)} |")
    collect_env = statistics.median(results["C. python -m torch.utils.collect_env"])
    for name in (
        "A. envcheck doctor (installed in the framework env)",
        "B. envcheck doctor --python FRAMEWORK_ENV",
    ):
        ratio = collect_env / statistics.median(results[name])
        print(f"\ncollect_env / {name[:2]} = {ratio:.1f}x")


if __name__ == "__main__":
    main()
