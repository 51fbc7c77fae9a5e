"""Keras observations, read from the source without running it.

`KerasObserver.call` sees every call in a file; it records Keras calls (`fit_generator`,
`fit` with its worker settings and, for a generator of the file, its decorators;
`predict`/`evaluate` given worker settings; not `fit` on a scikit-learn estimator or an
`ImageDataGenerator`, which train no model; `ImageDataGenerator`, the `flow_from_*`
loaders) and file facts: the first `fit` call (`keras_fit`) and the modules the file
imports (`imported_modules`); keras_models.py adds the model and its precision.
`finish` adds NumPy calls inside custom layers' `call`. Every observation is a plain
JSON dict with `path`, `line`, `column`, `code` and `function`; nothing here judges.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional

from envcheck.scripts.index import FileIndex, code_at, keyword_arg
from envcheck.scripts.keras_models import (
    KERAS_ROOTS,
    MIXED_POLICIES,
    finish_model,
    is_keras,
    observe_model,
    policy_name,
)
from envcheck.scripts.parameters import with_handed_values
from envcheck.scripts.values import keyword_values

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

SEQUENCE_BASES = {
    f"{root}{name}"
    for root in KERAS_ROOTS
    for name in ("utils.Sequence", "utils.PyDataset", "PyDataset", "utils.data_utils.Sequence")
}
LAYER_BASES = {
    f"{root}{name}"
    for root in KERAS_ROOTS
    for name in ("layers.Layer", "Layer", "Model", "models.Model", "layers.core.Layer")
}
GENERATOR_METHODS = ("fit_generator", "evaluate_generator", "predict_generator")
# Library trainers that train a Keras model with Model.fit, and the keyword (then the
# options class and its field) that carries their mixed-precision policy: TF-GNN's
# runner.KerasTrainer(..., options=KerasTrainerOptions(policy="mixed_float16")) calls
# tf.keras.mixed_precision.set_global_policy(policy) before fit, float32 without it.
FIT_TRAINERS = {"tensorflow_gnn.runner.KerasTrainer": ("options", "policy")}
FIT_ARGS = ("workers", "use_multiprocessing", "max_queue_size")


class KerasObserver:
    """The Keras family (see the module docstring)."""

    def call(self, walker: Walker, node: ast.Call, name: Optional[str]) -> None:
        observe_call(walker, node, name)

    def finish(self, walker: Walker) -> None:
        walker.facts.setdefault("mixed_precision", False)
        walker.facts.setdefault("keras_fit", None)
        finish_model(walker)
        # the modules the file imports, by their first name (`import train_lib`, `from
        # nets import Generator`) and the module a dotted path ends in (`from
        # data_process.make_dataset import f`: make_dataset; not the packages between,
        # `utils`, `common`, which name too many files): EC522 and EC512 link a file to
        # the files of the run it imports
        walker.facts["imported_modules"] = sorted(
            {
                part
                for v in walker.aliases.values()
                if v and not v.startswith(".")
                for part in {v.split(".")[0], *v.split(".")[-2:-1]}
            }
        )
        walker.report.keras_calls.extend(_layer_numpy(walker, walker.index()))


def observe_call(walker: Walker, node: ast.Call, name: Optional[str]) -> None:
    """Record Keras calls of interest and the mixed-precision policy."""
    if observe_model(walker, node, name):
        return
    if name in FIT_TRAINERS:
        _fit_trainer(walker, node, name)
        return
    if name is not None and image_generator(name):
        walker.report.keras_calls.append(_observation(walker, node, kind="ImageDataGenerator"))
        return
    func = _bound_method(walker, node.func)
    if func is None:
        return
    attr = func.attr
    # predict/evaluate only with worker settings (use_multiprocessing, or a **dict)
    worker_settings = any(k.arg in (*FIT_ARGS, None) for k in node.keywords)
    if attr == "train_on_batch" and uses_tensorflow(walker) and not own_method(walker, func):
        _trains_on_batches(walker, node)
        return
    if attr in (*GENERATOR_METHODS, "fit") and own_method(walker, func):
        return  # self.fit_generator(), self.fit() of a class of this file: not Keras's
    if attr == "fit" and _not_a_model(walker, func):
        return  # scaler.fit(X), datagen.fit(x): statistics, not training
    if (
        attr in GENERATOR_METHODS
        or (attr == "fit" and uses_tensorflow(walker))
        or (attr in ("predict", "evaluate") and worker_settings and uses_tensorflow(walker))
    ):
        values, opaque = keyword_values(node, walker.scope())
        # `workers=workers` in `def fit(self, ..., workers=1)`: its callers' value, or default
        with_handed_values(walker, node, values, FIT_ARGS)
        first = node.args[0] if node.args else keyword_arg(node, "generator")
        if first is None and attr in ("fit", "predict", "evaluate"):
            first = keyword_arg(node, "x")
        kind, definition = _input(walker, first)
        if (
            kind is None
            and attr != "fit_generator"
            and any(k.arg in FIT_ARGS for k in node.keywords)
            and not _dataset_input(walker, first)
        ):
            # Keras 2's fit/evaluate/predict use workers / use_multiprocessing "for
            # generator or keras.utils.Sequence input only": passing them says what the
            # input is
            kind = "generator or Sequence"
        observation = _observation(
            walker,
            node,
            kind=attr,
            args={k: values[k].to_json() for k in FIT_ARGS if k in values},
            opaque_kwargs=opaque,
            input=kind,
            input_code=ast.unparse(first) if first is not None else None,
        )
        if kind == "generator" and definition is not None:
            observation["generator"] = _generator(definition)
        elif kind == "generator":
            observation["generator"] = {"name": _callee_name(first), "out_of_sight": True}
        validation = keyword_arg(node, "validation_data") if attr in FITS else None
        if validation is not None:
            # Keras 2's fit_generator starts an enqueuer with `workers` threads for the
            # validation generator too, and tf.keras' fit hands `workers` to evaluate
            kind, definition = _input(walker, validation)
            if kind == "generator" and definition is not None:
                observation["validation_generator"] = _generator(definition)
            elif kind == "generator":
                name = _callee_name(validation)
                observation["validation_generator"] = {"name": name, "out_of_sight": True}
        walker.report.keras_calls.append(observation)
        if attr in ("fit", "fit_generator") and not walker.facts.get("keras_fit"):
            walker.facts["keras_fit"] = {
                k: observation[k] for k in ("line", "column", "code", "function")
            }
    elif attr == "flow_from_directory" and uses_tensorflow(walker):
        walker.report.keras_calls.append(_observation(walker, node, kind=attr))
    elif attr == "flow_from_dataframe" and uses_tensorflow(walker):
        values, opaque = keyword_values(node, walker.scope())
        validate = values.get("validate_filenames")
        walker.report.keras_calls.append(
            _observation(
                walker,
                node,
                kind=attr,
                validate_filenames=validate.to_json() if validate is not None else None,
                opaque_kwargs=opaque,
            )
        )


def _trains_on_batches(walker: Walker, node: ast.Call) -> None:
    """`disc.train_on_batch(x, y)`, the Keras GAN pattern: one optimizer step of a
    compiled model per call, training as `fit` is (no worker settings to read)."""
    if not walker.facts.get("keras_fit"):
        walker.facts["keras_fit"] = {
            k: v
            for k, v in _observation(walker, node).items()
            if k in ("line", "column", "code", "function")
        }


def _fit_trainer(walker: Walker, node: ast.Call, name: str) -> None:
    """A library trainer that runs Model.fit (FIT_TRAINERS): the file trains with fit, at
    the policy its options give (none given: float32)."""
    if not walker.facts.get("keras_fit"):
        walker.facts["keras_fit"] = {
            k: v
            for k, v in _observation(walker, node, trainer=name).items()
            if k in ("line", "column", "code", "function")
        }
    keyword, field_name = FIT_TRAINERS[name]
    options = keyword_arg(node, keyword)
    if isinstance(options, ast.Name):
        assigned = walker.scope().lookup(options.id)
        options = assigned if assigned is not None else options
    if options is None or (isinstance(options, ast.Constant) and options.value is None):
        return
    policy = keyword_arg(options, field_name) if isinstance(options, ast.Call) else options
    if policy is None or (isinstance(policy, ast.Constant) and policy.value is None):
        return  # options without a policy: float32
    value = policy_name(policy, walker)
    if value in MIXED_POLICIES:
        walker.facts["mixed_precision"] = True
    elif value is None and walker.facts.get("mixed_precision") is not True:
        walker.facts["mixed_precision"] = None  # set, to a value the source hides


def _bound_method(walker: Walker, func: ast.expr) -> Optional[ast.Attribute]:
    """`model.fit` in `model.fit(...)`, or in `fit_fn = self.model.fit` ... `fit_fn(...)`
    (a bound method kept in a local name; picked by a version test, `fit = model.
    fit_generator if IS_TF_1 else model.fit`, the `fit` of current Keras); None for any
    other callee."""
    if isinstance(func, ast.Name):
        assigned = walker.scope().lookup(func.id)
        choices = (
            [assigned.body, assigned.orelse] if isinstance(assigned, ast.IfExp) else [assigned]
        )
        methods = [
            c
            for c in choices
            if isinstance(c, ast.Attribute) and c.attr in (*GENERATOR_METHODS, "fit")
        ]
        if len(methods) != len(choices):
            return None
        return next((m for m in methods if m.attr == "fit"), methods[0] if methods else None)
    return func if isinstance(func, ast.Attribute) else None


# `fit` on objects built by these trains no Keras model: scikit-learn and gradient
# boosting estimators, and Keras's own ImageDataGenerator (whose `fit` computes the
# featurewise mean and std of a sample).
NOT_MODEL_ROOTS = ("sklearn.", "xgboost.", "lightgbm.", "catboost.", "statsmodels.")
NOT_MODEL_NAMES = (".ImageDataGenerator",)


def _not_a_model(walker: Walker, func: ast.Attribute) -> bool:
    """Whether `x.fit` is called on a name the file builds with a known non-Keras
    constructor (`scaler = StandardScaler()`, `datagen = ImageDataGenerator(...)`)."""
    if not isinstance(func.value, ast.Name):
        return False
    built = walker.scope().lookup(func.value.id)
    if not isinstance(built, ast.Call):
        return False
    name = walker.qualname(built.func) or ""
    return name.startswith(NOT_MODEL_ROOTS) or image_generator(name)


def image_generator(name: str) -> bool:
    """Keras's ImageDataGenerator, also from the standalone `keras_preprocessing` package
    (`from keras_preprocessing.image import ImageDataGenerator`) that Keras 2 re-exported."""
    return (is_keras(name) or name.startswith("keras_preprocessing.")) and name.endswith(
        NOT_MODEL_NAMES
    )


def own_method(walker: Walker, func: ast.Attribute) -> bool:
    """Whether `self.<func.attr>` calls a method that a class of this file defines and
    that is no Keras model's override (DeepChem's own `fit_generator`)."""
    if not (isinstance(func.value, ast.Name) and func.value.id == "self"):
        return False
    index = walker.index()
    keras_classes = index.derived_from(LAYER_BASES)
    return any(
        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == func.attr
        for cls in index.class_nodes
        if cls.name not in keras_classes
        for item in cls.body
    )


def uses_tensorflow(walker: Walker) -> bool:
    """Whether the file imports TensorFlow or Keras (the only files with their calls), or
    takes Keras from a loader of its project's (csbdeep's `keras = keras_import()`, which
    imports `tensorflow.keras` or standalone keras, whichever is installed)."""
    return any(
        v.split(".")[0] in ("keras", "tensorflow", "tf_keras") for v in walker.aliases.values()
    ) or any(_keras_loaded(n) for n in walker.module.body)


def _keras_loaded(statement: ast.stmt) -> bool:
    """`keras = keras_import()` at the top of the module: the name `keras` bound to what an
    imported loader named for Keras returns."""
    return (
        isinstance(statement, ast.Assign)
        and [ast.unparse(t) for t in statement.targets] == ["keras"]
        and isinstance(statement.value, ast.Call)
        and "keras" in ast.unparse(statement.value.func).lower()
    )


def _observation(
    walker: Walker, node: ast.AST, function: Optional[str] = None, **extra: Any
) -> dict[str, Any]:
    line = getattr(node, "lineno", 0)
    if function is None:
        current = walker.functions[-1] if walker.functions else None
        function = getattr(current, "name", None)
    return {
        "path": walker.report.path,
        "line": line,
        "column": getattr(node, "col_offset", 0) + 1,
        "code": code_at(walker.lines, line),
        "function": function,
        **extra,
    }


def _input(walker: Walker, node: Optional[ast.expr]) -> tuple[Optional[str], Optional[ast.AST]]:
    """ "generator" (a call to a function of this file that yields, or to an imported
    one named `*generator*`), "sequence" (an
    instance of a keras Sequence/PyDataset subclass of this file), or None; with the
    function or class that defines it."""
    if isinstance(node, ast.Name):
        assigned = walker.scope().lookup(node.id)
        node = assigned if assigned is not None else node
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None, None
    index = walker.index()
    if node.func.id in index.generators:
        return "generator", index.functions[node.func.id]
    if node.func.id in index.derived_from(SEQUENCE_BASES):
        return "sequence", index.classes.get(node.func.id)
    name = walker.qualname(node.func) or node.func.id
    if (
        node.func.id not in index.functions
        and "generator" in node.func.id.lower()
        and not name.startswith(("keras.", "tensorflow.", "numpy."))
    ):
        # image_segmentation_generator(...) imported from the project: a Python
        # generator out of sight (its thread safety is not known)
        return "generator", None
    return None, None


# Methods of tf.data.Dataset that return a Dataset (`ds.batch(32).repeat()`).
DATASET_METHODS = (
    "repeat", "batch", "padded_batch", "prefetch", "shuffle", "cache", "with_options",
    "unbatch", "interleave", "take", "skip",
)  # fmt: skip


def _dataset_input(walker: Walker, node: Optional[ast.expr]) -> bool:
    """The input is a tf.data pipeline: a Dataset method's result (deeptables'
    `train_data = self._get_train_data(X, y).repeat(count=epochs)`), by the expression or
    by any assignment of the name in its function; `workers=` forwarded beside it (a
    wrapper's own `fit(..., workers=1)`) does not make it a generator, and Keras ignores
    the worker settings for a dataset."""
    if isinstance(node, ast.Name):
        owner: ast.AST = walker.functions[-1] if walker.functions else walker.module
        values = _assigned_values(owner).get(node.id, [])
        return any(_dataset_input(walker, v) for v in values if not isinstance(v, ast.Name))
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in DATASET_METHODS
    )


def _assigned_values(owner: ast.AST) -> dict[str, list[ast.expr]]:
    """The values assigned to each plain name anywhere in `owner` (`x = ...`, `x = y =
    ...`), in `ast.walk` order; listed once per function or module, not once per `fit`
    (N fits in one file walked it N times)."""
    cached: Optional[dict[str, list[ast.expr]]] = owner.__dict__.get("_envcheck_keras_assigned")
    if cached is None:
        cached = {}
        for a in ast.walk(owner):
            if isinstance(a, ast.Assign):
                for name in dict.fromkeys(t.id for t in a.targets if isinstance(t, ast.Name)):
                    cached.setdefault(name, []).append(a.value)
        setattr(owner, "_envcheck_keras_assigned", cached)  # noqa: B010 - AST nodes have no slot
    return cached


def _callee_name(node: Optional[ast.expr]) -> Optional[str]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return ast.unparse(node) if node is not None else None


FITS = ("fit", "fit_generator")  # the calls taking validation_data
THREAD_SAFE_WORDS = ("threadsafe", "thread_safe", "synchronized")


def _generator(function: ast.AST) -> dict[str, Any]:
    """A generator function's name, line and decorators, and the decorator that makes
    it thread-safe (`@threadsafe_generator`: returns an iterator whose `next()` takes a
    lock), if any. A lock taken inside the body does not count: a second thread's
    `next()` fails with "generator already executing" before the body runs."""
    decorators = [ast.unparse(d) for d in getattr(function, "decorator_list", [])]
    safe = next(
        (f"@{d}" for d in decorators if any(w in d.lower() for w in THREAD_SAFE_WORDS)),
        None,
    )
    return {
        "name": getattr(function, "name", None),
        "line": getattr(function, "lineno", None),
        "decorators": decorators,
        "thread_safe": safe,
    }


# -- NumPy in custom layers ------------------------------------------------------------------


def _layer_numpy(walker: Walker, files: FileIndex) -> list[dict[str, Any]]:
    """NumPy calls on the inputs inside `call` of Layer/Model subclasses of this file."""
    found: list[dict[str, Any]] = []
    for name in sorted(files.derived_from(LAYER_BASES)):
        cls = files.classes[name]
        for method in cls.body:
            if not (isinstance(method, ast.FunctionDef) and method.name == "call"):
                continue
            tainted = {a.arg for a in [*method.args.args, *method.args.kwonlyargs]} - {"self"}
            if method.args.vararg:
                tainted.add(method.args.vararg.arg)
            calls: list[dict[str, Any]] = []
            for node in _in_order(method):
                if isinstance(node, ast.Assign) and _mentions(node.value, tainted):
                    for target in node.targets:
                        tainted |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                if not isinstance(node, ast.Call):
                    continue
                qualified = walker.qualname(node.func) or ""
                on_inputs = _mentions(node, tainted)
                numpy_method = isinstance(node.func, ast.Attribute) and node.func.attr == "numpy"
                if (qualified.startswith("numpy.") and on_inputs) or (numpy_method and on_inputs):
                    calls.append(
                        {
                            "line": node.lineno,
                            "call": ast.unparse(node.func),
                            "code": code_at(walker.lines, node.lineno),
                        }
                    )
            if calls:
                first = min(calls, key=lambda c: c["line"])
                record = _observation(walker, method, function="call", kind="layer_numpy")
                record.update(
                    line=first["line"],
                    code=first["code"],
                    column=1
                    + len(walker.lines[first["line"] - 1])
                    - len(walker.lines[first["line"] - 1].lstrip()),
                    layer=name,
                    numpy_calls=calls,
                )
                found.append(record)
    return found


def _in_order(root: ast.AST) -> list[ast.AST]:
    nodes = [n for n in ast.walk(root) if hasattr(n, "lineno")]
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))
