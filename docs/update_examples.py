"""Refresh the generated examples in docs/guide.md and README.md from the real CLI.

Each example sits between marker comments:

    <!-- example:NAME begin -->
    ...generated, do not edit by hand...
    <!-- example:NAME end -->

and is the output of a real `envcheck` command on a recorded fixture (tests/fixtures/),
run from the repository root. tests/test_guide.py runs the same commands and fails when
a block differs from what the CLI prints now.

    .venv/bin/python docs/update_examples.py          # rewrite the blocks in place
    .venv/bin/python docs/update_examples.py --check  # exit 1 when a block is stale
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide.md"
README = ROOT / "README.md"
REFRESH = ".venv/bin/python docs/update_examples.py"

# The recorded snapshots the examples are made from.
OLD_DRIVER = "tests/fixtures/gpu/old-driver-v100-cu121-torch.json"
PROBE_REPORT = "tests/fixtures/probe/cpu-torch-serial.json"
DATACENTER = "tests/fixtures/gpu/datacenter-8x-a100-foreign-process.json"
SCRIPT = "tests/scripts_corpus/tf_serial_map_no_prefetch.py"


@dataclass(frozen=True)
class Run:
    stdout: str
    exit_code: int


def envcheck(*args: str) -> Run:
    """The real CLI in a child process, from the repository root, at a fixed width,
    without colour and with UTF-8 output (so the ✓ ✗ marks are what a terminal shows)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENVCHECK_")}
    env.update(COLUMNS="100", LINES="50", NO_COLOR="1", PYTHONIOENCODING="utf-8", TERM="dumb")
    done = subprocess.run(
        [sys.executable, "-m", "envcheck", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"envcheck {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return Run(done.stdout, done.returncode)


def _fenced(lines: list[str], lang: str = "") -> str:
    return "\n".join([f"```{lang}", *lines, "```"])


def _session(args: tuple[str, ...], run: Run, shown: list[str] | None = None) -> str:
    """A terminal session: the command, its output, and its exit code."""
    body = run.stdout.rstrip("\n").splitlines() if shown is None else shown
    return _fenced([f"$ envcheck {' '.join(args)}", *body, "$ echo $?", str(run.exit_code)])


def doctor_text() -> str:
    args = ("doctor", "--facts", OLD_DRIVER)
    return _session(args, envcheck(*args))


def doctor_probe_text() -> str:
    """The ranked list of a report with a measured impact, and its probe area."""
    args = ("doctor", "--facts", PROBE_REPORT)
    run = envcheck(*args)
    lines = run.stdout.rstrip("\n").splitlines()
    fix_first = lines[: lines.index("") + 1 + lines[lines.index("") + 1 :].index("")]
    probe = next(i for i, line in enumerate(lines) if line.startswith("[") and "Probe" in line)
    shown = [*fix_first, "", "[…]", *lines[probe:]]
    return _session(args, run, shown)


def readme_doctor() -> str:
    """The README's short example: the header, the ranked fixes and the closing count."""
    args = ("doctor", "--facts", OLD_DRIVER)
    run = envcheck(*args)
    lines = run.stdout.rstrip("\n").splitlines()
    second_blank = lines.index("", lines.index("") + 1)
    shown = [*lines[:second_blank], "", "[… one line per area: Platform, CPU, Memory, GPU, …]", ""]
    return _session(args, run, [*shown, lines[-1]])


def doctor_json() -> str:
    """The JSON report's top level, with the first finding and the first check in full."""
    args = ("doctor", "--facts", OLD_DRIVER, "--format", "json")
    report = json.loads(envcheck(*args).stdout)

    def dump(value: object, indent: int) -> str:
        text = json.dumps(value, indent=2, ensure_ascii=False)
        return text.replace("\n", "\n" + " " * indent)

    rest = len(report["findings"]) - 1
    lines = [
        "{",
        f'  "schema_version": {dump(report["schema_version"], 2)},',
        f'  "tool": {json.dumps(report["tool"])},',
        f'  "created": {json.dumps(report["created"])},',
        f'  "summary": {dump(report["summary"], 2)},',
        '  "findings": [',
        f"    {dump(report['findings'][0], 4)},",
        f"    … {rest} more",
        "  ],",
        '  "checks": [',
        f"    {dump(report['checks'][0], 4)},",
        f"    … {len(report['checks']) - 1} more",
        "  ],",
        f'  "facts": {{ … the snapshot: {", ".join(sorted(report["facts"]))} }},',
        f'  "probe": {dump(report["probe"], 2)}',
        "}",
    ]
    return _fenced([f"$ envcheck {' '.join(args)}", *lines])


def scripts_text() -> str:
    args = ("scripts", SCRIPT)
    return _session(args, envcheck(*args))


def diff_text() -> str:
    args = ("diff", OLD_DRIVER, DATACENTER)
    return _session(args, envcheck(*args))


# name -> (file, renderer)
EXAMPLES: dict[str, tuple[Path, Callable[[], str]]] = {
    "readme-doctor": (README, readme_doctor),
    "doctor-text": (GUIDE, doctor_text),
    "doctor-json": (GUIDE, doctor_json),
    "doctor-probe-text": (GUIDE, doctor_probe_text),
    "scripts-text": (GUIDE, scripts_text),
    "diff-text": (GUIDE, diff_text),
}


def block_pattern(name: str) -> re.Pattern[str]:
    marker = f"<!-- example:{re.escape(name)}"
    return re.compile(rf"({marker} begin -->\n)(.*?)\n?({marker} end -->)", re.DOTALL)


def embedded(name: str) -> str:
    """The block as it is in its file now."""
    path, _ = EXAMPLES[name]
    found = block_pattern(name).search(path.read_text(encoding="utf-8"))
    if found is None:
        raise LookupError(f"{path.relative_to(ROOT)} has no example:{name} markers")
    return found.group(2)


def normalise(text: str) -> str:
    """Mask what changes without the example being wrong: the tool's version and the
    time the report was created."""
    text = re.sub(r"^envcheck \S+ · ", "envcheck VERSION · ", text, flags=re.MULTILINE)
    text = re.sub(r'"tool": \{"name": "envcheck", "version": "[^"]*"\}', '"tool": TOOL', text)
    return re.sub(r'"created": "[^"]*"', '"created": CREATED', text)


def update(check: bool = False) -> list[str]:
    """Rewrite every block (or, with check, only list the stale ones)."""
    stale = []
    for name, (path, render) in EXAMPLES.items():
        text = path.read_text(encoding="utf-8")
        fresh = render()
        if normalise(embedded(name)) == normalise(fresh):
            continue
        stale.append(f"{path.relative_to(ROOT)}: example:{name}")
        if not check:
            found = block_pattern(name).search(text)
            assert found is not None  # embedded() found it above
            text = text[: found.start(2)] + fresh + "\n" + text[found.start(3) :]
            path.write_text(text, encoding="utf-8")
    return stale


if __name__ == "__main__":
    check_only = sys.argv[1:] == ["--check"]
    changed = update(check=check_only)
    for entry in changed:
        print(("stale: " if check_only else "updated: ") + entry)
    sys.exit(1 if check_only and changed else 0)
