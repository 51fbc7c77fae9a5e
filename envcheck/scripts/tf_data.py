"""tf.data pipelines, read from the source without running it.

`TfDataObserver.finish` runs once per file after the walk: pipelines followed through
`ds = ds.map(...)` reassignments and chained calls within one function or module body,
and from functions (or methods) that return one into their callers, so that each is
judged where it reaches its consumer (`fit`, a `for` loop). A name assigned a call that
does not read it (`ds = tfds.load(split="test")` after the training pipeline) holds a new
value from there on. Every observation is a plain JSON dict with `path`, `line`,
`column`, `code` and `function`; nothing here judges.

Library loader code is followed too: a parameter that holds a pipeline (annotated
`tf.data.Dataset`, or only extended with dataset operations) is a source, continued in
the caller that hands its own pipeline in; pipelines stored in lists, returned in one,
merged by `choose_from_datasets`/`zip` or read by a TF1 iterator are consumed, not
demonstrations. A name type-tested as another library's dataset (inside `if
is_grain_dataset(x):`, or past `if is_tf_dataset(x): return ...`) is none there. A
pipeline handed to a function of the file is consumed by it when the
function loops over it doing work, only looked at when it takes a few elements. A
pipeline a function returns carries where (`returned_by`: the function, its place in a
returned tuple), and a file that consumes what an imported function returns as it comes
says so (the `tf_imported_uses` file fact): EC512 joins the two across the run.

Size: one dataflow reader. Sources (tf.data, Keras directory loaders, Dataset subclasses,
loaders out of sight, parameters), the operations chained on them and their consumers
(fit, loops, callers, iterators, merges, demonstrations) update the same per-body state
as the statements are read; split across modules they would share that private state.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from envcheck.scripts.index import (
    FileIndex,
    code_at,
    header_nodes,
    keyword_arg,
    module_nodes,
    own_nodes,
    shadowed_definitions,
)
from envcheck.scripts.keras import GENERATOR_METHODS, uses_tensorflow
from envcheck.scripts.map_functions import MapTarget, map_targets
from envcheck.scripts.parameters import parameter_value
from envcheck.scripts.structural_maps import structural_only
from envcheck.scripts.values import Scope, keyword_values, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

# Where a tf.data pipeline starts (qualified names, after import aliases).
SOURCE_PREFIXES = ("tensorflow.data.Dataset.",)
INSPECTORS = {"iter", "next", "list"}
# A variable named for one file (`input_file`, `record_path`, `tfrecord_name`): a reader
# over it reads one.
SINGLE_FILE = ("file", "path", "filename", "record", "_name")
# Calls that only look at a pipeline (its size, its repr), not consume it.
LOOKS = INSPECTORS | {"print", "len", "type", "isinstance", "repr", "str", "cardinality"}
# Calls that consume a pipeline for training: Keras, TF1 iterators, a distribution strategy.
CONSUMERS = ("fit", "evaluate", "predict", *GENERATOR_METHODS)
# Keras calls that read a pipeline once per call without training on it, and those that
# train on what they read.
EVALUATION_CONSUMERS = ("evaluate", "predict")
KERAS_TRAINING = {"fit", "fit_generator", "train_on_batch"}
ITERATOR_CONSUMERS = {
    "make_one_shot_iterator",
    "make_initializable_iterator",
    "experimental_distribute_dataset",
    # TF1's reinitializable iterator: `it = tf.data.Iterator.from_structure(types, shapes)`,
    # then `it.make_initializer(ds)` points it at `ds`, read by `sess.run(it.get_next())`
    "make_initializer",
}
# `for i, x in enumerate(ds)`: as a plain loop over `ds`, judged by what else reads it
LOOP_WRAPPERS = {"enumerate", "zip", "tqdm"}
# Calls that hand back the pipeline given first, read as it comes: `tfds.as_numpy(ds)` (a
# Python iterator over the same dataset), `itertools.cycle(ds)`, `itertools.islice(ds,
# n)`. Returning, assigning or looping over one is doing so with the pipeline itself.
PASS_THROUGH = {"as_numpy", "cycle", "islice"}
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
# Keras loaders that return batches (batch_size=32 by default; None: single elements):
# a map on what they return runs once per batch, vectorised, as a map after batch().
BATCHED_SOURCES = {
    "image_dataset_from_directory",
    "text_dataset_from_directory",
    "audio_dataset_from_directory",
    "timeseries_dataset_from_array",
}
FILE_READERS = {"TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset"}
# Calls joining a path into one string (one file for a reader, which expands no pattern).
PATH_JOINS = {"os.path.join", "posixpath.join", "ntpath.join"}
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
# Libraries whose calls are no module of the audited run.
LIBRARY_ROOTS = {"tensorflow", "keras", "tf_keras", "tensorflow_datasets", "numpy"}
# Loaders out of sight known to return tf.data pipelines (TensorFlow Datasets: `tfds.load`,
# `tfds.builder(...).as_dataset` read through its module): `ds.map(f)` alone on one is one.
TF_DATASET_LOADERS = ("tensorflow_datasets.",)
DISTINCTIVE_OPS = {"batch", "cache", "interleave", "padded_batch", "prefetch", "shuffle", "unbatch"}
# Operations that group elements into batches.
BATCHING = {"batch", "padded_batch", "ragged_batch", "bucket_by_sequence_length"}
# Operations that may follow the final prefetch without undoing its overlap.
AFTER_PREFETCH_OK = {"with_options", "take", "repeat", "skip", "enumerate"}
# Rounds of reading a file's bodies at most: the first finds the factories, each next one
# what factories that extend others' pipelines return (a chain of three, then a check).
FACTORY_ROUNDS = 4
# Words in the name of a call that steps the training (`train_step`, `apply_gradients`,
# `optimizer.minimize`, `value_and_grad`, `loss.backward`, `model.fit`): a loop making
# one is a training loop, not an evaluation pass.
TRAINING_MARKS = ("grad", "train", "optimi", "minimize", "backward", "fit")
# Writers of record files (`tf.io.TFRecordWriter`, `tf.python_io.TFRecordWriter`): a loop
# that reads a pipeline to `writer.write(...)` its elements converts data offline.
RECORD_WRITERS = ("TFRecordWriter",)
# What a loop may call on the host while collecting a pipeline's elements as NumPy
# arrays: builtins, and methods of the arrays and lists it builds.
HOST_BUILTINS = LOOKS | {
    "abs",
    "bool",
    "dict",
    "float",
    "int",
    "max",
    "min",
    "range",
    "round",
    "set",
    "sorted",
    "sum",
    "tuple",
    "zip",
    "enumerate",
}
HOST_METHODS = {
    "all",
    "any",
    "append",
    "astype",
    "copy",
    "extend",
    "flatten",
    "max",
    "mean",
    "min",
    "ravel",
    "reshape",
    "squeeze",
    "sum",
    "tolist",
    "transpose",
}
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
    # a class or function defined again further down never runs: its pipelines are none
    dead = {id(n) for d in shadowed_definitions(walker.module) for n in ast.walk(d)}
    bodies += [(f, f.body) for f in files.function_nodes if id(f) not in dead]
    # Rounds: the first finds the functions (and methods) that return a pipeline; the
    # next reads their callers with those pipelines as sources, so a pipeline is judged
    # where it reaches its consumer, with what the caller adds (prefetch, batch). A
    # factory that extends another's pipeline (`build()` calling `self.cache(ds)`) returns
    # more once the other is known: the rounds go on until the factories stay the same.
    factories: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    readers: list[_Pipelines] = []
    # Only files importing TensorFlow or Keras build tf.data pipelines, and a second
    # round runs only when some function returns one.
    rounds = FACTORY_ROUNDS if uses_tensorflow(walker) else 0
    parameters = {id(f): _dataset_parameters(walker, f) for f, _ in bodies} if rounds else {}
    known: list[tuple[Any, ...]] = []
    for round_ in range(rounds):
        readers = []
        for function, body in bodies:
            scope = walker.scope_of(function)
            reader = _Pipelines(
                walker, files, function, scope, factories, used, parameters[id(function)]
            )
            reader.read(body)
            readers.append(reader)
        found = (
            _extended(factories, _factories(readers, files))
            if round_
            else _factories(readers, files)
        )
        if _signature(found) == known or round_ == rounds - 1:
            break
        known = _signature(found)
        factories.clear()
        factories.update(found)
        used.clear()
    _in_memory_returns(readers)
    for reader in readers:
        walker.report.tf_pipelines.extend(reader.finished())
    uses = [use for reader in readers for use in reader.imported_uses]
    if uses:  # joined with the importing files' pipelines by EC512
        walker.facts["tf_imported_uses"] = uses


def _factories(readers: list[_Pipelines], files: FileIndex) -> dict[str, dict[str, Any]]:
    """The functions of the file that return one pipeline (not in a container), by name."""
    found: dict[str, dict[str, Any]] = {}
    for reader in readers:
        name = getattr(reader.function, "name", None)
        returned = [r for r in reader.records if r["returned"] and not r["derived"]]
        if name in files.functions and len(returned) == 1 and not returned[0].get("in_container"):
            found[name] = returned[0]
    return found


def _in_memory_returns(readers: list[_Pipelines]) -> None:
    """`train, test = mnist_datasets()` where that function of the file returns
    `from_tensor_slices` pipelines in a tuple: each unpacked name continues an in-memory
    pipeline (`returned_from`), as one a single-pipeline factory returns does."""
    returned = {
        record["returned_at"]: record
        for reader in readers
        for record in reader.records
        if record.get("returned_at") and record["returned_at"][1] is not None
    }
    for reader in readers:
        for record in reader.records:
            place = record.get("unpacked_from")
            if place is not None and place in returned:
                record["returned_from"] = returned[place]


def _extended(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The factories a later round found, where each continues the pipeline it returned
    before (the same source, with what a factory it calls adds): a later round only
    completes a pipeline, it does not swap it for another branch's."""
    merged = dict(before)
    for name, record in after.items():
        if name not in before or record["node"] is before[name]["node"]:
            merged[name] = record
    return merged


def _signature(factories: dict[str, dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What the factories return, comparable across rounds (each round builds new
    records): name, source and the operations' names and lines."""
    return sorted(
        (name, record["source"], tuple((op["op"], op["line"]) for op in record["ops"]))
        for name, record in factories.items()
    )


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
        # `bar = tqdm(ds, total=n)`, then `for x in bar`: the loop reads what bar wraps
        self.wrappers: dict[str, ast.expr] = {}
        self.positions: dict[str, int] = {}  # unpacked name -> its place in the tuple
        # pipelines a function of another module returns, consumed here as they come
        self.imported_uses: list[dict[str, Any]] = []
        self.parameters = parameters if parameters is not None else set()
        # names past `if is_tf_dataset(x): return ...`: another kind of dataset from there on
        self.other_kind: set[str] = set()
        self.loop_depth = 0  # loops around the statement read now, in this body
        # the `if` branches around the statement read now: (id of the If, "body"/"orelse")
        self.branch: list[tuple[int, str]] = []
        self.op_branches: dict[int, tuple[tuple[int, str], ...]] = {}  # id(op) -> branch

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
        rebound: dict[str, ast.Call] = {}  # live names assigned a call that does not read them
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
                self._pend(assigned, call)
            elif assigned is not None and assigned not in bindings and _rebinds(call, assigned):
                rebound[assigned] = call
        self._unpacking(statement)
        self._wrapper(statement)
        self._uses(statement)
        self.live.update(bindings)
        self._returned_at(statement)
        for name, call in rebound.items():
            # `dataset = tfds.load(split="test")` after the training pipeline: a new value,
            # maybe a new pipeline (decided by what is chained on it), not the old one
            del self.live[name]
            self.pending[name] = call
        self._split_of_loader(statement)
        # Plain statements nested in blocks (if/for/with/try) are read in order too.
        other = self._other_kind_branch(statement)
        looping = isinstance(statement, (ast.For, ast.AsyncFor, ast.While))
        branching = isinstance(statement, ast.If)
        for field in ("body", "orelse", "finalbody"):
            held = self._set_aside(other) if field == "body" and other else None
            self.loop_depth += looping and field == "body"
            if branching:
                self.branch.append((id(statement), field))
            for child in getattr(statement, field, []) or []:
                if isinstance(child, ast.stmt) and not isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
                ):
                    self._statement(child)
            if branching:
                self.branch.pop()
            self.loop_depth -= looping and field == "body"
            if held is not None:
                self._restore(*held)
        for handler in getattr(statement, "handlers", []) or []:
            for child in handler.body:
                self._statement(child)
        if target is not None:
            self.other_kind.discard(target)
        tested = self._tf_branch_left(statement)
        if tested is not None:
            self.live.pop(tested, None)
            self.other_kind.add(tested)

    def _set_aside(self, name: str) -> tuple[str, Optional[dict[str, Any]], bool]:
        """Reading a branch where `name` is another kind of dataset: not a pipeline there."""
        held = (name, self.live.pop(name, None), name in self.other_kind)
        self.other_kind.add(name)
        return held

    def _restore(self, name: str, record: Optional[dict[str, Any]], other: bool) -> None:
        """After that branch, `name` is what it was before it (the other branch's value)."""
        if not other:
            self.other_kind.discard(name)
        if record is not None:
            self.live[name] = record

    def _tf_branch_left(self, statement: ast.stmt) -> Optional[str]:
        """`x` for `if is_tf_dataset(x): return x.map(f).prefetch(n)`: the tf.data case
        has returned, so past the `if` `x` is some other dataset (a grain MapDataset, whose
        `map` runs on grain's own threads), no tf.data pipeline."""
        if not (
            isinstance(statement, ast.If)
            and statement.body
            and isinstance(statement.body[-1], (ast.Return, ast.Raise))
        ):
            return None
        tested = self._type_test(statement.test)
        return tested[0] if tested is not None and tested[1] else None

    def _other_kind_branch(self, statement: ast.stmt) -> Optional[str]:
        """`x` for `if ... and is_grain_dataset(x):` (an isinstance test against classes
        of another library, directly or through a function of the file): in that branch
        `x` is no tf.data pipeline."""
        if not isinstance(statement, ast.If):
            return None
        test = statement.test
        tests = [test]
        if isinstance(test, ast.BoolOp):
            tests = test.values if isinstance(test.op, ast.And) else []
        for test in tests:
            tested = self._type_test(test)
            if tested is not None and not tested[1]:
                return tested[0]
        return None

    def _type_test(self, test: ast.expr) -> Optional[tuple[str, bool]]:
        """(`x`, whether the class is tf.data's) for `isinstance(x, cls)` or a function of
        the file that returns such a test of its argument (`return grain is not None and
        isinstance(x, grain.MapDataset)`; constant returns aside); else None."""
        if not (isinstance(test, ast.Call) and test.args and isinstance(test.args[0], ast.Name)):
            return None
        name = test.args[0].id
        func = test.func
        if isinstance(func, ast.Name) and func.id == "isinstance":
            kind = self._classes_kind(test)
            return (name, kind) if kind is not None else None
        if not (isinstance(func, ast.Name) and func.id in self.files.functions):
            return None
        returned = [
            r.value
            for r in own_nodes(self.files.functions[func.id])
            if isinstance(r, ast.Return)
            and r.value is not None
            and not isinstance(r.value, ast.Constant)
        ]
        kinds: set[Optional[bool]] = set()
        for value in returned:
            checks = [
                self._classes_kind(n)
                for n in ast.walk(value)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id == "isinstance"
            ]
            kinds |= set(checks) if checks else {None}
        kind = kinds.pop() if len(kinds) == 1 else None
        return (name, kind) if kind is not None else None

    def _classes_kind(self, call: ast.Call) -> Optional[bool]:
        """For `isinstance(x, classes)`: True when a class is tf.data's Dataset, False when
        every class is imported from a library other than TensorFlow or Keras, else None."""
        if len(call.args) != 2:
            return None
        classes = call.args[1]
        nodes = classes.elts if isinstance(classes, ast.Tuple) else [classes]
        names = [self.walker.qualname(n) for n in nodes]
        if any(n in DATASET_CLASSES for n in names):
            return True
        if all(n is not None and "." in n and n.split(".")[0] not in LIBRARY_ROOTS for n in names):
            return False
        return None

    def _wrapper(self, statement: ast.stmt) -> None:
        """`pbar = tqdm.tqdm(ds, total=n)` (a progress bar kept to set its postfix): a
        later `for x in pbar` loops over `ds` itself."""
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            return
        name = statement.targets[0].id
        if _looped(statement.value) != [statement.value]:
            self.wrappers[name] = statement.value
        else:
            self.wrappers.pop(name, None)

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
        for index, element in enumerate(statement.targets[0].elts):
            if isinstance(element, ast.Name) and element.id not in self.live:
                self._pend(element.id, calls[-1])
                self.unpacked.add(element.id)
                self.positions.setdefault(element.id, index)

    def _pend(self, variable: str, call: ast.Call) -> None:
        """Remember the call that first bound `variable`; a TensorFlow Datasets loader
        binding it in another branch (`if json: d = own(...) else: d, info =
        tfds.load(...)`) wins, as its splits are pipelines either way."""
        known = self.pending.get(variable)
        if known is None or (not self._is_loader(known) and self._is_loader(call)):
            self.pending[variable] = call

    def _is_loader(self, call: ast.Call) -> bool:
        return (self.walker.qualname(call.func) or "").startswith(TF_DATASET_LOADERS)

    def _split_of_loader(self, statement: ast.stmt) -> None:
        """`train = tfds.load(...)["train"]`, `a, b = d["trainA"], d["trainB"]` where `d`
        holds what tfds.load returned: each name is a pipeline built out of sight, one
        split of one source, that starts where it is extended (its first map is judged)."""
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            return
        target, value = statement.targets[0], statement.value
        pairs: list[tuple[ast.expr, ast.expr]] = [(target, value)]
        sequences = (ast.Tuple, ast.List)
        if (
            isinstance(target, sequences)
            and isinstance(value, sequences)
            and len(target.elts) == len(value.elts)
        ):
            pairs = list(zip(target.elts, value.elts, strict=True))
        for name, element in pairs:
            call = self._loader_split(element)
            if isinstance(name, ast.Name) and call is not None:
                self.live.pop(name.id, None)
                self.pending[name.id] = call
                self.unpacked.add(name.id)

    def _loader_split(self, node: ast.expr) -> Optional[ast.Call]:
        """The TensorFlow Datasets loader call a subscript (`d["train"]`) reads from."""
        if not isinstance(node, ast.Subscript):
            return None
        root = node.value
        while isinstance(root, ast.Subscript):
            root = root.value
        call = root if isinstance(root, ast.Call) else None
        if isinstance(root, ast.Name) and root.id not in self.live:
            call = self.pending.get(root.id)
        loader = self.walker.qualname(call.func) if call is not None else None
        return call if loader is not None and loader.startswith(TF_DATASET_LOADERS) else None

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
            if isinstance(node, ast.Name) and consumer is not None and _peek(ops):
                # `list(ds.take(1).as_numpy_iterator())[0]`: one element read to learn the
                # input shapes, as `next(iter(ds))` is; no consumer, no pipeline of its own
                self.inspected.add(node.id)
                return None
            if isinstance(node, ast.Name) and consumer is not None and not ops:
                self._mark(node.id, consumer)  # `ds.make_one_shot_iterator()`
            if isinstance(node, ast.Name) and node.id not in self.live and ops:
                self._out_of_sight(node.id, ops)
            split = self._loader_split(node) if ops else None
            if split is not None and _method_names(ops) <= DATASET_OPS:
                # `d["train"].shuffle(n).map(f)`: a split of a loader, starting here
                base = self._new(ops[-1], ast.unparse(split.func))
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
                    "consumer_ops": [],
                    "used_by": None,
                    "handed_to": None,
                    "returned": False,
                }
                self.records.append(base)
        if base is None:
            return None
        peeked = bool(ops) and getattr(ops[0].func, "attr", None) in ITERATOR_METHODS
        consumer = _iterator_ops(ops) or consumer
        if peeked and _peek(ops):
            target = None  # `list(make().take(1).as_numpy_iterator())`: a look, no consumer
        elif consumer is not None:  # `ds.make_one_shot_iterator().get_next()` reads it
            base["used_by"] = base["used_by"] or consumer
        for op in reversed(ops):
            entry = self._op(op)
            self.op_branches[id(entry)] = tuple(self.branch)
            base["ops"].append(entry)
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
        if not names <= DATASET_OPS or variable in self.other_kind:
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
        record["unpacked"] = variable in self.unpacked
        if variable in self.positions and isinstance(call.func, ast.Name):
            # `train, test = make_datasets()`: the function of the file and the place
            record["unpacked_from"] = (call.func.id, self.positions[variable])
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
            "consumer_ops": [],
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

    def _one_string(self, files: ast.expr) -> bool:
        """A path built as one string: `os.path.join(root, "r{:02d}.tfrecords".format(i))`,
        an f-string, `"%s.tfrecord" % name`, `root + "/train.tfrecord"`. The reader is
        handed one file (it expands no pattern); a list of them would be a list."""
        if isinstance(files, ast.JoinedStr):
            return True
        if isinstance(files, ast.BinOp) and isinstance(files.op, (ast.Mod, ast.Add)):
            sides = [files.left] if isinstance(files.op, ast.Mod) else [files.left, files.right]
            return any(
                isinstance(side, ast.Constant) and isinstance(side.value, str) for side in sides
            )
        if not isinstance(files, ast.Call):
            return False
        if self.walker.qualname(files.func) in PATH_JOINS:
            return True
        func = files.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "format"
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
        )

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
            # the reader itself: a factory's pipeline continues at its callers, but a
            # sequential read is the reader's own line
            "reader": node,
            "prefetched_source": name.endswith(PREFETCHED_SOURCES),
            "batched_source": _batched_source(node, name),
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
        if isinstance(files, ast.Name) and files.id in self.live:
            # `ds = TFRecordDataset(ds)` over a pipeline of paths (`from_generator`,
            # `from_tensor_slices(paths)`): one file per element, many of them
            return f"{short} over {files.id}, a dataset of file names"
        if isinstance(files, ast.Name):
            assigned = self.scope.lookup(files.id)
            files = assigned if assigned is not None and not _wraps(assigned, files) else files
        if isinstance(files, ast.Constant) or self._one_string(files):
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
        if name == "cache" and (call.args or call.keywords):
            # `cache(filename)`: kept in files, read back from disk every later epoch
            op["cache_file"] = not (
                call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value == ""
            )
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
            if name == "flat_map":
                op["reads_files"] = self._reads_files(func)
            op["structural"] = structural_only(self.walker, self.files, func, self.scope)
            op["arithmetic"] = op["structural"] or structural_only(
                self.walker, self.files, func, self.scope, arithmetic=True
            )
            op.update(self._function_calls(func))
        return op

    def _makes_datasets(self, func: Optional[ast.expr]) -> bool:
        """`range_ds.map(lambda i: ds.apply(...))`: the function returns a dataset, to be
        read by the interleave or flat_map that follows; the map itself reads nothing."""
        returned = self._returned_values(func)
        return bool(returned) and all(self._is_dataset(r) for r in returned)

    def _returned_values(self, func: Optional[ast.expr]) -> list[ast.expr]:
        """What a map function returns: a lambda's body, or the returns of a function of
        the file; nothing for anything else."""
        if isinstance(func, ast.Lambda):
            return [func.body]
        if isinstance(func, ast.Name) and func.id in self.files.functions:
            return [
                r.value
                for r in own_nodes(self.files.functions[func.id])
                if isinstance(r, ast.Return) and r.value is not None
            ]
        return []

    def _reads_files(self, func: Optional[ast.expr]) -> bool:
        """`flat_map(tf.data.TFRecordDataset)`, `flat_map(lambda f: TFRecordDataset(f,
        ...))`, or a function of the file returning such a reader: each element is a file
        name, read to its end before the next one is opened."""
        if func is None:
            return False
        if self._file_reader(func):
            return True
        returned = self._returned_values(func)
        return bool(returned) and all(
            isinstance(r, ast.Call) and self._file_reader(r.func) for r in returned
        )

    def _file_reader(self, func: ast.expr) -> bool:
        name = self.walker.qualname(func) or ""
        return name in SOURCES and name.rsplit(".", 1)[-1] in FILE_READERS

    def _serial_reads(self, record: dict[str, Any]) -> Optional[dict[str, Any]]:
        """The `flat_map` over file names (of `list_files`, or of `from_tensor_slices`
        of a list of paths, mapped to a reader) that no `interleave` of the pipeline
        shares a branch with: `if train: ds = ds.interleave(read, num_parallel_calls=n)
        else: ds = ds.flat_map(read)` reads the evaluation shards one after another."""
        ops: list[dict[str, Any]] = record["ops"]
        listed = record["files"] == "list_files"
        if not listed and not (
            record["source"] in IN_MEMORY_SOURCES and self._many_names(record["node"])
        ):
            return None
        woven = [self.op_branches.get(id(op), ()) for op in ops if op["op"] == "interleave"]
        for op in ops:
            if op["op"] != "flat_map" or not (listed or op.get("reads_files")):
                continue
            path = self.op_branches.get(id(op), ())
            if all(_exclusive(path, other) for other in woven):
                return op
        return None

    def _many_names(self, node: ast.Call) -> bool:
        """`from_tensor_slices(files)`: not a constant, nor a list of one."""
        given = node.args[0] if node.args else keyword_arg(node, "tensors")
        if given is None or isinstance(given, ast.Constant) or self._one_string(given):
            return False
        return not (isinstance(given, (ast.List, ast.Tuple)) and len(given.elts) <= 1)

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
        # Through `functools.partial(f, ...)` only the calls f makes whatever its settings
        # are count: the settings a partial binds (`is_training=...`) choose the branches
        # of f that run Python, and the source does not settle them (magenta's
        # onsets-and-frames runs one py_func only when not training). The structural test
        # follows partials fully: it only clears.
        targets = map_targets(self.walker, self.files, func, self.scope, partials=False)
        if not targets:
            bound = map_targets(self.walker, self.files, func, self.scope)
            return {"host_calls": self._unconditional_host_calls(bound), "random_augmentation": []}
        todo = [target.root for target in targets]
        for root in todo:
            wrapper = self._py_function_decorator(root)
            if wrapper is not None:  # @map_decorator that runs it in tf.py_function
                host.append(wrapper)
        for node in _reached_calls(todo, ast.walk, self._callees):
            kind = self._host_kind(node)
            entry = self._call_entry(node)
            if kind is not None:
                host.append({**entry, "kind": kind})
            name = self.walker.qualname(node.func) or ""
            if name.startswith(
                ("tensorflow.image.random_", "tensorflow.image.stateless_random_")
            ) or name.startswith("tensorflow.random."):
                random.append(entry)
        return {"host_calls": host, "random_augmentation": random}

    def _callees(self, node: ast.Call) -> list[ast.AST]:
        """What a call in a map function runs that the file shows: a function of the
        file, a method of its class (`self._spec(path)`), and for `tf.py_function(load,
        [x], ...)` the function it wraps."""
        found = [f for f in [_file_function(node.func, self.files.functions)] if f is not None]
        method = self._own_method(node.func)
        if method is not None:
            found.append(method)
        if self._host_kind(node) == "py_function":
            wrapped = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "func")]
            for target in wrapped:
                function = _file_function(target, self.files.functions)
                if function is not None:
                    found.append(function)
                elif isinstance(target, ast.Lambda):
                    found.append(target.body)
                elif (wrapped_method := self._own_method(target)) is not None:
                    found.append(wrapped_method)
        return found

    def _call_entry(self, node: ast.Call) -> dict[str, Any]:
        return {
            "line": node.lineno,
            "call": ast.unparse(node.func),
            "code": code_at(self.walker.lines, node.lineno),
        }

    def _unconditional_host_calls(self, targets: list[MapTarget]) -> list[dict[str, Any]]:
        """The host calls the bodies make outside every `if` (and conditional expression),
        followed into the file's functions they call there: what runs whatever the
        settings bound to the function (`preprocess_example` computes its spectrogram in a
        tf.py_func on every call; its jitter only `if is_training`)."""
        host: list[dict[str, Any]] = []
        roots: list[ast.AST] = [target.root for target in targets]
        functions = self.files.functions
        for node in _reached_calls(
            roots,
            _unconditional_nodes,
            lambda call: [f for f in [_file_function(call.func, functions)] if f is not None],
        ):
            kind = self._host_kind(node)
            if kind is not None:
                host.append({**self._call_entry(node), "kind": kind})
        return host

    def _own_method(self, func: ast.expr) -> Optional[ast.AST]:
        """`self.name`: the one method of that name the file's classes define, else None."""
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            return None
        found = [
            item
            for cls in self.files.class_nodes
            for item in cls.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == func.attr
        ]
        return found[0] if len(found) == 1 else None

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
        read = loop.iter if loop is not None else None
        if isinstance(read, ast.Name) and read.id in self.wrappers:
            read = self.wrappers[read.id]  # `for x in pbar`, pbar = tqdm(ds): reads ds
        for iterable in _looped(read) if loop is not None and read is not None else []:
            if loop is not None and _only_looks(loop.body):
                # `for x in ds: print(x)`, `for i, x in enumerate(ds): ...; break`: a look
                looked = iterable if isinstance(iterable, ast.Name) else None
                name = looked.id if looked is not None else _chain_base(iterable)
                if name is not None:
                    self.inspected.add(name)
                continue
            if isinstance(iterable, ast.Name):
                self._mark(iterable.id, "for loop")
                self._imported(iterable.id, "for loop", statement)
                if loop is not None and iterable.id in self.live:
                    self._loop_read(self.live[iterable.id], loop)
                    self._written(self.live[iterable.id], loop, self.function)
            elif isinstance(iterable, ast.Call):
                self._imported_call(iterable, None, "for loop", statement)
                for record in self._built_by(iterable):
                    # `for x in make_dataset(...)`; not `for x in ds.take(1)`, a look at it
                    if not (record["ops"] and record["ops"][-1]["op"] == "take"):
                        record["used_by"] = record["used_by"] or "for loop"
                        if loop is not None:
                            self._loop_read(record, loop)
                            self._written(record, loop, self.function)
        returned = statement.value if isinstance(statement, ast.Return) else None
        value = _passed_through(returned) if returned is not None else None
        if isinstance(value, ast.Name) and value.id in self.live:
            self.live[value.id]["returned"] = True  # `return ds`, `return tfds.as_numpy(ds)`
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
                if isinstance(arg, ast.Name) and callee in CONSUMERS:
                    self._imported(arg.id, callee, node)
                elif isinstance(arg, ast.Call) and callee in CONSUMERS:
                    self._imported_call(arg, None, callee, node)
                if isinstance(arg, ast.Name) and arg.id in self.live:
                    if callee in CONSUMERS:
                        self._mark(arg.id, callee)
                        self.live[arg.id].setdefault("writes", []).append(False)
                        self.live[arg.id].setdefault("collects", []).append(False)
                        self._consumer_read(self.live[arg.id], node, callee)
                    elif own:
                        self._handed_to_own(self.live[arg.id], node, arg)
                elif isinstance(arg, ast.Call):
                    for record in self._built_by(arg):
                        if callee in CONSUMERS:
                            record["used_by"] = record["used_by"] or callee
                            record.setdefault("writes", []).append(False)
                            record.setdefault("collects", []).append(False)
                            self._consumer_read(record, node, callee)
                        elif own:
                            self._handed_to_own(record, node, arg)
            if not own and callee not in CONSUMERS:
                self._handed_on(node, args)

    def _loop_read(self, record: dict[str, Any], loop: ast.For) -> None:
        """Whether this loop reads the pipeline in one pass that trains nothing: in no
        other loop of a body that no loop calls, making no training step, in a file whose
        training step runs in another loop (`for x, y in test: correct += accuracy(params,
        x, y)` once training is over, `for batch in ds: model.generate(batch)` in
        predict()): an evaluation or inference read once, with no step to overlap."""
        once = (
            self.loop_depth == 0
            and not _trains(self.files, loop.body, whole=True)
            and not _called_in_loops(self.walker.module, self.function)
            and _trains_elsewhere(self.walker.module, self.files, loop)
        )
        record.setdefault("passes", []).append(once)

    def _consumer_read(self, record: dict[str, Any], call: ast.Call, callee: Optional[str]) -> None:
        """Whether this Keras call reads the pipeline in one pass that trains nothing:
        `model.evaluate(ds)` or `model.predict(ds)` in no loop, in a body that no loop
        calls, in a file that trains with another call (`model.fit(train)`) or loop: a
        test or inference pass after training. `fit` (its data or `validation_data`, read
        every epoch) and the generator methods are training reads."""
        once = (
            callee in EVALUATION_CONSUMERS
            and self.loop_depth == 0
            and not _called_in_loops(self.walker.module, self.function)
            and _trains_elsewhere(self.walker.module, self.files, call)
        )
        record.setdefault("passes", []).append(once)

    def _written(self, record: dict[str, Any], loop: ast.For, body: Optional[ast.AST]) -> None:
        """Whether this loop over the pipeline writes what it reads to record files (and
        trains nothing): an offline conversion, not training input (`body`: the function
        or module holding the loop, where the writer is opened)."""
        writes = _writes_records(self.walker, self.files, loop, body or self.walker.module)
        record.setdefault("writes", []).append(writes)
        # a statistics or export pass: read once, each element brought to NumPy and kept
        # or counted on the host (`for x, y in ds: n += 1; stats.append(y.numpy())`)
        collects = (
            self.loop_depth == 0
            and not _called_in_loops(self.walker.module, self.function, own=False)
            and _collects_on_host(self.walker, loop.body)
        )
        record.setdefault("collects", []).append(collects)

    def _handed_to_own(self, record: dict[str, Any], call: ast.Call, arg: ast.expr) -> None:
        """A pipeline passed to a function of this file: consumed there (`def fit(ds):
        for x in ds.repeat().take(n).enumerate(): step(x)`), only looked at (`next(iter(
        ds.take(1)))`, a preview loop over `ds.take(3)`), or finished out of sight."""
        assert isinstance(call.func, ast.Name)
        function = self.files.functions[call.func.id]
        parameter = _parameter_of(function, call, arg)
        use = None
        if parameter is not None and parameter not in _dataset_parameters(self.walker, function):
            use = _callee_use(self.walker, function, parameter)
        if use is None:
            record["handed_to"] = call.func.id
        elif use == "look":
            if isinstance(arg, ast.Name):
                self.inspected.add(arg.id)
        else:
            record["used_by"] = record["used_by"] or f"for loop in {call.func.id}()"
            record["consumer_ops"] = [m for m in use if m not in ITERATOR_METHODS]
            written = parameter is not None and _callee_writes(
                self.walker, self.files, function, parameter
            )
            record.setdefault("writes", []).append(written)
            record.setdefault("collects", []).append(False)

    def _returned_at(self, statement: ast.stmt) -> None:
        """Where each returned pipeline sits in what the function returns: `return ds`
        (None), `return train, valid, count` (0, 1): an importer unpacks it the same way."""
        if not isinstance(statement, ast.Return) or statement.value is None:
            return
        value = statement.value
        elements = value.elts if isinstance(value, ast.Tuple) else [value]
        function = getattr(self.function, "name", None)
        for index, element in enumerate(elements):
            at = index if isinstance(value, ast.Tuple) else None
            records = self._records_of(element)
            for record in records:
                record["returned_at"] = (function, at)

    def _imported(self, variable: str, use: str, at: ast.AST) -> None:
        """`train, valid = make_datasets()` (imported) and then `for x in train:`: what
        the other module's function returns is consumed here, with nothing added."""
        call = self.pending.get(variable)
        if variable not in self.live and call is not None:
            self._imported_call(call, self.positions.get(variable), use, at)

    def _imported_call(self, call: ast.Call, index: Optional[int], use: str, at: ast.AST) -> None:
        """A call of a function imported from another module, whose result (its element
        `index` when unpacked) this body consumes as it comes (`use`: a loop, `fit`)."""
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        callee = self.walker.qualname(call.func) or ""
        if not (isinstance(root, ast.Name) and root.id in self.walker.aliases and "." in callee):
            return
        if callee.split(".")[0] in LIBRARY_ROOTS:
            return  # a library's call (`tf.config.list_physical_devices()`), not the run's
        line = getattr(at, "lineno", call.lineno)
        self.imported_uses.append(
            {
                "callee": callee,
                "index": index,
                "used_by": use,
                "line": line,
                "code": code_at(self.walker.lines, line),
            }
        )

    def _handed_on(self, node: ast.Call, args: list[ast.expr]) -> None:
        """Pipelines passed to a call that is not a consumer of this file: merged into a
        new pipeline (`choose_from_datasets`, `zip`; the one given as the choice dataset
        only yields indices), stored (`pipelines.append(ds)`), read by a TF1 iterator or a
        distribution strategy, or handed to code out of sight. None of those is a
        demonstration; a look (`len(ds)`, `print(ds)`, `ds.take(1)`) is."""
        func = node.func
        short = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (
            short in LOOKS
            or short in PASS_THROUGH
            or short == "tqdm"
            or (short in LOOP_WRAPPERS and isinstance(func, ast.Name))
        ):
            return  # builtin `zip(a, b)` in a loop; not `tf.data.Dataset.zip((a, b))`
        selector = keyword_arg(node, "choice_dataset")
        if short == "choose_from_datasets" and selector is None and len(node.args) > 1:
            selector = node.args[1]
        elements = [
            e for a in args for e in (a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a])
        ]
        for element in elements:
            records = self._records_of(element)
            for record in records:
                if record["ops"] and record["ops"][-1]["op"] == "take":
                    continue  # `show(ds.take(4))`: a look at a few elements
                if element is selector:
                    record["selector"] = True
                if short in ITERATOR_CONSUMERS:
                    record["used_by"] = record["used_by"] or short
                elif short in MERGES:
                    record["merged_into"] = record.get("merged_into") or short
                    self._merged(record, node)
                else:
                    record["passed_to"] = record.get("passed_to") or ast.unparse(func)

    def _merged(self, record: dict[str, Any], merge: ast.Call) -> None:
        """`tf.data.Dataset.zip((a, b))` of pipelines followed here: the zipped pipeline
        is the one consumed, judged where it is (its inputs' prefetches are its own)."""
        merged = [r for r in self._built_by(merge) if r["node"] is merge and r is not record]
        if merged:
            merged[0].setdefault("merged_from", []).append(record)
            record["merged_pipeline"] = True

    def _records_of(self, element: ast.expr) -> list[dict[str, Any]]:
        """The pipelines an expression holds: a live pipeline's name, or a call building
        one (a factory of the file, a chain), maybe handed back as it is (`tfds.as_numpy`)."""
        element = _passed_through(element)
        if isinstance(element, ast.Name) and element.id in self.live:
            return [self.live[element.id]]
        if isinstance(element, ast.Call):
            return self._built_by(element)
        return []

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
        prefetch_at, ends_with_prefetch = _prefetched(record)
        function = getattr(self.function, "name", None)
        finished_elsewhere = None
        if record.get("handed_to") and not record["used_by"]:
            # consumed here as well (`fit(validation_data=ds)`): judged here, whatever the
            # function it is also handed to does with it
            finished_elsewhere = f"handed to {record['handed_to']}()"
        elif record["returned"] and function is not None:
            finished_elsewhere = (
                f"returned by {function}(), whose callers (not in this file) may prefetch it"
            )
        elif record.get("merged_pipeline") and not record["used_by"]:
            finished_elsewhere = None  # judged as the pipeline it is merged into
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
            batched = record.get("batched_source") or any(n in BATCHING for n in names[:index])
            if op["op"] == "map" and batched:
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
        many_files_at = None
        serial = self._serial_reads(record) if many_files is None else None
        if serial is not None:
            # found at the flat_map: the branch it is in reads the files one at a time
            many_files = f"{record['source']} of file names read through flat_map "
            many_files += "(one file at a time)"
            if "interleave" in names:
                many_files += ", in a branch without the interleave"
            many_files_at = {k: serial.get(k) for k in ("line", "column", "code")}
        reader = record.get("reader")
        if many_files and serial is None and isinstance(reader, ast.Call) and reader is not node:
            # built by a factory of the file (`built_by`): found at the reader, once, not
            # at each call of the factory
            many_files_at = {
                "line": reader.lineno,
                "column": reader.col_offset + 1,
                "code": code_at(self.walker.lines, reader.lineno),
            }
        line, column = node.lineno, node.col_offset + 1
        if record.get("unpacked") and ops:
            # `ds, info = load(...)`: no statement of the pipeline's own starts it; it is
            # found where it ends, the statement a prefetch would follow
            line, column = ops[-1]["line"], ops[-1]["column"]
        return {
            "path": self.walker.report.path,
            "line": line,
            "column": column,
            "code": code_at(self.walker.lines, line),
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
            # the function of this file that returns it, and its place in the returned
            # tuple (None: the whole value): a file of the run that imports it may consume it
            "returned_by": _returned_by(record, function),
            "many_files_without_interleave": many_files,
            "many_files_at": many_files_at,
            "cache_after_random_augmentation": cache_after_random,
            # the choice dataset of choose_from_datasets: it yields indices, not data
            "selector": bool(record.get("selector")),
            # tensors in memory, only sliced, shuffled, batched and mapped with arithmetic
            # (`(x - 127.5) / 127.5`), or a zip of such pipelines: no decoding, no file read
            "in_memory": _in_memory(record),
            # ends with an in-memory cache of whole batches: replayed from the second epoch on
            "caches_batches": _caches_batches(record),
            # `Dataset.zip((a, b))` of pipelines followed here: judged as one pipeline
            "merges_pipelines": bool(record.get("merged_from")),
            # an input of such a merge, not consumed itself: judged as the merged one
            "merged_pipeline": bool(record.get("merged_pipeline")) and not record["used_by"],
            # read only by loops or Keras evaluate/predict calls, each one evaluation pass
            # after training, never repeated
            "evaluated_once": record["used_by"] in ("for loop", *EVALUATION_CONSUMERS)
            and bool(record.get("passes"))
            and all(record["passes"])
            and "repeat" not in names,
            # read only by loops that write its elements to record files (TFRecordWriter)
            # and train nothing: an offline conversion, no fit or training step reads it
            "written_out": bool(record.get("writes")) and all(record["writes"]),
            # read only by loops that bring each element to NumPy and count, aggregate or
            # collect it on the host, calling nothing else (no model, no step): a one-pass
            # statistic or an export to arrays, not a training input pipeline
            "host_pass": bool(record.get("collects"))
            and all(record["collects"])
            and "repeat" not in names,
        }


def _trains(files: FileIndex, body: list[ast.stmt], whole: bool = False) -> bool:
    """A loop body that steps the training: a call named for it (`train_step(x)`,
    `grad_fn(params, x)`, `opt.minimize(loss)`), or one of a function of the file that
    makes such a call. `whole`: the call's arguments count too (`strategy.run(train_step,
    args=(x,))`), to doubt a pass that might train rather than to find a training loop."""
    for statement in body:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            if _training_call(node, whole):
                return True
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            own = files.functions.get(name) if name is not None else None
            if own is not None and any(
                isinstance(n, ast.Call) and _training_call(n, whole) for n in own_nodes(own)
            ):
                return True
    return False


def _training_call(call: ast.Call, whole: bool) -> bool:
    text = ast.unparse(call if whole else call.func).lower()
    return any(mark in text for mark in TRAINING_MARKS)


def _trains_elsewhere(module: ast.Module, files: FileIndex, reader: ast.AST) -> bool:
    """Another loop of the file (not the reading loop, nor one inside it) steps the
    training, or a Keras training call outside the reader does (`model.fit(train)`)."""
    inside = {id(n) for n in ast.walk(reader)}
    for other in module_nodes(module):
        if id(other) in inside:
            continue
        if isinstance(other, (ast.For, ast.AsyncFor, ast.While)) and _trains(files, other.body):
            return True
        func = other.func if isinstance(other, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr in KERAS_TRAINING:
            return True
    return False


def _called_in_loops(module: ast.Module, function: Optional[ast.AST], own: bool = True) -> bool:
    """The function is called from inside a loop of the file (`for step in ...:
    evaluate()`): what it reads once per call it reads again and again. `own=False`:
    not counting its own loops, nor a call on what a loop reads (`for x in ds:
    x.numpy()` calls the element's method, not a method `numpy` of the file)."""
    name = getattr(function, "name", None)
    if name is None:
        return False
    inside = set() if own else {id(n) for n in ast.walk(function)}  # type: ignore[arg-type]
    for loop in module_nodes(module):
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)) or id(loop) in inside:
            continue
        elements = set()
        if not own and isinstance(loop, (ast.For, ast.AsyncFor)):
            elements = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        for node in ast.walk(loop):
            func = node.func if isinstance(node, ast.Call) else None
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if isinstance(func, ast.Attribute) and getattr(func.value, "id", None) in elements:
                continue
            if called == name:
                return True
    return False


def _file_function(func: ast.expr, functions: Mapping[str, Any]) -> Optional[Any]:
    """The file's function a bare name calls (`load(x)`), or None."""
    return functions.get(func.id) if isinstance(func, ast.Name) else None


def _reached_calls(
    roots: list[ast.AST],
    nodes_of: Callable[[ast.AST], Iterable[ast.AST]],
    follow: Callable[[ast.Call], list[ast.AST]],
) -> Iterator[ast.Call]:
    """The calls in `roots` (the nodes `nodes_of` gives of each) and in what `follow`
    says each call runs, each body read once however often it is reached."""
    todo = list(roots)
    visited: set[int] = set()
    while todo:
        root = todo.pop()
        if id(root) in visited:
            continue
        visited.add(id(root))
        for node in nodes_of(root):
            if isinstance(node, ast.Call):
                yield node
                todo.extend(follow(node))


def _unconditional_nodes(root: ast.AST) -> list[ast.AST]:
    """The nodes under `root` outside every `if` statement and conditional expression
    (their tests included: evaluated every time), not inside nested functions, classes or
    lambdas."""
    found: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.If, ast.IfExp)):
            stack.append(node.test)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _in_memory(record: dict[str, Any]) -> bool:
    """Tensors embedded in the graph (`from_tensor_slices(arrays)`), or a merge of such
    pipelines (`Dataset.zip((a, b))`), only sliced, shuffled, batched and mapped with
    elementwise arithmetic (no decoding, no Python, no random augmentation): each batch
    is a copy and a few vector operations, nothing for a prefetch to overlap."""
    cheap = all(op["op"] in IN_MEMORY_OPS or _arithmetic_map(op) for op in record["ops"])
    inputs = record.get("merged_from") or []
    if record["source"] in MERGES and inputs:
        return cheap and all(_in_memory(merged) for merged in inputs)
    if record.get("returned_from") is not None:  # unpacked from a function of the file
        return cheap and _in_memory(record["returned_from"])
    return cheap and record["source"] in IN_MEMORY_SOURCES


def _arithmetic_map(op: dict[str, Any]) -> bool:
    """A map whose function only repacks the element or computes on its values with
    elementwise arithmetic, calling no Python and drawing no random augmentation."""
    return (
        op["op"] == "map"
        and bool(op.get("arithmetic"))
        and not op.get("host_calls")
        and not op.get("random_augmentation")
        and not op.get("makes_datasets")
    )


def _caches_batches(record: dict[str, Any]) -> bool:
    """The pipeline ends with `cache()` in memory (no file name) after its batching, no
    `repeat()` before it (`ds.map(f).batch(n).cache()`, a Keras loader's batches mapped
    and cached): from the second epoch on each step's batch is read back from memory as
    it was stored, with nothing left to produce for a prefetch to overlap."""
    ops: list[dict[str, Any]] = record["ops"]
    if not ops or ops[-1]["op"] != "cache" or ops[-1].get("cache_file"):
        return False
    before = [op["op"] for op in ops[:-1]]
    batched = bool(record.get("batched_source")) or any(n in BATCHING for n in before)
    return batched and "repeat" not in before


def _method_names(ops: list[ast.Call]) -> set[str]:
    """The method names of a chain's calls."""
    return {op.func.attr for op in ops if isinstance(op.func, ast.Attribute)}


def _batched_source(node: ast.Call, name: str) -> bool:
    """A Keras loader that batches what it returns, unless told `batch_size=None`."""
    size = keyword_arg(node, "batch_size")
    unbatched = isinstance(size, ast.Constant) and size.value is None
    return name.rsplit(".", 1)[-1] in BATCHED_SOURCES and not unbatched


def _wraps(value: ast.expr, name: ast.Name) -> bool:
    """`files = [files]` (under `if isinstance(files, str):`): one file given alone is
    made a list, the list callers pass is kept; the name still holds what they pass."""
    return (
        isinstance(value, (ast.List, ast.Tuple))
        and len(value.elts) == 1
        and isinstance(value.elts[0], ast.Name)
        and value.elts[0].id == name.id
    )


def _prefetched(record: dict[str, Any]) -> tuple[Optional[int], bool]:
    """Where a pipeline's last prefetch is (in its operations and those its consuming
    function chains on) and whether it ends with one: a Keras directory loader prefetches
    itself, and a merge with no prefetch of its own ends with one when each input does."""
    ops: list[dict[str, Any]] = record["ops"]
    # what the function of this file that consumes it chains on (`ds.repeat().take(n)`)
    consumed = [*ops, *({"op": n} for n in record.get("consumer_ops") or [])]
    prefetch_at = max((i for i, op in enumerate(consumed) if op["op"] == "prefetch"), default=None)
    ends_with_prefetch = prefetch_at is not None and all(
        _cheap_after_prefetch(op) for op in consumed[prefetch_at + 1 :]
    )
    inputs = record.get("merged_from") or []
    if prefetch_at is None and (record.get("prefetched_source") or inputs):
        ends_with_prefetch = all(_cheap_after_prefetch(op) for op in consumed) and all(
            _prefetched(r)[1] for r in inputs
        )
    return prefetch_at, ends_with_prefetch


def _cheap_after_prefetch(op: dict[str, Any]) -> bool:
    """An operation after the final prefetch that keeps its overlap: `take`, `repeat`...,
    or a map whose function does only structural work (`ds.prefetch(n).map(
    add_sample_weights)`, a gather from a constant): the tail costs next to nothing."""
    if op["op"] in AFTER_PREFETCH_OK:
        return True
    return op["op"] == "map" and bool(op.get("structural")) and not op.get("host_calls")


def _parameter_of(function: ast.AST, call: ast.Call, arg: ast.expr) -> Optional[str]:
    """The parameter of `function` that `arg` of `call` fills, or None."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    arguments = function.args
    keyword = next((k.arg for k in call.keywords if k.value is arg), None)
    if keyword is not None:
        return keyword
    positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
    index = next((i for i, a in enumerate(call.args) if a is arg), None)
    if index is None or index >= len(positional):
        return None
    return positional[index]


def _callee_use(
    walker: Walker, function: ast.AST, parameter: str
) -> Optional[Union[str, list[str]]]:
    """What `function` does with the pipeline in `parameter`: "look" (it only looks at
    a few elements: `next(iter(ds.take(1)))`, a loop over `ds.take(3)` or one that only
    prints), the operations it chains before consuming it (`for step, x in
    ds.repeat().take(steps).enumerate(): train_step(x)`, `model.fit(ds)`: a list, maybe
    empty), or None when it does anything else with it (returns it, hands it on, stores
    it) or loops over it doing no work (the tf.data guide's `benchmark()`, whose loop
    only sleeps in place of a training step: a demonstration, not training)."""
    seen: set[int] = set()
    consumed: Optional[list[str]] = None
    looked = False
    for node in own_nodes(function):
        if isinstance(node, ast.For):
            for iterable in _looped(node.iter):
                base = _parameter_chain(iterable, parameter)
                if base is None:
                    continue
                if _only_looks(node.body) or _previews(base[1]):
                    looked = True
                elif _works(walker, node.body):
                    consumed = (consumed or []) + base[1]
                else:
                    continue
                seen.add(id(base[0]))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                base = _parameter_chain(arg, parameter)
                if base is None or name not in (*CONSUMERS, *INSPECTORS):
                    continue
                seen.add(id(base[0]))
                if name in CONSUMERS:
                    consumed = (consumed or []) + base[1]
                else:
                    looked = True
    uses = [  # nested functions included: a closure's use is one not accounted for
        n
        for n in ast.walk(function)
        if isinstance(n, ast.Name) and n.id == parameter and isinstance(n.ctx, ast.Load)
    ]
    if not uses or any(id(n) not in seen for n in uses):
        return None
    if consumed is not None:
        return consumed
    return "look" if looked else None


def _callee_writes(walker: Walker, files: FileIndex, function: ast.AST, parameter: str) -> bool:
    """Every loop of `function` over the pipeline in `parameter` writes record files."""
    loops = [
        node
        for node in own_nodes(function)
        if isinstance(node, ast.For)
        and any(_parameter_chain(i, parameter) is not None for i in _looped(node.iter))
    ]
    return bool(loops) and all(_writes_records(walker, files, loop, function) for loop in loops)


def _writes_records(walker: Walker, files: FileIndex, loop: ast.For, holder: ast.AST) -> bool:
    """A loop whose body calls `.write(...)` in a function (or module) that opens a record
    writer (`tf.io.TFRecordWriter(path)`), making no training step (`_trains`): it
    serialises the pipeline's elements to files, the offline conversion a later training
    run reads back."""
    if _trains(files, loop.body, whole=True):
        return False
    writes = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "write"
        for statement in loop.body
        for n in ast.walk(statement)
    )
    return writes and any(
        isinstance(n, ast.Call) and (walker.qualname(n.func) or "").endswith(RECORD_WRITERS)
        for n in ast.walk(holder)
    )


def _collects_on_host(walker: Walker, body: list[ast.stmt]) -> bool:
    """A loop body that turns what it reads into NumPy (`x.numpy()`) and only reshapes,
    counts, aggregates or collects it there: every call a `.numpy()`, a NumPy function,
    a method of the arrays or lists it builds (`.reshape`, `.astype`, `.sum`,
    `.append`) or a builtin (`len`, `int`, `print`). No model, no step, no function of
    the file: a pass that trains nothing and reads each element once."""
    converted = False
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return False
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args:
                converted = True
                continue
            if (walker.qualname(func) or "").startswith("numpy."):
                continue
            if isinstance(func, ast.Name) and func.id in HOST_BUILTINS:
                continue
            if isinstance(func, ast.Attribute) and func.attr in HOST_METHODS:
                continue
            return False
    return converted


def _exclusive(path: tuple[tuple[int, str], ...], other: tuple[tuple[int, str], ...]) -> bool:
    """Two places in opposite branches of one `if` (its body and its else): never both run."""
    for here, there in zip(path, other, strict=False):
        if here != there:
            return here[0] == there[0]
    return False


def _works(walker: Walker, body: list[ast.stmt]) -> bool:
    """A loop body that does work of its own (`train_step(x)`, `model(x)`), not only
    timing, sleeping or TensorFlow bookkeeping (`tf.concat` of timestamps)."""
    for statement in body:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = walker.qualname(func) or ""
            if name.startswith(("time.", "tensorflow.", "numpy.")):
                continue
            if isinstance(func, ast.Name) and func.id in LOOKS:
                continue
            if isinstance(func, ast.Attribute) and func.attr in ("numpy", "format"):
                continue
            return True
    return False


def _parameter_chain(node: ast.expr, parameter: str) -> Optional[tuple[ast.Name, list[str]]]:
    """`ds` or a method chain on it (`ds.repeat().take(n).enumerate()`): the name and the
    methods chained, in order; None for anything else."""
    methods: list[str] = []
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        methods.append(node.func.attr)
        node = node.func.value
    if isinstance(node, ast.Name) and node.id == parameter:
        return node, methods[::-1]
    return None


def _peek(ops: list[ast.Call]) -> bool:
    """`ds.take(1)` read by an iterator method (`.as_numpy_iterator()`), `ops` outermost
    first: one element, not repeated first; a peek at the pipeline (its shapes), as
    `next(iter(ds))` is."""
    if not ops or getattr(ops[0].func, "attr", None) != "take" or len(ops[0].args) != 1:
        return False
    count = ops[0].args[0]
    repeated = any(getattr(op.func, "attr", None) == "repeat" for op in ops)
    return isinstance(count, ast.Constant) and count.value == 1 and not repeated


def _previews(methods: list[str]) -> bool:
    """`ds.take(3)`: a few elements, unless repeated first (`ds.repeat().take(steps)`)."""
    shown = [m for m in methods if m != "enumerate"]
    return bool(shown) and shown[-1] == "take" and "repeat" not in shown


def _returned_by(record: dict[str, Any], function: Optional[str]) -> Optional[dict[str, Any]]:
    """`{"function", "index"}` when this body's function returns the pipeline; None when
    not returned, or returned by another function (a factory's record continued here)."""
    returned = record.get("returned_at")
    if function is None or not returned or returned[0] != function:
        return None
    return {"function": function, "index": returned[1]}


def _rebinds(call: ast.Call, variable: str) -> bool:
    """`ds = loader(...)` where the call does not read `ds`: the name gets a new value
    (`ds = wrap(ds)`, out of sight, may still hold the same pipeline)."""
    return not any(isinstance(n, ast.Name) and n.id == variable for n in ast.walk(call))


def _looped(iterable: ast.expr) -> list[ast.expr]:
    """What a `for` loop reads: `ds` in `for i, x in enumerate(ds)`, `tqdm(ds)`, every
    argument of `zip(a, b)`, `ds` in `itertools.islice(ds, n)`; the iterable itself otherwise."""
    inner = _passed_through(iterable)
    if inner is not iterable:
        return _looped(inner)
    func = iterable.func if isinstance(iterable, ast.Call) else None
    # `tqdm.tqdm(ds)`, `tqdm.auto.tqdm(ds)`: the module's progress bar, as `tqdm(ds)`
    wrapper = func.attr if isinstance(func, ast.Attribute) and func.attr == "tqdm" else None
    if isinstance(func, ast.Name) and func.id in LOOP_WRAPPERS:
        wrapper = func.id
    if isinstance(iterable, ast.Call) and wrapper is not None and iterable.args:
        read = iterable.args if wrapper == "zip" else iterable.args[:1]
        return [e for a in read for e in _looped(a)]
    return [iterable]


def _passed_through(node: ast.expr) -> ast.expr:
    """The pipeline a pass-through call hands back (`ds` for `tfds.as_numpy(ds)`,
    `itertools.cycle(ds)`, `itertools.islice(ds, n)`), unwrapped; `node` otherwise."""
    while isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in PASS_THROUGH:
            break
        node = node.args[0]
    return node


def _only_looks(body: list[ast.stmt]) -> bool:
    """A loop body that only prints or measures what it reads (a tutorial showing a few
    elements), no training step: the loop looks at the pipeline, not consumes it. A body
    with no call at all (`pass`) stands for the work and is not a look, unless it ends
    with an unconditional `break` (`for sample in ds: break`): one element taken, a peek
    like `next(iter(ds))`."""
    looked = bool(body) and isinstance(body[-1], ast.Break)
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
    one of them distinctive (`dataset.map(f)` ... `.shuffle(n).batch(b)`) or a map whose
    function wraps Python in tf.py_func, directly or through the names assigned from them."""
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
    maps: list[tuple[str, ast.Call]] = []  # (base name, call) of `base.map(f)`
    for node in own_nodes(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = _chain_base(node)
            if base is not None:
                methods.append((base, node.func.attr))
            if base is not None and node.func.attr == "map":
                maps.append((base, node))
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
        if not used or not used <= DATASET_OPS:
            continue
        mapped = [call for base, call in maps if base in names]
        if used & DISTINCTIVE_OPS or any(_python_in_graph_map(walker, function, m) for m in mapped):
            found.add(parameter)
    return found


def _python_in_graph_map(walker: Walker, function: ast.AST, call: ast.Call) -> bool:
    """`dataset.map(self._ProcessLine)` where the function (a lambda, a function or method
    of this file) wraps Python in `tf.py_func`/`tf.py_function`, which only a TensorFlow
    graph runs: a tf.data map, not a pandas or Python one, even with no batch or shuffle
    in sight (lingvo's `_Process(self, dataset)` hooks)."""
    func = call.args[0] if call.args else keyword_arg(call, "map_func")
    targets = map_targets(walker, walker.index(), func, walker.scope_of(function))
    return any(
        isinstance(node, ast.Call) and walker.qualname(node.func) in PY_FUNCTIONS
        for target in targets
        for node in ast.walk(target.root)
    )


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
