"""The pre-training hook for real: `envcheck run` in a child process running real
commands (bytes, exit codes, signals), `envcheck.preflight()`, and the summary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import envcheck
from envcheck import hook
from envcheck.model import Severity

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable

ALWAYS_HIGH = """
[[rule]]
id = "ORG900"
name = "always-fails"
severity = "high"
category = "packages"
summary = "A policy rule that fails on every machine (for the tests)"
message = "interpreter {interpreter.executable} is not allowed to train here"
fix = "nothing: a test rule"
evidence = ["tests"]
when = [{ fact = "interpreter.executable", op = "present" }]
"""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder (no envcheck.toml) with the always-failing policy in it."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "policy.toml").write_text(ALWAYS_HIGH)
    monkeypatch.chdir(folder)
    return folder


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.pop("ENVCHECK_DEBUG", None)
    return env


def envcheck_run(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [PY, "-m", "envcheck", "run", *args],
        cwd=cwd,
        env=_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
    )


def summary_lines(stderr: bytes) -> list[str]:
    return [ln for ln in stderr.decode(errors="replace").splitlines() if ln.startswith("envcheck:")]


# passthrough ----------------------------------------------------------------------------

CHILD_BYTES = (
    "import sys, time; "
    "sys.stdout.buffer.write(b'out \\xff\\x00 raw\\n' * 3); sys.stdout.flush(); "
    "sys.stderr.buffer.write(b'err \\xfe no newline'); sys.stderr.flush(); time.sleep(0.5)"
)


def test_stdout_and_stderr_pass_through_byte_for_byte(work: Path) -> None:
    result = envcheck_run("--watch", "5", "--", PY, "-c", CHILD_BYTES, cwd=work)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"out \xff\x00 raw\n" * 3  # nothing of envcheck's on stdout
    assert result.stderr.startswith(b"err \xfe no newline")
    tail = result.stderr[len(b"err \xfe no newline") :].decode()
    lines = [ln for ln in tail.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("envcheck: "), tail
    assert " % " in lines[0]


@pytest.mark.parametrize("code", [0, 3, 130])
def test_exit_code_is_the_commands(work: Path, code: int) -> None:
    result = envcheck_run("--", PY, "-c", f"import sys; sys.exit({code})", cwd=work)
    assert result.returncode == code, result.stderr


def test_option_like_arguments_after_dashes_reach_the_command(work: Path) -> None:
    argv = ["--help", "-o", "x.json", "--fail-on", "low", "--watch", "1", "--", "-v", "--select"]
    show = "import sys, json; print(json.dumps(sys.argv[1:]))"
    result = envcheck_run("--watch", "5", "--", PY, "-c", show, *argv, cwd=work)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == argv
    assert not (work / "x.json").exists()  # the command's -o, not envcheck's


def test_options_stop_at_the_command_without_dashes(work: Path) -> None:
    show = "import sys, json; print(json.dumps(sys.argv[1:]))"
    result = envcheck_run(PY, "-c", show, "--watch", "zz", cwd=work)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["--watch", "zz"]


def test_stdin_is_inherited(work: Path) -> None:
    result = subprocess.run(
        [PY, "-m", "envcheck", "run", "--", PY, "-c", "import sys; print(sys.stdin.read()[::-1])"],
        cwd=work,
        env=_env(),
        input=b"abc",
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"cba\n"


def test_command_not_found_exits_127(work: Path) -> None:
    result = envcheck_run("--", "no-such-command-envcheck-test", cwd=work)
    assert result.returncode == 127
    assert "no-such-command-envcheck-test: command not found" in result.stderr.decode()


def test_no_command_is_a_usage_error(work: Path) -> None:
    result = envcheck_run("--fail-on", "high", cwd=work)
    assert result.returncode == 2
    assert "needs a command" in result.stderr.decode()


# signals ----------------------------------------------------------------------------------


def _wait_for(path: Path, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("sig", "expected"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_is_forwarded_and_reported_as_128_plus_n(
    work: Path, sig: signal.Signals, expected: int
) -> None:
    pid_file = work / "child.pid"
    sleeper = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(30)"
    )
    started = time.monotonic()
    proc = subprocess.Popen(
        [PY, "-m", "envcheck", "run", "--", PY, "-c", sleeper],
        cwd=work,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # no terminal: a SIGINT can only come from kill
        # a test run started in the background (`make test &`) inherits SIGINT ignored,
        # and so would the child: start both with the default disposition, as a user's are
        preexec_fn=_default_sigint,
    )
    try:
        child = int(_wait_for(pid_file))
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == expected, err
    assert time.monotonic() - started < 25  # it did not sleep its 30 s out
    assert _gone(child)
    assert summary_lines(err), err


# blocking on findings -------------------------------------------------------------------


def test_findings_at_fail_on_block_the_command(work: Path) -> None:
    marker = work / "ran"
    result = envcheck_run(
        "--rules",
        "policy.toml",
        "--select",
        "ORG9",
        "-o",
        "summary.json",
        "--",
        PY,
        "-c",
        f"open({str(marker)!r}, 'w')",
        cwd=work,
    )
    assert result.returncode == 1
    assert not marker.exists()
    assert result.stdout == b""
    err = result.stderr.decode()
    assert "ORG900" in err and "not running the command" in err
    summary = json.loads((work / "summary.json").read_text())
    assert summary["blocked"] is True and summary["exit_code"] is None
    assert summary["findings"] == ["ORG900"]


def test_fail_on_above_the_findings_runs_the_command(work: Path) -> None:
    result = envcheck_run(
        "--rules", "policy.toml", "--select", "ORG9", "--fail-on", "critical", "--",
        PY, "-c", "print('trained')", cwd=work,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"trained\n"
    lines = summary_lines(result.stderr)
    assert lines[0].startswith("envcheck: 1 finding below --fail-on critical; fix 1: ORG900 (high)")
    assert "see fix 1 (ORG900)" in lines[-1]


def test_warn_only_prints_and_runs(work: Path) -> None:
    result = envcheck_run(
        "--rules", "policy.toml", "--select", "ORG9", "--warn-only", "--format", "json", "--",
        PY, "-c", "import sys; print('trained'); sys.exit(4)", cwd=work,
    )  # fmt: skip
    assert result.returncode == 4
    assert result.stdout == b"trained\n"
    err = result.stderr.decode()
    report = json.loads(err[: err.index("\nenvcheck:") + 1])  # the JSON report first
    assert [f["id"] for f in report["findings"]] == ["ORG900"]
    assert "see fix 1 (ORG900)" in summary_lines(result.stderr)[-1]


def test_summary_json_with_output(work: Path) -> None:
    result = envcheck_run(
        "--rules", "policy.toml", "--select", "ORG9", "--warn-only", "--watch", "30",
        "-o", "summary.json", "--", PY, "-c", "import time; time.sleep(1.5)", cwd=work,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads((work / "summary.json").read_text())
    assert summary["command"] == [PY, "-c", "import time; time.sleep(1.5)"]
    assert summary["exit_code"] == 0 and summary["blocked"] is False
    assert summary["watch_s"] == 30
    assert 1.0 <= summary["watched_s"] < 30
    assert summary["samples"] >= 5  # ~10 Hz
    assert summary["findings"] == ["ORG900"] and summary["top_finding"] == "ORG900"
    if summary["gpu_index"] is None:
        assert summary["gpu_util_mean"] is None and summary["gpu_reason"]
        assert "no GPU was visible" in summary_lines(result.stderr)[-1]
    else:
        assert 0 <= summary["gpu_util_mean"] <= 100
        assert 0 <= summary["gpu_util_median"] <= 100


def test_watch_stops_sampling_but_not_the_command(work: Path) -> None:
    result = envcheck_run(
        "--watch", "1", "-o", "s.json", "--", PY, "-c", "import time; time.sleep(2.5)", cwd=work
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((work / "s.json").read_text())
    assert summary["watched_s"] == 1.0
    assert summary["samples"] <= 15


# the pieces -----------------------------------------------------------------------------


def test_summary_line_names_the_mean_and_the_top_finding(work: Path) -> None:
    report = envcheck.preflight(rules="policy.toml", select="ORG9", fail_on="critical")
    util = hook.utilisation([{"gpu_util": v, "cpu_util": [10.0, 30.0]} for v in (20, 30, 52)])
    assert util["gpu_util_mean"] == 34.0 and util["gpu_util_median"] == 30
    assert util["cpu_util_mean"] == 20.0
    line = hook.summary_line(util, 120.0, report, None)
    assert line == "envcheck: GPU busy 34 % (median 30 %) over the first 120 s; see fix 1 (ORG900)"
    no_gpu = hook.summary_line(
        hook.utilisation([{"gpu_util": None, "cpu_util": [50.0]}]), 3, None, "x"
    )
    assert no_gpu == "envcheck: no GPU was visible (x); CPU busy 50 % (mean over cores) over 3.0 s"
    # a command that ended at once: one sample at its start says nothing about training
    instant = hook.summary_line(
        hook.utilisation([{"gpu_util": 90, "cpu_util": [50.0]}]), 0.02, None, None
    )
    assert instant == "envcheck: no utilisation sample over 0.0 s: too short to measure"


def test_exit_status() -> None:
    assert hook.exit_status(0) == 0
    assert hook.exit_status(3) == 3
    assert hook.exit_status(-signal.SIGTERM) == 143


# preflight ------------------------------------------------------------------------------


def test_preflight_returns_the_report(work: Path) -> None:
    report = envcheck.preflight(rules=[work / "policy.toml"], select=["ORG9"], fail_on="critical")
    assert [r.finding.id for r in report.findings] == ["ORG900"]
    assert report.worst_severity() is Severity.HIGH


def test_preflight_raises_with_the_report(work: Path) -> None:
    with pytest.raises(envcheck.PreflightFailed) as caught:
        envcheck.preflight(rules="policy.toml", select="ORG9")
    failure: Any = caught.value
    assert isinstance(failure, hook.PreflightFailed)
    assert [r.finding.id for r in failure.report.findings] == ["ORG900"]
    assert failure.fail_on is Severity.HIGH
    message = str(failure)
    assert len(message.splitlines()) == 1
    assert message.startswith("envcheck: 1 finding at or above high: ORG900 (high) interpreter ")


def test_preflight_reads_the_config_file(work: Path) -> None:
    (work / "envcheck.toml").write_text('rules = ["policy.toml"]\nselect = ["ORG9"]\n')
    with pytest.raises(envcheck.PreflightFailed):
        envcheck.preflight()
    assert envcheck.preflight(fail_on="critical").findings


def test_preflight_bad_input_is_an_envcheck_error(work: Path) -> None:
    from envcheck.errors import EnvcheckError

    with pytest.raises(EnvcheckError, match="no-such-folder"):
        envcheck.preflight(data=work / "no-such-folder")
    with pytest.raises(ValueError, match="severity"):
        envcheck.preflight(fail_on="dire")


def test_package_import_stays_light() -> None:
    code = (
        "import sys, envcheck; "
        "print(sorted(m for m in sys.modules if m.startswith(('typer', 'rich', 'psutil'))))"
    )
    out = subprocess.run([PY, "-c", code], env=_env(), capture_output=True, check=True)
    assert out.stdout.strip() == b"[]"


# the Keras callback, with real tensorflow-cpu -----------------------------------------

from conftest import FW_PYTHON  # noqa: E402

KERAS_TRAINING = """
import json, warnings
import numpy as np
import keras
import envcheck
from envcheck.integrations.keras import EnvcheckCallback

x = np.random.rand(64, 8).astype("float32")
y = np.random.rand(64, 1).astype("float32")


def model():
    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    m.compile(optimizer="sgd", loss="mse")
    return m


out = {}
lines = []
cb = EnvcheckCallback(
    fail_on="critical", watch_steps=5, rules="policy.toml", select="ORG9", log=lines.append
)
history = model().fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[cb])
out["pass"] = {"summary": cb.summary, "lines": list(lines), "epochs": len(history.history["loss"])}
blocked = model()
before = [w.copy() for w in blocked.get_weights()]
try:
    blocked.fit(x, y, batch_size=4, epochs=1, verbose=0,
                callbacks=[EnvcheckCallback(rules="policy.toml", select="ORG9")])
    out["fail"] = None
except envcheck.PreflightFailed as failed:
    out["fail"] = str(failed)
    out["untrained"] = all((a == b).all() for a, b in zip(before, blocked.get_weights()))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cb = EnvcheckCallback(
        warn_only=True, watch_steps=100, rules="policy.toml", select="ORG9", log=lines.append
    )
    model().fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[cb])
out["warn"] = {
    "warnings": [str(w.message) for w in caught if "ORG900" in str(w.message)],
    "summary": cb.summary,
}
print("RESULT " + json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not FW_PYTHON.exists(), reason=f"no framework environment at {FW_PYTHON} (make frameworks)"
)
def test_keras_callback_with_real_tensorflow(work: Path) -> None:
    (work / "train.py").write_text(KERAS_TRAINING)
    env = _env()
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    result = subprocess.run(
        [str(FW_PYTHON), "train.py"], cwd=work, env=env, capture_output=True, timeout=300
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    marked = [ln for ln in result.stdout.decode().splitlines() if ln.startswith("RESULT ")]
    out = json.loads(marked[-1][len("RESULT ") :])
    passed = out["pass"]
    assert passed["epochs"] == 1
    assert passed["summary"]["steps"] == 5 and passed["summary"]["findings"] == ["ORG900"]
    assert len(passed["lines"]) == 1
    assert "over the first 5 steps" in passed["lines"][0]
    assert passed["lines"][0].endswith("see fix 1 (ORG900)")
    if passed["summary"]["gpu_index"] is None:
        assert "no GPU was visible" in passed["lines"][0]
    assert out["fail"].startswith("envcheck: 1 finding at or above high: ORG900 (high)")
    assert out["untrained"] is True
    assert len(out["warn"]["warnings"]) == 1
    assert out["warn"]["summary"]["steps"] == 32  # 2 epochs of 16 batches, fewer than 100


LIGHTNING_TRAINING = """import json, warnings
import torch
import lightning as L
import envcheck
from envcheck.integrations.lightning import EnvcheckCallback


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


data = torch.utils.data.TensorDataset(torch.rand(64, 8), torch.rand(64, 1))


def fit(callback, epochs=1):
    model = Tiny()
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    trainer = L.Trainer(
        max_epochs=epochs, accelerator="cpu", devices=1, callbacks=[callback],
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    return trainer


out = {}
lines = []
cb = EnvcheckCallback(
    fail_on="critical", watch_steps=5, rules="policy.toml", select="ORG9", log=lines.append
)
trainer = fit(cb)
out["pass"] = {"summary": cb.summary, "lines": list(lines), "steps": trainer.global_step}
try:
    fit(EnvcheckCallback(rules="policy.toml", select="ORG9"))
    out["fail"] = None
except envcheck.PreflightFailed as failed:
    out["fail"] = str(failed)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cb = EnvcheckCallback(
        warn_only=True, watch_steps=100, rules="policy.toml", select="ORG9", log=lines.append
    )
    fit(cb, epochs=2)
out["warn"] = {
    "warnings": [str(w.message) for w in caught if "ORG900" in str(w.message)],
    "summary": cb.summary,
}
print("RESULT " + json.dumps(out))
"""


def _fw_has(module: str) -> bool:
    if not FW_PYTHON.exists():
        return False
    found = subprocess.run(
        [str(FW_PYTHON), "-c", f"import importlib.util as u; exit(not u.find_spec({module!r}))"],
        capture_output=True,
    )
    return found.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _fw_has("lightning"), reason=f"lightning is not installed in {FW_PYTHON}")
def test_lightning_callback_with_real_torch(work: Path) -> None:
    (work / "train.py").write_text(LIGHTNING_TRAINING)
    result = subprocess.run(
        [str(FW_PYTHON), "train.py"], cwd=work, env=_env(), capture_output=True, timeout=300
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    marked = [ln for ln in result.stdout.decode().splitlines() if ln.startswith("RESULT ")]
    out = json.loads(marked[-1][len("RESULT ") :])
    passed = out["pass"]
    assert passed["steps"] == 16  # the watch ended at 5 steps; training went on
    assert passed["summary"]["steps"] == 5 and passed["summary"]["samples"] >= 1
    assert len(passed["lines"]) == 1
    assert "over the first 5 steps" in passed["lines"][0]
    assert passed["lines"][0].endswith("see fix 1 (ORG900)")
    assert out["fail"].startswith("envcheck: 1 finding at or above high: ORG900 (high)")
    assert len(out["warn"]["warnings"]) == 1
    assert out["warn"]["summary"]["steps"] == 32  # 2 epochs of 16 batches, fewer than 100


def test_unwritable_summary_is_refused_before_the_command_runs(work: Path) -> None:
    marker = work / "ran"
    result = envcheck_run(
        "-o",
        str(work / "no-such-dir" / "s.json"),
        "--",
        PY,
        "-c",
        f"open({str(marker)!r}, 'w')",
        cwd=work,
    )
    assert result.returncode == 2
    assert "cannot write" in result.stderr.decode()
    assert not marker.exists()


def test_a_summary_that_became_unwritable_keeps_the_commands_exit_code(work: Path) -> None:
    """Checked before, gone after (the command removed the folder): the command's code wins."""
    folder = work / "out"
    folder.mkdir()
    remove = f"import shutil; shutil.rmtree({str(folder)!r}); raise SystemExit(5)"
    result = envcheck_run("-o", str(folder / "s.json"), "--", PY, "-c", remove, cwd=work)
    assert result.returncode == 5
    assert "cannot write" in result.stderr.decode()


def test_gpu_watch_on_a_recorded_nvml_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU path of the watch, against a recorded NVML machine, with a real command."""
    from fakes.nvml import DATA, FakeNVML

    import envcheck.probe.sampler as sampler_module

    nvml = FakeNVML(DATA / "workstation-rtx4090.json")
    nvml.set("utilization.gpu", 34)
    monkeypatch.setattr(sampler_module, "load_nvml", lambda: (nvml.nvmlInit() or nvml, None))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    sampler = hook.make_sampler(interval=0.02)
    assert sampler.gpu_index == 0 and sampler.nvml is nvml
    code, watched, util = hook.run_watched(
        [PY, "-c", "import time; time.sleep(0.5)"], 30.0, sampler
    )
    hook.close_gpu(sampler.nvml)
    assert code == 0 and 0.4 < watched < 30
    assert util["gpu_util_mean"] == 34 and util["gpu_util_median"] == 34
    assert util["gpu_samples"] == util["samples"] >= 5
    line = hook.summary_line(util, watched, None, sampler.summary()["gpu_reason"])
    assert line == f"envcheck: GPU busy 34 % (median 34 %) over {watched:.1f} s"
