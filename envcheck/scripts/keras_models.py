"""The Keras model a file trains and the precision it computes in, read from the source.

`observe_model` sees every call (KerasObserver hands them on) and `finish_model` sets
the file facts EC522 reads: `mixed_precision` (True, False, or None when a policy is set
to a value the source hides; `set_floatx("float16")` counts, its layers already run on
the tensor cores), `keras_layers` (Keras convolution/dense/recurrent/attention layers or a
`keras.applications` model, also one picked by name; a layer built through a
`functools.partial` alias too; not a lone `Dense` head of a width out of sight, on the
caller's model), `keras_toy` (only small Dense, LSTM/GRU, Conv1D or
attention layers, judged as PyTorch's toy MLPs and RNNs are: precision.small_layer;
Conv2D/Conv3D are never a toy's), `keras_unsized` (only such layers, an RNN, Conv1D or
attention among them, every width hidden: whether it is a toy the source does not
say), `keras_hub` (a TF-Hub
SavedModel as the model's body, under Dense layers only), `keras_floatx` (the dtype
`set_floatx` sets, when not float32) and `project_keras_model` (a model of the file's own
package that it compiles or fits). Nothing here judges.
"""

from __future__ import annotations

import ast
import sys
from typing import TYPE_CHECKING, Any, Optional

from envcheck.scripts.index import code_at, keyword_arg, module_nodes
from envcheck.scripts.precision import FEATURE_SCHEMA, TOY_WIDTH, constant_width, small_layer
from envcheck.scripts.values import resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

KERAS_ROOTS = ("keras.", "tensorflow.keras.", "tensorflow.python.keras.", "tf_keras.")
MIXED_POLICIES = ("mixed_float16", "mixed_bfloat16")
POLICY_SETTERS = (
    "mixed_precision.set_global_policy",
    "mixed_precision.experimental.set_policy",
    "mixed_precision.set_policy",
    "config.set_dtype_policy",  # Keras 3
)
# TF 1.14-2.3's graph rewrite: mixed precision without a Keras policy
GRAPH_REWRITE = ".enable_mixed_precision_graph_rewrite"
# Layers whose matmuls and convolutions mixed precision moves onto tensor cores.
COMPUTE_LAYERS = {
    f"{kind}{suffix}"
    for kind in ("Conv1D", "Conv2D", "Conv3D", "Convolution1D", "Convolution2D", "Convolution3D")
    for suffix in ("", "Transpose")
} | {
    "Dense",
    "EinsumDense",
    "SeparableConv1D",
    "SeparableConv2D",
    "DepthwiseConv1D",
    "DepthwiseConv2D",
    "LSTM",
    "GRU",
    "MultiHeadAttention",
}
# The layers whose width the toy test reads (the keyword that carries it): small ones on
# a short series are a toy's, as PyTorch's small MLPs and RNNs are (precision.small_layer).
# Conv2D/Conv3D stay a body whatever their width (a convnet over images).
SIZED = {
    "Dense": "units",
    "LSTM": "units",
    "GRU": "units",
    "SimpleRNN": "units",
    "Conv1D": "filters",
    "MultiHeadAttention": "num_heads",
}
# TensorFlow Hub's Keras layer: a restored SavedModel, whose float32 graph a Keras
# mixed-precision policy does not cast (tensorflow/hub#466).
HUB_LAYER = "tensorflow_hub.KerasLayer"
# keras.backend.set_floatx("float64"): the dtype Keras layers compute in without a policy.
FLOATX_SETTERS = ("backend.set_floatx", "config.set_floatx")
HALF_DTYPES = ("float16", "bfloat16")


def is_keras(name: str) -> bool:
    return name.startswith(KERAS_ROOTS)


def observe_model(walker: Walker, node: ast.Call, name: Optional[str]) -> bool:
    """Record the layers a call builds and the precision it sets; True when the call
    only sets the precision (nothing else to read in it)."""
    layer_name = partial_of(walker, node) or name
    if layer_name is not None and is_keras(layer_name):
        layer = layer_name.rsplit(".", 1)[-1]
        if layer in SIZED:
            walker.facts["keras_layers"] = True
            widths = walker.facts.setdefault("keras_dense_widths", [])
            widths.append(_layer_width(walker, node, layer))
            kernels = walker.facts.setdefault("keras_kernels", [])
            kernels.append(_kernel(walker, node) if layer == "Conv1D" else 1)
            walker.facts.setdefault("keras_sized", set()).add(layer)
            if layer != "Dense":
                walker.facts["keras_body"] = True  # its own RNN: a TF-Hub layer is no body
        elif layer in COMPUTE_LAYERS or ".applications." in layer_name:
            _body_layer(walker)
    if name is not None and is_keras(name):
        dtype = keyword_arg(node, "dtype")
        if dtype is not None and policy_name(dtype, walker) in MIXED_POLICIES:
            walker.facts["mixed_precision"] = True  # a per-layer policy
        elif dtype is not None and (
            (isinstance(dtype, ast.Attribute) and dtype.attr == "float32")
            or policy_name(dtype, walker) == "float32"
        ):
            walker.facts["keras_float32_layer"] = True  # an output kept in float32
        if name.endswith(FLOATX_SETTERS) and node.args:
            _floatx(walker, node.args[0])
    if _application_by_name(walker, node):
        _body_layer(walker)
    if name == HUB_LAYER and not walker.facts.get("keras_hub"):
        walker.facts["keras_hub"] = {
            "line": node.lineno,
            "code": code_at(walker.lines, node.lineno),
        }
    if name is not None and name.endswith(POLICY_SETTERS):
        given = node.args[0] if node.args else keyword_arg(node, "policy")
        policy = policy_name(given, walker) if given is not None else None
        if policy in MIXED_POLICIES:
            walker.facts["mixed_precision"] = True
        elif policy is None and walker.facts.get("mixed_precision") is not True:
            walker.facts["mixed_precision"] = None  # set, to a value the source hides
        return True
    if name is not None and name.endswith(GRAPH_REWRITE):
        walker.facts["mixed_precision"] = True
        return True
    return False


def finish_model(walker: Walker) -> None:
    """The model facts of the whole file (see the module docstring)."""
    walker.facts.setdefault("mixed_precision", False)
    walker.facts.setdefault("keras_layers", False)
    widths = walker.facts.pop("keras_dense_widths", [])
    kernels = walker.facts.pop("keras_kernels", [])
    body = walker.facts.get("keras_body") or walker.facts.get("keras_hub")
    pinned = walker.facts.pop("keras_float32_layer", False)
    if lone_head(widths, walker.facts.get("keras_sized", ()), pinned) and not body:
        walker.facts["keras_layers"] = False  # a head on the caller's model: not the model
    toy = walker.facts.get("keras_toy", True) and keras_toy(widths, kernels)
    walker.facts["keras_toy"] = toy
    walker.facts["keras_sized"] = sorted(walker.facts.get("keras_sized", ()))
    if walker.facts.pop("keras_body", False) or not walker.facts.get("keras_hub"):
        walker.facts.pop("keras_hub", None)  # the file's own layers are its body
    else:
        walker.facts["keras_toy"] = False  # its Dense layers are a head on the hub body
    walker.facts["project_keras_model"] = project_model(walker)
    heavy = walker.facts.pop("keras_heavy", False)
    # an RNN, 1-D convolution or attention model (Dense beside it) whose every width the
    # source hides (`LSTM(self.config.layers[0])`, set from a YAML file): toy or not, the
    # source cannot tell
    walker.facts["keras_unsized"] = bool(
        walker.facts.get("keras_layers")
        and set(walker.facts["keras_sized"]) - {"Dense"}
        and not heavy
        and all(w is None for w in widths)
    )


def lone_head(widths: list[Optional[int]], sized: Any, pinned: bool = False) -> bool:
    """The file's only Keras compute layer is one `Dense` of a width the source does not
    show (keras-cv's `linear_probe`: `Dense(num_classes)`; a DQN agent's dueling head
    `Dense(nb_action + 1)(model.layers[-2].output)`): an output head on a model the caller
    builds and hands in (not a TF-Hub body of the file's own). The model's compute is that
    body, out of sight, as it is for a file that only trains a model handed to it.
    `pinned`: a layer of the file is kept in float32 (`dtype="float32"`, the output of a
    model meant for a mixed policy): two such heads of unseen width (a classifier and
    an embedding map added by a library trainer) are heads too."""
    if set(sized) != {"Dense"} or any(w is not None for w in widths):
        return False
    return len(widths) == 1 or (pinned and len(widths) == 2)


def _layer_width(walker: Walker, node: ast.Call, layer: str) -> Optional[int]:
    """`Dense(10)`, `LSTM(units=HIDDEN)`, `Conv1D(64, 3)`, `MultiHeadAttention(num_heads=4,
    key_dim=8)` (4 x 8): the width the source shows, or None."""
    if layer == "MultiHeadAttention":
        heads, key_dim = keyword_arg(node, "num_heads"), keyword_arg(node, "key_dim")
        heads = node.args[0] if node.args else heads
        key_dim = node.args[1] if len(node.args) > 1 else key_dim
        sizes = [constant_width(n, walker.scope()) for n in (heads, key_dim)]
        return None if None in sizes else int(sizes[0] or 0) * int(sizes[1] or 0)
    units = node.args[0] if node.args else keyword_arg(node, SIZED[layer])
    return constant_width(units, walker.scope()) if units is not None else None


def _kernel(walker: Walker, node: ast.Call) -> Optional[int]:
    """`Conv1D(64, 3)`, `Conv1D(filters=64, kernel_size=5)`: the kernel size, or None."""
    kernel = node.args[1] if len(node.args) > 1 else keyword_arg(node, "kernel_size")
    return constant_width(kernel, walker.scope()) if kernel is not None else None


def partial_of(walker: Walker, node: ast.Call) -> Optional[str]:
    """`Conv2D(filters=32)` after `Conv2D = functools.partial(tf.keras.layers.Conv2D,
    padding="same")`, at module level or in the model-building function: the layer the
    alias builds, or None."""
    if not isinstance(node.func, ast.Name):
        return None
    bound = walker.scope().lookup(node.func.id)
    if not (isinstance(bound, ast.Call) and bound.args):
        return None
    if walker.qualname(bound.func) != "functools.partial":
        return None
    return walker.qualname(bound.args[0])


def keras_toy(widths: list[Optional[int]], kernels: Optional[list[Optional[int]]] = None) -> bool:
    """Whether Dense layers of these widths, in the order the file builds them, make a
    toy (the Iris classifier's Dense(10) -> Dense(3), an RL agent's Dense(32) ->
    Dense(16) -> Dense(action_dim)): each layer is the matrix from the width before it
    (the first one's input comes from the data) to its own, judged as PyTorch's
    `nn.Linear(before, width)` is (precision.small_layer)."""
    kernels = kernels or [1] * len(widths)
    # a Conv1D's matrix takes kernel_size x the width before it (`Conv1D(128, 7)` after
    # 128 channels: 896 inputs); a kernel the source hides is no toy's
    befores: list[Optional[int]] = [None]
    for width, kernel in zip(widths[:-1], kernels[1:], strict=True):
        befores.append(None if width is None else width * kernel if kernel else TOY_WIDTH + 1)
    return bool(widths) and all(
        small_layer([before, width]) is not None
        for before, width in zip(befores, widths, strict=True)
    )


def _body_layer(walker: Walker) -> None:
    """A convolution, an RNN, attention or a `keras.applications` model of the file's
    own: no toy, and the body a TF-Hub layer beside it does not make."""
    walker.facts["keras_layers"] = True
    walker.facts["keras_toy"] = False
    walker.facts["keras_body"] = True
    walker.facts["keras_heavy"] = True


def _application_by_name(walker: Walker, node: ast.Call) -> bool:
    """`getattr(keras.applications, args.model)(weights=None)`: a `keras.applications`
    model picked by name (horovod's synthetic benchmark; ResNet50 by default)."""
    picked = node.func
    if not (
        isinstance(picked, ast.Call)
        and isinstance(picked.func, ast.Name)
        and picked.func.id == "getattr"
        and picked.args
    ):
        return False
    owner = walker.qualname(picked.args[0]) or ""
    return is_keras(owner) and owner.endswith(".applications")


def _floatx(walker: Walker, node: ast.expr) -> None:
    """`keras.backend.set_floatx("float64")`: Keras layers compute in that dtype without
    a policy; float16 already runs on the tensor cores."""
    value = resolve(node, walker.scope())
    if not value.known:
        return
    if value.value in HALF_DTYPES:
        walker.facts["mixed_precision"] = True
    elif isinstance(value.value, str) and value.value != "float32":
        walker.facts["keras_floatx"] = value.value


def policy_name(node: ast.expr, walker: Walker) -> Any:
    """The policy's name (`"mixed_float16"`, also through `Policy("mixed_float16")` or a
    name bound to it), or None when the source hides it."""
    if isinstance(node, ast.Name):  # policy = mixed_precision.Policy("mixed_float16")
        assigned = walker.scope().lookup(node.id)
        if isinstance(assigned, ast.Call):
            node = assigned
    if isinstance(node, ast.Call) and node.args:  # mixed_precision.Policy("mixed_float16")
        node = node.args[0]
    value = resolve(node, walker.scope())
    return value.value if value.known else None


# Roots of libraries a model may come from that are not the project's (a model they build
# is a library's, judged by its name: model_names.py).
NOT_THE_PROJECT = {
    "tensorflow", "keras", "tf_keras", "numpy", "tensorflow_hub", "tensorflow_addons",
    "tensorflow_datasets", "transformers", "keras_cv", "keras_nlp", "keras_hub", "official",
    "absl", "sklearn", "scipy", "pandas", "tfimm", "tensorflow_models", "torch", "jax",
    "flax", "gym", "gymnasium", "stable_baselines3", "tf_agents", "ray", "optuna", "wandb",
    "mlflow", "cv2", "PIL", "matplotlib", "h5py",
}  # fmt: skip


def _first_party(module: Optional[str]) -> bool:
    """`from modules.models import ArcFaceModel`: an absolute import of the project's own
    package (arcface-tf2), as `from .models import ...` is; not the standard library's
    nor a known library's."""
    if not module:
        return False
    root = module.split(".")[0]
    stdlib = getattr(sys, "stdlib_module_names", ())
    return root not in NOT_THE_PROJECT and root not in stdlib and not root.startswith("_")


# Keywords of Keras `Model.fit` that a preprocessing pipeline's or an estimator's `fit`
# does not take: a `fit` with one of them trains a Keras model.
KERAS_FIT_KEYWORDS = {"epochs", "callbacks", "validation_data", "steps_per_epoch"}


def project_model(walker: Walker) -> Optional[dict[str, Any]]:
    """The first model the file builds with a function of its own package (`from .model
    import build_model` ... `model = build_model(...)`, also one picked from a dict of
    them: `builders = {"resnet20": resnet.resnet20}` ... `builders[name](...)`) and then
    compiles or fits here (`model.compile(...)`): a Keras model of the project, trained by
    this file, whose layers are in the package's other module, not handed in by a caller.
    None if none."""
    module = walker.module
    relative = {
        alias.asname or alias.name
        for node in module_nodes(module)
        if isinstance(node, ast.ImportFrom) and node.level > 0
        for alias in node.names
    }
    # by absolute import, only a model compiled here, or fitted with Keras' own keywords
    # (`epochs=`, `callbacks=`): `fit` alone may fit a preprocessing pipeline (AutoKeras's
    # `pipeline.fit((x, y))`), `compile` is a Keras model's
    absolute = _absolute_imports(module) - relative
    compiled = {
        ast.unparse(node.func.value)
        for node in module_nodes(module)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and (node.func.attr == "compile" or (node.func.attr == "fit" and _keras_fit_keywords(node)))
    }
    if not relative and not absolute:
        return None
    tables = _builder_tables(module, relative | absolute)
    built: dict[str, ast.Call] = {}  # `model`, `self.model` -> the call that built it
    for node in module_nodes(module):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            root = _builder_root(node.value.func, tables)
            if root is None:
                continue
            for target in node.targets:
                name = ast.unparse(target)
                if root in relative or (root in absolute and name in compiled):
                    built.setdefault(name, node.value)
    for node in module_nodes(module):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("compile", "fit")
            and ast.unparse(node.func.value) in built
        ):
            call = built[ast.unparse(node.func.value)]
            return {
                "line": call.lineno,
                "code": code_at(walker.lines, call.lineno),
                "callee": ast.unparse(call.func),
                # handed the schema of tabular features (`DeepFM(feature_columns=...)`):
                # a CTR/recommender model, one embedding table per feature
                "feature_schema": _feature_schema(call),
            }
    return None


def _feature_schema(call: ast.Call) -> Optional[str]:
    """The argument of a model's construction that hands it the schema of its tabular
    input's features (`feature_columns=feature_columns`, `DeepFM(feature_map)`), or None."""
    for keyword in call.keywords:
        if keyword.arg is not None and FEATURE_SCHEMA.search(keyword.arg):
            return keyword.arg
    for argument in call.args:
        if isinstance(argument, ast.Name) and FEATURE_SCHEMA.search(argument.id):
            return argument.id
    return None


def _absolute_imports(module: ast.Module) -> set[str]:
    """Names bound by absolute imports of the project's own package: `from src.model
    import build_model`, and modules imported whole (`import resnet_conv4`, also inside a
    function), not the standard library's nor a known library's."""
    names: set[str] = set()
    for node in module_nodes(module):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _first_party(node.module):
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if _first_party(alias.name)
            }
    return names


def _keras_fit_keywords(call: ast.Call) -> bool:
    """`model.fit(ds, epochs=10, callbacks=[...])`: Keras' fit, not an estimator's."""
    return any(k.arg in KERAS_FIT_KEYWORDS for k in call.keywords)


def _builder_tables(module: ast.Module, project: set[str]) -> dict[str, str]:
    """Names assigned a dict whose values are all functions of the project's package
    (`{"ResNet20": resnet_conv4.resnet20, "ResNet32": resnet_conv4.resnet32}`), each with
    the imported name those functions come from: picking one builds a model of the
    project."""
    tables: dict[str, str] = {}
    for node in module_nodes(module):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Dict)
            and node.value.values
        ):
            continue
        roots = {_name_root(value) for value in node.value.values}
        if len(roots) == 1 and next(iter(roots)) in project:
            tables[node.targets[0].id] = str(next(iter(roots)))
    return tables


def _builder_root(func: ast.expr, tables: dict[str, str]) -> Optional[str]:
    """The imported name a call's function comes from: `build_model` for
    `build_model(...)`, `resnet` for `resnet.resnet20(...)`, the dict's for
    `builders[name](...)` (`_builder_tables`)."""
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
        return tables.get(func.value.id)
    return _name_root(func)


def _name_root(node: ast.expr) -> Optional[str]:
    """`a` for `a`, `a.b.c`; None for anything else."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
