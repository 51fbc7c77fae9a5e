"""`envcheck.inspect(obj)`: the script audit's input-pipeline rules, run on a live object.

Why: the static audit (`--script`) reads source code, so whatever is only known at run
time (a config object, a command-line option without a default) leaves its rules
*unknown*. A `torch.utils.data.DataLoader` or a `tf.data.Dataset` that exists already
holds its real settings. `inspect` turns the object's attributes into the very facts the
static audit produces (one `scripts.loaders[]` or `scripts.tf_pipelines[]` item, located
at the line that called `inspect`), adds this machine's platform, CPU and GPU facts
from the ordinary collectors, and evaluates the same rules (EC501-EC505 for a
DataLoader, EC511-EC515 for tf.data), so the findings read as the static ones do. The
other EC5xx rules judge whole scripts (autocast, the training loop, Keras calls), which
a loader or a dataset cannot show: they are not run here.

No framework is imported here: the object's class and its bases name the module it
comes from, and that framework is already in `sys.modules` because the object exists.

tf.data: the dataset graph is walked from the object through `_inputs()`. TensorFlow
rewrites that graph when an iterator is built, and two of its default rewrites decide
what EC511 and EC512 would otherwise flag; both are read from `ds.options()` and the
installed release's own documented defaults ("If None, defaults to True"), and need
autotuning on (TensorFlow 2.21, checked on dumped optimized graphs):

- map_parallelization: a `map` without `num_parallel_calls` whose function is stateless
  runs as `map(..., num_parallel_calls=AUTOTUNE)`;
- inject_prefetch: a pipeline whose last transformation is synchronous gets a final
  `prefetch(AUTOTUNE)`; an asynchronous last transformation (parallel map, prefetch...)
  already runs ahead of the training step and is left as it is.

NumPy or PIL calls inside a map function run once, at trace time, and leave no trace in
the graph: only `tf.py_function` / `tf.numpy_function` are visible here (EC513), and only
the static audit sees the rest. Dataset classes this module does not know are kept as
operations under their class name; the walk never fails on them.

Size: two readers of live objects, the DataLoader's attributes and the tf.data graph walk
with its table of dataset classes; both produce the static audit's fact shapes.
"""

from __future__ import annotations

import functools
import inspect as pyinspect
import linecache
import multiprocessing
import os
import re
import sys
from typing import Any, Mapping, Optional

from envcheck import service
from envcheck.errors import UsageError
from envcheck.model import Finding
from envcheck.probe.node import node_shape
from envcheck.scripts.values import LIVE

TORCH_RULES = ("EC501", "EC502", "EC503", "EC504", "EC505")
TF_RULES = ("EC511", "EC512", "EC513", "EC514", "EC515")
# The machine facts the rules read: usable CPUs (EC504), the platform (EC505), GPUs (EC501).
MACHINE_COLLECTORS = ("platform", "cpu", "gpu")
AUTOTUNE = -1
MAX_NODES = 5000  # a dataset graph larger than this is cut (sample_from_datasets of many)

# tf.data classes (TensorFlow 2.x, read from the objects themselves) -> the method that
# makes them, as the static audit names operations.
SOURCES = {
    "_RangeDataset": "range",
    "_TensorSliceDataset": "from_tensor_slices",
    "_TensorDataset": "from_tensors",
    "_SparseTensorSliceDataset": "from_sparse_tensor_slices",
    "_RandomDataset": "random",
    "_GeneratorDataset": "from_generator",
    "TFRecordDatasetV2": "TFRecordDataset",
    "TextLineDatasetV2": "TextLineDataset",
    "FixedLengthRecordDatasetV2": "FixedLengthRecordDataset",
    "_VariantDataset": "from_variant",  # its own graph is not visible from Python
}
READERS = ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")
OPERATIONS = {
    "_MapDataset": "map",
    "_ParallelMapDataset": "map",
    "_InterleaveDataset": "interleave",
    "_ParallelInterleaveDataset": "interleave",
    "ParallelInterleaveDataset": "interleave",  # tf.data.experimental.parallel_interleave
    "_FlatMapDataset": "flat_map",
    "_MapAndBatchDataset": "map_and_batch",
    "_BatchDataset": "batch",
    "_ParallelBatchDataset": "batch",
    "_PaddedBatchDataset": "padded_batch",
    "_DenseToRaggedDataset": "ragged_batch",
    "_DenseToSparseBatchDataset": "sparse_batch",
    "_UnbatchDataset": "unbatch",
    "_RebatchDataset": "rebatch",
    "_ShuffleDataset": "shuffle",
    "_RepeatDataset": "repeat",
    "_TakeDataset": "take",
    "_SkipDataset": "skip",
    "CacheDataset": "cache",
    "_CacheDataset": "cache",
    "_PrefetchDataset": "prefetch",
    "_OptionsDataset": "with_options",
    "_FilterDataset": "filter",
    "_ZipDataset": "zip",
    "_ConcatenateDataset": "concatenate",
    "_ShardDataset": "shard",
    "_WindowDataset": "window",
    "_GroupByWindowDataset": "group_by_window",
    "_ScanDataset": "scan",
    "_TakeWhileDataset": "take_while",
    "_UniqueDataset": "unique",
    "_AssertCardinalityDataset": "assert_cardinality",
    "_DirectedInterleaveDataset": "sample_from_datasets",
    "_SnapshotDataset": "snapshot",
    "_IgnoreErrorsDataset": "ignore_errors",
}
# Internal wrappers that change no element and are not shown as operations.
PASS_THROUGH = {"_RestructuredDataset"}
FUNCTION_OPS = ("map", "interleave", "flat_map", "map_and_batch")
INTERNAL_MODULES = ("tensorflow.", "keras.", "tf_keras.")
AFTER_PREFETCH_OK = {"with_options", "take", "repeat", "skip"}  # as the static audit
HOST_OPS = {
    "EagerPyFunc": "tf.py_function",
    "PyFunc": "tf.numpy_function",
    "PyFuncStateless": "tf.numpy_function",
}
# Stateful random ops (tf.random.*, tf.image.random_*, tf.random.Generator, Keras layers).
RANDOM_OPS = {"TruncatedNormal", "Multinomial", "ParameterizedTruncatedNormal", "RngReadAndSkip"}
_UNREADABLE = object()


def inspect(obj: object, *, uses_cuda: Optional[bool] = None) -> list[Finding]:
    """The findings of the DataLoader (EC501-EC505) or tf.data (EC511-EC515) rules for a
    live `torch.utils.data.DataLoader` or `tf.data.Dataset`, located at the caller's line.

    `uses_cuda` (DataLoader only) says whether the loader feeds a CUDA device; by default
    `torch.cuda.is_available()`. Raises UsageError for any other kind of object.
    """
    framework = framework_of(obj)
    section = observe(obj, uses_cuda=uses_cuda)
    result = service.audit(
        service.AuditRequest(
            only=MACHINE_COLLECTORS,
            supplied={"scripts": section},
            scope="EC5",
            select=TORCH_RULES if framework == "torch" else TF_RULES,
        )
    )
    return [ranked.finding for ranked in result.report.findings]


def framework_of(obj: object) -> str:
    """`torch` or `tensorflow`, from the modules of the object's class and its bases;
    nothing is imported to decide."""
    for cls in type(obj).__mro__:
        module = getattr(cls, "__module__", None) or ""
        if cls.__name__ == "DataLoader" and module.startswith("torch.utils.data"):
            return "torch"
        if cls.__name__ in ("DatasetV2", "DatasetV1") and module.startswith("tensorflow."):
            return "tensorflow"
    kind = type(obj)
    raise UsageError(
        "envcheck.inspect() takes a torch.utils.data.DataLoader or a tf.data.Dataset, "
        f"not {kind.__module__}.{kind.__qualname__}"
    )


def observe(obj: object, *, uses_cuda: Optional[bool] = None) -> dict[str, Any]:
    """The `scripts` snapshot section for one live object, shaped as the static audit's."""
    framework = framework_of(obj)
    caller = _caller()
    section: dict[str, Any] = {
        "paths": [caller["path"]],
        "files": [caller["path"]],
        "errors": [],
        "file_facts": [],
        "loaders": [],
        "tf_pipelines": [],
        "keras_calls": [],
        "torch_calls": [],
        "reasons": {},
    }
    if framework == "torch":
        loader, file_facts = _torch_loader(obj, uses_cuda, caller)
        section["loaders"].append(loader)
        section["file_facts"].append(file_facts)
    else:
        section["tf_pipelines"].append(_tf_pipeline(obj, caller))
    return section


def _caller() -> dict[str, Any]:
    """File, line, column and source line of the call into envcheck: the first frame
    outside the envcheck package (a hook of envcheck's own points at its caller)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and _own(frame.f_globals.get("__name__")):
        frame = frame.f_back
    path = frame.f_code.co_filename
    line = frame.f_lineno or 0
    column = None
    try:
        positions = getattr(pyinspect.getframeinfo(frame, context=0), "positions", None)
        if positions is not None and positions.col_offset is not None:
            column = positions.col_offset + 1
    except (OSError, ValueError, AttributeError):
        pass
    function = frame.f_code.co_name
    del frame
    return {
        "path": path,
        "line": line,
        "column": column,
        "code": linecache.getline(path, line).strip() or None,
        "function": None if function == "<module>" else function,
        "module_level": function == "<module>",
    }


def _own(module: Any) -> bool:
    return isinstance(module, str) and (module == "envcheck" or module.startswith("envcheck."))


# -- torch ---------------------------------------------------------------------------------


def _torch_loader(
    loader: Any, uses_cuda: Optional[bool], caller: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    args = {
        name: _arg(getattr(loader, name))
        for name in ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor")
        if hasattr(loader, name)
    }
    args["batch_size"] = _arg(getattr(loader, "batch_size", None))
    method = _start_method(getattr(loader, "multiprocessing_context", None))
    args["multiprocessing_context"] = _arg(method)
    if uses_cuda is None:
        uses_cuda = _cuda_available()
    kind = type(loader)
    item = {
        "kind": "torch.DataLoader",
        "callee": f"{kind.__module__}.{kind.__qualname__}",
        "source": LIVE,
        **{k: caller[k] for k in ("path", "line", "column", "code", "function", "module_level")},
        "in_main_guard": None,
        "args": args,
        "opaque_kwargs": [],
    }
    processes = ddp_processes(os.environ, _distributed_initialised())
    if processes is not None:
        item["processes"] = processes  # EC504 counts num_workers once per process
    file_facts = {
        "path": caller["path"],
        "source": LIVE,
        "uses_cuda": bool(uses_cuda),
        "main_guard": True,  # the loader exists: whatever starts it has run already
        "start_method": method or multiprocessing.get_start_method(allow_none=True),
    }
    return item, file_facts


def ddp_processes(environ: Mapping[str, str], initialised: bool) -> Optional[dict[str, Any]]:
    """The training processes on this node when this one is one of several (a DDP run),
    shaped as the static audit's `processes_per_node`; None for a single process.
    torchrun's LOCAL_WORLD_SIZE (or Slurm's tasks per node) gives the count; WORLD_SIZE
    alone, or an initialised torch.distributed, means one process per GPU."""
    shape = node_shape({}, environ, 1)
    if shape.source.startswith(("LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE")):
        if shape.processes <= 1:
            return None
        return {"count": shape.processes, "per_gpu": False, "how": shape.source, "line": None}
    if environ.get("WORLD_SIZE", "").strip() == "1":
        return None
    if "WORLD_SIZE" in environ or initialised:
        why = f"WORLD_SIZE={environ['WORLD_SIZE']}" if "WORLD_SIZE" in environ else None
        how = why or "torch.distributed is initialised"
        return {"count": None, "per_gpu": True, "how": f"{how}: one process per GPU", "line": None}
    return None


def _distributed_initialised() -> bool:
    """Whether torch.distributed is initialised in this process (never imports torch)."""
    dist = sys.modules.get("torch.distributed")
    try:
        return bool(dist is not None and dist.is_available() and dist.is_initialized())
    except (AttributeError, RuntimeError):
        return False


def _arg(value: Any) -> dict[str, Any]:
    plain = value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)
    return {"known": True, "value": plain, "text": repr(value), "source": LIVE}


def _start_method(context: Any) -> Optional[str]:
    """The name of a DataLoader's multiprocessing context ("spawn"), None when unset."""
    if context is None:
        return None
    if isinstance(context, str):
        return context
    name = getattr(context, "_name", None)
    if isinstance(name, str):
        return name
    try:
        return str(context.get_start_method())
    except (AttributeError, RuntimeError):
        return repr(context)


def _cuda_available() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch.cuda.is_available()) if torch is not None else False
    except Exception:  # a broken CUDA setup: no evidence of CUDA training
        return False


# -- tf.data -------------------------------------------------------------------------------


def _tf_pipeline(dataset: Any, caller: dict[str, Any]) -> dict[str, Any]:
    options = _tf_options(dataset)
    sink = _unwrap(dataset)
    order, truncated = _post_order(sink)
    ops: dict[int, dict[str, Any]] = {}
    operations: list[dict[str, Any]] = []
    sources: list[str] = []
    random_from: dict[int, dict[str, Any]] = {}  # node -> the first random map upstream
    cache_after_random: Optional[dict[str, Any]] = None
    many_files: Optional[str] = None
    for node in order:
        parents = [id(p) for p in _inputs(node)]
        upstream = next((random_from[p] for p in parents if p in random_from), None)
        cls = type(node).__name__
        source = _source_name(node)
        if source is not None or not parents:
            sources.append(source or cls)
            if source in READERS:
                many_files = many_files or _serial_reader(node, source)
            continue
        if cls in PASS_THROUGH:
            if upstream is not None:
                random_from[id(node)] = upstream
            continue
        op = _operation(node, cls, caller, options)
        ops[id(node)] = op
        operations.append(op)
        if op.get("random_augmentation") and upstream is None:
            upstream = op
        if upstream is not None:
            random_from[id(node)] = upstream
        if op["op"] == "cache" and cache_after_random is None and parents:
            seen = next((random_from[p] for p in parents if p in random_from), None)
            if seen is not None:
                cache_after_random = {
                    "line": op["line"],
                    "code": op["code"],
                    "augmentation": f"{seen['code']} ({seen['random_augmentation'][0]['call']})",
                    "augmentation_line": seen["random_augmentation"][0]["line"],
                }
    main = _main_chain(sink)
    chain = [ops[id(n)] for n in reversed(main) if id(n) in ops]
    names = [op["op"] for op in chain]
    if "interleave" in (op["op"] for op in operations):
        many_files = None
    shown = [op for op in chain if op["op"] != "with_options"]
    ends_with_prefetch, prefetch = _prefetch(names, shown, options)
    kind = type(dataset)
    source = _source_name(main[-1]) or type(main[-1]).__name__
    return {
        **{k: caller[k] for k in ("path", "line", "column", "code", "function")},
        "variable": None,
        "source": source,
        "sources": sources,
        "callee": f"{kind.__module__}.{kind.__qualname__}",
        "inspected": LIVE,
        "pipeline": ".".join([f"{source}(...)", *(op["code"] for op in chain)]),
        "operations": operations,
        "last_operation": shown[-1]["op"] if shown else source,
        "ends_with_prefetch": ends_with_prefetch,
        "prefetch": prefetch,
        "used_by": None,
        "finished_elsewhere": None,
        "many_files_without_interleave": many_files,
        "cache_after_random_augmentation": cache_after_random,
        "options": options,
        "graph_truncated": truncated,
        "tensorflow": getattr(sys.modules.get("tensorflow"), "__version__", None),
    }


def _unwrap(dataset: Any) -> Any:
    """The dataset a TF1-style `DatasetV1Adapter` wraps (its `_inputs()` skips it)."""
    for _ in range(8):
        inner = getattr(dataset, "_dataset", None)
        if inner is None or "V1" not in type(dataset).__name__:
            break
        dataset = inner
    return dataset


def _source_name(dataset: Any) -> Optional[str]:
    """The method that made a source dataset ("range"), None for a transformation."""
    cls = type(dataset).__name__
    if cls in SOURCES:
        return SOURCES[cls]
    if cls == "_FlatMapDataset" and _function_module(dataset).endswith(".from_generator_op"):
        return "from_generator"  # a flat_map over a tensor, TensorFlow's own
    return None


def _inputs(dataset: Any) -> list[Any]:
    if _source_name(dataset) in (*READERS, "from_generator"):
        return []  # the file names (the generator's arguments) are no pipeline stage
    try:
        found = list(dataset._inputs())
    except Exception:
        return []
    return [_unwrap(d) for d in found]


def _post_order(sink: Any) -> tuple[list[Any], bool]:
    """Every dataset of the graph once, inputs before the datasets reading them."""
    order: list[Any] = []
    seen: set[int] = set()
    truncated = False
    stack: list[tuple[Any, bool]] = [(sink, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if len(seen) >= MAX_NODES:
            truncated = True
            continue
        stack.extend((parent, False) for parent in reversed(_inputs(node)))
    return order, truncated


def _main_chain(sink: Any) -> list[Any]:
    """The sink and its main inputs back to a source: the pipeline as one chain (through
    the dataset a transformation applies to; the first data input of a zip or a
    sample_from_datasets, not its selector)."""
    chain = [sink]
    while len(chain) < MAX_NODES:
        node = chain[-1]
        parents = _inputs(node)
        if not parents:
            break
        main = getattr(node, "_input_dataset", None)
        if main is None:
            main = next(iter(getattr(node, "_data_inputs", None) or []), None)
        main = _unwrap(main) if main is not None else None
        chain.append(next((p for p in parents if p is main), parents[0]))
    return chain


def _operation(
    node: Any, cls: str, caller: dict[str, Any], options: dict[str, Any]
) -> dict[str, Any]:
    name = OPERATIONS.get(cls, cls)
    op: dict[str, Any] = {"op": name, "class": cls, "line": caller["line"]}
    if name in FUNCTION_OPS:
        function = _function_facts(node)
        if function["module"].startswith(INTERNAL_MODULES):
            # TensorFlow's or Keras's own map (sample_from_datasets, image loading):
            # shown, but not the user's to parallelise.
            op["op"] = f"{name} (internal)"
        parallel, asynchronous = _parallelism(node, cls, function, options)
        op.update(
            num_parallel_calls=parallel,
            opaque_kwargs=[],
            map_function=function["name"],
            map_function_defined_at=function["defined_at"],
            host_calls=function["host_calls"],
            random_augmentation=function["random_augmentation"],
            asynchronous=asynchronous,
        )
        if parallel is not None and parallel.get("source") != LIVE:
            op["parallelized_by_tensorflow"] = "map_parallelization"
        written = parallel is not None and parallel.get("source") == LIVE and name != "flat_map"
        extra = f", num_parallel_calls={parallel['text']}" if written and parallel else ""
        op["code"] = f"{name}({function['name']}{extra})"
    else:
        op["asynchronous"] = cls in ("_PrefetchDataset", "_ParallelBatchDataset")
        op["code"] = f"{name}({_arguments(node, name)})"
    return op


def _arguments(node: Any, name: str) -> str:
    attribute = {
        "batch": "_batch_size",
        "padded_batch": "_batch_size",
        "prefetch": "_buffer_size",
        "shuffle": "_buffer_size",
        "take": "_count",
        "skip": "_count",
        "repeat": "_count",
    }.get(name)
    if attribute is None:
        return "" if name in ("cache", "unbatch", "with_options", "ignore_errors") else "..."
    value = _scalar(getattr(node, attribute, None))
    if value is _UNREADABLE:
        return "..."
    if name == "prefetch" and value == AUTOTUNE:
        return "AUTOTUNE"
    if name == "repeat" and value == -1:
        return ""
    return "" if value is None else str(value)


def _scalar(value: Any) -> Any:
    """A Python int from an eager scalar tensor; _UNREADABLE for a symbolic one."""
    if value is None or isinstance(value, (bool, int)):
        return value
    try:
        return int(value.numpy())
    except Exception:
        return _UNREADABLE


def _parallelism(
    node: Any, cls: str, function: dict[str, Any], options: dict[str, Any]
) -> tuple[Optional[dict[str, Any]], bool]:
    """(num_parallel_calls as the static audit records it, whether the op runs ahead)."""
    if cls == "ParallelInterleaveDataset":  # experimental.parallel_interleave: cycle threads
        cycle = _scalar(getattr(node, "_cycle_length", None))
        text = "..." if cycle is _UNREADABLE else str(cycle)
        return _parallel(cycle, f"cycle_length={text} (experimental.parallel_interleave)"), True
    attribute = "_num_parallel_calls_t" if cls == "_MapAndBatchDataset" else "_num_parallel_calls"
    if hasattr(node, attribute):
        value = _scalar(getattr(node, attribute))
        return _parallel(value, None), True
    if (
        cls == "_MapDataset"
        and options["map_parallelization_applies"]
        and not function["stateful"]
        and not getattr(node, "_force_synchronous", False)
    ):
        return {
            "known": True,
            "value": AUTOTUNE,
            "text": "AUTOTUNE",
            "source": "TensorFlow's map_parallelization rewrite (stateless map function)",
        }, True
    return None, False


def _parallel(value: Any, text: Optional[str]) -> dict[str, Any]:
    if value is _UNREADABLE:
        return {"known": False, "value": None, "text": text or "a graph tensor", "source": LIVE}
    shown = "AUTOTUNE" if value == AUTOTUNE else str(value)
    return {"known": True, "value": value, "text": text or shown, "source": LIVE}


def _function_facts(node: Any) -> dict[str, Any]:
    """Name, definition place, host-bound and random ops of a dataset's user function."""
    wrapper = getattr(node, "_map_func", None)
    if wrapper is None:
        try:
            wrapper = next(iter(node._functions()), None)
        except Exception:
            wrapper = None
    func = _python(getattr(wrapper, "_func", None))
    name, path, line = _python_function(func)
    where = {"line": line, "code": linecache.getline(path, line).strip() if path and line else None}
    op_types = _op_types(wrapper)
    host = [{"call": HOST_OPS[t], "op": t, **where} for t in op_types if t in HOST_OPS]
    random = [
        {"call": t, "op": t, **where}
        for t in op_types
        if t in RANDOM_OPS
        or t.startswith("Random")
        or (t.startswith("Stateful") and t != "StatefulPartitionedCall")
    ]
    return {
        "name": name,
        "module": str(getattr(func, "__module__", None) or ""),
        "defined_at": f"{path}:{line}" if path and line else None,
        "host_calls": host,
        "random_augmentation": random,
        "stateful": _stateful(wrapper),
    }


def _function_module(dataset: Any) -> str:
    func = _python(getattr(getattr(dataset, "_map_func", None), "_func", None))
    return str(getattr(func, "__module__", None) or "")


def _python(func: Any) -> Any:
    """The Python function under functools.partial and decorators."""
    while isinstance(func, functools.partial):
        func = func.func
    try:
        return pyinspect.unwrap(func) if func is not None else None
    except ValueError:
        return func


def _python_function(func: Any) -> tuple[str, Optional[str], Optional[int]]:
    if func is None:
        return "f", None, None
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    code = getattr(func, "__code__", None)
    path = getattr(code, "co_filename", None)
    line = getattr(code, "co_firstlineno", None)
    return str(name or type(func).__name__), path, line


def _op_types(wrapper: Any) -> list[str]:
    """The op types in a traced function, nested functions (cond, while) included."""
    try:
        graph = wrapper.function.graph.as_graph_def()
    except Exception:
        return []
    types = [n.op for n in graph.node]
    types += [n.op for f in graph.library.function for n in f.node_def]
    return list(dict.fromkeys(types))


def _stateful(wrapper: Any) -> bool:
    """Whether TensorFlow counts the function stateful for map_parallelization (which
    ignores Assert ops); True when it cannot be told."""
    try:
        function = wrapper.function
        if not function.function_def.signature.is_stateful:
            return False
        return any(
            op.type != "Assert" and op.op_def.is_stateful for op in function.graph.get_operations()
        )
    except Exception:
        return True


def _serial_reader(node: Any, reader: str) -> Optional[str]:
    """Why a file reader reads several files one after another, or None."""
    if getattr(node, "_num_parallel_reads", None) is not None:
        return None
    if "ParallelInterleave" in type(getattr(node, "_impl", None)).__name__:
        return None
    files: Any = getattr(node, "_filenames", None)  # a dataset of names (a tensor before)
    try:
        count = int(files.cardinality() if hasattr(files, "cardinality") else len(files))
    except Exception:
        return None
    if count <= 1:
        return None  # one file, or a count unknown before iterating
    return f"{reader} over {count} files without num_parallel_reads"


def _tf_options(dataset: Any) -> dict[str, Any]:
    """The options that decide TensorFlow's map_parallelization and inject_prefetch."""
    try:
        options = dataset.options()
    except Exception:
        options = None
    optimization = getattr(options, "experimental_optimization", None)
    autotune = getattr(getattr(options, "autotune", None), "enabled", None)
    if options is not None and not hasattr(options, "autotune"):
        autotune = getattr(optimization, "autotune", None)  # TensorFlow before 2.6
    defaults = getattr(optimization, "apply_default_optimizations", None)
    found: dict[str, Any] = {"autotune": autotune, "apply_default_optimizations": defaults}
    for name in ("map_parallelization", "inject_prefetch"):
        absent = optimization is None or not hasattr(type(optimization), name)
        explicit = None if absent else getattr(optimization, name)
        default = None if absent else _documented_default(type(optimization), name)
        found[name] = explicit
        found[f"{name}_default"] = default
        on = explicit is True or (explicit is None and defaults is not False and default is True)
        found[f"{name}_applies"] = not absent and autotune is not False and on
    return found


def _documented_default(options_class: type, name: str) -> Optional[bool]:
    """An option's default as the installed TensorFlow documents it ("If None, defaults
    to True."); None when the docstring does not say."""
    doc = getattr(getattr(options_class, name, None), "__doc__", None) or ""
    match = re.search(r"If None, defaults to (True|False)", doc)
    return None if match is None else match.group(1) == "True"


def _prefetch(
    names: list[str], shown: list[dict[str, Any]], options: dict[str, Any]
) -> tuple[bool, str]:
    """(ends_with_prefetch, how) for the main chain of operations, source to sink."""
    last = max((i for i, n in enumerate(names) if n == "prefetch"), default=None)
    if last is not None and all(n in AFTER_PREFETCH_OK for n in names[last + 1 :]):
        return True, "the pipeline ends with prefetch"
    if not options["inject_prefetch_applies"]:
        return False, "no final prefetch, and TensorFlow's inject_prefetch is off here"
    if shown and shown[-1].get("asynchronous"):
        return True, f"the last transformation ({shown[-1]['code']}) runs ahead asynchronously"
    return True, "TensorFlow's inject_prefetch adds prefetch(AUTOTUNE) after the last step"
