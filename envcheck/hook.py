"""The pre-training hook: the doctor before training, then the training itself, watched.

`envcheck run -- COMMAND` and `envcheck.preflight()` both come here. The doctor part goes
through the same service as `envcheck doctor` (envcheck.service); the watch part samples
GPU utilisation with the probe's Sampler while the user's own command runs, untouched:
its stdin, stdout and stderr are inherited, SIGINT/SIGTERM are forwarded to it, and its
exit code is envcheck's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from envcheck import service
from envcheck.model import Report, Severity
from envcheck.probe.settings import ProbeSettings

PathLike = Union[str, Path]
FORWARDED = (signal.SIGINT, signal.SIGTERM)


# the doctor part ----------------------------------------------------------------------


class PreflightFailed(Exception):
    """The doctor found problems at or above `fail_on`; `.report` holds all of them."""

    def __init__(self, report: Report, fail_on: Severity) -> None:
        self.report = report
        self.fail_on = fail_on
        super().__init__(failure_line(report, fail_on))


def failure_line(report: Report, fail_on: Severity) -> str:
    found = report.at_or_above(fail_on)
    listed = "; ".join(f"{f.id} ({f.severity.value}) {f.message}" for f in found)
    plural = "" if len(found) == 1 else "s"
    return f"envcheck: {len(found)} finding{plural} at or above {fail_on.value}: {listed}"


def _listed(value: Union[str, PathLike, Iterable[Any], None]) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, Path)):
        return [value]
    return list(value)


def doctor_request(
    python: Optional[str] = None,
    data: Optional[PathLike] = None,
    scripts: Sequence[PathLike] = (),
    probe: bool = False,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    rules: Sequence[PathLike] = (),
    config_path: Optional[PathLike] = None,
    fail_on: Optional[Severity] = None,
) -> service.AuditRequest:
    """The doctor's request before training: a bad --data folder stops it (the training
    would read the same folder), and the probe runs without its progress display."""
    folder = Path(data) if data is not None else None
    return service.AuditRequest(
        python=python,
        data=folder,
        data_is_fatal=True,
        scripts=tuple(Path(s) for s in scripts),
        probe=probe,
        probe_request=service.ProbeRequest(ProbeSettings(data=folder), show_progress=False),
        select=tuple(select),
        ignore=tuple(ignore),
        rule_paths=tuple(Path(p) for p in rules),
        config_path=Path(config_path) if config_path is not None else None,
        fail_on=fail_on,
    )


def doctor_audit(request: service.AuditRequest) -> service.Audit:
    """The audit; an unreadable script is an input error before any training starts."""
    result = service.audit(request)
    result.raise_problems()
    return result


def preflight(
    python: Optional[str] = None,
    data: Optional[PathLike] = None,
    script: Union[PathLike, Sequence[PathLike], None] = None,
    fail_on: Union[str, Severity] = "high",
    probe: bool = False,
    select: Union[str, Sequence[str], None] = None,
    rules: Union[PathLike, Sequence[PathLike], None] = None,
) -> Report:
    """Run the doctor on this machine (and `python`'s environment, this one by default).

    Returns the Report; raises PreflightFailed when a finding reaches `fail_on`, and
    envcheck.errors.EnvcheckError for bad input (a missing data folder, an unknown rule
    prefix). `rules` adds rule files or folders, as `--rules` does; the config file
    (envcheck.toml or [tool.envcheck]) is found from the current folder, as the CLI's."""
    threshold = fail_on if isinstance(fail_on, Severity) else Severity.parse(fail_on)
    result = doctor_audit(
        doctor_request(
            python=python,
            data=data,
            scripts=_listed(script),
            probe=probe,
            select=[s for item in _listed(select) for s in str(item).split(",") if s.strip()],
            rules=_listed(rules),
            fail_on=threshold,
        )
    )
    if result.blocking():
        raise PreflightFailed(result.report, threshold)
    return result.report


# the watch part -----------------------------------------------------------------------


def open_gpu() -> tuple[Any, Optional[int], Optional[str]]:
    """(initialised NVML module or None, the GPU index to watch, why there is none)."""
    from envcheck import bounded
    from envcheck.probe.sampler import load_nvml
    from envcheck.probe.session import probed_gpu_index

    nvml, why = load_nvml()
    if nvml is None:
        return None, None, why
    try:
        count = int(bounded.call(nvml.nvmlDeviceGetCount, bounded.NVML_TIMEOUT_S, "NVML"))
    except Exception as exc:
        close_gpu(nvml)
        return None, None, f"NVML cannot count GPUs: {exc}"
    if count == 0:
        close_gpu(nvml)
        return None, None, "NVML sees no GPU"
    index = probed_gpu_index(os.environ)
    return nvml, index if index < count else 0, None


def close_gpu(nvml: Any) -> None:
    from envcheck.probe.sampler import close_nvml

    close_nvml(nvml)


def make_sampler(interval: Optional[float] = None) -> Any:
    """A Sampler on the GPU a framework calls device 0, or on the CPU cores only."""
    from envcheck.probe.sampler import INTERVAL_S, Sampler

    nvml, index, why = open_gpu()
    return Sampler(nvml=nvml, gpu_index=index, interval=interval or INTERVAL_S, nvml_reason=why)


def utilisation(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean and median GPU utilisation (percent) of the samples, and of the CPU cores."""
    gpu = [s["gpu_util"] for s in samples if s.get("gpu_util") is not None]
    cpu = [statistics.fmean(s["cpu_util"]) for s in samples if s.get("cpu_util")]
    return {
        "samples": len(samples),
        "gpu_samples": len(gpu),
        "gpu_util_mean": round(statistics.fmean(gpu), 1) if gpu else None,
        "gpu_util_median": round(statistics.median(gpu), 1) if gpu else None,
        "cpu_util_mean": round(statistics.fmean(cpu), 1) if cpu else None,
    }


def top_finding(report: Optional[Report]) -> Optional[Any]:
    """The doctor's fix 1: the highest-ranked active finding, if any."""
    if report is None:
        return None
    for ranked in report.findings:
        if ranked.finding.acknowledged is None:
            return ranked
    return None


# Below this, a utilisation figure says more about start-up than about training (and the
# sampler, at 10 Hz, has hardly begun).
MIN_WATCH_S = 0.5


def summary_line(
    util: Mapping[str, Any],
    watched: Union[float, str],
    report: Optional[Report],
    gpu_reason: Optional[str],
) -> str:
    """One line: the measured mean GPU utilisation and the doctor's top finding.

    `watched` is the seconds sampled, or a phrase such as "over the first 50 steps"."""
    span = watched if isinstance(watched, str) else span_text(watched)
    too_short = not isinstance(watched, str) and watched < MIN_WATCH_S
    if not util.get("samples") or too_short:
        head = f"envcheck: no utilisation sample {span}: too short to measure"
    elif util.get("gpu_util_mean") is None:
        cpu = util.get("cpu_util_mean")
        cpu_part = f"; CPU busy {cpu:.0f} % (mean over cores) {span}" if cpu is not None else ""
        head = f"envcheck: no GPU was visible ({gpu_reason or 'no GPU samples'}){cpu_part}"
    else:
        head = (
            f"envcheck: GPU busy {util['gpu_util_mean']:.0f} % "
            f"(median {util['gpu_util_median']:.0f} %) {span}"
        )
    top = top_finding(report)
    if top is None:
        return head + ("; the doctor found nothing to fix" if report is not None else "")
    return f"{head}; see fix {top.rank} ({top.finding.id})"


def below_line(report: Report, fail_on: Severity) -> Optional[str]:
    """Before the command: one line about findings under --fail-on, if there are any."""
    top = top_finding(report)
    if top is None:
        return None
    count = len(report.active_findings())
    plural = "" if count == 1 else "s"
    return (
        f"envcheck: {count} finding{plural} below --fail-on {fail_on.value}; fix {top.rank}: "
        f"{top.finding.id} ({top.finding.severity.value}) {top.finding.fix}"
    )


def span_text(seconds: float) -> str:
    return f"over the first {seconds:.0f} s" if seconds >= 10 else f"over {seconds:.1f} s"


def summary_json(
    command: Sequence[str],
    exit_code: Optional[int],
    watch_s: float,
    watched_s: float,
    util: Mapping[str, Any],
    report: Optional[Report],
    sampler_summary: Mapping[str, Any],
    blocked: bool = False,
) -> dict[str, Any]:
    top = top_finding(report)
    return {
        "command": list(command),
        "exit_code": exit_code,
        "blocked": blocked,
        "watch_s": watch_s,
        "watched_s": round(watched_s, 2),
        **util,
        "gpu_index": sampler_summary.get("gpu_index"),
        "gpu_reason": sampler_summary.get("gpu_reason"),
        "findings": [r.finding.id for r in report.findings] if report is not None else [],
        "top_finding": top.finding.id if top is not None else None,
    }


def exit_status(returncode: int) -> int:
    """A child's exit code as a shell reports it: 128 + N when killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


class Forwarder:
    """Pass SIGINT and SIGTERM on to the child while it runs; restore on exit.

    A Ctrl-C typed in a terminal already reaches the child (same process group, which
    keeps the terminal usable for it), so SIGINT is forwarded only when envcheck is not
    the terminal's foreground process group: a `kill -INT` sent to envcheck alone."""

    def __init__(self, child: subprocess.Popen[Any]) -> None:
        self.child = child
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> Forwarder:
        for sig in FORWARDED:
            self.previous[sig] = signal.signal(sig, self._forward)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def _forward(self, signum: int, _frame: Any) -> None:
        if signum == signal.SIGINT and _terminal_foreground():
            return
        with contextlib.suppress(ProcessLookupError):
            self.child.send_signal(signum)


def _terminal_foreground() -> bool:
    try:
        with open("/dev/tty", "rb") as tty:
            return os.tcgetpgrp(tty.fileno()) == os.getpgrp()
    except (OSError, AttributeError):  # no terminal; or no process groups (Windows)
        return False


def launch(command: Sequence[str]) -> subprocess.Popen[Any]:
    """Start the command with envcheck's stdin/stdout/stderr; InputError if it cannot."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        return subprocess.Popen(list(command))
    except FileNotFoundError:
        raise CommandNotRunnable(127, f"{command[0]}: command not found") from None
    except PermissionError:
        raise CommandNotRunnable(126, f"{command[0]}: permission denied") from None
    except OSError as exc:
        raise CommandNotRunnable(126, f"{command[0]}: {exc.strerror or exc}") from None


class CommandNotRunnable(Exception):
    """The command could not be started; `code` is what a shell would exit with."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        super().__init__(message)


def run_watched(
    command: Sequence[str], watch_s: float, sampler: Any
) -> tuple[int, float, dict[str, Any]]:
    """Run the command to its end, sampling for its first `watch_s` seconds.

    Returns (envcheck's exit status for it, seconds watched, utilisation)."""
    import time

    child = launch(command)
    with Forwarder(child):
        start = time.monotonic()
        sampler.start()
        try:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=watch_s)
        finally:
            stop_sampling(sampler)
            watched = min(time.monotonic() - start, watch_s)
            returncode = child.wait()
    return exit_status(returncode), watched, utilisation(sampler.samples)


def stop_sampling(sampler: Any) -> None:
    """Stop the sampler; a run shorter than one interval still gets one sample."""
    sampler.stop()
    if not sampler.samples:
        with contextlib.suppress(Exception):
            sampler.samples.append(sampler.sample())
