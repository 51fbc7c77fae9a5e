"""Run the probe's child under a hard timeout and gather what it sent, whatever happens.

The child is the audited interpreter running `envcheck.probe.child.main`. It must measure
the packages the audited interpreter has, not envcheck's: the child's code (standard
library, NumPy, Pillow and the framework only) is copied into the probe's temporary
folder, and that copy is the only thing added to the child's path; the child starts in
that folder, never in the user's. It sends JSON lines; each measured phase arrives as soon
as it is done, so a child that is killed, crashes or runs out of time still leaves its
finished phases; lines that are not the protocol's are ignored, values of the wrong shape
dropped. The temporary folder (the settings file, generated images, the child's stderr,
and the framework's own temporary files: TMPDIR points there) is always removed, on
SIGINT and SIGTERM too.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Optional

import envcheck
from envcheck import jsonsafe, signals
from envcheck.probe.sampler import Sampler
from envcheck.probe.settings import ProbeSettings

CHILD_SOURCE = Path(envcheck.__file__).resolve().parent / "probe" / "child"
# The child's path: the staged copy first, then the audited interpreter's own entries
# without the empty one (the working folder).
BOOT_PATH = "import sys; sys.path[:] = [{code!r}] + [p for p in sys.path if p]; "
_BOOT = BOOT_PATH + "from envcheck.probe.child.main import main; main(sys.argv[1])"
_STUB = '"""envcheck\'s probe child code only (a copy made for one probe run)."""\n'
# Where the framework's own temporary and cache files go, inside the work folder.
_SCRATCH_VARIABLES = ("TMPDIR", "TEMP", "TMP")
_CACHE_VARIABLES = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"}
Progress = Callable[[dict[str, Any]], None]


@dataclass
class ProbeRun:
    """What came back: the merged measurements, how the child ended, the timeline."""

    settings: ProbeSettings
    status: str = "ok"  # ok | failed | timeout | crashed
    failure: Optional[dict[str, str]] = None
    result: dict[str, Any] = field(default_factory=lambda: {"phases": {}, "notes": []})
    timeline: list[dict[str, Any]] = field(default_factory=list)
    sampler: dict[str, Any] = field(default_factory=dict)
    under_load: dict[str, Any] = field(default_factory=dict)
    stderr_tail: str = ""
    elapsed_s: float = 0.0


MAX_LINE_CHARS = 1 << 20  # the largest event (the final result) is a few kB


def _reader(stream: IO[str], lines: queue.Queue[Optional[str]]) -> None:
    """Queue each line; a line longer than MAX_LINE_CHARS is skipped (it is no event)."""
    skipping = False
    while True:
        line = stream.readline(MAX_LINE_CHARS)
        if not line:
            break
        cut = len(line) >= MAX_LINE_CHARS and not line.endswith("\n")  # more of it follows
        if not skipping and not cut:
            lines.put(line)
        skipping = cut or (skipping and not line.endswith("\n"))
    lines.put(None)


def _absorb(run: ProbeRun, event: dict[str, Any]) -> None:
    """Fold one event into the run; values of the wrong shape are dropped, not trusted."""
    kind = event.get("event")
    if kind == "part":
        name = str(event.get("name"))
        if name not in ("phases", "notes"):
            run.result[name] = event.get("value")
    elif kind == "phase_done":
        if isinstance(event.get("value"), dict):
            run.result["phases"][str(event.get("name"))] = event.get("value")
    elif kind == "note":
        if isinstance(event.get("text"), str):
            run.result["notes"].append(event.get("text"))
    elif kind in ("done", "failed"):
        final = event.get("result")
        if isinstance(final, dict):
            phases = final.pop("phases", None)
            notes = final.pop("notes", None)
            run.result.update(final)
            if isinstance(phases, dict):
                run.result["phases"].update(
                    {str(k): v for k, v in phases.items() if isinstance(v, dict)}
                )
            if isinstance(notes, list):  # the whole list, streamed notes included
                run.result["notes"] = [n for n in notes if isinstance(n, str)]
        if kind == "failed":
            run.status = "failed"
            run.failure = {
                "kind": str(event.get("kind")),
                "message": str(event.get("message")),
            }


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is not None:
        return
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    else:  # pragma: no cover - Windows
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        data = path.read_bytes()[-limit:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


def run_probe(
    settings: ProbeSettings,
    executable: Path,
    progress: Optional[Progress] = None,
    sampler: Optional[Sampler] = None,
    command: Optional[list[str]] = None,
) -> ProbeRun:
    """Measure; never raises for anything the child does (it becomes the run's status).

    SIGINT and SIGTERM end the child and remove the work folder, then propagate
    (KeyboardInterrupt, signals.Terminated). `command` replaces `[executable, "-c", <boot
    the child>]` (tests run fake children); the settings file's path is appended to it."""
    run = ProbeRun(settings)
    executable = Path(os.path.abspath(executable))  # the child runs in the temporary folder
    workdir = Path(tempfile.mkdtemp(prefix="envcheck-probe-"))
    started = time.monotonic()
    children: list[subprocess.Popen[str]] = []  # filled as soon as the child exists
    try:
        with signals.sigterm_raises():
            _start_and_follow(run, executable, workdir, children, progress, sampler, command)
    except OSError as exc:
        run.status = "failed"
        run.failure = {"kind": "start", "message": f"cannot start {executable}: {exc}"}
    finally:
        for proc in children:
            _kill(proc)
        if sampler is not None:
            sampler.stop()
            run.timeline = list(sampler.samples)
            run.sampler = sampler.summary()
            run.under_load = dict(sampler.under_load)
        shutil.rmtree(workdir, ignore_errors=True)
        run.elapsed_s = round(time.monotonic() - started, 3)
    return run


def stage_child_code(workdir: Path) -> Path:
    """Copy the child's modules into `workdir/code` (package stubs above them); its path."""
    code = workdir / "code"
    package = code / "envcheck" / "probe" / "child"
    package.mkdir(parents=True)
    for stub in (code / "envcheck", code / "envcheck" / "probe"):
        (stub / "__init__.py").write_text(_STUB, encoding="utf-8")
    for source in sorted(CHILD_SOURCE.glob("*.py")):
        shutil.copyfile(source, package / source.name)
    return code


def child_environment(workdir: Path) -> dict[str, str]:
    """The child's environment: ours, quieter, its temporary files inside `workdir`."""
    scratch = workdir / "tmp"
    scratch.mkdir(exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONDONTWRITEBYTECODE="1")
    env.update({name: str(scratch) for name in _SCRATCH_VARIABLES})
    env.update({name: str(scratch / sub) for name, sub in _CACHE_VARIABLES.items()})
    return env


def _start_and_follow(
    run: ProbeRun,
    executable: Path,
    workdir: Path,
    children: list[subprocess.Popen[str]],
    progress: Optional[Progress],
    sampler: Optional[Sampler],
    command: Optional[list[str]],
) -> None:
    """Start the child in `workdir` (appended to `children`), follow it, set the status."""
    images = workdir / "images"
    images.mkdir()
    settings_file = workdir / "settings.json"
    stderr_path = workdir / "stderr.txt"
    env = child_environment(workdir)
    argv = command or [
        str(executable),
        "-c",
        _BOOT.format(code=str(stage_child_code(workdir))),
    ]
    child = dict(run.settings.child_json(images), boot_argv=argv)  # --concurrent reuses it
    settings_file.write_text(json.dumps(child), encoding="utf-8")
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            [*argv, str(settings_file)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            errors="replace",
            cwd=str(workdir),
            env=env,
            start_new_session=os.name == "posix",
        )
    children.append(proc)
    if sampler is not None:
        sampler.start()
    _follow(proc, run, run.settings.hard_timeout(), progress, sampler)
    run.stderr_tail = _tail(stderr_path)
    if run.status == "ok" and "elapsed_s" not in run.result:
        run.status = "crashed"
        code = proc.returncode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        last = run.stderr_tail.strip().splitlines()
        run.failure = {
            "kind": "crashed",
            "message": f"the probe's child ended early ({how})" + (f": {last[-1]}" if last else ""),
        }


def _follow(
    proc: subprocess.Popen[str],
    run: ProbeRun,
    timeout: float,
    progress: Optional[Progress],
    sampler: Optional[Sampler],
) -> None:
    """Read events until the child ends or the hard timeout passes."""
    assert proc.stdout is not None
    lines: queue.Queue[Optional[str]] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            _kill(proc)
            run.status = "timeout"
            run.failure = {
                "kind": "timeout",
                "message": f"the probe did not finish within its hard timeout of {timeout:.0f} s",
            }
            return
        try:
            line = lines.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        if line is None:
            proc.wait()
            return
        try:
            event = jsonsafe.loads(line, non_finite_as_null=True)  # NaN: not measured
        except ValueError:  # not the protocol (a banner), or hostile (deep nesting)
            continue
        if not isinstance(event, dict):
            continue
        _absorb(run, event)
        if event.get("event") == "phase" and sampler is not None:
            sampler.phase = str(event.get("name"))
        if progress is not None:
            progress(event)
