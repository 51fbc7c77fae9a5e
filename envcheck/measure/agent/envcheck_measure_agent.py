"""The measuring agent inside the user's training process (standard library only).

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
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import sys
import threading
import time
from types import FrameType
from typing import Any, Callable, Optional, Sequence

# What a step's time is split into (the timers' names); the rest is "other".
CATEGORIES = ("data_wait", "host_sync", "copy", "compute", "checkpoint", "logging")
FLUSH_EVERY_S = 1.0
WORKER_FLUSH_EVERY_S = 0.5

_now = time.perf_counter
_ident = threading.get_ident


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
        return not (self.broken or self.done) and _ident() == self.thread

    def enter(self, category: str) -> bool:
        """Start a timer (on the training thread only); False when not timing."""
        if self.broken or self.done or _ident() != self.thread:
            return False
        self.stack.append([category, _now(), 0.0])
        return True

    def leave(self, category: Optional[str] = None) -> None:
        """Stop the innermost timer: its time less its children's goes to its category."""
        stack = self.stack
        if not stack:
            return  # a step boundary emptied the stack meanwhile
        name, start, children = stack.pop()
        spent = _now() - start
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
        now, mono = _now(), time.monotonic()
        if self.open_at is not None:
            self.close(now - self.open_at)
        self.stack = []
        self.acc = {}
        self.syncs = 0
        self.train = False
        self.open_at, self.open_mono, self.loader = now, mono, loader
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


def _agent() -> Agent:
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


# PyTorch -------------------------------------------------------------------------------


FRAMEWORK_MODULES = ("torch", "lightning", "pytorch_lightning", "lightning_fabric", "keras")


def _caller_site() -> Optional[str]:
    """file:line of the first caller outside the frameworks and this agent."""
    frame: Optional[FrameType] = sys._getframe(2)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        top = module.split(".", 1)[0]
        if top not in FRAMEWORK_MODULES and module != __name__:
            return f"{os.path.abspath(frame.f_code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _loader_settings(loader: Any) -> dict[str, Any]:
    import multiprocessing

    context = getattr(loader, "multiprocessing_context", None)
    method = None
    if context is not None:
        method = context.get_start_method() if hasattr(context, "get_start_method") else context
    elif getattr(loader, "num_workers", 0):
        method = multiprocessing.get_start_method(allow_none=True) or "fork"
    dataset = getattr(loader, "dataset", None)
    kind = type(dataset)
    return {
        "framework": "torch",
        "kind": "DataLoader",
        "num_workers": getattr(loader, "num_workers", None),
        "pin_memory": getattr(loader, "pin_memory", None),
        "prefetch_factor": getattr(loader, "prefetch_factor", None),
        "persistent_workers": getattr(loader, "persistent_workers", None),
        "batch_size": getattr(loader, "batch_size", None),
        "start_method": str(method) if method is not None else None,
        "dataset": f"{kind.__module__}.{kind.__qualname__}",
        "site": getattr(loader, "_envcheck_site", None),
        "overridden": getattr(loader, "_envcheck_overridden", None),
    }


def _override_loader(
    original: Callable[..., Any], agent: Agent, self: Any, args: Any, kwargs: Any
) -> tuple[Any, Any, Optional[list[str]]]:
    """Apply `overrides.loader` to a DataLoader built at the named site (or any)."""
    wanted = agent.overrides.get("loader")
    if not wanted:
        return args, kwargs, None
    site = agent.overrides.get("site")
    here = _caller_site()
    if site and here != site:
        return args, kwargs, None
    bound = inspect.signature(original).bind(self, *args, **kwargs)
    for key, value in wanted.items():
        bound.arguments[key] = value
    changed = [f"{k}={v!r}" for k, v in wanted.items()]
    return bound.args[1:], bound.kwargs, changed


def patch_torch(torch: Any) -> None:
    agent = _agent()
    agent.framework = agent.framework or "torch"
    from torch.utils.data import DataLoader, dataloader
    from torch.utils.data._utils import fetch

    init = DataLoader.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        site, changed = None, None
        try:
            site = _caller_site()
            args, kwargs, changed = _override_loader(init, agent, self, args, kwargs)
        except Exception as exc:
            agent.fail("DataLoader()", exc)
        init(self, *args, **kwargs)
        try:
            object.__setattr__(self, "_envcheck_site", site)
            object.__setattr__(self, "_envcheck_overridden", changed)
            if changed:
                agent.applied.extend(c for c in changed if c not in agent.applied)
        except Exception:
            pass

    DataLoader.__init__ = __init__

    base = dataloader._BaseDataLoaderIter

    def loader_key(iterator: Any) -> str:
        key = getattr(iterator, "_envcheck_key", None)
        if key is not None:
            return str(key)
        loader = getattr(iterator, "_envcheck_loader", None)
        if loader is None:
            return "torch"
        key = f"torch:{id(loader)}"
        if key not in agent.loaders:
            agent.loaders[key] = _loader_settings(loader)
        with contextlib.suppress(Exception):
            iterator._envcheck_key = key
        return key

    iter_init = base.__init__

    @functools.wraps(iter_init)
    def iter_init_wrapper(self: Any, loader: Any) -> None:
        iter_init(self, loader)
        with contextlib.suppress(Exception):
            self._envcheck_loader = loader

    base.__init__ = iter_init_wrapper
    base.__next__ = batch_source(base.__next__, loader_key, lambda: True)

    for fetcher in (fetch._MapDatasetFetcher, fetch._IterableDatasetFetcher):
        fetcher.fetch = _timed_fetch(fetcher.fetch, torch)

    tensor = torch.Tensor
    raw_item = tensor.item  # the loss is read without counting as the user's sync
    for name in ("item", "tolist", "cpu", "numpy", "__float__", "__int__", "__bool__"):
        wrap(tensor, name, "host_sync")
    for name in ("__repr__", "__format__"):
        wrap(tensor, name, "host_sync")
    wrap(torch.cuda, "synchronize", "host_sync")
    _wrap_copy(tensor, "to")
    _wrap_copy(tensor, "cuda")
    wrap(torch, "save", "checkpoint")
    _wrap_backward(tensor, raw_item)
    _wrap_forward(torch.nn.Module)
    _wrap_optimizer(torch)
    if agent.overrides.get("cudnn_benchmark"):
        torch.backends.cudnn.benchmark = True
        agent.applied.append("torch.backends.cudnn.benchmark=True")


def _timed_fetch(original: Callable[..., Any], torch: Any) -> Callable[..., Any]:
    get_worker_info = torch.utils.data.get_worker_info

    @functools.wraps(original)
    def fetch(self: Any, possibly_batched_index: Any) -> Any:
        start = _now()
        try:
            return original(self, possibly_batched_index)
        finally:
            agent: Agent = AGENT  # type: ignore[assignment]  # set before any patch
            if not agent.broken:
                try:
                    agent.fetched(_now() - start, get_worker_info() is not None)
                except Exception as exc:
                    agent.fail("timing the Dataset", exc)

    return fetch


def _wrap_copy(tensor: Any, name: str) -> None:
    original = getattr(tensor, name)

    @functools.wraps(original)
    def copy(self: Any, *args: Any, **kwargs: Any) -> Any:
        agent: Agent = AGENT  # type: ignore[assignment]  # set before any patch
        entered = agent.enter("copy")
        moved = False
        try:
            result = original(self, *args, **kwargs)
            moved = getattr(result, "device", None) != getattr(self, "device", None)
            if moved and agent.device is None and "cuda" in str(result.device):
                agent.device = "cuda"
            return result
        finally:
            if entered:
                agent.leave("copy" if moved else "compute")

    setattr(tensor, name, copy)


def _wrap_backward(tensor: Any, raw_item: Callable[[Any], Any]) -> None:
    original = tensor.backward

    @functools.wraps(original)
    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        agent: Agent = AGENT  # type: ignore[assignment]  # set before any patch
        if agent.loss_steps and self.numel() == 1:
            agent.record_loss(lambda: raw_item(self.detach().float()))
        entered = agent.enter("compute")
        if entered:
            agent.train = True
        try:
            return original(self, *args, **kwargs)
        finally:
            if entered:
                agent.leave()

    tensor.backward = backward


def _wrap_forward(module: Any) -> None:
    original = module.__call__

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        agent: Agent = AGENT  # type: ignore[assignment]  # set before any patch
        if agent.depth_forward:
            return original(self, *args, **kwargs)
        entered = agent.enter("compute")
        agent.depth_forward = 1
        try:
            return original(self, *args, **kwargs)
        finally:
            agent.depth_forward = 0
            if entered:
                agent.leave()

    module.__call__ = __call__


def _wrap_optimizer(torch: Any) -> None:
    """Global optimizer-step hooks (torch >= 2.0) time every optimizer's step."""
    from torch.optim import optimizer

    agent = _agent()

    def pre(*_: Any) -> None:
        if agent.enter("compute"):
            agent.train = True

    def post(*_: Any) -> None:
        if agent.timing() and agent.stack and agent.stack[-1][0] == "compute":
            agent.leave()

    optimizer.register_optimizer_step_pre_hook(pre)
    optimizer.register_optimizer_step_post_hook(post)


# TensorFlow and Keras ------------------------------------------------------------------


def _tf_dataset_settings(dataset: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {"framework": "tensorflow", "kind": "tf.data"}
    try:
        options = dataset.options()
        settings["autotune"] = options.autotune.enabled
        settings["map_parallelization"] = options.experimental_optimization.map_parallelization
        settings["inject_prefetch"] = options.experimental_optimization.inject_prefetch
        settings["private_threadpool_size"] = options.threading.private_threadpool_size
        chain: list[str] = []
        node = dataset
        while node is not None and len(chain) < 50:
            chain.append(type(node).__name__.lstrip("_").replace("Dataset", "") or "Dataset")
            inputs = node._inputs() if hasattr(node, "_inputs") else []
            node = inputs[0] if inputs else None
        settings["chain"] = list(reversed(chain))
    except Exception as exc:
        settings["error"] = f"{type(exc).__name__}: {exc}"
    return settings


def patch_tensorflow(tf: Any) -> None:
    agent = _agent()
    agent.framework = "tensorflow"
    from tensorflow.python.data.ops import dataset_ops, iterator_ops
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    owned = iterator_ops.OwnedIterator

    def tf_key(iterator: Any) -> str:
        key = f"tf:{id(iterator)}"
        if key not in agent.loaders:
            dataset = getattr(iterator, "_envcheck_dataset", None)
            agent.loaders[key] = _tf_dataset_settings(dataset) if dataset is not None else {}
        return key

    init = owned.__init__

    @functools.wraps(init)
    def owned_init(self: Any, dataset: Any = None, *args: Any, **kwargs: Any) -> None:
        init(self, dataset, *args, **kwargs)
        with contextlib.suppress(Exception):
            self._envcheck_dataset = dataset

    owned.__init__ = owned_init
    # Keras fit feeds its own iterator (below); this one is for custom loops.
    owned.__next__ = batch_source(owned.__next__, tf_key, lambda: not agent.in_fit)
    wrap(polymorphic_function.Function, "__call__", "compute", train=True)
    for name in ("py_function", "numpy_function"):
        if hasattr(tf, name):
            setattr(tf, name, _timed_python_map(getattr(tf, name)))
    _tf_overrides(agent, dataset_ops)


def _timed_python_map(original: Callable[..., Any]) -> Callable[..., Any]:
    """tf.py_function / tf.numpy_function whose Python function is timed per call: the
    user's own code inside the tf.data pipeline (a pure-TF map runs in the graph and is
    not visible from Python)."""

    def timed(function: Any) -> Any:
        if not callable(function):
            return function

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            start = _now()
            try:
                return function(*args, **kwargs)
            finally:
                _agent().mapped(_now() - start, "tf.py_function / numpy_function calls")

        return call

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args:
            args = (timed(args[0]), *args[1:])
        elif "func" in kwargs:
            kwargs["func"] = timed(kwargs["func"])
        return original(*args, **kwargs)

    mark(wrapper)
    return wrapper


def _tf_overrides(agent: Agent, dataset_ops: Any) -> None:
    """Injected tf.data changes: parallel maps, autotuned prefetch at the end."""
    wanted = agent.overrides.get("tf_data") or {}
    if not wanted:
        return
    base = dataset_ops.DatasetV2
    if wanted.get("parallel_map"):
        original_map = base.map

        @functools.wraps(original_map)
        def map(self: Any, map_func: Any, num_parallel_calls: Any = None, *a: Any, **k: Any) -> Any:
            if num_parallel_calls is None:
                num_parallel_calls = -1  # tf.data.AUTOTUNE
            return original_map(self, map_func, num_parallel_calls, *a, **k)

        base.map = map
        agent.applied.append("map(num_parallel_calls=tf.data.AUTOTUNE)")
    if wanted.get("prefetch"):
        original_iter = base.__iter__

        @functools.wraps(original_iter)
        def __iter__(self: Any) -> Any:
            if type(self).__name__ != "_PrefetchDataset":
                self = self.prefetch(-1)
            return original_iter(self)

        base.__iter__ = __iter__
        agent.applied.append("prefetch(tf.data.AUTOTUNE) at the end of the pipeline")


class EndOfEpoch(Exception):
    """Keras's fed iterator ran out; the wrapped train function turns it into StopIteration
    (a StopIteration inside Keras's `zip` would leave its step outputs unset)."""


class FedIterator:
    """Keras `fit`'s per-step iterator, fed from Python so the wait is timed.

    Keras's train function runs `one_step_on_data` on each batch of a plain Python
    iterator (its non-tf.data branch), so the compiled step is the same one."""

    def __init__(self, inner: Any, owner: Any) -> None:
        self.inner = inner
        self.owner = owner

    def __iter__(self) -> FedIterator:
        return self

    def __next__(self) -> Any:
        try:
            return next(self.inner)
        except StopIteration:
            raise EndOfEpoch() from None
        except Exception as exc:
            if type(exc).__name__ == "OutOfRangeError":
                raise EndOfEpoch() from None
            raise


def patch_keras(keras: Any) -> None:
    agent = _agent()
    try:
        backend = keras.backend.backend()
    except Exception:
        backend = None
    if backend != "tensorflow":
        agent.errors.append(f"Keras on the {backend} backend is not measured")
        return
    from keras.src.backend.tensorflow import trainer as tf_trainer
    from keras.src.callbacks import callback_list
    from keras.src.trainers import trainer as base_trainer

    agent.framework = "keras"
    epoch_iterator = tf_trainer.TFEpochIterator

    def keras_key(fed: Any) -> str:
        key = f"keras:{id(fed.owner)}"
        if key not in agent.loaders:
            agent.loaders[key] = _keras_settings(fed.owner)
        return key

    fed_next = batch_source(FedIterator.__next__, keras_key, lambda: True)

    class TimedFedIterator(FedIterator):
        __next__ = fed_next

    original_next = epoch_iterator.__next__

    @functools.wraps(original_next)
    def epoch_next(self: Any) -> Any:
        item = original_next(self)
        if agent.broken or not agent.in_fit or agent.in_eval:
            return item
        begin, end, iterator = item
        fed = getattr(self, "_envcheck_fed", None)
        if fed is None or fed.inner is not iterator:
            fed = TimedFedIterator(iterator, self)
            self._envcheck_fed = fed
        return begin, end, fed

    epoch_iterator.__next__ = epoch_next
    trainer = tf_trainer.TensorFlowTrainer
    _end_epoch_on_stop(trainer)
    for name, counter in (("fit", "in_fit"), ("evaluate", "in_eval"), ("predict", "in_eval")):
        _count_inside(trainer, name, agent, counter)
    for name in ("on_train_batch_begin", "on_train_batch_end", "on_epoch_end"):
        wrap(callback_list.CallbackList, name, "logging")
    _record_keras_loss(callback_list.CallbackList, agent)
    for name in ("save", "save_weights"):
        wrap(base_trainer.Trainer, name, "checkpoint")
    _time_py_datasets(agent)
    _keras_overrides(agent, keras)


def _time_py_datasets(agent: Agent) -> None:
    """Each PyDataset (keras.utils.Sequence) class gets its __getitem__ timed, in
    whichever thread Keras calls it (its enqueuer's workers included)."""
    from keras.src.trainers.data_adapters import py_dataset_adapter

    cls = py_dataset_adapter.PyDataset
    original = cls.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        kind = type(self)
        getitem = kind.__dict__.get("__getitem__")
        if getitem is None or getattr(getitem, "__envcheck_wrapped__", False):
            return

        @functools.wraps(getitem)
        def timed_getitem(dataset: Any, index: Any) -> Any:
            start = _now()
            try:
                return getitem(dataset, index)
            finally:
                agent.mapped(_now() - start, "PyDataset.__getitem__")

        mark(timed_getitem)
        with contextlib.suppress(Exception):
            kind.__getitem__ = timed_getitem

    cls.__init__ = __init__


def _end_epoch_on_stop(trainer: Any) -> None:
    """Wrap each new train function: the fed iterator's EndOfEpoch ends the epoch."""
    original = trainer.make_train_function

    @functools.wraps(original)
    def make_train_function(self: Any, force: bool = False) -> Any:
        result = original(self, force)
        function = self.train_function
        if function is None or getattr(function, "__envcheck_wrapped__", False):
            return result

        def train_function(iterator: Any) -> Any:
            try:
                return function(iterator)
            except EndOfEpoch:
                raise StopIteration from None

        mark(train_function)
        self.train_function = train_function
        return result

    trainer.make_train_function = make_train_function


def _keras_settings(epoch_iterator: Any) -> dict[str, Any]:
    adapter = getattr(epoch_iterator, "data_adapter", None)
    settings: dict[str, Any] = {
        "framework": "keras",
        "kind": type(adapter).__name__ if adapter is not None else None,
        "batch_size": getattr(adapter, "batch_size", None),
    }
    source = getattr(adapter, "py_dataset", None) or getattr(adapter, "_dataset", None)
    if source is not None:
        kind = type(source)
        settings["dataset"] = f"{kind.__module__}.{kind.__qualname__}"
        for name in ("workers", "use_multiprocessing", "max_queue_size"):
            if hasattr(source, name):
                settings[name] = getattr(source, name)
        if settings.get("kind") == "TFDatasetAdapter":
            settings.update(_tf_dataset_settings(source))
            settings["framework"] = "keras"
    return settings


def _count_inside(owner: Any, name: str, agent: Agent, counter: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def inside(*args: Any, **kwargs: Any) -> Any:
        if counter == "in_eval":
            agent.exhausted()  # evaluation is no part of the open training step
        setattr(agent, counter, getattr(agent, counter) + 1)
        try:
            return original(*args, **kwargs)
        finally:
            setattr(agent, counter, getattr(agent, counter) - 1)

    setattr(owner, name, inside)


def _record_keras_loss(callbacks: Any, agent: Agent) -> None:
    if not agent.loss_steps:
        return
    original = callbacks.on_train_batch_end

    @functools.wraps(original)
    def on_train_batch_end(self: Any, batch: Any, logs: Any = None) -> Any:
        if logs and "loss" in logs:
            agent.record_loss(lambda: float(logs["loss"]))
        return original(self, batch, logs)

    callbacks.on_train_batch_end = on_train_batch_end


def _keras_overrides(agent: Agent, keras: Any) -> None:
    """Injected Keras change: `workers` for a PyDataset (keras.utils.Sequence)."""
    wanted = agent.overrides.get("keras") or {}
    if "workers" not in wanted:
        return
    from keras.src.trainers.data_adapters import py_dataset_adapter

    cls = py_dataset_adapter.PyDataset
    original = cls.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self._workers = int(wanted["workers"])

    cls.__init__ = __init__
    agent.applied.append(f"PyDataset(workers={wanted['workers']})")


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
            agent = _agent()
            if agent.broken:
                return
            try:
                patch(module)
            except Exception as exc:
                agent.fail(f"patching {fullname}", exc)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


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
        PostImport({"torch": patch_torch, "tensorflow": patch_tensorflow, "keras": patch_keras}),
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
