"""N input pipelines at once, as N data-parallel training processes run them (--concurrent).

The probe child starts N copies of itself in the "pipeline" role, each in its own
interpreter with its own loader workers, unpinned as torchrun leaves them. Each builds
its pipeline, takes its warm-up batches, says "ready" and waits; when all are ready they
are told to go together, measure for the same seconds and send their rate. The sum is
what the node's cores supply when every process feeds its GPU at the same time.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import IO, Any, Dict, List, Sequence

from envcheck.probe.child import harness
from envcheck.probe.child.backends import load_backend
from envcheck.probe.child.events import Emitter

# importing a framework N times on busy cores takes a while; the parent's hard timeout
# allows for it (settings.CONCURRENT_ALLOWANCE_S)
READY_TIMEOUT_S = 90.0


def default_boot() -> List[str]:
    """This interpreter starting the probe child from this package's own files (the
    runner passes its own command as `boot_argv`; this is the fallback)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    code = (
        f"import sys; sys.path.insert(0, {root!r}); "
        "from envcheck.probe.child.main import main; main(sys.argv[1])"
    )
    return [sys.executable, "-c", code]


def _reader(index: int, stream: IO[str], lines: queue.Queue[Any]) -> None:
    for line in stream:
        lines.put((index, line))
    lines.put((index, None))


def run_concurrent(
    boot_argv: Sequence[str],
    settings: Dict[str, Any],
    files: Sequence[str],
    labels: Sequence[int],
    batch: int,
    workers: int,
    processes: int,
    seconds: float,
    folder: str,
) -> Dict[str, Any]:
    """Start `processes` pipelines, measure them together; their rates and the total."""
    role = {key: settings.get(key) for key in ("framework", "image_size", "prefetch", "pin_memory")}
    role.update(
        role="pipeline",
        device="cpu",  # decoding is on the CPU; leave the GPUs alone
        files=list(files),
        labels=list(labels),
        batch=batch,
        workers=workers,
        seconds=seconds,
        workdir=folder,
    )
    path = os.path.join(folder, "pipeline.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(role, handle)
    lines: queue.Queue[Any] = queue.Queue()
    procs: List[subprocess.Popen[str]] = []
    result: Dict[str, Any] = {"processes": processes, "workers_per_process": workers}
    try:
        for index in range(processes):
            proc = subprocess.Popen(
                [*boot_argv, path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                cwd=folder,
            )
            procs.append(proc)
            assert proc.stdout is not None
            threading.Thread(target=_reader, args=(index, proc.stdout, lines), daemon=True).start()
        failures: List[str] = []
        ready = _collect(lines, "ready", processes, READY_TIMEOUT_S, failures)
        if len(ready) < processes:
            result.update(status="failed", reason=_why(ready, processes, "ready", failures))
            return result
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        done = _collect(lines, "result", processes, seconds * 3 + 30, failures)
        rates = [
            (done[i].get("value") or {}).get("rate") if i in done else None
            for i in range(processes)
        ]
        measured = [r for r in rates if r]
        result.update(
            status="ok" if len(measured) == processes else "partial",
            rates=rates,
            total=sum(measured) if measured else None,
        )
        if len(measured) < processes:
            result["reason"] = _why(done, processes, "result", failures)
        return result
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def _collect(
    lines: queue.Queue[Any], event: str, count: int, timeout: float, failures: List[str]
) -> Dict[int, Dict[str, Any]]:
    """{process index: its `event`} until every process sent it or ended, or time is up;
    the messages of pipelines that failed are added to `failures`."""
    got: Dict[int, Dict[str, Any]] = {}
    ended: set[int] = set()
    deadline = time.monotonic() + timeout
    while len(set(got) | ended) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            index, line = lines.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        if line is None:
            ended.add(index)
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        if message.get("event") == event:
            got[index] = message
        elif message.get("event") == "failed":
            failures.append(str(message.get("message")))
    return got


def _why(got: Dict[int, Any], count: int, event: str, failures: List[str]) -> str:
    text = f"{len(got)} of {count} pipelines sent {event!r} in time"
    return text + (": " + failures[0] if failures else "")


def pipeline_main(settings: Dict[str, Any]) -> None:
    """The "pipeline" role: build the loader, warm up, wait for go, measure, report."""
    emitter = Emitter()
    try:
        backend = load_backend(settings)
        with backend.open_loader(
            settings["files"],
            settings["labels"],
            settings["batch"],
            workers=settings["workers"],
            pin_memory=False,
            prefetch=settings.get("prefetch"),
            throttle_bps=None,
        ) as batches:
            for _ in range(2):
                next(batches)
            emitter.emit("ready")
            sys.stdin.readline()
            emitter.emit(
                "result",
                value=harness.input_loop(
                    batches, backend.batch_len, float(settings["seconds"]), warmup=0
                ),
            )
    except BaseException as exc:  # the launcher counts it as a pipeline that failed
        emitter.emit("failed", message=f"{type(exc).__name__}: {exc}")
    sys.stderr.flush()
    os._exit(0)


def concurrent_workers(points: Sequence[Dict[str, Any]], fallback: int, cap: int) -> int:
    """Workers for each concurrent pipeline: the sweep's fastest count among those whose
    sum fits the node's cores (at most `cap` each), else the loader's."""
    measured = [p for p in points if p.get("rate") and int(p["workers"]) <= cap]
    if not measured:
        return fallback
    return int(max(measured, key=lambda p: p["rate"])["workers"])
