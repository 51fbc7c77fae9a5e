"""The measuring agent's TensorFlow and Keras part: tf.data iterators in custom loops,
compiled-function calls, the Python of tf.py_function maps and of PyDataset.__getitem__,
Keras fit fed one batch a step from Python (so the wait is timed outside the compiled
step), callbacks and saves; injected tf.data and PyDataset settings for `envcheck fix`.
Imported by envcheck_measure_agent once `tensorflow` or `keras` is imported."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable

import envcheck_measure_agent as core


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
    agent = core.current()
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
    owned.__next__ = core.batch_source(owned.__next__, tf_key, lambda: not agent.in_fit)
    core.wrap(polymorphic_function.Function, "__call__", "compute", train=True)
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
            start = core.now()
            try:
                return function(*args, **kwargs)
            finally:
                core.current().mapped(core.now() - start, "tf.py_function / numpy_function calls")

        return call

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args:
            args = (timed(args[0]), *args[1:])
        elif "func" in kwargs:
            kwargs["func"] = timed(kwargs["func"])
        return original(*args, **kwargs)

    core.mark(wrapper)
    return wrapper


def _tf_overrides(agent: core.Agent, dataset_ops: Any) -> None:
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
            raise core.EndOfEpoch() from None
        except Exception as exc:
            if type(exc).__name__ == "OutOfRangeError":
                raise core.EndOfEpoch() from None
            raise


def patch_keras(keras: Any) -> None:
    agent = core.current()
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

    fed_next = core.batch_source(FedIterator.__next__, keras_key, lambda: True)

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
        core.wrap(callback_list.CallbackList, name, "logging")
    _record_keras_loss(callback_list.CallbackList, agent)
    for name in ("save", "save_weights"):
        core.wrap(base_trainer.Trainer, name, "checkpoint")
    _time_py_datasets(agent)
    _keras_overrides(agent, keras)


def _time_py_datasets(agent: core.Agent) -> None:
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
            start = core.now()
            try:
                return getitem(dataset, index)
            finally:
                agent.mapped(core.now() - start, "PyDataset.__getitem__")

        core.mark(timed_getitem)
        with contextlib.suppress(Exception):
            kind.__getitem__ = timed_getitem

    cls.__init__ = __init__


def _end_epoch_on_stop(trainer: Any) -> None:
    """Wrap each new train function: the fed iterator's core.EndOfEpoch ends the epoch."""
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
            except core.EndOfEpoch:
                raise StopIteration from None

        core.mark(train_function)
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


def _count_inside(owner: Any, name: str, agent: core.Agent, counter: str) -> None:
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


def _record_keras_loss(callbacks: Any, agent: core.Agent) -> None:
    if not agent.loss_steps:
        return
    original = callbacks.on_train_batch_end

    @functools.wraps(original)
    def on_train_batch_end(self: Any, batch: Any, logs: Any = None) -> Any:
        if logs and "loss" in logs:
            agent.record_loss(lambda: float(logs["loss"]))
        return original(self, batch, logs)

    callbacks.on_train_batch_end = on_train_batch_end


def _keras_overrides(agent: core.Agent, keras: Any) -> None:
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
