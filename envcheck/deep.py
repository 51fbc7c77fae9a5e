"""`doctor --deep`: import each installed framework in the audited interpreter, and ask it.

The frameworks collector reads files only; this is the one place a framework is
imported, and never in envcheck's own process: a child of the audited interpreter runs a
small inline script under a hard timeout (importing TensorFlow can take a minute, hang on
a driver, or crash). The child prints one JSON line; everything the framework itself
prints is sent to stderr, and only the last stdout line that parses as a JSON object is
read, so stray output cannot break the answer.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any, Mapping, Optional

from envcheck import isolated

DEEP_TIMEOUT_S = 60.0

# Shared head and tail of the child scripts: standard library only, valid from Python 3.6.
# File descriptor 1 is pointed at stderr while the framework is imported and asked, so that
# only the final JSON line reaches the real stdout.
_HEAD = r"""
import json, os, sys, traceback
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
sys.path[:] = [p for p in sys.path if p]
_answer_fd = os.dup(1)
os.dup2(2, 1)
result = {"ok": False, "error": None}

def _last_line(exc):
    lines = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    return lines[-1] if lines else type(exc).__name__

def _finish():
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    os.write(_answer_fd, (json.dumps(result) + "\n").encode("utf-8"))
    os._exit(0)  # skip the framework's slow (sometimes hanging) interpreter teardown
"""

_TORCH_SCRIPT = (
    _HEAD
    + r"""
result.update({"cuda_available": None, "device_count": None, "arch_list": None,
               "capabilities": None, "cuda_init_error": None})
try:
    import torch
except BaseException as exc:
    result["error"] = _last_line(exc)
    _finish()
result["ok"] = True
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        result["cuda_available"] = bool(torch.cuda.is_available())
    except Exception as exc:
        result["cuda_available"] = False
        result["cuda_init_error"] = _last_line(exc)
try:
    result["device_count"] = int(torch.cuda.device_count())
except Exception:
    result["device_count"] = 0
try:
    result["arch_list"] = [str(a) for a in torch.cuda.get_arch_list()]
except Exception:
    result["arch_list"] = []
if not result["cuda_available"] and result["cuda_init_error"] is None:
    try:
        torch.cuda.init()  # raises the reason is_available() only warned about
    except Exception as exc:
        result["cuda_init_error"] = _last_line(exc)
    if result["cuda_init_error"] is None:
        for warning in caught:
            result["cuda_init_error"] = str(warning.message).strip().splitlines()[0]
            break
capabilities = []
if result["cuda_available"]:
    for index in range(result["device_count"]):
        try:
            major, minor = torch.cuda.get_device_capability(index)
            capabilities.append("%d.%d" % (major, minor))
        except Exception as exc:
            if result["cuda_init_error"] is None:
                result["cuda_init_error"] = _last_line(exc)
result["capabilities"] = capabilities
_finish()
"""
)

_TENSORFLOW_SCRIPT = (
    _HEAD
    + r"""
result.update({"gpus": None, "built_with_cuda": None})
try:
    import tensorflow as tf
except BaseException as exc:
    result["error"] = _last_line(exc)
    _finish()
result["ok"] = True
try:
    result["built_with_cuda"] = bool(tf.test.is_built_with_cuda())
except Exception:
    pass
try:
    config = tf.config
    lister = getattr(config, "list_physical_devices", None)
    if lister is None:  # TensorFlow 1.14 to 2.0
        lister = config.experimental.list_physical_devices
    result["gpus"] = [str(device.name) for device in lister("GPU")]
except Exception as exc:
    result["error"] = "listing GPUs: " + _last_line(exc)
_finish()
"""
)

_SCRIPTS = {"tensorflow": _TENSORFLOW_SCRIPT, "torch": _TORCH_SCRIPT}

_FIELDS = {
    "tensorflow": ("gpus", "built_with_cuda"),
    "torch": ("cuda_available", "device_count", "arch_list", "capabilities", "cuda_init_error"),
}


def deep_check(
    interpreter_executable: str,
    installed: Mapping[str, bool],
    timeout: float = DEEP_TIMEOUT_S,
) -> dict[str, Any]:
    """{"deep": {"tensorflow": ..., "torch": ...}}; a framework not installed is null."""
    deep: dict[str, Any] = {}
    for framework in ("tensorflow", "torch"):
        if installed.get(framework):
            deep[framework] = _import_in_child(interpreter_executable, framework, timeout)
        else:
            deep[framework] = None
    return {"deep": deep}


def _import_in_child(executable: str, framework: str, timeout: float) -> dict[str, Any]:
    start = time.perf_counter()
    answer: Optional[dict[str, Any]] = None
    try:
        # from a neutral folder: nothing in the audited checkout can run (isolated.py)
        proc = isolated.run_python(executable, _SCRIPTS[framework], timeout)
    except subprocess.TimeoutExpired:
        error: Optional[str] = f"did not finish importing within {timeout:g} s"
    except OSError as exc:
        error = f"cannot run {executable}: {exc.strerror or exc}"
    else:
        answer = last_json_object(proc.stdout)
        error = None
        if answer is None:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            error = f"exited with code {proc.returncode} without an answer: {last}"
    seconds = round(time.perf_counter() - start, 3)
    return _shape(framework, answer, error, seconds)


def _shape(
    framework: str, answer: Optional[Mapping[str, Any]], error: Optional[str], seconds: float
) -> dict[str, Any]:
    """The documented fields, in order; anything unanswered is null."""
    answer = answer or {}
    ok = answer.get("ok") is True
    if error is None:
        raw_error = answer.get("error")
        error = str(raw_error) if raw_error is not None else None
    facts: dict[str, Any] = {"ok": ok, "error": error, "seconds": seconds}
    for field in _FIELDS[framework]:
        facts[field] = answer.get(field) if ok else None
    return facts


def last_json_object(stdout: str) -> Optional[dict[str, Any]]:
    """The last line of `stdout` that parses as a JSON object, or None."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None
