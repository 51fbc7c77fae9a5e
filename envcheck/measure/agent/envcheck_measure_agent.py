"""The measuring agent inside the user's training process (standard library only).

This module is its core (the step clock, the timers, the results, the post-import hook);
envcheck_measure_torch and envcheck_measure_tf patch each framework once it is imported.

Loaded by this folder's sitecustomize when ENVCHECK_MEASURE holds its settings (JSON).
It waits for the frameworks to be imported (a post-import hook on sys.meta_path), then
wraps the calls that make up a training step and times them on the training thread:

- the wait for the next batch: a PyTorch DataLoader iterator's `__next__`, a tf.data
  iterator's `__next__`, Keras `fit`'s per-step iterator (fed eagerly, one batch a step,
  so the wait is outside the compiled step);
- host syncs (`.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `float()`/`int()`/`bool()` of
  a tensor, printing one, `torch.cuda.synchronize`), copies to a device (`.to`, `.cuda`),
  compute (a module's top-level forward, `backward`, the optimizer step; a
  `tf.function` call), checkpoint saves and logging (`print`, `logging`, Keras callbacks);
- inside loader workers: the time the user's Dataset code takes per batch.

Timers nest and count exclusive time, so a sync inside a forward is counted once. A step
runs from one batch request to the next; it is a training step when it ran a backward
pass, an optimizer step or a compiled function. After `warmup` training steps it records
`steps` of them (or `seconds`), writes its records to the folder the parent named, and,
with `stop`, ends the program (exit 0) at the next batch request.

Results go to ENVCHECK_MEASURE's `out` folder (a temporary folder of the parent's), never
into the user's tree. Any failure of the agent is written once to stderr; from then on
every wrapper calls straight through.

Size: it must stay one importable file of the standard library (it is put on the user's
PYTHONPATH, and spawned loader workers import it again), so the core does not split.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Optional, Sequence

# What a step's time is split into (the timers' names); the rest is "other".
CATEGORIES = ("data_wait", "host_sync", "copy", "compute", "checkpoint", "logging")
FLUSH_EVERY_S = 1.0
WORKER_FLUSH_EVERY_S = 0.5

now = time.perf_counter
ident = threading.get_ident


class Agent:
    """Per-process state: the open step, the timer stack, the measured window."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.out = str(settings["out"])
        self.warmup = int(settings.get("warmup", 5))
        self.steps_wanted = int(settings.get("steps", 100))
        self.seconds_wanted = float(settings.get("seconds", 60.0))
        self.stop = bool(settings.get("stop", False))
        self.loss_steps = int(settings.get("loss_steps", 0))
        self.overrides: dict[str, Any] = dict(settings.get("overrides") or {})
        self.pid = os.getpid()
        self.thread: Optional[int] = None
        self.broken = False
        self.done = False
        self.errors: list[str] = []
        self.stack: list[list[Any]] = []
        self.acc: dict[str, float] = {}
        self.syncs = 0
        self.train = False
        self.open_at: Optional[float] = None
        self.open_mono = 0.0
        self.loader: Optional[str] = None
        self.train_steps = 0
        self.window: list[dict[str, Any]] = []
        self.flushed = 0
        self.window_t0: Optional[float] = None
        self.window_t1: Optional[float] = None
        self.first_step_mono: Optional[float] = None
        self.loaders: dict[str, dict[str, Any]] = {}
        self.losses: list[float] = []
        self.fetch_s = 0.0
        self.fetch_n = 0
        self.fetch_window_s = 0.0
        self.fetch_window_n = 0
        self.lock = threading.Lock()
        self.map_s = 0.0
        self.map_n = 0
        self.map_window_s = 0.0
        self.map_window_n = 0
        self.map_source: Optional[str] = None
        self.framework: Optional[str] = None
        self.device: Optional[str] = None
        self.applied: list[str] = []
        self.last_flush = 0.0
        self.depth_forward = 0
        self.in_fit = 0
        self.in_eval = 0
        self.worker_role = False
        self.started_mono = time.monotonic()

    # failure -------------------------------------------------------------------------

    def fail(self, where: str, exc: BaseException) -> None:
        """Switch the agent off, once, saying why on stderr; the program runs on."""
        if self.broken:
            return
        self.broken = True
        self.errors.append(f"{where}: {type(exc).__name__}: {exc}")
        try:
            sys.stderr.write(
                f"envcheck: the measuring hook failed in {where} ({type(exc).__name__}: "
                f"{exc}); training continues unmeasured\n"
            )
            self.flush(final=True)
        except Exception:
            pass

    # timers --------------------------------------------------------------------------

    def timing(self) -> bool:
        return not (self.broken or self.done) and ident() == self.thread

    def enter(self, category: str) -> bool:
        """Start a timer (on the training thread only); False when not timing."""
        if self.broken or self.done or ident() != self.thread:
            return False
        self.stack.append([category, now(), 0.0])
        return True

    def leave(self, category: Optional[str] = None) -> None:
        """Stop the innermost timer: its time less its children's goes to its category."""
        stack = self.stack
        if not stack:
            return  # a step boundary emptied the stack meanwhile
        name, start, children = stack.pop()
        spent = now() - start
        name = category or name
        acc = self.acc
        acc[name] = acc.get(name, 0.0) + spent - children
        if stack:
            stack[-1][2] += spent

    # steps ---------------------------------------------------------------------------

    def boundary(self, loader: str) -> None:
        """A batch is requested: the open step ends here and the next one begins."""
        if self.broken or self.done:
            return
        if self.thread is None:
            self.thread = threading.get_ident()
        elif threading.get_ident() != self.thread:
            return
        at, mono = now(), time.monotonic()
        if self.open_at is not None:
            self.close(at - self.open_at)
        self.stack = []
        self.acc = {}
        self.syncs = 0
        self.train = False
        self.open_at, self.open_mono, self.loader = at, mono, loader
        if self.window_t0 is None and self.train_steps >= self.warmup:
            self.window_t0 = mono
        self.maybe_finish(mono)
        if mono - self.last_flush > FLUSH_EVERY_S:
            self.flush()

    def exhausted(self) -> None:
        """The iterator ran out: no step is open until the next batch request."""
        if self.timing():
            self.open_at = None

    def close(self, duration: float) -> None:
        if not self.train:
            return
        self.train_steps += 1
        if self.first_step_mono is None:
            self.first_step_mono = self.open_mono
        if self.train_steps <= self.warmup:
            return
        record: dict[str, Any] = self.acc  # a fresh dict each step (boundary)
        record["step_s"] = duration
        record["syncs"] = self.syncs
        record["loader"] = self.loader
        record["t"] = self.open_mono
        self.window.append(record)
        self.window_t1 = self.open_mono + duration

    def maybe_finish(self, mono: float) -> None:
        if self.window_t0 is None or self.done:
            return
        enough = len(self.window) >= self.steps_wanted
        late = self.window and mono - self.window_t0 >= self.seconds_wanted
        if enough or late:
            self.done = True
            self.flush(final=True)
            if self.stop:
                stop_now()

    def mark_train(self) -> None:
        if self.timing():
            self.train = True

    def record_loss(self, value: Callable[[], float]) -> None:
        """The loss of the first `loss_steps` training steps (for `envcheck fix`)."""
        if not self.timing() or len(self.losses) >= self.loss_steps:
            return
        try:
            self.losses.append(float(value()))
        except Exception:
            self.loss_steps = 0

    # user code inside the loader -----------------------------------------------------

    def fetched(self, seconds: float, in_worker: bool) -> None:
        self.fetch_s += seconds
        self.fetch_n += 1
        if not in_worker and self.window_t0 is not None and not self.done:
            self.fetch_window_s += seconds
            self.fetch_window_n += 1
        if in_worker:
            self.worker_role = True
            mono = time.monotonic()
            if self.fetch_n == 1 or mono - self.last_flush > WORKER_FLUSH_EVERY_S:
                self.flush()

    def mapped(self, seconds: float, source: str) -> None:
        """A call of the user's loader code run by TensorFlow or Keras (any thread):
        a tf.py_function / numpy_function, or a PyDataset's __getitem__."""
        with self.lock:
            self.map_source = source
            self.map_s += seconds
            self.map_n += 1
            if self.window_t0 is not None and not self.done:
                self.map_window_s += seconds
                self.map_window_n += 1

    # results -------------------------------------------------------------------------

    def flush(self, final: bool = False) -> None:
        """Write what is known so far; atomically, so the parent never reads half a file."""
        self.last_flush = time.monotonic()
        if self.worker_role:
            name, record = f"worker-{self.pid}.json", self.worker_record()
        elif self.train_steps or self.loaders or self.errors:
            name, record = f"proc-{self.pid}.json", self.record(final)
        else:
            return
        if not self.worker_role and self.flushed < len(self.window):
            # steps are appended, never rewritten: a flush costs the new steps only
            lines = "".join(json.dumps(step) + "\n" for step in self.window[self.flushed :])
            with open(os.path.join(self.out, f"steps-{self.pid}.jsonl"), "a") as steps:
                steps.write(lines)
            self.flushed = len(self.window)
        path = os.path.join(self.out, name)
        temp = f"{path}.{threading.get_ident()}.tmp"
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(record, handle, default=str)
        os.replace(temp, path)

    def worker_record(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "ppid": os.getppid(),
            "role": "worker",
            "fetch_s": round(self.fetch_s, 6),
            "fetch_n": self.fetch_n,
        }

    def record(self, final: bool) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "role": "main",
            "argv": list(sys.argv),
            "framework": self.framework,
            "device": self.device or self.detect_device(),
            "state": "done" if self.done else ("final" if final else "running"),
            "warmup": self.warmup,
            "steps_wanted": self.steps_wanted,
            "seconds_wanted": self.seconds_wanted,
            "train_steps": self.train_steps,
            "started": self.started_mono,
            "first_step": self.first_step_mono,
            "window": {"t0": self.window_t0, "t1": self.window_t1},
            "steps_file": f"steps-{self.pid}.jsonl",
            "steps_written": self.flushed,
            "loaders": self.loaders,
            "losses": self.losses,
            "fetch": {
                "s": round(self.fetch_s, 6),
                "n": self.fetch_n,
                "window_s": round(self.fetch_window_s, 6),
                "window_n": self.fetch_window_n,
            },
            "python_map": {
                "source": self.map_source,
                "s": round(self.map_s, 6),
                "n": self.map_n,
                "window_s": round(self.map_window_s, 6),
                "window_n": self.map_window_n,
            },
            "applied": self.applied,
            "errors": self.errors,
        }

    def detect_device(self) -> Optional[str]:
        torch = sys.modules.get("torch")
        if torch is not None:
            try:
                if torch.cuda.is_initialized():
                    return "cuda"
            except Exception:
                pass
        return None


AGENT: Optional[Agent] = None


def stop_now() -> None:
    """End the program once its window is measured (--stop-after): its output flushed
    and its atexit handlers run (multiprocessing's among them: loader workers are
    stopped), then os._exit(0). Not SystemExit: TensorFlow's threads can hold up the
    interpreter's teardown for good."""
    import atexit as exits

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(BaseException):
        exits._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def mark(function: Callable[..., Any]) -> None:
    """Flag a wrapper, so that patching twice never wraps a wrapper."""
    function.__dict__["__envcheck_wrapped__"] = True


def current() -> Agent:
    assert AGENT is not None
    return AGENT


# wrappers ------------------------------------------------------------------------------


def timed(category: str, function: Callable[..., Any], train: bool = False) -> Callable[..., Any]:
    """`function`, its exclusive time counted under `category` on the training thread."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        agent: Agent = AGENT  # type: ignore[assignment]  # set before any patch
        entered = agent.enter(category)
        if entered and train:
            agent.train = True
        if entered and category == "host_sync":
            agent.syncs += 1
        try:
            return function(*args, **kwargs)
        finally:
            if entered:
                agent.leave()

    mark(wrapper)
    return wrapper


def wrap(owner: Any, name: str, category: str, train: bool = False) -> None:
    original = getattr(owner, name, None)
    if original is None or getattr(original, "__envcheck_wrapped__", False):
        return
    setattr(owner, name, timed(category, original, train))


def batch_source(
    original: Callable[..., Any], loader_of: Callable[[Any], str], train: Callable[[], bool]
) -> Callable[..., Any]:
    """An iterator's `__next__`: a step boundary, then the wait for the batch."""

    @functools.wraps(original)
    def __next__(self: Any) -> Any:
        agent: Agent = AGENT  # type: ignore[assignment]  # set before any patch
        if agent.broken or agent.done or not train():
            return original(self)
        try:
            key = loader_of(self)
        except Exception as exc:
            agent.fail("reading the loader", exc)
            return original(self)
        agent.boundary(key)  # may end the program: the window is measured (--stop-after)
        entered = agent.enter("data_wait")
        try:
            return original(self)
        except (StopIteration, EndOfEpoch):
            agent.exhausted()
            raise
        finally:
            if entered:
                agent.leave()

    mark(__next__)
    return __next__


class EndOfEpoch(Exception):
    """Keras's fed iterator ran out; the wrapped train function turns it into StopIteration
    (a StopIteration inside Keras's `zip` would leave its step outputs unset)."""


# logging, everywhere -------------------------------------------------------------------


def patch_logging() -> None:
    import builtins
    import logging

    wrap(builtins, "print", "logging")
    wrap(logging.Logger, "handle", "logging")


# the post-import hook ------------------------------------------------------------------


class PostImport(importlib.abc.MetaPathFinder):
    """Runs a patch right after a watched module has executed, whoever imports it."""

    def __init__(self, patches: dict[str, Callable[[Any], None]]) -> None:
        self.patches = patches
        self.busy: set[str] = set()

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Any = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in self.patches or fullname in self.busy:
            return None
        self.busy.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        except Exception:
            spec = None
        finally:
            self.busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        patch = self.patches[fullname]
        execute = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            execute(module)
            agent = current()
            if agent.broken:
                return
            try:
                patch(module)
            except Exception as exc:
                agent.fail(f"patching {fullname}", exc)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _patcher(name: str) -> Any:
    """The module that patches one framework, imported when that framework is."""
    import importlib

    return importlib.import_module(name)


def install() -> None:
    """Read ENVCHECK_MEASURE and set the agent up; without it, do nothing."""
    global AGENT
    raw = os.environ.get("ENVCHECK_MEASURE")
    if not raw or AGENT is not None:
        return
    AGENT = Agent(json.loads(raw))
    patch_logging()
    sys.meta_path.insert(
        0,
        PostImport(
            {
                "torch": lambda module: _patcher("envcheck_measure_torch").patch_torch(module),
                "tensorflow": lambda module: _patcher("envcheck_measure_tf").patch_tensorflow(
                    module
                ),
                "keras": lambda module: _patcher("envcheck_measure_tf").patch_keras(module),
            }
        ),
    )
    atexit.register(_at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)


def _forked() -> None:
    """A forked child (a loader worker) starts with an empty record of its own."""
    global AGENT
    if AGENT is not None:
        fresh = Agent(AGENT.settings)
        fresh.broken = AGENT.broken
        AGENT = fresh


def _at_exit() -> None:
    agent = AGENT
    if agent is None or agent.pid != os.getpid():
        return
    with contextlib.suppress(Exception):
        agent.flush(final=True)
