"""Run the probe's child under a hard timeout and gather what it sent, whatever happens.

The child is the audited interpreter running `envcheck.probe.child.main` from this
package's own files (the audited environment needs the framework, not envcheck). It sends
JSON lines; each measured phase arrives as soon as it is done, so a child that is killed,
crashes or runs out of time still leaves its finished phases. The temporary folder (the
settings file, generated images, the child's stderr) is always removed.
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
from envcheck.probe.sampler import Sampler
from envcheck.probe.settings import ProbeSettings

PACKAGE_ROOT = Path(envcheck.__file__).resolve().parent.parent
_BOOT = (
    "import sys; sys.path.insert(0, {root!r}); "
    "from envcheck.probe.child.main import main; main(sys.argv[1])"
)
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


def _reader(stream: IO[str], lines: queue.Queue[Optional[str]]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _absorb(run: ProbeRun, event: dict[str, Any]) -> None:
    kind = event.get("event")
    if kind == "part":
        run.result[str(event.get("name"))] = event.get("value")
    elif kind == "phase_done":
        run.result["phases"][str(event.get("name"))] = event.get("value")
    elif kind == "note":
        run.result["notes"].append(event.get("text"))
    elif kind in ("done", "failed"):
        final = event.get("result")
        if isinstance(final, dict):
            run.result.update(final)
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

    `command` replaces `[executable, "-c", <boot the child>]` (tests run fake children);
    the settings file's path is appended to it."""
    run = ProbeRun(settings)
    executable = Path(os.path.abspath(executable))  # the child runs in the temporary folder
    workdir = Path(tempfile.mkdtemp(prefix="envcheck-probe-"))
    started = time.monotonic()
    proc: Optional[subprocess.Popen[str]] = None
    try:
        images = workdir / "images"
        images.mkdir()
        settings_file = workdir / "settings.json"
        argv = command or [str(executable), "-c", _BOOT.format(root=str(PACKAGE_ROOT))]
        child = dict(settings.child_json(images), boot_argv=argv)  # --concurrent reuses it
        settings_file.write_text(json.dumps(child), encoding="utf-8")
        stderr_path = workdir / "stderr.txt"
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONDONTWRITEBYTECODE="1")
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
        if sampler is not None:
            sampler.start()
        _follow(proc, run, settings.hard_timeout(), progress, sampler)
        run.stderr_tail = _tail(stderr_path)
        if run.status == "ok" and "elapsed_s" not in run.result:
            run.status = "crashed"
            code = proc.returncode
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
            last = run.stderr_tail.strip().splitlines()
            run.failure = {
                "kind": "crashed",
                "message": f"the probe's child ended early ({how})"
                + (f": {last[-1]}" if last else ""),
            }
    except OSError as exc:
        run.status = "failed"
        run.failure = {"kind": "start", "message": f"cannot start {executable}: {exc}"}
    finally:
        if proc is not None:
            _kill(proc)
        if sampler is not None:
            sampler.stop()
            run.timeline = list(sampler.samples)
            run.sampler = sampler.summary()
            run.under_load = dict(sampler.under_load)
        shutil.rmtree(workdir, ignore_errors=True)
        run.elapsed_s = round(time.monotonic() - started, 3)
    return run


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
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        _absorb(run, event)
        if event.get("event") == "phase" and sampler is not None:
            sampler.phase = str(event.get("name"))
        if progress is not None:
            progress(event)
