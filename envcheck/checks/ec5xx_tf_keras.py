"""tf.data and Keras input pipelines in training scripts (EC511-EC521), read statically
from the files named with `--script` (envcheck/scripts/tf_data.py, keras.py). Without
`--script` they are skipped.

Size: eleven rules whose docstrings are their reference documentation; one family stays
in one module."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Optional, Union

from envcheck.checks.ec5xx_torch import scripts_section, suggested_workers
from envcheck.checks.facts_helpers import imported_as, linked_files, module_version, outcome_over
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.model import Location, Severity, Status
from envcheck.snapshot import Facts, Missing

GUIDE = "https://www.tensorflow.org/guide/data_performance"
GUIDE_MAP = (
    f"{GUIDE} (Parallelizing data transformation: 'the map transformation provides the "
    "num_parallel_calls argument to specify the level of parallelism ... Using "
    "tf.data.AUTOTUNE'; without it elements are transformed sequentially)"
)
GUIDE_PREFETCH = (
    f"{GUIDE} (Prefetching: 'you should add a tf.data.Dataset.prefetch transformation to "
    "the end of your input pipeline'; it 'overlaps the preprocessing and model execution of "
    "a training step')"
)
GUIDE_HOST = (
    f"{GUIDE} (Best practice summary: 'Vectorize user-defined functions passed in to the map "
    "transformation'; tf.py_function runs Python and holds the GIL)"
)
GUIDE_CACHE = (
    f"{GUIDE} (Caching: 'If the user-defined function passed into the map transformation is "
    "expensive, apply the cache transformation after the map transformation as long as the "
    "resulting dataset can still fit into memory or local storage' -- and before random "
    "augmentation, which would otherwise be frozen into the cache)"
)
GUIDE_INTERLEAVE = (
    f"{GUIDE} (Parallelizing data extraction: 'Use the interleave transformation to "
    "parallelize the data loading step, interleaving the contents of other datasets (such as "
    "data file readers)' with num_parallel_calls)"
)
KERAS_FIT_GENERATOR = (
    "https://www.tensorflow.org/api_docs/python/tf/keras/Model#fit_generator ('DEPRECATED: "
    "Model.fit now supports generators, so there is no longer any need to use this "
    "endpoint')"
)
KERAS_WORKERS = (
    "https://keras.io/2.16/api/models/model_training_apis/ (fit: workers 'Integer. Used for "
    "generator or keras.utils.Sequence input only ... If unspecified, workers will default "
    "to 1'; use_multiprocessing defaults to False)"
)
KERAS_THREADSAFE = (
    "https://github.com/keras-team/keras/issues/8540 (generators with workers > 1 must be "
    "thread-safe; keras.utils.Sequence is the safe way to load in parallel)"
)
KERAS_PYDATASET = (
    "https://keras.io/api/utils/python_utils/#pydataset-class (Keras 3: workers and "
    "use_multiprocessing are arguments of PyDataset, not of fit)"
)
KERAS_IDG = (
    "https://www.tensorflow.org/api_docs/python/tf/keras/preprocessing/image/"
    "ImageDataGenerator ('Deprecated: tf.keras.preprocessing.image.ImageDataGenerator is "
    "not recommended for new code. Prefer loading images with "
    "tf.keras.utils.image_dataset_from_directory and transforming the output tf.data.Dataset "
    "with preprocessing layers')"
)
TF_LAYERS = (
    "https://www.tensorflow.org/guide/function (Python side effects and NumPy calls run only "
    "while tracing; 'Use TensorFlow ops inside tf.function')"
)


def _items(facts: Facts, key: str) -> Union[list[dict[str, Any]], Outcome]:
    section = scripts_section(facts)
    if isinstance(section, Outcome):
        return section
    return [i for i in section.get(key) or [] if isinstance(i, dict)]


def _hit(
    item: dict[str, Any],
    line: Optional[int] = None,
    code: Optional[str] = None,
    column: Optional[int] = None,
    **values: Any,
) -> Hit:
    """A hit at the item (pipeline, call) or, given `line`, at one of its operations."""
    own_line = line is None or line == item.get("line")
    line = line if line is not None else item.get("line")
    code = code if code is not None else item.get("code", "")
    path = str(item.get("path", "?"))
    if column is None and own_line:
        column = item.get("column")
    return Hit(
        values={"where": f"{path}:{line}", "code": code, **values},
        evidence={"observation": _around(item, line, column)},
        location=Location(path, line, column, code or None),
    )


# Operations of a pipeline a finding carries as evidence: N findings on a pipeline of N
# operations (one per serial map) each carried all N, N² in the JSON and SARIF reports.
MAX_EVIDENCE_OPERATIONS = 64


def _around(item: dict[str, Any], line: Optional[int], column: Optional[int]) -> dict[str, Any]:
    """The observation as evidence: whole, or for a pipeline of more than
    MAX_EVIDENCE_OPERATIONS operations those around the one at (`line`, `column`) (the
    first ones for the pipeline's own finding), with how many were left out."""
    operations = item.get("operations")
    if not isinstance(operations, list) or len(operations) <= MAX_EVIDENCE_OPERATIONS:
        return item
    at = next(
        (
            index
            for index, op in enumerate(operations)
            if isinstance(op, dict) and op.get("line") == line and op.get("column") == column
        ),
        0,
    )
    last_start = len(operations) - MAX_EVIDENCE_OPERATIONS
    start = max(0, min(at - MAX_EVIDENCE_OPERATIONS // 2, last_start))
    return {
        **item,
        "operations": operations[start : start + MAX_EVIDENCE_OPERATIONS],
        "operations_left_out": len(operations) - MAX_EVIDENCE_OPERATIONS,
    }


def _judge(
    items: Union[list[dict[str, Any]], Outcome],
    hits_of: Callable[[dict[str, Any]], list[Hit]],
    what: str,
    clean: str,
) -> Outcome:
    if isinstance(items, Outcome):
        return items
    if not items:
        return Outcome.passed(f"no {what} in the scripts")
    hits = _distinct([hit for item in items for hit in hits_of(item)])
    if not hits:
        return Outcome.passed(f"{len(items)} {what}: {clean}")
    return Outcome.failed(*hits, reason=f"{len(hits)} of the {what}")


def _distinct(hits: list[Hit]) -> list[Hit]:
    """One hit per place: a map in a function that builds the train and the validation
    pipeline is one finding, not two."""
    seen: set[tuple[Any, ...]] = set()
    kept = []
    for hit in hits:
        loc = hit.location
        key = (loc.path, loc.line, loc.column) if loc is not None else (id(hit),)
        if key not in seen:
            seen.add(key)
            kept.append(hit)
    return kept


OPTIMIZATION_OPTIONS = (
    "https://www.tensorflow.org/api_docs/python/tf/data/experimental/OptimizationOptions "
    "(map_parallelization: 'Whether to parallelize stateless map transformations. If None, "
    "defaults to True'; inject_prefetch: 'If None, defaults to True' since 2.12, False in "
    "the 2.10 documentation)"
)
# Releases whose tf.data rewrites a stateless serial map to a parallel one, and injects a
# final prefetch, by default (the OptimizationOptions documentation of each release).
MAP_PARALLELIZATION_SINCE = (2, 7)
INJECT_PREFETCH_SINCE = (2, 12)


def _tf_release(facts: Facts) -> Optional[tuple[int, ...]]:
    """The audited TensorFlow's (major, minor), or None when not known here."""
    tf = module_version(facts, "tensorflow")
    if tf is None or isinstance(tf, Missing):
        return None
    return tuple(tf[1].release[:2])


def _visibly_stateful(op: dict[str, Any]) -> bool:
    """Random augmentation or Python in the map function: tf.data cannot parallelize it."""
    return bool(op.get("random_augmentation") or op.get("host_calls"))


def _demonstration(pipeline: dict[str, Any]) -> bool:
    """A pipeline only looked at (`next(iter(ds))`, `for x in ds.take(1)`, a loop whose
    body only prints what it reads: `for x in ds: print(x)`) and never
    consumed, returned nor handed on: a tutorial's demonstration, not training input."""
    return bool(pipeline.get("demonstration"))


def _not_training(pipeline: dict[str, Any]) -> bool:
    """A demonstration, a pipeline built in a serving/export input function
    (`serving_input_fn`: one request's serialized examples at export time), one only
    read by loops that write its elements to record files (an offline TFRecord
    conversion), or one only read by a loop that brings each element to NumPy and counts
    or collects it, calling nothing else (a one-pass statistic or export to arrays):
    none feeds training, which is all EC511-EC513 judge."""
    return (
        _demonstration(pipeline)
        or bool(pipeline.get("serving"))
        or bool(pipeline.get("written_out"))
        or bool(pipeline.get("host_pass"))
    )


def _parallel_text(value: Optional[dict[str, Any]]) -> str:
    """How the map is left serial: no num_parallel_calls, or one that comes to 1/None."""
    if value is None:
        return "without num_parallel_calls"
    text = f"with num_parallel_calls={value.get('text')}"
    if value.get("text") != str(value.get("value")):
        text += f" = {value.get('value')}"
    source = value.get("source")
    if source and source != "literal":
        text += f" ({source})"
    return text


def _serial(value: Optional[dict[str, Any]]) -> bool:
    """num_parallel_calls absent, or known to be None or 1."""
    if value is None:
        return True
    return bool(value.get("known")) and value.get("value") in (None, 1)


@check(
    id="EC511",
    name="tf-data-serial-map",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="A tf.data map/interleave runs serially (no num_parallel_calls)",
    message="{where}: `{code}` — {op}({function}) {parallel} transforms one "
    "element at a time on one CPU core",
    fix=".{op}({function}, num_parallel_calls=tf.data.AUTOTUNE)   # at {where}",
    evidence=(GUIDE_MAP, OPTIMIZATION_OPTIONS),
)
def tf_data_serial_map(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `ds.map(decode)` with no `num_parallel_calls`: tf.data applies the
    function to one element at a time, so decoding and resizing use a single core while
    the GPU waits. The same holds for `interleave` (sequential unless given
    `num_parallel_calls`). A value that cannot be read from the source (a variable set at
    run time) is taken as given. A map after `batch` transforms whole batches at once
    (the guide's "vectorizing mapping", the recommended order) and is not flagged, nor is
    a map on what a Keras loader that batches returns (`image_dataset_from_directory`,
    `text_dataset_from_directory`, `audio_dataset_from_directory`,
    `timeseries_dataset_from_array`, unless given `batch_size=None`). A split taken
    from what `tfds.load` returns (`tfds.load(...)["train"]`) is a source, so its first
    map is judged. Nor
    are a map whose function only returns datasets (`range_ds.map(lambda i:
    ds.shard(n, i))`: they are read by the `interleave` or `flat_map` that follows) and
    the maps of the choice dataset given to `choose_from_datasets`, which yields one index
    per element, not data, nor those of a pipeline only looked at (`next(iter(
    ds.take(1)))`, also in a function of the file it is handed to). Nor is a map whose
    function visibly does only structural work
    (`lambda r: (r, 0)`, `lambda features, _: features`, a synthetic input returning
    `tf.zeros(...)`, a function that only stacks, casts, reshapes, slices, compares or
    joins a path, followed into the file's own functions, its methods on objects of the
    file's classes and `functools.partial`s of them; arithmetic on sizes and settings,
    such as a crop offset from `tf.shape(x)[0]`, included): it costs next to nothing per
    element; a function that computes on the element's values, calls anything else, or
    is out of sight, stays judged. A map followed by `cache()`
    (directly, or after shuffle/batch, but not past a `repeat()`, which never ends) runs
    in the first epoch only (the guide's advice: cache after an expensive map): it
    is flagged only when its function calls Python (the guide's py_function example,
    slow enough to matter even once); random augmentation before a cache is EC514's
    finding. A `num_parallel_calls` taken from a parameter of the function is what the
    file's calls pass, or the parameter's default (library code is judged at its
    defaults). Pipelines built in a serving/export input function (`serving_input_fn`)
    are not training input and are not judged.

    Since TensorFlow 2.7 tf.data rewrites a *stateless* serial map to a parallel one by
    default (`map_parallelization`); the rewrite does not apply to a function with random
    ops or Python in it. So with a known TensorFlow >= 2.7, a map is flagged only when its
    function visibly does random augmentation or calls Python; an `interleave` always is.

    **Best practice.** `ds.map(f, num_parallel_calls=tf.data.AUTOTUNE)` (and the same for
    `interleave`), letting tf.data tune the parallelism to the CPUs available.
    """
    release = _tf_release(facts)
    rewrites = release is not None and release >= MAP_PARALLELIZATION_SINCE

    def hits(pipeline: dict[str, Any]) -> list[Hit]:
        if _not_training(pipeline) or pipeline.get("selector"):
            return []
        return [
            _hit(
                pipeline,
                line=op.get("line"),
                code=op.get("code"),
                column=op.get("column"),
                op=op["op"],
                function=op.get("map_function") or "f",
                parallel=_parallel_text(op.get("num_parallel_calls")),
            )
            for op in pipeline.get("operations") or []
            if op.get("op") in ("map", "interleave")
            and not op.get("vectorised")
            and not op.get("makes_datasets")
            and not (op.get("op") == "map" and op.get("structural"))
            and not (op.get("cached_after") and not op.get("host_calls"))
            and not op.get("opaque_kwargs")
            and _serial(op.get("num_parallel_calls"))
            and not (rewrites and op.get("op") == "map" and not _visibly_stateful(op))
        ]

    return _judge(_items(facts, "tf_pipelines"), hits, "tf.data pipelines", "maps run in parallel")


@check(
    id="EC512",
    name="tf-data-no-prefetch",
    severity=Severity.LOW,
    category="scripts",
    summary="A tf.data pipeline does not end with prefetch",
    message="{where}: the pipeline `{code}`{built} {problem}",
    fix="{fix}",
    evidence=(GUIDE_PREFETCH, OPTIMIZATION_OPTIONS),
)
def tf_data_no_prefetch(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A tf.data pipeline that reaches its consumer (`fit`, a `for` loop)
    without a final `prefetch`: the producer and the training step alternate instead of
    overlapping. Or `prefetch` placed *before* `batch`: it buffers single elements, and
    each batch is still assembled only when the step asks for it.

    The pipeline is judged where it reaches the consumer: one returned by a function of
    the file and prefetched by its caller is fine, and one built by a factory (a function
    or a method such as `Input(files).build()`) is followed into its caller. `tfds.as_numpy(ds)`,
    `itertools.cycle(ds)` and `itertools.islice(ds, n)` hand the pipeline on as it is
    (`return tfds.as_numpy(ds)` returns the pipeline). `take`,
    `repeat`, `enumerate` and `with_options` after the prefetch are accepted, and so is a
    map whose function does only structural work (`.prefetch(n).map(add_sample_weights)`,
    a gather from a few constants): the tail costs next to nothing. A pipeline handed to
    a function of the file is judged by what the function does with it: a loop over it
    that does work (`def fit(ds, steps): for step, x in ds.repeat().take(steps)
    .enumerate(): train_step(x)`) consumes it; a look at a few elements (`next(iter(
    ds.take(1)))`, a loop over `ds.take(3)`, one element read for the input shapes:
    `list(ds.take(1).as_numpy_iterator())[0]`) is no consumer, and one consumed in sight
    as well (`fit(validation_data=ds)`) is judged there. A pipeline returned by a
    function of the file and consumed as it comes by a file of the same run that imports
    it (`train, valid = generate_datasets()`, then `for x in train:`) is judged as
    consumed, the files linked by import as for EC522. A pipeline handed to code out of
    sight (returned to callers outside the run, passed to another function, looped over
    by a benchmark that only sleeps in place of a step) is unknown, not passed. Recent
    TensorFlow releases can inject a final prefetch
    themselves (`tf.data.Options().experimental_optimization.inject_prefetch`, on by
    default since 2.12): with a known TensorFlow >= 2.12 the missing final prefetch
    passes, and the severity is low. Tensors already in memory that are only sliced,
    shuffled and batched (`from_tensor_slices((x, y)).shuffle(n).batch(32)`, no map, no
    file read; also when a function of the file returns them in a tuple, `train_ds,
    test_ds = mnist_datasets()`) pass as well: assembling such a batch is a copy of a few
    KB to MB, with nothing to decode for a prefetch to overlap (as EC501 treats
    in-memory tensors). A source with no operations is judged only when Python produces
    its elements (`Dataset.from_generator(gen)` handed to `fit` as it is).
    A Dataset method called as a statement of its own (`ds.prefetch(n)`, its result
    thrown away) leaves `ds` as it was: the finding points at the discarded prefetch.
    `tf.data.Dataset.zip((a, b))` of pipelines the source builds is the pipeline
    consumed: the finding points at the zip, which passes when it prefetches or when
    every pipeline it zips does.
    A pipeline read once by a loop that trains nothing, in a file whose training step runs
    in another loop (`for x, y in test: correct += accuracy(params, x, y)` after
    training, `for batch in ds: model.generate(batch)` in `predict()`; in no other loop,
    in a function no loop calls, no `repeat()`) passes: an evaluation or inference pass
    with no step to overlap; so does one read once by `model.evaluate(ds)` or
    `model.predict(ds)` in a file that trains with `fit` (in no loop, not its
    `validation_data`). One read by an evaluation a training loop calls (`for x in
    train: step(x); evaluate()`) is read again and again, and judged. A pipeline that ends
    with an in-memory `cache()` of its batches (`ds.map(f).batch(n).cache()`, no
    `repeat()` before it) replays them from memory from the second epoch on and passes;
    a `cache(filename)` reads them back from disk and is judged. `for x in ds: break` is
    a peek at one element, like `next(iter(ds))`. Tensors in memory mapped only with
    elementwise arithmetic (`(x - 127.5) / 127.5`, `x - tf.reduce_mean(x)`), and zips of
    such pipelines, are still in memory.
    Pipelines built in a serving/export input function (`serving_input_fn`,
    `serving_input_receiver_fn`: one request's serialized examples parsed at export
    time) are not training input and are not judged, here nor by EC511/EC513; nor are
    pipelines only read by a loop that brings each element to NumPy and counts,
    aggregates or collects it, calling nothing else (`for x, y in ds: n += 1;
    ys.append(y.numpy())`: a one-pass statistic or an export to arrays, no model, no step,
    in no other loop), here nor by EC511/EC513/EC515.

    **Best practice.** End every input pipeline with `.batch(...).prefetch(tf.data.AUTOTUNE)`.
    """

    release = _tf_release(facts)
    injects = release is not None and release >= INJECT_PREFETCH_SINCE
    items = _items(facts, "tf_pipelines")
    if isinstance(items, Outcome):
        return items
    importers = _importer_uses(facts, items)
    out_of_sight: list[str] = []
    in_memory: list[str] = []
    evaluated: list[str] = []
    cached: list[str] = []

    def hits(pipeline: dict[str, Any]) -> list[Hit]:
        importer = importers.get(id(pipeline))
        if importer is not None:  # consumed, as it comes, by a file of the run importing it
            pipeline = {**pipeline, "used_by": importer, "finished_elsewhere": None}
        if pipeline.get("merged_pipeline"):
            return []  # judged as the pipeline it is merged into (`Dataset.zip((a, b))`)
        if not (
            pipeline.get("operations")
            or pipeline.get("discarded")
            or pipeline.get("merges_pipelines")
            or pipeline.get("source") == "from_generator"  # Python produces every element
        ) or _not_training(pipeline):
            return []
        built = pipeline.get("built_by")
        built_text = f" (built by {built})" if built else ""
        early = pipeline.get("prefetch_before_batch")
        if isinstance(early, dict):
            return [
                _hit(
                    pipeline,
                    line=early.get("line"),
                    code=early.get("code"),
                    column=early.get("column"),
                    built=built_text,
                    problem=f"prefetches before .{early.get('batch')}() (line "
                    f"{early.get('batch_line')}): it buffers single elements, and each batch "
                    "is still assembled only when the training step asks for it",
                    fix=f"move .prefetch(tf.data.AUTOTUNE) after .{early.get('batch')}(...), "
                    "to the end of the pipeline",
                )
            ]
        if pipeline.get("ends_with_prefetch") or injects:
            return []
        if pipeline.get("in_memory"):
            in_memory.append(f"{pipeline.get('path')}:{pipeline.get('line')}")
            return []
        if pipeline.get("caches_batches") and not pipeline.get("discarded"):
            cached.append(f"{pipeline.get('path')}:{pipeline.get('line')}")
            return []
        if pipeline.get("evaluated_once") and not pipeline.get("discarded"):
            evaluated.append(f"{pipeline.get('path')}:{pipeline.get('line')}")
            return []
        if pipeline.get("finished_elsewhere"):
            out_of_sight.append(
                f"{pipeline.get('path')}:{pipeline.get('line')}: {pipeline['finished_elsewhere']}"
            )
            return []
        if "demonstration" in pipeline and not pipeline.get("used_by"):
            # nothing in sight consumes it (returned to, or built for, code out of this
            # file): the consumer decides, and may add the prefetch
            out_of_sight.append(
                f"{pipeline.get('path')}:{pipeline.get('line')}: ends with "
                f".{pipeline.get('last_operation') or 'batch'}(), and nothing in this file "
                "consumes it (its consumer, out of sight, may prefetch it)"
            )
            return []
        last = pipeline.get("last_operation") or "batch"
        thrown = [op for op in pipeline.get("discarded") or [] if op.get("op") == "prefetch"]
        if thrown:  # `ds.prefetch(n)` as a statement: the consumed `ds` has no prefetch
            return [
                _hit(
                    pipeline,
                    line=thrown[0].get("line"),
                    code=thrown[0].get("code"),
                    column=thrown[0].get("column"),
                    built=built_text,
                    problem="is a statement of its own, its result discarded (Dataset "
                    f"methods return a new dataset): the pipeline consumed ends with .{last}() "
                    "and never "
                    "prefetches, so the next batch is prepared only after the training step "
                    "that consumes this one",
                    fix="assign it: ds = ds.prefetch(tf.data.AUTOTUNE)",
                )
            ]
        consumer = f" ({importer})" if importer is not None else ""
        hit = _hit(
            pipeline,
            built=built_text,
            problem=f"ends with .{last}() and never prefetches{consumer}: the next batch is "
            "prepared only after the training step that consumes this one",
            fix=f"end the pipeline with ds = ds.prefetch(tf.data.AUTOTUNE)   # after "
            f".{last}() ({pipeline.get('path')}:{pipeline.get('line')})",
        )
        if pipeline.get("inspected") and pipeline.get("pipeline"):
            # a live dataset: its chain names the pipeline, the inspect() call does not
            hit = replace(hit, values={**hit.values, "code": pipeline["pipeline"]})
        return [hit]

    outcome = _judge(items, hits, "tf.data pipelines", "each ends with prefetch")
    if outcome.status is Status.PASS and out_of_sight:
        return Outcome.unknown("; ".join(out_of_sight))
    if outcome.status is Status.PASS and in_memory:
        return Outcome.passed(
            "no prefetch before batch; the pipelines without a final prefetch only slice, "
            f"shuffle and batch tensors already in memory ({', '.join(in_memory)}): nothing "
            "to decode or read for a prefetch to overlap"
        )
    if outcome.status is Status.PASS and cached:
        return Outcome.passed(
            "no prefetch before batch; the pipelines without a final prefetch end by caching "
            f"their batches in memory ({', '.join(cached)}): from the second epoch on each "
            "batch is read back as stored, with nothing to produce for a prefetch to overlap"
        )
    if outcome.status is Status.PASS and evaluated:
        return Outcome.passed(
            "no prefetch before batch; the pipelines without a final prefetch are read once, "
            f"by an evaluation loop after training ({', '.join(evaluated)}): a single pass "
            "with no training step for a prefetch to overlap"
        )
    if outcome.status is Status.PASS and injects:
        version = ".".join(str(x) for x in release or ())
        return Outcome.passed(
            f"no prefetch before batch; TensorFlow {version} injects a final prefetch itself "
            "(inject_prefetch, on by default since 2.12)"
        )
    return outcome


def _importer_uses(facts: Facts, pipelines: list[dict[str, Any]]) -> dict[int, str]:
    """Pipelines a function of one file returns (`return train, valid, n`) that a file of
    the run importing it consumes as they come (`train, valid, n = make_datasets()`, then
    `for x in train:`), by id, with where: the importer adds no prefetch, so they are
    judged as consumed. The files are linked by import as for EC522."""
    section = scripts_section(facts)
    run = (section.get("file_facts") or []) if not isinstance(section, Outcome) else []
    found: dict[int, str] = {}
    for pipeline in pipelines:
        returned = pipeline.get("returned_by")
        own = next((f for f in run if f.get("path") == pipeline.get("path")), None)
        if not isinstance(returned, dict) or own is None or pipeline.get("used_by"):
            continue
        for other in linked_files(own, run):
            for use in other.get("tf_imported_uses") or []:
                module, _, function = str(use.get("callee")).rpartition(".")
                if (
                    function == returned.get("function")
                    and imported_as(own, module.rsplit(".", 1)[-1])
                    and use.get("index") == returned.get("index")
                ):
                    found[id(pipeline)] = (
                        f"{use.get('used_by')} at {other.get('path')}:{use.get('line')}, "
                        "which imports it"
                    )
    return found


def _host_cost(kinds: set[str]) -> Optional[str]:
    """What Python in a map function costs, by what it calls; None when nothing is lost:
    `time.sleep` (and most I/O) release the GIL, so parallel calls of a sleeping
    py_function overlap (KNOWLEDGE.md section I; the tf.data guide measures exactly that)."""
    if "py_function" in kinds:
        if kinds - {"py_function"} == {"time.sleep"}:
            return None
        return (
            "tf.py_function/numpy_function runs Python under the GIL, so parallel calls "
            "take turns on one interpreter (only sleeps and I/O waits overlap)"
        )
    return (
        "outside tf.py_function, Python and NumPy code runs once, while tf.data traces the "
        "function: its result is frozen into the graph (a silent bug, not a speed-up)"
    )


@check(
    id="EC513",
    name="tf-data-host-bound-map",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="A tf.data map function runs Python, NumPy, PIL or tf.py_function on the host",
    message="{where}: `{code}` — the map function {function} calls {calls}: {why}",
    fix="rewrite {function} with TensorFlow ops (tf.io.decode_*, tf.image.*), or move the "
    "Python work offline (preprocess once, store TFRecords)",
    evidence=(GUIDE_HOST, "https://www.tensorflow.org/api_docs/python/tf/py_function"),
)
def tf_data_host_bound_map(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A `map` whose function (a lambda, or a function of the same file,
    followed into the helpers it calls) uses `tf.py_function`/`tf.numpy_function`,
    NumPy, PIL, OpenCV, `open()` or `time.sleep`. Wrapped in `py_function` that code runs
    in the Python interpreter under the GIL, so `num_parallel_calls` buys little (only
    the time a call spends sleeping or waiting for I/O overlaps: a `py_function` that only
    sleeps, as in the tf.data guide's simulated latency, is not flagged); not wrapped,
    NumPy and PIL run once while the function is traced and their result is baked into
    the graph (a silent bug rather than a slowdown). Through `functools.partial(f,
    is_training=...)` only the calls f makes outside its `if` branches count: the settings
    the partial binds choose the branches, and the source does not settle them.

    **Best practice.** Express the transformation with TensorFlow ops (`tf.io`,
    `tf.image`, `tf.strings`) so it runs in the tf.data C++ runtime in parallel, or do
    the Python work once offline.
    """

    def hits(pipeline: dict[str, Any]) -> list[Hit]:
        found: list[Hit] = []
        if _not_training(pipeline):
            return found
        for op in pipeline.get("operations") or []:
            host = op.get("host_calls") or []
            why = _host_cost({str(h.get("kind")) for h in host})
            if host and why:
                calls = ", ".join(
                    dict.fromkeys(f"{h.get('call')} (line {h.get('line')})" for h in host)
                )
                found.append(
                    _hit(
                        pipeline,
                        line=op.get("line"),
                        code=op.get("code"),
                        column=op.get("column"),
                        function=op.get("map_function") or "the map function",
                        calls=calls,
                        why=why,
                    )
                )
        return found

    return _judge(
        _items(facts, "tf_pipelines"), hits, "tf.data pipelines", "map functions use TF ops"
    )


@check(
    id="EC514",
    name="tf-data-cache-after-augmentation",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="cache() after a random augmentation freezes it (and caches the wrong stage)",
    message="{where}: `{code}` caches after the random augmentation {augmentation} (line "
    "{augmentation_line}): every epoch then sees the same augmented images",
    fix="move .cache() before the augmenting map: ds.map(decode, ...).cache().map(augment, "
    "num_parallel_calls=tf.data.AUTOTUNE)",
    evidence=(GUIDE_CACHE,),
)
def tf_data_cache_after_augmentation(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `ds.map(augment).cache()` where `augment` calls
    `tf.image.random_*` or `tf.random.*`: the first epoch's random draws are cached and
    replayed, so augmentation stops augmenting, while the expensive deterministic work
    before it is cached no better.

    **Best practice.** Cache right after the expensive deterministic steps (decode,
    resize) and apply random augmentation after the cache, in parallel.
    """

    def hits(pipeline: dict[str, Any]) -> list[Hit]:
        cached = pipeline.get("cache_after_random_augmentation")
        if not isinstance(cached, dict):
            return []
        return [
            _hit(
                pipeline,
                line=cached.get("line"),
                code=cached.get("code"),
                column=cached.get("column"),
                augmentation=cached.get("augmentation"),
                augmentation_line=cached.get("augmentation_line"),
            )
        ]

    return _judge(
        _items(facts, "tf_pipelines"), hits, "tf.data pipelines", "no cache after augmentation"
    )


@check(
    id="EC515",
    name="tf-data-files-without-interleave",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="Many files read one after another (no interleave / num_parallel_reads)",
    message="{where}: `{code}` — {why}: files are read sequentially, one at a time",
    fix="ds = tf.data.Dataset.from_tensor_slices(files).interleave(tf.data.TFRecordDataset, "
    "cycle_length=8, num_parallel_calls=tf.data.AUTOTUNE)   # or TFRecordDataset(files, "
    "num_parallel_reads=tf.data.AUTOTUNE)",
    evidence=(GUIDE_INTERLEAVE,),
)
def tf_data_files_without_interleave(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `tf.data.TFRecordDataset(list_of_files)` without
    `num_parallel_reads`, or `list_files(...).flat_map(...)`: the shards are read one
    after another, so a remote or slow disk's latency is paid in series. (`list_files`
    followed by a parallel `map` that reads one image per element is fine and is not
    flagged, nor is a reader over one file: a constant path, a list of one, or a variable
    named for one file, `TFRecordDataset(input_file)`, `TFRecordDataset(tfrecord_name)`,
    or one path built as a string, `os.path.join(root, "r{:02d}.tfrecords".format(i))`,
    an f-string.) `from_tensor_slices(files).flat_map(tf.data.TFRecordDataset)` (or a
    lambda or function of the file returning a reader) reads them one after another too,
    and so does a `flat_map` in the branch an `interleave` is not in (`if training:
    ds.interleave(...)` `else: ds.flat_map(...)`): found at the flat_map. A pipeline only
    read by a loop that counts or collects its elements as NumPy (a one-pass statistic or
    export, see EC512) is not training input and is not judged.

    **Best practice.** Read shards in parallel: `interleave(tf.data.TFRecordDataset,
    cycle_length=N, num_parallel_calls=tf.data.AUTOTUNE)` or
    `TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE)`.
    """

    def hits(pipeline: dict[str, Any]) -> list[Hit]:
        why = pipeline.get("many_files_without_interleave")
        if not why or pipeline.get("host_pass"):
            return []
        at = pipeline.get("many_files_at")
        if isinstance(at, dict):  # a reader built by a factory: at the reader, once
            return [
                _hit(
                    pipeline,
                    line=at.get("line"),
                    code=at.get("code"),
                    column=at.get("column"),
                    why=why,
                )
            ]
        return [_hit(pipeline, why=why)]

    return _judge(
        _items(facts, "tf_pipelines"), hits, "tf.data pipelines", "files read in parallel"
    )


def _keras(facts: Facts, kinds: tuple[str, ...]) -> Union[list[dict[str, Any]], Outcome]:
    items = _items(facts, "keras_calls")
    if isinstance(items, Outcome):
        return items
    return [i for i in items if i.get("kind") in kinds]


@check(
    id="EC516",
    name="keras-fit-generator",
    severity=Severity.LOW,
    category="scripts",
    summary="Deprecated Model.fit_generator / evaluate_generator / predict_generator",
    message="{where}: `{code}` uses {method}, deprecated since TensorFlow 2.1 and removed "
    "in Keras 3",
    fix="model.{replacement}(...) takes generators and Sequences directly   # at {where}",
    evidence=(KERAS_FIT_GENERATOR,),
)
def keras_fit_generator(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `model.fit_generator(gen, ...)` (and `evaluate_generator`,
    `predict_generator`): deprecated wrappers that only forward to `fit`; in Keras 3 they
    no longer exist, so the script breaks on upgrade, and they keep the Keras 2 era
    single-worker Python loading in place.

    **Best practice.** Call `fit`/`evaluate`/`predict` with the generator, a
    `keras.utils.Sequence`/`PyDataset`, or better a `tf.data.Dataset`.
    """

    def hits(call: dict[str, Any]) -> list[Hit]:
        method = str(call.get("kind"))
        return [_hit(call, method=method, replacement=method.replace("_generator", ""))]

    return _judge(
        _keras(facts, ("fit_generator", "evaluate_generator", "predict_generator")),
        hits,
        "Keras calls",
        "none deprecated",
    )


def _keras_major(facts: Facts) -> Union[int, Outcome]:
    """The Keras major version that `fit` comes from: keras itself, else tf.keras."""
    keras = module_version(facts, "keras")
    if isinstance(keras, Missing):
        return Outcome.unknown(keras.reason)
    if keras is not None:
        return keras[1].major
    tf = module_version(facts, "tensorflow")
    if isinstance(tf, Missing):
        return Outcome.unknown(tf.reason)
    if tf is None:
        return Outcome.unknown("neither keras nor tensorflow is installed here")
    return 2 if tf[1].release[:2] < (2, 16) else 3


# Arguments and methods Keras 3 removed from Model (keras.io/guides/migrating_to_keras_3:
# fit_generator is gone, and workers / use_multiprocessing / max_queue_size moved to
# PyDataset): a script that uses them is written for, and only runs on, Keras 2.
KERAS2_METHODS = {"fit_generator", "evaluate_generator", "predict_generator"}
KERAS2_ARGUMENTS = {"workers", "use_multiprocessing", "max_queue_size"}


def _keras2_files(calls: list[dict[str, Any]]) -> set[str]:
    """The files whose Keras calls only Keras 2 accepts."""
    return {
        str(c.get("path"))
        for c in calls
        if c.get("kind") in KERAS2_METHODS or set(c.get("args") or {}) & KERAS2_ARGUMENTS
    }


@check(
    id="EC517",
    name="keras-generator-default-workers",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="A Keras generator or Sequence is loaded by one worker (workers left at 1)",
    message="{where}: `{code}` feeds {input} to {method} with workers={workers}: batches are "
    "produced by a single thread, in turn with the model's steps",
    fix="use a keras.utils.Sequence and {method}(..., workers=8, use_multiprocessing=True, "
    "max_queue_size=32), or build a tf.data pipeline with map(num_parallel_calls=AUTOTUNE)",
    evidence=(KERAS_WORKERS, KERAS_THREADSAFE, KERAS_PYDATASET),
)
def keras_generator_default_workers(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Keras 2 `fit(generator_or_sequence)` (or `fit_generator`) with
    `workers` unset: one worker thread fills the queue (`max_queue_size=10`), so Python
    loading and augmentation run on one core. Plain Python generators are also not
    thread-safe, so raising `workers` on them is unsafe (keras-team/keras#8540); a
    `Sequence` is. Keras 3's `fit` takes no `workers` (they moved to `PyDataset`), so for
    Keras 3 the rule answers unknown.

    `evaluate` and `predict` given worker settings (Keras 2 reads them "for generator or
    keras.utils.Sequence input only") count too, as test loaders do for PyTorch: an
    evaluation loop over a Sequence waits on one loader thread the same way; so do
    `evaluate_generator` and `predict_generator`, the Keras 2 forms that take the same
    workers as `fit_generator`. A worker
    count written as a parameter of the enclosing function or method (`workers=workers`
    in library code's `def fit(self, generator, workers=1, ...)`) is read at the value
    the file's calls pass, or at its default. Worker settings forwarded beside a tf.data
    pipeline (`fit(data.repeat(count=epochs), workers=workers)`) say nothing of a
    generator: Keras ignores them for a dataset.

    **Best practice.** Wrap loading in a `keras.utils.Sequence` and pass `workers=N,
    use_multiprocessing=True`, or move to `tf.data` with parallel `map` and `prefetch`.
    """
    items = _keras(facts, WORKER_METHODS)
    if isinstance(items, Outcome):
        return items
    # the Keras 2 `*_generator` methods take a generator or Sequence by definition
    fed = [i for i in items if i.get("input") or i.get("kind") in KERAS2_METHODS]
    if not fed:
        return Outcome.passed("no Keras fit/evaluate/predict fed by a Python generator or Sequence")
    major = _keras_major(facts)
    if isinstance(major, Outcome):
        # the training machine's Keras is not known here: a script that only runs on
        # Keras 2 says so itself (fit_generator, workers= passed to fit)
        every = _keras(facts, WORKER_METHODS)
        keras2 = _keras2_files(every if isinstance(every, list) else items)
        fed = [i for i in fed if i.get("path") in keras2]
        if not fed:
            return major
    elif major >= 3:
        return Outcome.unknown(
            f"Keras {major}: fit() takes no workers; set them on PyDataset(workers=..., "
            "use_multiprocessing=...)"
        )
    hits = []
    for call in fed:
        workers = (call.get("args") or {}).get("workers")
        if call.get("opaque_kwargs") and workers is None:
            continue
        if workers is None or (workers.get("known") and workers.get("value") in (0, 1)):
            shown = "1 (the default)" if workers is None else str(workers.get("value"))
            what = {
                "generator": "a Python generator",
                "sequence": "a keras Sequence",
                "generator or Sequence": f"{call.get('input_code')} (a generator or Sequence: "
                "Keras 2 reads workers= for those inputs only)",
            }
            hits.append(
                _hit(
                    call,
                    input=what.get(str(call.get("input")), str(call.get("input_code"))),
                    method=call.get("kind"),
                    workers=shown,
                )
            )
    if not hits:
        return Outcome.passed(f"{len(fed)} generator-fed fit calls set workers")
    return Outcome.failed(*hits, reason=f"{len(hits)} generator-fed fit calls with one worker")


@check(
    id="EC518",
    name="keras-imagedatagenerator",
    severity=Severity.LOW,
    category="scripts",
    summary="Deprecated ImageDataGenerator / flow_from_*: serial Python image loading",
    message="{where}: `{code}` — {problem}",
    fix="{fix}",
    evidence=(
        KERAS_IDG,
        "https://www.tensorflow.org/api_docs/python/tf/keras/preprocessing/image/"
        "ImageDataGenerator#flow_from_dataframe (validate_filenames: 'Boolean, whether to "
        "validate image filenames in x_col. If True, invalid images will be ignored. "
        "Disabling this option can lead to speed-up in the execution of this function', "
        "default True)",
    ),
)
def keras_imagedatagenerator(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `ImageDataGenerator(...).flow_from_directory(...)`: deprecated,
    decodes and augments images in Python (PIL and NumPy), one batch at a time. Its
    `flow_from_dataframe` also checks every listed file up front
    (`validate_filenames=True` by default), which takes minutes on large datasets before
    the first step. A generator the file builds is reported once, where it is built; a
    `flow_from_*` call is reported only on a generator built out of sight.

    **Best practice.** `keras.utils.image_dataset_from_directory(...)` followed by
    preprocessing layers or `map(..., num_parallel_calls=tf.data.AUTOTUNE)` and
    `.prefetch(tf.data.AUTOTUNE)`; when keeping `flow_from_dataframe` on a large,
    trusted list, pass `validate_filenames=False`.
    """
    items = _keras(facts, ("ImageDataGenerator", "flow_from_directory", "flow_from_dataframe"))
    if isinstance(items, Outcome):
        return items
    if not items:
        return Outcome.passed("no ImageDataGenerator in the scripts")
    constructed = {i.get("path") for i in items if i.get("kind") == "ImageDataGenerator"}
    replace = (
        "ds = keras.utils.image_dataset_from_directory(DIR, image_size=(224, 224), "
        "batch_size=32).map(augment, num_parallel_calls=tf.data.AUTOTUNE)"
        ".prefetch(tf.data.AUTOTUNE)"
    )
    hits = []
    for item in items:
        kind = item.get("kind")
        if kind == "ImageDataGenerator" or (
            kind == "flow_from_directory" and item.get("path") not in constructed
        ):
            problem = (
                "ImageDataGenerator is deprecated and loads and augments images serially in Python"
            )
            hits.append(_hit(item, problem=problem, fix=replace))
        elif kind == "flow_from_dataframe":
            validate = item.get("validate_filenames")
            if item.get("path") in constructed or (item.get("opaque_kwargs") and validate is None):
                # the generator built in this file is already reported where it is built;
                # the filename check is a one-off cost before the first batch
                continue
            if validate is None or (validate.get("known") and validate.get("value") is True):
                hits.append(
                    _hit(
                        item,
                        problem="flow_from_dataframe validates every filename before the "
                        "first batch (validate_filenames defaults to True): slow on large "
                        "datasets",
                        fix="flow_from_dataframe(..., validate_filenames=False)   # or " + replace,
                    )
                )
    if not hits:
        return Outcome.passed("ImageDataGenerator calls validated off")
    return Outcome.failed(*hits, reason=f"{len(hits)} ImageDataGenerator uses")


@check(
    id="EC519",
    name="keras-layer-numpy",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="NumPy on the inputs inside a custom Keras layer's call()",
    message="{where}: `{code}` — {layer}.call runs {calls} on its inputs: outside the graph "
    "(eager only, on the host) or only once while tracing",
    fix="replace the NumPy calls in {layer}.call with tf.* / keras.ops equivalents "
    "(e.g. np.clip -> tf.clip_by_value)",
    evidence=(TF_LAYERS, "https://keras.io/guides/making_new_layers_and_models_via_subclassing/"),
)
def keras_layer_numpy(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `np.clip(inputs, ...)` (or `inputs.numpy()`) inside `call` of a
    `Layer`/`Model` subclass. Under `tf.function` (as `fit` runs it) NumPy cannot see
    tensor values: it fails or runs once at trace time; eagerly it copies the batch to
    the host and back every step. NumPy on constants (`np.float32(0.5)`) is harmless and
    is not flagged: only calls whose arguments derive from `call`'s parameters are.

    **Best practice.** Use TensorFlow / `keras.ops` operations inside `call`, so the layer
    runs on the GPU as part of the compiled step.
    """

    def hits(item: dict[str, Any]) -> list[Hit]:
        calls = ", ".join(
            dict.fromkeys(
                f"{c.get('call')} (line {c.get('line')})" for c in item.get("numpy_calls") or []
            )
        )
        return [_hit(item, layer=item.get("layer"), calls=calls)]

    return _judge(_keras(facts, ("layer_numpy",)), hits, "custom layers with NumPy", "none")


WORKER_METHODS = (
    "fit",
    "fit_generator",
    "predict",
    "predict_generator",
    "evaluate",
    "evaluate_generator",
)
KERAS_WINDOWS = (
    "https://github.com/keras-team/keras/issues/10842 ('fit_generator using "
    "use_multiprocessing=True does not work on Windows'; still reproduced with "
    "TensorFlow 2.6 in 2021)"
)
KERAS_NOT_THREAD_SAFE = (
    "https://github.com/keras-team/keras/issues/12650 (Keras: 'Your generator is NOT "
    "thread-safe. Keras requires a thread-safe generator when `use_multiprocessing=False, "
    "workers > 1`')"
)
KERAS_THREADSAFE_WRAPPER = (
    "https://github.com/keras-team/keras/issues/1638 (the threadsafe_iter / "
    "@threadsafe_generator wrapper that serialises next() with a threading.Lock)"
)
KERAS_GENERATOR_LOCK = (
    "https://github.com/keras-team/keras/pull/8662 (Keras 2.1.3 put a lock around the "
    "generator's next(): Python generators threw 'ValueError: generator already "
    "executing' with several worker threads)"
)


def _argument(call: dict[str, Any], name: str) -> tuple[bool, Any]:
    """(known, value) of a Keras call's argument; absent is known to be the default (None),
    unless a `**dict` that could not be expanded may carry it."""
    arg = (call.get("args") or {}).get(name)
    if arg is None:
        return not call.get("opaque_kwargs"), None
    return bool(arg.get("known")), arg.get("value")


def _calls_where(call: dict[str, Any]) -> str:
    return f"{call.get('path')}:{call.get('line')}"


@check(
    id="EC520",
    name="keras-multiprocessing-on-windows",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="Keras use_multiprocessing=True on Windows",
    message="{where}: `{code}` — {method}(use_multiprocessing=True) on Windows: without "
    "fork, each worker process is spawned, re-imports the script and must receive {input} "
    "by pickling; Keras multiprocessing is unreliable there (errors or hangs)",
    fix="{method}(..., workers={workers}, use_multiprocessing=False)   # threads, with a "
    "thread-safe keras.utils.Sequence; or feed a tf.data pipeline with "
    "map(num_parallel_calls=tf.data.AUTOTUNE)",
    evidence=(
        KERAS_WINDOWS,
        "https://github.com/keras-team/keras/issues/6582 (Keras' own multiprocessing tests "
        "failed on Windows)",
        "https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-"
        "start-methods (spawn is the only start method on Windows: arguments are pickled and "
        "the main module is imported again in each process)",
        KERAS_WORKERS,
    ),
)
def keras_multiprocessing_on_windows(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `model.fit(..., workers=8, use_multiprocessing=True)` (or
    `fit_generator`, `predict`, `evaluate`) on Windows. Windows cannot fork: every worker
    process is spawned, imports the training script again and receives the generator or
    Sequence by pickling. Python generators cannot be pickled at all, and Sequences
    holding open files, locks or large arrays either fail or are copied into every
    worker. Users report errors and hangs (keras-team/keras#10842, #6582); where it runs,
    start-up is slow.

    Judged on the platform of the machine envcheck runs on: unknown when the platform is
    not known, passed elsewhere.

    **Best practice.** On Windows use `use_multiprocessing=False` with a thread-safe
    `keras.utils.Sequence` and several `workers` (threads; NumPy and image decoding
    release the GIL), or move the loading to `tf.data` with parallel `map` and
    `prefetch`.
    """
    items = _keras(facts, WORKER_METHODS)
    if isinstance(items, Outcome):
        return items
    asking: list[dict[str, Any]] = []
    unknown: list[str] = []
    for call in items:
        known, value = _argument(call, "use_multiprocessing")
        if known and value is True:
            asking.append(call)
        elif not known:
            unknown.append(f"{_calls_where(call)}: use_multiprocessing not known from the source")
    if not asking and not unknown:
        return Outcome.passed("no Keras call asks for use_multiprocessing=True")
    system = facts.lookup("platform.system")
    if isinstance(system, Missing) or not isinstance(system, str):
        reason = system.reason if isinstance(system, Missing) else "platform not known"
        return Outcome.unknown(f"use_multiprocessing=True is a problem on Windows: {reason}")
    if system != "Windows":
        return Outcome.passed(f"{system}: Keras worker processes are forked")
    if not asking:
        return Outcome.unknown("; ".join(unknown))
    what = {"generator": "the Python generator", "sequence": "the Sequence"}
    workers = suggested_workers(facts)
    hits = [
        _hit(
            call,
            method=call.get("kind"),
            input=what.get(str(call.get("input")), f"`{call.get('input_code')}`"),
            workers=workers,
        )
        for call in asking
    ]
    return Outcome.failed(*hits, reason=f"{len(hits)} Keras calls with use_multiprocessing=True")


@check(
    id="EC521",
    name="keras-generator-not-thread-safe",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="A plain Python generator read by several Keras worker threads",
    message="{where}: `{code}` — {method} reads the generator {generator}() (line "
    "{generator_line}) from {workers} threads: a Python generator cannot be advanced by two "
    "threads at once ('generator already executing'), so Keras fails with 'Your generator "
    "is NOT thread-safe' or the workers take turns",
    fix="class Batches(keras.utils.Sequence): ...   # __len__, __getitem__(i) -> batch i; "
    "then {method}(Batches(...), workers={workers}) -- or keep {generator}() with workers=1",
    evidence=(
        KERAS_THREADSAFE,
        KERAS_NOT_THREAD_SAFE,
        KERAS_GENERATOR_LOCK,
        KERAS_THREADSAFE_WRAPPER,
        KERAS_WORKERS,
    ),
)
def keras_generator_not_thread_safe(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `model.fit(gen(), workers=4)` (or `fit_generator`, `predict`,
    `evaluate`) where `gen` is a generator function of the script, without
    `use_multiprocessing=True`; so is `validation_data=val_gen()` of `fit` /
    `fit_generator`, which Keras 2's `fit_generator` reads with `workers` threads too (and
    tf.keras' `fit` hands `workers` to its evaluation). Keras starts `workers` threads that
    all call `next()` on the same generator; Python generators are not thread-safe, so a
    second thread's `next()` raises "generator already executing". Later Keras 2 releases
    and tf.keras turn that into "Your generator is NOT thread-safe" (keras-team/keras#8540,
    #12650); the releases that put a lock around `next()` instead (Keras 2.1.3,
    keras-team/keras#8662) make the extra workers take turns, so they buy nothing.

    Not flagged: a `keras.utils.Sequence` (batches by index, safe with threads), a
    generator decorated with a thread-safe wrapper (`@threadsafe_generator`, whose
    iterator takes a lock around `next()`, keras-team/keras#1638), or one wrapped in
    such an iterator at the call. A lock taken *inside* the generator's body does not
    help. Unknown when the generator carries another decorator.

    **Best practice.** Rewrite the generator as a `keras.utils.Sequence` (or Keras 3
    `PyDataset`) and keep `workers`, or use `tf.data`; otherwise `workers=1`.
    """
    items = _keras(facts, WORKER_METHODS)
    if isinstance(items, Outcome):
        return items
    fed = [i for i in items if i.get("input") == "generator" or i.get("validation_generator")]
    if not fed:
        return Outcome.passed("no Keras call reads a Python generator of the scripts")

    def test(call: dict[str, Any]) -> Optional[Hit] | str:
        known, workers = _argument(call, "workers")
        if not known:
            return "workers not known from the source"
        if not (isinstance(workers, int) and workers > 1):
            return None
        known, multiprocessing = _argument(call, "use_multiprocessing")
        if not known:
            return "use_multiprocessing not known from the source"
        if multiprocessing is True:
            return None  # processes, not threads (EC520 judges that on Windows)
        generators = [call.get("generator") or {}] if call.get("input") == "generator" else []
        generators += [call["validation_generator"]] if call.get("validation_generator") else []
        unsure: Optional[str] = None
        for generator in generators:
            if generator.get("thread_safe"):
                continue
            if generator.get("out_of_sight"):
                name = generator.get("name")
                unsure = (
                    f"the generator {name}() is not in this file: its thread safety is not known"
                )
                continue
            if generator.get("decorators"):
                decorators = ", ".join(f"@{d}" for d in generator["decorators"])
                unsure = (
                    f"the generator is decorated with {decorators}: its thread safety is not known"
                )
                continue
            return _hit(
                call,
                method=call.get("kind"),
                generator=generator.get("name") or call.get("input_code"),
                generator_line=generator.get("line"),
                workers=workers,
            )
        return unsure

    return outcome_over(
        fed,
        test,
        _calls_where,
        "generators read by one thread, or made thread-safe",
        "generator-fed Keras calls",
    )
