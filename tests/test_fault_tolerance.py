"""Faults in the environment become a report with the reason (issue 12): a hanging NVML,
a crafted timeline, a dying or misbehaving probe child, SIGTERM, files that are not
images, running out of host memory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import psutil
import pytest
from conftest import FW_PYTHON
from fakes.nvml import FakeNVML

from envcheck import bounded, signals
from envcheck.probe import session
from envcheck.probe.analysis import summarize
from envcheck.probe.child import images
from envcheck.probe.child.main import Probe, _first_line, is_oom
from envcheck.probe.runner import ProbeRun, run_probe
from envcheck.probe.sampler import Sampler, close_nvml, load_nvml
from envcheck.probe.settings import ProbeSettings
from envcheck.report import html_charts, probe_text, text

FAKE_CHILD = Path(__file__).parent / "probe" / "fake_child.py"
GUARD_S = 60.0  # a hang guard for calls that never returned before the fix, not a timing


def finishes(function: Callable[[], Any]) -> Any:
    """function(), run in a thread; fails the test (instead of hanging it) if it never ends."""
    box: list[Any] = []
    worker = threading.Thread(target=lambda: box.append(function()), daemon=True)
    worker.start()
    worker.join(GUARD_S)
    assert not worker.is_alive(), "did not finish: an unbounded loop or call"
    return box[0]


@pytest.fixture
def hung_nvml() -> Any:
    fake = FakeNVML({"system": {}, "devices": [{}]})
    yield fake
    fake.release()


# -- NVML that never answers ----------------------------------------------------------------


def test_a_hanging_nvml_init_gives_a_reason(hung_nvml: FakeNVML) -> None:
    nvml, why = finishes(lambda: load_nvml(hung_nvml.hang("nvmlInit"), timeout=0.2))
    assert nvml is None and "did not answer" in str(why)


def test_a_hanging_device_lookup_leaves_the_sampler_on_the_cpu(hung_nvml: FakeNVML) -> None:
    hung_nvml.hang("nvmlDeviceGetHandleByIndex")
    nvml, why = load_nvml(hung_nvml, timeout=5)
    assert why is None
    sampler = Sampler(nvml=nvml, gpu_index=0, interval=0.05, nvml_timeout=0.2)
    finishes(sampler.start)
    sampler.stop()
    assert "did not answer" in str(sampler.summary()["gpu_reason"])


def test_a_hanging_shutdown_does_not_hang_the_command(hung_nvml: FakeNVML) -> None:
    hung_nvml.nvmlInit()
    finishes(lambda: close_nvml(hung_nvml.hang("nvmlShutdown"), timeout=0.2))


def test_bounded_call_passes_results_and_errors_through() -> None:
    assert bounded.call(lambda: 42, 5, "x") == 42
    with pytest.raises(ZeroDivisionError):
        bounded.call(lambda: 1 / 0, 5, "x")
    release = threading.Event()
    with pytest.raises(bounded.Hung, match="NVML test did not answer"):
        bounded.call(lambda: release.wait(30), 0.1, "NVML test")
    release.set()


def test_a_hung_driver_is_named_in_the_text_report_even_without_pci_devices() -> None:
    reason = "NVML did not answer within 10 s (driver hung?)"
    line = text._gpu({"gpu": {"status": "unavailable", "reason": reason, "pci_nvidia_devices": 0}})
    assert reason in line and "no NVIDIA driver" not in line


def test_a_failed_probe_does_not_claim_a_gpu() -> None:
    line = probe_text.headline({"probe": {"device": None, "framework": "torch", "model": "m"}})
    assert "GPU" not in line


# -- crafted timelines in the HTML charts ---------------------------------------------------


CRAFTED = {
    "times beyond the floats' resolution": [
        {"t": 1e17, "gpu_util": 5, "cpu_util": [1]},
        {"t": 1e17 + 16, "gpu_util": 5, "cpu_util": [1]},
    ],
    "a span too large for a float": [
        {"t": 1.7e308, "gpu_util": 1, "cpu_util": [1]},
        {"t": -1.7e308, "gpu_util": 1, "cpu_util": [1]},
    ],
    "one instant": [{"t": 5, "gpu_util": 0, "cpu_util": [0]}] * 3,
    "a tiny span": [{"t": 1e-300, "gpu_util": 1}, {"t": 2e-300, "gpu_util": 1}],
    "huge values": [{"t": 0, "gpu_util": 1e308, "gpu_mem_bytes": 1e308, "cpu_util": [1e308]}],
    "wrong types": [{"t": "0", "gpu_util": "x", "cpu_util": "abc"}, {"t": None}],
    "a million cores": [{"t": 0.0, "cpu_util": [1.0] * 1_000_000}],
    "nothing": [],
}


@pytest.mark.parametrize("timeline", CRAFTED.values(), ids=list(CRAFTED))
def test_crafted_timelines_draw_a_bounded_chart(timeline: list[dict[str, Any]]) -> None:
    def draw() -> list[str]:
        return [
            html_charts.line_chart(
                "g", "GPU", timeline, [("gpu_util", "GPU")], html_charts.percent, "none"
            ),
            html_charts.line_chart(
                "m",
                "memory",
                timeline,
                [("gpu_mem_bytes", "used")],
                html_charts.bytes_label,
                "none",
                top_of=html_charts.nice_top_bytes,
            ),
            html_charts.cpu_heat_strip("c", "CPU", timeline),
        ]

    charts = finishes(draw)
    for chart in charts:
        assert chart.startswith("<") and "nan" not in chart.lower().replace("nanosec", "")
        assert chart.count('class="tick"') <= html_charts.MAX_TICKS + 5  # + the value axis
        assert len(chart) < 2_000_000


# -- the probe child: malformed output, SIGTERM ----------------------------------------------


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _fake(mode: str, tmp_path: Path, **settings: Any) -> ProbeRun:
    return run_probe(
        ProbeSettings(**settings),
        Path(sys.executable),
        command=[sys.executable, str(FAKE_CHILD), mode, str(tmp_path / "pids.json")],
    )


def test_malformed_child_output_is_dropped_not_trusted(tmp_path: Path, private_tmp: Path) -> None:
    run = _fake("malformed", tmp_path)
    assert run.status == "ok"
    assert isinstance(run.result["phases"], dict) and "input_warm" not in run.result["phases"]
    assert run.result["notes"] == ["kept"]
    assert run.result["x"] is None  # NaN: a measurement without a number is unknown
    assert "big" not in run.result
    assert list(private_tmp.iterdir()) == []


def test_values_of_the_wrong_type_become_a_failed_probe(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rate that is a string reaches the analysis: the probe fails with the reason."""
    monkeypatch.setattr(
        session,
        "run_probe",
        lambda settings, executable, *a, **k: run_probe(
            settings,
            executable,
            sampler=k.get("sampler") or (a[1] if len(a) > 1 else None),
            command=[sys.executable, str(FAKE_CHILD), "malformed", str(tmp_path / "p.json")],
        ),
    )
    try:
        summarize(_fake("malformed", tmp_path), usable_cores=2)
    except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError):
        pass  # this malformed run trips the analysis: measure() must catch it
    else:
        pytest.skip("the analysis accepted this malformed run")
    facts = {"interpreter": {"executable": sys.executable}, "gpu": {"status": "unavailable"}}
    section = session.measure(facts, ProbeSettings(device="cpu"), show_progress=False)
    assert section["status"] == "failed"
    assert "wrong shape" in json.dumps(section)


def _wait_for(path: Path) -> None:
    for _ in range(600):
        if path.exists() and path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def test_sigterm_ends_the_child_and_removes_the_work_folder(
    tmp_path: Path, private_tmp: Path
) -> None:
    pidfile = tmp_path / "pids.json"

    def terminate_once_started() -> None:
        _wait_for(pidfile)  # the child runs, so the handler is installed
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_once_started, daemon=True).start()
    with pytest.raises(signals.Terminated):
        run_probe(
            ProbeSettings(),
            Path(sys.executable),
            command=[sys.executable, str(FAKE_CHILD), "sleep", str(pidfile)],
        )
    assert list(private_tmp.iterdir()) == []  # images, settings, stderr: all gone
    assert signal.getsignal(signal.SIGTERM) is not signals._raise  # handler restored


@pytest.mark.slow
@pytest.mark.skipif(not FW_PYTHON.exists(), reason=f"no framework environment at {FW_PYTHON}")
def test_sigterm_on_a_real_probe_kills_its_child_and_cleans_up(tmp_path: Path) -> None:
    """What Slurm and Kubernetes do: SIGTERM to envcheck while the real child measures."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    envcheck = Path(sys.executable).with_name("envcheck")
    proc = subprocess.Popen(
        [
            str(envcheck),
            "probe",
            "--python",
            str(FW_PYTHON),
            "--framework",
            "torch",
            "--device",
            "cpu",
            "--budget",
            "60",
            "--format",
            "json",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ, TMPDIR=str(temp)),
    )
    try:
        child = None
        for _ in range(1200):  # until the child has started and written its images
            kids = psutil.Process(proc.pid).children()
            work = list(temp.glob("envcheck-probe-*/images/*"))
            if kids and work:
                child = kids[0]
                break
            time.sleep(0.05)
        assert child is not None, "the probe's child never started"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err.decode()
    assert "terminated" in err.decode()
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert list(temp.iterdir()) == []  # the probe's folder, and the framework's own files


# -- files that are not images, running out of memory ---------------------------------------


def test_a_fifo_and_a_huge_sparse_file_are_skipped_without_blocking(tmp_path: Path) -> None:
    good = tmp_path / "good.jpg"
    good.write_bytes(b"\xff\xd8" + b"0" * 100)
    fifo = tmp_path / "pipe.jpg"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.jpg"
    with open(sparse, "wb") as handle:
        handle.truncate(images.MAX_FILE_BYTES * 64)  # 4 GiB, no blocks on disk
    refused = finishes(lambda: _raises(lambda: images.read_file(str(fifo))))
    assert "not a regular file" in str(refused)
    with pytest.raises(OSError, match="larger than"):
        images.read_file(str(sparse))
    files = [str(good), str(fifo), str(sparse)]
    check = finishes(lambda: images.validate(files, [0, 0, 0], lambda data: None, 5.0))
    assert check["files"] == [str(good)]
    assert check["skipped"] == 2 and check["corrupt"] == 0


def _raises(function: Callable[[], Any]) -> Any:
    try:
        function()
    except OSError as exc:
        return exc
    return None


def test_unusable_names_the_reason(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jpg"
    os.mkfifo(fifo)
    assert images.unusable(str(fifo)) == "not a regular file"
    assert images.unusable(str(tmp_path / "missing.jpg")) is None  # the read reports it


def test_out_of_memory_on_the_cpu_is_recognised() -> None:
    assert is_oom(MemoryError())
    assert is_oom(
        RuntimeError(
            "[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: "
            "not enough memory: you tried to allocate 8589934592 bytes."
        )
    )
    assert not is_oom(ValueError("shapes (3,) and (4,) not aligned"))


def test_tensorflow_s_out_of_memory_reason_is_kept() -> None:
    class ResourceExhaustedError(Exception):
        pass

    exc = ResourceExhaustedError(
        "Graph execution error:\n\nDetected at node conv2d/Conv2D defined at ...\n"
        "OOM when allocating tensor with shape[512,64,112,112] and type float on "
        "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu\n\t [[{{node x}}]]"
    )
    assert is_oom(exc)
    assert "OOM when allocating tensor with shape[512,64,112,112]" in _first_line(exc)


class _HostMemoryBackend:
    """Runs out of host memory (MemoryError, as the CPU allocator does) above `fits`."""

    def __init__(self, fits: int) -> None:
        self.fits, self.batch = fits, 0

    def build(self, model: str, batch: int, size: int, classes: int) -> None:
        self.batch = batch

    def compute_step(self) -> None:
        if self.batch > self.fits:
            raise RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate")

    def sync(self) -> None:
        pass

    def release(self) -> None:
        pass

    def is_oom(self, exc: BaseException) -> bool:
        return False  # as torch's own check, which looks for CUDA's wording only


def test_out_of_memory_on_the_cpu_halves_the_batch() -> None:
    class Quiet:
        def emit(self, *args: Any, **kwargs: Any) -> None:
            pass

    probe = Probe({"model": "small-cnn", "image_size": 32}, Quiet())  # type: ignore[arg-type]
    assert probe.build_model(_HostMemoryBackend(fits=8), 32, classes=2) == 8
    assert probe.result["batch"] == {"requested": 32, "used": 8}


def test_sigterm_during_a_bounded_command_ends_its_process_group(tmp_path: Path) -> None:
    """`doctor --deep` importing a framework, a storage tool...: the child (in its own
    session, so the signal does not reach it) must not outlive envcheck."""
    from envcheck import subprocess_runner

    pidfile = tmp_path / "pid"
    script = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"

    def terminate_once_started() -> None:
        _wait_for(pidfile)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_once_started, daemon=True).start()
    with pytest.raises(signals.Terminated):
        subprocess_runner.run([sys.executable, "-c", script], timeout=GUARD_S)
    child = int(pidfile.read_text())
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


# -- bounded walks and hangs outside the probe ----------------------------------------------


def test_a_scripts_folder_search_stops_at_its_time_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`envcheck scripts /`: the walk itself stops, before the file limit can apply."""
    from envcheck import interpreter
    from envcheck.collectors import scripts
    from envcheck.collectors.base import CollectContext

    for i in range(30):
        (tmp_path / f"d{i:02d}").mkdir()
        (tmp_path / f"d{i:02d}" / "a.py").write_text("x = 1\n", encoding="utf-8")
    ticks = iter(range(10_000))
    clock = lambda: float(next(ticks)) * scripts.BUDGET_S / 8  # noqa: E731 - past it in 8 calls
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(tmp_path,))
    section = scripts.collect(ctx, clock=clock)["scripts"]
    assert len(section["files"]) < 30
    assert "stopped" in section["reasons"]["files"]


def test_a_large_folder_is_audited_as_far_as_the_budget_goes_and_says_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading every file's options first must not use up the whole budget (it did on a
    2000-file repository: "0 findings in 0 files", silently)."""
    from envcheck import interpreter
    from envcheck.collectors import scripts
    from envcheck.collectors.base import CollectContext
    from envcheck.model import Severity
    from envcheck.report.script_lines import summary_line

    for i in range(30):
        (tmp_path / f"s{i:02d}.py").write_text("x = 1\n", encoding="utf-8")
    now = [0.0]
    slow_parse, slow_analyze = scripts.parse_file, scripts.analyze_file

    def parse(*args: Any) -> Any:
        now[0] += scripts.BUDGET_S / 10
        return slow_parse(*args)

    def analyze(*args: Any) -> Any:
        now[0] += scripts.BUDGET_S / 10
        return slow_analyze(*args)

    monkeypatch.setattr(scripts, "parse_file", parse)
    monkeypatch.setattr(scripts, "analyze_file", analyze)
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(tmp_path,))
    section = scripts.collect(ctx, clock=lambda: now[0])["scripts"]
    assert 3 <= len(section["files"]) < 30
    line = summary_line({"scripts": section}, [], Severity.HIGH)
    assert f"in {len(section['files'])} files" in line and "stopped after" in line


def test_a_folder_search_leaves_test_modules_out_and_says_how_many(tmp_path: Path) -> None:
    """Unit tests build tiny loaders on purpose: in a folder search they are noise. The
    folder named on the command line, and files named, are still audited."""
    from envcheck import interpreter
    from envcheck.collectors import scripts
    from envcheck.collectors.base import CollectContext
    from envcheck.model import Severity
    from envcheck.report.script_lines import summary_line

    for name in ("train.py", "test_train.py", "train_test.py", "conftest.py"):
        (tmp_path / name).write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "helpers.py").write_text("x = 1\n", encoding="utf-8")

    def files(*paths: Path) -> dict[str, Any]:
        ctx = CollectContext(interpreter=interpreter.current(), scripts=paths)
        return scripts.collect(ctx)["scripts"]

    searched = files(tmp_path)
    assert searched["files"] == [str(tmp_path / "train.py")]
    assert "4 test files left out" in summary_line({"scripts": searched}, [], Severity.HIGH)
    assert files(tmp_path / "tests")["files"] == [str(tmp_path / "tests" / "helpers.py")]
    assert files(tmp_path / "test_train.py")["files"] == [str(tmp_path / "test_train.py")]


def test_scripts_named_one_by_one_are_all_audited_past_the_time_budget(tmp_path: Path) -> None:
    """The budget bounds folder searches only: a slow machine must not drop named files."""
    from envcheck import interpreter
    from envcheck.collectors import scripts
    from envcheck.collectors.base import CollectContext

    named = []
    for i in range(12):
        named.append(tmp_path / f"s{i:02d}.py")
        named[-1].write_text("x = 1\n", encoding="utf-8")
    ticks = iter(range(10_000))
    clock = lambda: float(next(ticks)) * scripts.BUDGET_S / 4  # noqa: E731 - past it at once
    ctx = CollectContext(interpreter=interpreter.current(), scripts=tuple(named))
    section = scripts.collect(ctx, clock=clock)["scripts"]
    assert section["files"] == [str(p) for p in named]
    assert "files" not in section["reasons"]


def test_a_hanging_gpu_count_leaves_envcheck_run_watching_the_cpu(
    hung_nvml: FakeNVML, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envcheck import hook
    from envcheck.probe import sampler as sampler_module

    hung_nvml.hang("nvmlDeviceGetCount")
    monkeypatch.setattr(bounded, "NVML_TIMEOUT_S", 0.2)
    monkeypatch.setattr(
        sampler_module, "load_nvml", lambda: (hung_nvml.nvmlInit() or hung_nvml, None)
    )
    nvml, index, why = finishes(hook.open_gpu)
    assert nvml is None and index is None and "did not answer" in str(why)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_scripts_on_a_binary_file_says_why(tmp_path: Path, fmt: str) -> None:
    binary = tmp_path / "model.py"
    binary.write_bytes(bytes(range(256)) * 8)
    envcheck = Path(sys.executable).with_name("envcheck")
    proc = subprocess.run(
        [str(envcheck), "scripts", str(binary), "-f", fmt], capture_output=True, timeout=120
    )
    assert proc.returncode == 2
    assert str(binary).encode() in proc.stdout + proc.stderr
    assert proc.stdout.strip()
