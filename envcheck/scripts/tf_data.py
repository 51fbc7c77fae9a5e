"""tf.data pipelines, read from the source without running it.

`TfDataObserver.finish` runs once per file after the walk: pipelines followed through
`ds = ds.map(...)` reassignments and chained calls within one function or module body,
and from functions (or methods) that return one into their callers, so that each is
judged where it reaches its consumer (`fit`, a `for` loop). Every observation is a plain
JSON dict with `path`, `line`, `column`, `code` and `function`; nothing here judges.

Library loader code is followed too: a parameter that holds a pipeline (annotated
`tf.data.Dataset`, or only extended with dataset operations) is a source, continued in
the caller that hands its own pipeline in; pipelines stored in lists, returned in one,
merged by `choose_from_datasets`/`zip` or read by a TF1 iterator are consumed, not
demonstrations.

Size: one dataflow reader. Sources (tf.data, Keras directory loaders, Dataset subclasses,
loaders out of sight, parameters), the operations chained on them and their consumers
(fit, loops, callers, iterators, merges, demonstrations) update the same per-body state
as the statements are read; split across modules they would share that private state.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional

from envcheck.scripts.index import FileIndex, code_at, header_nodes, keyword_arg, own_nodes
from envcheck.scripts.keras import GENERATOR_METHODS, uses_tensorflow
from envcheck.scripts.parameters import parameter_value
from envcheck.scripts.structural_maps import structural_only
from envcheck.scripts.values import Scope, keyword_values, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

# Where a tf.data pipeline starts (qualified names, after import aliases).
SOURCE_PREFIXES = ("tensorflow.data.Dataset.",)
INSPECTORS = {"iter", "next", "list"}
# A variable named for one file (`input_file`, `record_path`): a reader over it reads one.
SINGLE_FILE = ("file", "path", "filename", "record")  # builtins that look at a few elements
# Calls that only look at a pipeline (its size, its repr), not consume it.
LOOKS = INSPECTORS | {"print", "len", "type", "isinstance", "repr", "str", "cardinality"}
# Calls that consume a pipeline for training: Keras, TF1 iterators, a distribution strategy.
CONSUMERS = ("fit", "evaluate", "predict", *GENERATOR_METHODS)
ITERATOR_CONSUMERS = {
    "make_one_shot_iterator",
    "make_initializable_iterator",
    "experimental_distribute_dataset",
}
# `for i, x in enumerate(ds)`: as a plain loop over `ds`, judged by what else reads it
LOOP_WRAPPERS = {"enumerate", "zip", "tqdm"}
# Methods that read a pipeline (TF1 iterators, NumPy iteration): consumers, not operations.
ITERATOR_METHODS = {
    "make_one_shot_iterator",
    "make_initializable_iterator",
    "get_next",
    "as_numpy_iterator",
}
# In-memory sources (tensors embedded in the graph) and the operations that only slice,
# shuffle and group their elements: no decoding, no I/O, nothing for a prefetch to overlap.
IN_MEMORY_SOURCES = {"from_tensor_slices", "from_tensors"}
IN_MEMORY_OPS = {
    "batch",
    "cache",
    "padded_batch",
    "rebatch",
    "repeat",
    "shard",
    "shuffle",
    "skip",
    "take",
    "unbatch",
    "with_options",
}
# tf.data calls that take pipelines as arguments and build a new one from them: the
# pipelines handed in feed it, and the new one is judged where it reaches its consumer.
MERGES = {"zip", "concatenate", "choose_from_datasets", "sample_from_datasets"}
DATASET_CLASSES = {"tensorflow.data.Dataset"}  # a subclass of this file is a source
SOURCES = {
    "tensorflow.data.TFRecordDataset",
    "tensorflow.data.TextLineDataset",
    "tensorflow.data.FixedLengthRecordDataset",
    "tensorflow.data.experimental.choose_from_datasets",
    "tensorflow.data.experimental.sample_from_datasets",
    "tensorflow.keras.utils.image_dataset_from_directory",
    "tensorflow.keras.utils.text_dataset_from_directory",
    "tensorflow.keras.preprocessing.image_dataset_from_directory",
    "keras.utils.image_dataset_from_directory",
    "keras.utils.text_dataset_from_directory",
    "keras.preprocessing.image_dataset_from_directory",
}
# Sources that end with their own prefetch: Keras' *_dataset_from_directory utilities
# batch and then call dataset.prefetch(tf.data.AUTOTUNE) before returning (keras
# utils/image_dataset_utils.py, text_dataset_utils.py).
PREFETCHED_SOURCES = ("_dataset_from_directory",)
FILE_READERS = {"TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset"}
# tf.data transformations: a variable assigned from a call out of sight (a loader in
# another module) and then extended only with these, one of them distinctive, is a
# pipeline whose source is out of sight.
DATASET_OPS = {
    "apply",
    "batch",
    "cache",
    "concatenate",
    "filter",
    "flat_map",
    "interleave",
    "map",
    "padded_batch",
    "prefetch",
    "ragged_batch",
    "rebatch",
    "repeat",
    "shard",
    "shuffle",
    "skip",
    "take",
    "unbatch",
    "with_options",
}
# Loaders out of sight known to return tf.data pipelines (TensorFlow Datasets: `tfds.load`,
# `tfds.builder(...).as_dataset` read through its module): `ds.map(f)` alone on one is one.
TF_DATASET_LOADERS = ("tensorflow_datasets.",)
DISTINCTIVE_OPS = {"batch", "cache", "interleave", "padded_batch", "prefetch", "shuffle", "unbatch"}
# Operations that group elements into batches.
BATCHING = {"batch", "padded_batch", "ragged_batch", "bucket_by_sequence_length"}
# Operations that may follow the final prefetch without undoing its overlap.
AFTER_PREFETCH_OK = {"with_options", "take", "repeat", "skip"}
PY_FUNCTIONS = {
    "tensorflow.py_function",
    "tensorflow.numpy_function",
    "tensorflow.py_func",
    "tensorflow.compat.v1.py_func",
    "tensorflow.compat.v1.numpy_function",
}


class TfDataObserver:
    """The tf.data family (see the module docstring)."""

    def call(self, walker: Walker, node: ast.Call, name: Optional[str]) -> None:
        return None  # pipelines need the whole file: read in finish

    def finish(self, walker: Walker) -> None:
        _pipelines(walker)


def _pipelines(walker: Walker) -> None:
    """The file's tf.data pipelines, each judged where it reaches its consumer."""
    files = walker.index()
    bodies: list[tuple[Optional[ast.AST], list[ast.stmt]]] = [(None, walker.module.body)]
    bodies += [(f, f.body) for f in files.function_nodes]
    # Two rounds: the first finds the functions (and methods) that return a pipeline; the
    # second reads their callers with those pipelines as sources, so a pipeline is judged
    # where it reaches its consumer, with what the caller adds (prefetch, batch).
    factories: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    readers: list[_Pipelines] = []
    # Only files importing TensorFlow or Keras build tf.data pipelines, and the second
    # round runs only when some function returns one.
    rounds = 2 if uses_tensorflow(walker) else 0
    parameters = {id(f): _dataset_parameters(walker, f) for f, _ in bodies} if rounds else {}
    for round_ in range(rounds):
        if round_ == 1 and not factories:
            break
        readers = []
        for function, body in bodies:
            scope = walker.scope_of(function)
            reader = _Pipelines(
                walker, files, function, scope, factories, used, parameters[id(function)]
            )
            reader.read(body)
            readers.append(reader)
        if round_ == 0:
            for reader in readers:
                name = getattr(reader.function, "name", None)
                returned = [r for r in reader.records if r["returned"] and not r["derived"]]
                if (
                    name in files.functions
                    and len(returned) == 1
                    and not returned[0].get("in_container")
                ):
                    factories[name] = returned[0]
            used.clear()
    for reader in readers:
        walker.report.tf_pipelines.extend(reader.finished())


# -- tf.data pipelines --------------------------------------------------------------------


class _Pipelines:
    """The tf.data pipelines built in one function (or module) body, in source order."""

    def __init__(
        self,
        walker: Walker,
        files: FileIndex,
        function: Optional[ast.AST],
        scope: Scope,
        factories: Optional[dict[str, dict[str, Any]]] = None,
        used: Optional[set[str]] = None,
        parameters: Optional[set[str]] = None,
    ):
        self.walker = walker
        self.files = files
        self.function = function
        self.scope = scope
        self.factories = factories if factories is not None else {}
        self.used = used if used is not None else set()  # factories some caller reads
        self.live: dict[str, dict[str, Any]] = {}  # variable -> its pipeline so far
        self.pending: dict[str, ast.Call] = {}  # variable -> the unknown call it holds
        self.inspected: set[str] = set()  # variables read by iter(), next(), list()
        self.records: list[dict[str, Any]] = []
        self.unpacked: set[str] = set()  # `a, b = load(...)`: one source, several pipelines
        self.parameters = parameters if parameters is not None else set()

    def read(self, body: list[ast.stmt]) -> None:
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            self._statement(statement)

    def finished(self) -> list[dict[str, Any]]:
        """The pipelines to judge: not those extended further on, nor those a factory
        returns to a caller in this file (judged there)."""
        name = getattr(self.function, "name", None)
        return [
            self._finished(r)
            for r in self.records
            if not r["derived"] and not (r["returned"] and name in self.used)
        ]

    def _factory(self, call: ast.Call) -> Optional[str]:
        """The function or method of this file a call builds its pipeline with."""
        func = call.func
        name = func.id if isinstance(func, ast.Name) else None
        if isinstance(func, ast.Attribute):
            name = func.attr
        if name is not None and name in self.factories and self.factories[name] is not None:
            return name
        return None

    def _statement(self, statement: ast.stmt) -> None:
        calls = [n for n in header_nodes(statement) if isinstance(n, ast.Call)]
        inner = {
            id(c.func.value)
            for c in calls
            if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Call)
        }
        seen: set[int] = set()
        target = None
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            target = statement.targets[0].id
        returned = _returned_calls(statement)
        # `ds = f(ds)`: the arguments are read before the name is rebound, so the new
        # bindings take effect after the whole statement
        bindings: dict[str, dict[str, Any]] = {}
        for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
            if id(call) in inner or id(call) in seen:
                continue
            seen.add(id(call))
            assigned = (
                target if (isinstance(statement, ast.Assign) and call is statement.value) else None
            )
            discarded = isinstance(statement, ast.Expr) and call is statement.value
            base = self._chain(call, assigned, returned.get(id(call)), discarded)
            if assigned is not None and base is not None:
                bindings[assigned] = base
            if assigned is not None and assigned not in self.live and assigned not in bindings:
                self.pending.setdefault(assigned, call)
        self._unpacking(statement)
        self._uses(statement)
        self.live.update(bindings)
        # Plain statements nested in blocks (if/for/with/try) are read in order too.
        for field in ("body", "orelse", "finalbody"):
            for child in getattr(statement, field, []) or []:
                if isinstance(child, ast.stmt) and not isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
                ):
                    self._statement(child)
        for handler in getattr(statement, "handlers", []) or []:
            for child in handler.body:
                self._statement(child)

    def _unpacking(self, statement: ast.stmt) -> None:
        """`train, test = tfds_builder.as_dataset(split=[...])` (or `override or load(...)`):
        each name may hold a pipeline built out of sight, decided by what is chained on it."""
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], (ast.Tuple, ast.List))
        ):
            return
        value = statement.value
        candidates = value.values if isinstance(value, ast.BoolOp) else [value]
        calls = [c for c in candidates if isinstance(c, ast.Call)]
        if not calls:
            return
        for element in statement.targets[0].elts:
            if isinstance(element, ast.Name) and element.id not in self.live:
                self.pending.setdefault(element.id, calls[-1])
                self.unpacked.add(element.id)

    def _chain(
        self,
        call: ast.Call,
        target: Optional[str],
        returned: Optional[str],
        discarded: bool = False,
    ) -> Optional[dict[str, Any]]:
        """The pipeline `call` builds or extends, if any; `returned` is "value" for
        `return <call>` and "container" for a call in a returned list or tuple.
        `discarded`: the call is a statement of its own, its result thrown away
        (`ds.prefetch(n)`: Dataset methods return a new dataset, `ds` is unchanged)."""
        ops: list[ast.Call] = []
        node: ast.expr = call
        base: Optional[dict[str, Any]] = None
        consumer: Optional[str] = None
        while isinstance(node, ast.Call):
            name = self.walker.qualname(node.func)
            if name is not None and (name in SOURCES or name.startswith(SOURCE_PREFIXES)):
                base = self._new(node, name)
                break
            if isinstance(node.func, ast.Name) and node.func.id in self.files.derived_from(
                DATASET_CLASSES
            ):  # class ArtificialDataset(tf.data.Dataset) whose __new__ builds one
                base = self._new(node, node.func.id)
                break
            factory = self._factory(node)
            if factory is not None and self.factories[factory] is not self._own_return():
                base = self._from_factory(node, factory)
                break
            if not isinstance(node.func, ast.Attribute):
                return None
            ops.append(node)
            node = node.func.value
        else:
            consumer = _iterator_ops(ops)
            if isinstance(node, ast.Name) and consumer is not None and not ops:
                self._mark(node.id, consumer)  # `ds.make_one_shot_iterator()`
            if isinstance(node, ast.Name) and node.id not in self.live and ops:
                self._out_of_sight(node.id, ops)
            names = {op.func.attr for op in ops if isinstance(op.func, ast.Attribute)}
            if (
                discarded
                and isinstance(node, ast.Name)
                and node.id in self.live
                and ops
                and consumer is None
                and names <= DATASET_OPS
            ):
                # `ds.prefetch(n)` alone: `ds` stays the pipeline it was, without it
                self.live[node.id].setdefault("discarded", []).extend(
                    self._op(op) for op in reversed(ops)
                )
                return None
            if isinstance(node, ast.Name) and node.id in self.live and ops:
                previous = self.live[node.id]
                previous["derived"] = True
                # a new pipeline: its own consumer, not the one its parent had so far
                base = {
                    **previous,
                    "ops": list(previous["ops"]),
                    "derived": False,
                    "used_by": None,
                    "handed_to": None,
                    "returned": False,
                }
                self.records.append(base)
        if base is None:
            return None
        consumer = _iterator_ops(ops) or consumer
        if consumer is not None:  # `ds.make_one_shot_iterator().get_next()` reads it
            base["used_by"] = base["used_by"] or consumer
        for op in reversed(ops):
            base["ops"].append(self._op(op))
        base["chain"] = call  # the whole expression, as a caller may hand it on
        base["variable"] = target or base.get("variable")
        if returned:
            base["returned"] = True
            base["in_container"] = returned == "container"
        return base

    def _out_of_sight(self, variable: str, ops: list[ast.Call]) -> None:
        """`ds = loader.load(...)` then `ds = ds.shuffle(512).batch(8).prefetch(1)`: the
        variable holds a pipeline built out of sight, from the call that assigned it."""
        names = {op.func.attr for op in ops if isinstance(op.func, ast.Attribute)}
        call = self.pending.get(variable)
        if not names <= DATASET_OPS:
            return
        if call is None and variable in self.parameters:
            # a parameter holding a pipeline (annotated tf.data.Dataset, or only ever
            # extended with dataset operations): the caller built it; it starts at the
            # first operation chained on it here
            record = self._new(ops[-1], variable)
            record["source"] = "parameter"
            record["callee"] = f"parameter {variable} of {getattr(self.function, 'name', '?')}()"
            record["variable"] = variable
            record["parameter"] = variable
            self.live[variable] = record
            return
        if call is None:
            return
        loader = self.walker.qualname(call.func) or ""
        if not names & DISTINCTIVE_OPS and not loader.startswith(TF_DATASET_LOADERS):
            return  # not `df.map(f)` on a pandas Series; `tfds.load(...)` is a pipeline
        # one source unpacked into several pipelines: each starts where it is extended
        node = ops[-1] if variable in self.unpacked else call
        record = self._new(node, ast.unparse(call.func))
        record["variable"] = variable
        self.live[variable] = record

    def _own_return(self) -> Optional[dict[str, Any]]:
        name = getattr(self.function, "name", None)
        return self.factories.get(name) if name is not None else None

    def _from_factory(self, node: ast.Call, factory: str) -> dict[str, Any]:
        """A pipeline built by a function of this file, continued here."""
        self.used.add(factory)
        built = self.factories[factory]
        handed = self._handed_pipeline(node, factory, built.get("parameter"))
        if handed is not None:  # `ds = augment(ds)`: the caller's pipeline, continued
            handed["derived"] = True
            record = {
                **handed,
                "ops": [*handed["ops"], *built["ops"]],
                "derived": False,
                "returned": False,
                "used_by": None,
                "handed_to": None,
                "built_by": f"{factory}() (line {built['node'].lineno})",
            }
            self.records.append(record)
            return record
        record = {
            **built,
            "node": node,
            "ops": list(built["ops"]),
            "derived": False,
            "variable": None,
            "returned": False,
            "used_by": None,
            "handed_to": None,
            "built_by": f"{factory}() (line {built['node'].lineno})",
        }
        self.records.append(record)
        return record

    def _handed_pipeline(
        self, call: ast.Call, factory: str, parameter: Optional[str]
    ) -> Optional[dict[str, Any]]:
        """The live pipeline this call passes as the factory's dataset parameter."""
        function = self.files.functions.get(factory)
        if parameter is None or function is None:
            return None
        positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        given = next((k.value for k in call.keywords if k.arg == parameter), None)
        if given is None and parameter in positional:
            index = positional.index(parameter)
            if positional[:1] in (["self"], ["cls"]) and isinstance(call.func, ast.Attribute):
                index -= 1
            given = call.args[index] if 0 <= index < len(call.args) else None
        if isinstance(given, ast.Name) and given.id in self.live:
            return self.live[given.id]
        return None

    def _new(self, node: ast.Call, name: str) -> dict[str, Any]:
        record = {
            "node": node,
            "source": name.rsplit(".", 1)[-1],
            "callee": name,
            "ops": [],
            "derived": False,
            "variable": None,
            "returned": False,
            "used_by": None,
            "files": self._files(node, name),
            "prefetched_source": name.endswith(PREFETCHED_SOURCES),
        }
        self.records.append(record)
        return record

    def _files(self, node: ast.Call, name: str) -> Optional[str]:
        """Why the source reads many files ("list_files", "TFRecordDataset over a list"),
        or None; a reader given num_parallel_reads reads them in parallel already."""
        short = name.rsplit(".", 1)[-1]
        if short == "list_files":
            return "list_files"
        if short not in FILE_READERS:
            return None
        values, _ = keyword_values(node, self.scope)
        if "num_parallel_reads" in values or len(node.args) >= 4:
            return None
        files = node.args[0] if node.args else keyword_arg(node, "filenames")
        if files is None:
            return None
        if isinstance(files, ast.Name):
            assigned = self.scope.lookup(files.id)
            files = assigned if assigned is not None else files
        if isinstance(files, ast.Constant):
            return None
        if isinstance(files, (ast.List, ast.Tuple)) and len(files.elts) <= 1:
            return None
        last = ast.unparse(files).rsplit(".", 1)[-1].lower()
        if isinstance(files, (ast.Name, ast.Attribute)) and last.endswith(SINGLE_FILE):
            return None  # `TFRecordDataset(input_file)` (BERT's run_classifier): one file
        return f"{short} over {ast.unparse(files)}"

    def _op(self, call: ast.Call) -> dict[str, Any]:
        assert isinstance(call.func, ast.Attribute)
        name = call.func.attr
        line = call.func.end_lineno or call.lineno
        op: dict[str, Any] = {
            "op": name,
            "line": line,
            "column": (call.func.end_col_offset or 0) - len(name) + 1,
            "code": code_at(self.walker.lines, line),
        }
        if name in ("map", "interleave", "flat_map"):
            values, opaque = keyword_values(call, self.scope)
            position = 1 if name == "map" else 3
            parallel = values.get("num_parallel_calls")
            written = keyword_arg(call, "num_parallel_calls")
            if parallel is None and len(call.args) > position:
                written = call.args[position]
                parallel = resolve(written, self.scope)
            if parallel is not None and not parallel.known and isinstance(written, ast.Name):
                # a parameter of this function: what the file's callers pass, or its default
                passed = parameter_value(self.walker, self.function, written.id)
                parallel = passed if passed is not None else parallel
            op["num_parallel_calls"] = parallel.to_json() if parallel is not None else None
            op["opaque_kwargs"] = opaque
            func = call.args[0] if call.args else keyword_arg(call, "map_func")
            op["map_function"] = ast.unparse(func) if func is not None else None
            op["makes_datasets"] = self._makes_datasets(func)
            op["structural"] = structural_only(self.walker, self.files, func)
            op.update(self._function_calls(func))
        return op

    def _makes_datasets(self, func: Optional[ast.expr]) -> bool:
        """`range_ds.map(lambda i: ds.apply(...))`: the function returns a dataset, to be
        read by the interleave or flat_map that follows; the map itself reads nothing."""
        returned: list[ast.expr] = []
        if isinstance(func, ast.Lambda):
            returned = [func.body]
        elif isinstance(func, ast.Name) and func.id in self.files.functions:
            returned = [
                r.value
                for r in own_nodes(self.files.functions[func.id])
                if isinstance(r, ast.Return) and r.value is not None
            ]
        return bool(returned) and all(self._is_dataset(r) for r in returned)

    def _is_dataset(self, node: ast.expr) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.walker.qualname(node.func) or ""
        if name in SOURCES or name.startswith(SOURCE_PREFIXES):
            return True
        base = _chain_base(node)
        if base is None or not (base in self.live or base in self.parameters):
            return False
        root = _chain_root(node)
        return isinstance(root, ast.Call) and getattr(root.func, "attr", None) in DATASET_OPS

    def _function_calls(self, func: Optional[ast.expr]) -> dict[str, Any]:
        """Host-bound calls and random augmentation inside a map function."""
        host: list[dict[str, Any]] = []
        random: list[dict[str, Any]] = []
        todo: list[ast.AST] = []
        if isinstance(func, ast.Lambda):
            todo.append(func.body)
        elif isinstance(func, ast.Name) and func.id in self.files.functions:
            todo.append(self.files.functions[func.id])
            wrapper = self._py_function_decorator(self.files.functions[func.id])
            if wrapper is not None:  # @map_decorator that runs it in tf.py_function
                host.append(wrapper)
        visited: set[int] = set()
        while todo:
            root = todo.pop()
            if id(root) in visited:
                continue
            visited.add(id(root))
            for node in ast.walk(root):
                if not isinstance(node, ast.Call):
                    continue
                kind = self._host_kind(node)
                entry = {
                    "line": node.lineno,
                    "call": ast.unparse(node.func),
                    "code": code_at(self.walker.lines, node.lineno),
                }
                if kind is not None:
                    host.append({**entry, "kind": kind})
                name = self.walker.qualname(node.func) or ""
                if name.startswith(
                    ("tensorflow.image.random_", "tensorflow.image.stateless_random_")
                ) or name.startswith("tensorflow.random."):
                    random.append(entry)
                if isinstance(node.func, ast.Name) and node.func.id in self.files.functions:
                    todo.append(self.files.functions[node.func.id])
                if kind == "py_function":  # tf.py_function(load, [x], ...): what it runs
                    wrapped = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "func")]
                    for target in wrapped:
                        if isinstance(target, ast.Name) and target.id in self.files.functions:
                            todo.append(self.files.functions[target.id])
                        elif isinstance(target, ast.Lambda):
                            todo.append(target.body)
        return {"host_calls": host, "random_augmentation": random}

    def _py_function_decorator(self, function: ast.AST) -> Optional[dict[str, Any]]:
        """The py_function call of a decorator of this file that wraps `function` in
        tf.py_function (the tf.data guide's `@map_decorator`), as a host call; else None."""
        for decorator in getattr(function, "decorator_list", []):
            if not (isinstance(decorator, ast.Name) and decorator.id in self.files.functions):
                continue
            for node in ast.walk(self.files.functions[decorator.id]):
                if isinstance(node, ast.Call) and self._host_kind(node) == "py_function":
                    return {
                        "line": node.lineno,
                        "call": ast.unparse(node.func),
                        "code": code_at(self.walker.lines, node.lineno),
                        "kind": "py_function",
                        "decorator": decorator.id,
                    }
        return None

    def _host_kind(self, node: ast.Call) -> Optional[str]:
        name = self.walker.qualname(node.func) or ""
        if name in PY_FUNCTIONS:
            return "py_function"
        if name.startswith("numpy."):
            return "numpy"
        if name.startswith("PIL."):
            return "PIL"
        if name.startswith("cv2."):
            return "OpenCV"
        if name == "time.sleep":
            return "time.sleep"
        if isinstance(node.func, ast.Name) and node.func.id == "open" and name == "open":
            return "open()"
        return None

    def _uses(self, statement: ast.stmt) -> None:
        """`model.fit(ds)`, `for batch in ds`, `return ds`, and datasets handed to a
        function of this file (which may finish the pipeline)."""
        loop = statement if isinstance(statement, ast.For) else None
        for iterable in _looped(loop.iter) if loop is not None else []:
            if loop is not None and _only_looks(loop.body):
                # `for x in ds: print(x)`, `for i, x in enumerate(ds): ...; break`: a look
                looked = iterable if isinstance(iterable, ast.Name) else None
                name = looked.id if looked is not None else _chain_base(iterable)
                if name is not None:
                    self.inspected.add(name)
                continue
            if isinstance(iterable, ast.Name):
                self._mark(iterable.id, "for loop")
            elif isinstance(iterable, ast.Call):
                for record in self._built_by(iterable):
                    # `for x in make_dataset(...)`; not `for x in ds.take(1)`, a look at it
                    if not (record["ops"] and record["ops"][-1]["op"] == "take"):
                        record["used_by"] = record["used_by"] or "for loop"
        if (
            isinstance(statement, ast.Return)
            and isinstance(statement.value, ast.Name)
            and statement.value.id in self.live
        ):
            self.live[statement.value.id]["returned"] = True
        for node in header_nodes(statement):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and node.func.id in INSPECTORS:
                self.inspected.update(
                    a.id for a in node.args if isinstance(a, ast.Name) and a.id in self.live
                )
            args = [*node.args, *(k.value for k in node.keywords)]
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else None
            own = isinstance(node.func, ast.Name) and node.func.id in self.files.functions
            for arg in args:
                if isinstance(arg, ast.Name) and arg.id in self.live:
                    if callee in CONSUMERS:
                        self._mark(arg.id, callee)
                    elif own:
                        self.live[arg.id]["handed_to"] = ast.unparse(node.func)
                elif isinstance(arg, ast.Call):
                    for record in self._built_by(arg):
                        if callee in CONSUMERS:
                            record["used_by"] = record["used_by"] or callee
                        elif own:
                            record["handed_to"] = ast.unparse(node.func)
            if not own and callee not in CONSUMERS:
                self._handed_on(node, args)

    def _handed_on(self, node: ast.Call, args: list[ast.expr]) -> None:
        """Pipelines passed to a call that is not a consumer of this file: merged into a
        new pipeline (`choose_from_datasets`, `zip`; the one given as the choice dataset
        only yields indices), stored (`pipelines.append(ds)`), read by a TF1 iterator or a
        distribution strategy, or handed to code out of sight. None of those is a
        demonstration; a look (`len(ds)`, `print(ds)`, `ds.take(1)`) is."""
        func = node.func
        short = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if short in LOOKS or short in LOOP_WRAPPERS:
            return
        selector = keyword_arg(node, "choice_dataset")
        if short == "choose_from_datasets" and selector is None and len(node.args) > 1:
            selector = node.args[1]
        elements = [
            e for a in args for e in (a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a])
        ]
        for element in elements:
            records: list[dict[str, Any]] = []
            if isinstance(element, ast.Name) and element.id in self.live:
                records = [self.live[element.id]]
            elif isinstance(element, ast.Call):
                records = self._built_by(element)
            for record in records:
                if record["ops"] and record["ops"][-1]["op"] == "take":
                    continue  # `show(ds.take(4))`: a look at a few elements
                if element is selector:
                    record["selector"] = True
                if short in ITERATOR_CONSUMERS:
                    record["used_by"] = record["used_by"] or short
                elif short in MERGES:
                    record["merged_into"] = record.get("merged_into") or short
                else:
                    record["passed_to"] = record.get("passed_to") or ast.unparse(func)

    def _built_by(self, expression: ast.Call) -> list[dict[str, Any]]:
        """The pipelines an expression builds (`make_dataset(p)`, `ds.map(f).batch(8)`)."""
        return [
            record
            for record in self.records
            if record["node"] is expression
            or record.get("chain") is expression
            or _chain_root(expression) is record["node"]
        ]

    def _mark(self, variable: str, use: str) -> None:
        record = self.live.get(variable)
        if record is not None and record["used_by"] is None:
            record["used_by"] = use

    def _finished(self, record: dict[str, Any]) -> dict[str, Any]:
        node: ast.Call = record["node"]
        ops: list[dict[str, Any]] = record["ops"]
        names = [op["op"] for op in ops]
        prefetch_at = max((i for i, n in enumerate(names) if n == "prefetch"), default=None)
        ends_with_prefetch = prefetch_at is not None and all(
            n in AFTER_PREFETCH_OK for n in names[prefetch_at + 1 :]
        )
        if prefetch_at is None and record.get("prefetched_source"):
            ends_with_prefetch = all(n in AFTER_PREFETCH_OK for n in names)
        function = getattr(self.function, "name", None)
        finished_elsewhere = None
        if record.get("handed_to"):
            finished_elsewhere = f"handed to {record['handed_to']}()"
        elif record["returned"] and function is not None:
            finished_elsewhere = (
                f"returned by {function}(), whose callers (not in this file) may prefetch it"
            )
        elif record.get("merged_into") and not record["used_by"]:
            finished_elsewhere = f"merged into {record['merged_into']}() with other pipelines"
        elif record.get("passed_to") and not record["used_by"]:
            finished_elsewhere = f"passed to {record['passed_to']}()"
        prefetch_before_batch = None
        if prefetch_at is not None and not ends_with_prefetch:
            later = [op for op in ops[prefetch_at + 1 :] if op["op"] in BATCHING]
            if later:
                prefetch_before_batch = {
                    k: ops[prefetch_at].get(k) for k in ("line", "column", "code")
                } | {"batch_line": later[0]["line"], "batch": later[0]["op"]}
        for index, op in enumerate(ops):
            if op["op"] == "map" and any(n in BATCHING for n in names[:index]):
                op["vectorised"] = True  # maps whole batches: the recommended order
            if op["op"] == "map":
                # `ds.map(f)...cache()`: f runs in the first epoch only, later ones read the
                # cache, whatever shuffles or batches between; not past a `repeat()`, which
                # never ends, so the cache is never complete
                after = names[index + 1 :]
                upto = after.index("cache") if "cache" in after else None
                if upto is not None and "repeat" not in after[:upto]:
                    op["cached_after"] = True
        cache_after_random = None
        random_seen: Optional[dict[str, Any]] = None
        for op in ops:
            if op.get("random_augmentation") and random_seen is None:
                random_seen = op
            if op["op"] == "cache" and random_seen is not None and cache_after_random is None:
                cache_after_random = {
                    "line": op["line"],
                    "column": op.get("column"),
                    "code": op["code"],
                    "augmentation_line": random_seen["line"],
                    "augmentation": random_seen["random_augmentation"][0]["call"],
                }
        many_files = None
        if record["files"] and "interleave" not in names:
            if record["files"] == "list_files":
                if "flat_map" in names:
                    many_files = "list_files followed by flat_map (one file at a time)"
            else:
                many_files = record["files"]
        return {
            "path": self.walker.report.path,
            "line": node.lineno,
            "column": node.col_offset + 1,
            "code": code_at(self.walker.lines, node.lineno),
            "function": function,
            "variable": record["variable"],
            "source": record["source"],
            "callee": record["callee"],
            "operations": ops,
            "last_operation": names[-1] if names else record["source"],
            "ends_with_prefetch": ends_with_prefetch,
            "used_by": record["used_by"],
            # reaches a consumer: fit/a loop here, or code this file hands it to
            # only looked at: an unnamed `ds.take(1)` or a variable read by next(iter(ds)),
            # never consumed, returned nor handed on (a tutorial's demonstration)
            "demonstration": not (
                record["used_by"]
                or record.get("handed_to")
                or record["returned"]
                or record.get("merged_into")
                or record.get("passed_to")
            )
            and (record["variable"] is None or record["variable"] in self.inspected),
            # built in an export/serving input function (`serving_input_fn`): the graph
            # that parses one request's serialized examples, not a training input pipeline
            "serving": _serving(function),
            "finished_elsewhere": finished_elsewhere,
            # operations called as statements of their own, their new dataset thrown away
            "discarded": record.get("discarded") or [],
            "prefetch_before_batch": prefetch_before_batch,
            "built_by": record.get("built_by"),
            "many_files_without_interleave": many_files,
            "cache_after_random_augmentation": cache_after_random,
            # the choice dataset of choose_from_datasets: it yields indices, not data
            "selector": bool(record.get("selector")),
            # tensors in memory, only sliced, shuffled and batched: no map, no file read
            "in_memory": record["source"] in IN_MEMORY_SOURCES and set(names) <= IN_MEMORY_OPS,
        }


def _looped(iterable: ast.expr) -> list[ast.expr]:
    """What a `for` loop reads: `ds` in `for i, x in enumerate(ds)`, `tqdm(ds)`, every
    argument of `zip(a, b)`; the iterable itself otherwise."""
    if (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Name)
        and iterable.func.id in LOOP_WRAPPERS
        and iterable.args
    ):
        read = iterable.args if iterable.func.id == "zip" else iterable.args[:1]
        return [e for a in read for e in _looped(a)]
    return [iterable]


def _only_looks(body: list[ast.stmt]) -> bool:
    """A loop body that only prints or measures what it reads (a tutorial showing a few
    elements), no training step: the loop looks at the pipeline, not consumes it. A body
    with no call at all (`pass`) stands for the work and is not a look."""
    looked = False
    for statement in body:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in LOOKS:
                looked = True
                continue
            if isinstance(func, ast.Attribute) and func.attr in ("numpy", "format"):
                continue
            return False
    return looked


def _serving(function: Optional[str]) -> bool:
    """`serving_input_fn`, `serving_input_receiver_fn`, `export_serving_fn`: the Estimator
    and SavedModel convention for the function that builds the serving signature."""
    return function is not None and "serving" in function.lower()


def _iterator_ops(ops: list[ast.Call]) -> Optional[str]:
    """Pops the outermost calls that read the pipeline (`.make_one_shot_iterator()`,
    `.get_next()`, `.as_numpy_iterator()`): they consume it, they are not operations of
    it. Returns the consumer's name, or None."""
    consumer = None
    while ops and getattr(ops[0].func, "attr", None) in ITERATOR_METHODS:
        consumer = getattr(ops.pop(0).func, "attr", None)
    return consumer


def _returned_calls(statement: ast.stmt) -> dict[int, str]:
    """The calls a `return` hands back: "value" for `return f(...)`, "container" for those
    in a returned list or tuple (`return [prepare(d) for d in datasets]`)."""
    if not isinstance(statement, ast.Return) or statement.value is None:
        return {}
    value = statement.value
    if isinstance(value, ast.Call):
        return {id(value): "value"}
    elements: list[ast.expr] = []
    if isinstance(value, (ast.List, ast.Tuple)):
        elements = list(value.elts)
    elif isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        elements = [value.elt]
    return {id(e): "container" for e in elements if isinstance(e, ast.Call)}


def _dataset_parameters(walker: Walker, function: Optional[ast.AST]) -> set[str]:
    """Parameters of `function` that hold a tf.data pipeline: annotated `tf.data.Dataset`
    (`Optional[...]` and `... | None` too), or only ever extended with dataset operations,
    one of them distinctive (`dataset.map(f)` ... `.shuffle(n).batch(b)`), directly or
    through the names assigned from them."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    arguments = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    found = {
        a.arg for a in arguments if a.annotation is not None and _annotated(walker, a.annotation)
    }
    rest = {a.arg for a in arguments} - found - {"self", "cls"}
    if not rest:
        return found
    methods: list[tuple[str, str]] = []  # (base name, method) of every method chain call
    assigned: list[tuple[str, str]] = []  # (target, base name) of `x = base.op(...)`
    for node in own_nodes(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = _chain_base(node)
            if base is not None:
                methods.append((base, node.func.attr))
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            base = _chain_base(node.value)
            if base is not None:
                assigned.append((node.targets[0].id, base))
    for parameter in rest:
        names = {parameter}
        for _ in range(2):  # names assigned from chains on the parameter, then theirs
            names |= {target for target, base in assigned if base in names}
        used = {method for base, method in methods if base in names}
        if used and used <= DATASET_OPS and used & DISTINCTIVE_OPS:
            found.add(parameter)
    return found


def _chain_base(node: ast.expr) -> Optional[str]:
    """`ds` for a method chain `ds.map(f).batch(8)` (any call of it); else None."""
    root = _chain_root(node)
    if not (isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute)):
        return None
    base = root.func.value
    return base.id if isinstance(base, ast.Name) else None


def _annotated(walker: Walker, annotation: ast.expr) -> bool:
    """`tf.data.Dataset`, `Optional[tf.data.Dataset]`, `tf.data.Dataset | None`."""
    for node in ast.walk(annotation):
        name = walker.qualname(node) if isinstance(node, ast.Attribute) else None
        if name in DATASET_CLASSES:
            return True
    return False


def _chain_root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if not isinstance(node.func.value, ast.Call):
            return node
        node = node.func.value
    return node
