"""tf.data map functions that visibly do only structural work: `lambda r: (r, 0)`,
`lambda features, _: features`, a synthetic input returning `tf.zeros(...)`, a function
that stacks, casts, slices or compares tensors, joins a path. Such a map costs next to
nothing per element, so running it on one core is no bottleneck (EC511 is not worth a
finding). The function may be a method of another class of the file (`instrument.crop`)
or a `partial` of one (map_functions.py). A function that decodes, resizes, augments,
calls Python, calls anything else, computes on the element's values (`x + 1`: the
tf.data guide's scalar map before batch) or is out of sight is not structural: it stays
judged. Arithmetic on a few scalars is bookkeeping and allowed: inside a comparison
(`tf.equal(n[-1] - n[0], k - 1)`) or an index (`x[start : start + n]`), or on sizes and
settings only (`tf.maximum(tf.shape(x)[0] - n, 0)`, a crop offset drawn with
`tf.random.uniform([])`): the element's data is followed from the parameters it fills
through the names assigned from them, and its sizes (`tf.shape(x)`) are not its data.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from envcheck.scripts.map_functions import MapTarget, map_targets, method_of

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker
    from envcheck.scripts.index import FileIndex
    from envcheck.scripts.values import Scope

# TensorFlow operations (after `tensorflow.`, `tensorflow.math.`, `tensorflow.compat.v1.`)
# that repack, select, cast, reshape, stack, build constants or compare: no decoding.
STRUCTURAL_TF = {
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "fill",
    "constant",
    "cast",
    "reshape",
    "stack",
    "unstack",
    "concat",
    "expand_dims",
    "squeeze",
    "identity",
    # checks the static shape and sets it: no data touched
    "ensure_shape",
    "transpose",
    "shape",
    "size",
    "rank",
    "gather",
    "one_hot",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "tuple",
    # joins a few strings (a directory and a file name): no decoding
    "strings.join",
}
# Comparisons: arithmetic in their arguments (`tf.equal(n[-1] - n[0], k - 1)`) is
# bookkeeping on a few scalars, not work on the element's data.
COMPARISONS = {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"}
BOOKKEEPING_TF = {"add", "subtract", "mod", "floormod"}
# Arithmetic that is bookkeeping when it reads no element data, only sizes and settings
# (`tf.maximum(tf.shape(x)[0] - n, 0)`, `tf.reduce_min([tf.shape(a)[0], tf.shape(b)[0]])`).
SCALAR_MATH = {
    *BOOKKEEPING_TF,
    "maximum",
    "minimum",
    "reduce_min",
    "reduce_max",
    "reduce_sum",  # of a few constants: class weights normalised to sum to one
    "multiply",
    "divide",
    "truediv",
    "floordiv",
    "abs",
}
# Arithmetic over an element's values, vectorised by TensorFlow: cheap next to a decode.
ELEMENTWISE_MATH = {
    *SCALAR_MATH,
    "reduce_mean",
    "reduce_std",
    "sqrt",
    "square",
    "pow",
    "exp",
    "log",
    "negative",
    "clip_by_value",
}
# A random number of shape [] (a crop's offset), not random values for the element.
RANDOM_SCALARS = {"random.uniform", "random_uniform"}
# What reads only an element's size or type, not its values.
SIZE_CALLS = {"shape", "size", "rank", "get_shape"}
SIZE_ATTRIBUTES = {"shape", "dtype", "ndim"}
TF_PREFIXES = ("tensorflow.compat.v1.", "tensorflow.math.", "tensorflow.")
# Logging inside the function: no per-element work worth a core.
TF_LOGGING = ("tensorflow.logging.", "tensorflow.compat.v1.logging.", "tensorflow.debugging.")
BUILTINS = {"range", "len", "list", "tuple", "dict", "zip", "enumerate", "isinstance", "int"}
# Container methods on the element's structure (`features.keys()`, `d.get("label")`).
CONTAINER_METHODS = {"keys", "values", "items", "get", "copy"}
# How a class count is named (`n_classes`, `num_classes`, `NB_CLASSES`, `self.classes`).
CLASS_COUNT = "classes"
# How an element's label is named (`label`, `labels`, `y`, `target`).
LABEL_NAMES = {"y", "target", "targets"}


def structural_only(
    walker: Walker,
    files: FileIndex,
    func: Optional[ast.expr],
    scope: Optional[Scope] = None,
    arithmetic: bool = False,
) -> bool:
    """Every body the map function may run (map_functions.py: a lambda, a function or
    method of this file, a name bound to one, a `partial` of one) makes only structural
    calls, followed into the file's own functions, and computes nothing on the element's
    values. `arithmetic`: elementwise arithmetic on the values is allowed too (`(x -
    127.5) / 127.5`, `x - tf.reduce_mean(x)`): no decoding, I/O or Python, a few vector
    operations over tensors already in memory."""
    todo = map_targets(walker, files, func, scope)
    if not todo:
        return False
    seen: set[tuple[int, frozenset[str]]] = set()
    while todo:
        target = todo.pop()
        key = (id(target.root), frozenset(target.element))
        if key in seen:
            continue
        seen.add(key)
        element = _element_names(target.root, target.element)
        free = _bookkeeping(walker, target.root)
        for node in ast.walk(target.root):
            data_math = isinstance(node, ast.BinOp) and _touches(node, element)
            if data_math and not arithmetic and id(node) not in free:
                return False
            if not isinstance(node, ast.Call):
                continue
            own = _own_call(walker, files, node, element)
            if own is not None:
                todo.append(own)
            elif arithmetic and _tf_name(walker, node) in ELEMENTWISE_MATH:
                continue
            elif not _structural_call(walker, node, id(node) in free, element):
                return False
    return True


def _bookkeeping(walker: Walker, root: ast.AST) -> set[int]:
    """ids of the nodes inside a comparison (`a == b`, `tf.equal(a, b)`) or an index
    (`x[start : start + n]`): arithmetic on a few scalars, not on the element's data."""
    inside: set[int] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.Compare) or (
            isinstance(node, ast.Call) and _tf_name(walker, node) in COMPARISONS
        ):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
        elif isinstance(node, ast.Subscript):
            inside.update(id(n) for n in ast.walk(node.slice))
    return inside


def _element_names(root: ast.AST, element: set[str]) -> set[str]:
    """The names holding the element's data in `root`: its parameters the element
    fills, and the names assigned from them (`n = features["n"]`), but not the sizes
    read off them (`length = tf.shape(x)[0]`)."""
    names = set(element)
    assignments = [n for n in ast.walk(root) if isinstance(n, (ast.Assign, ast.AugAssign))]
    loops = [n for n in ast.walk(root) if isinstance(n, (ast.For, ast.comprehension))]
    for _ in range(2):  # a name assigned from one assigned later in the walk order
        for node in assignments:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _touches(node.value, names):
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        for loop in loops:
            if _touches(loop.iter, names):
                names |= {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    return names


def _touches(node: ast.AST, element: set[str]) -> bool:
    """Whether `node` reads the element's data, not counting its sizes and types
    (`tf.shape(x)`, `len(x)`, `x.shape`, `x.dtype`)."""
    todo = [node]
    while todo:
        current = todo.pop()
        # a name read, not the target of a loop
        if (
            isinstance(current, ast.Name)
            and current.id in element
            and isinstance(current.ctx, ast.Load)
        ):
            return True
        if isinstance(current, ast.Attribute) and current.attr in SIZE_ATTRIBUTES:
            continue
        if isinstance(current, ast.Call) and _reads_size(current):
            continue
        todo.extend(ast.iter_child_nodes(current))
    return False


def _reads_size(node: ast.Call) -> bool:
    """`tf.shape(x)`, `tf.size(x)`, `tf.rank(x)`, `len(x)`: the element's size only."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "len"
    return isinstance(func, ast.Attribute) and func.attr in SIZE_CALLS


def _own_call(
    walker: Walker, files: FileIndex, node: ast.Call, element: set[str]
) -> Optional[MapTarget]:
    """The function or method of this file that `node` calls, with its parameters that
    receive the element's data (all of them when handed `*args`/`**kwargs`)."""
    if isinstance(node.func, ast.Name):
        function = files.functions.get(node.func.id)
    elif isinstance(node.func, ast.Attribute):
        function = method_of(walker, files, node.func, instances=False)
    else:
        function = None
    if function is None:
        return None
    arguments = function.args
    positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
    if isinstance(node.func, ast.Attribute) and positional[:1] in (["self"], ["cls"]):
        positional = positional[1:]
    everything = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    everything |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    starred = any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    )
    if starred:
        return MapTarget(function, everything - {"self", "cls"})
    filled: set[str] = set()
    for index, argument in enumerate(node.args):
        if _touches(argument, element):
            if index < len(positional):
                filled.add(positional[index])
            elif arguments.vararg is not None:
                filled.add(arguments.vararg.arg)
    for keyword in node.keywords:
        if keyword.arg is None or not _touches(keyword.value, element):
            continue
        if keyword.arg in everything:
            filled.add(keyword.arg)
        elif arguments.kwarg is not None:
            filled.add(arguments.kwarg.arg)
    return MapTarget(function, filled)


def _tf_name(walker: Walker, node: ast.Call) -> Optional[str]:
    """`tf.math.equal` -> "equal"; None for anything outside TensorFlow."""
    name = walker.qualname(node.func) or ""
    for prefix in TF_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return None


def _structural_call(walker: Walker, node: ast.Call, free: bool, element: set[str]) -> bool:
    """A call that repacks, casts, compares or logs; or one that computes on a few scalars
    (sizes, settings, an index drawn at random) and not on the element's data."""
    name = walker.qualname(node.func) or ""
    if name.startswith(TF_LOGGING):
        return True
    operation = _tf_name(walker, node)
    if operation in STRUCTURAL_TF or operation in COMPARISONS:
        return True
    if free and operation in BOOKKEEPING_TF:
        return True
    scalar = free or not any(
        _touches(a, element) for a in [*node.args, *(k.value for k in node.keywords)]
    )
    if scalar and (operation in SCALAR_MATH or _scalar_draw(node, operation)):
        return True
    if isinstance(node.func, ast.Name) and node.func.id in BUILTINS and name == node.func.id:
        return True
    if _class_encoding(node, element):
        return True
    return isinstance(node.func, ast.Attribute) and node.func.attr in CONTAINER_METHODS


def _class_encoding(node: ast.Call, element: set[str]) -> bool:
    """A call handed the element's label alone and the number of classes
    (`preprocess_label(label, n_classes)`, `to_categorical(y, num_classes=10)`), even one
    out of sight: it encodes class indices against the class count (a one-hot, a lookup),
    the work `tf.one_hot` does, which is structural too. Not one handed the features or a
    record (`parse(record, num_classes)` decodes)."""
    read = [a for a in [*node.args, *(k.value for k in node.keywords)] if _touches(a, element)]
    if not read or not all(isinstance(a, ast.Name) and _label(a.id) for a in read):
        return False
    keywords = [k.arg for k in node.keywords if k.arg is not None]
    if any(k.lower().endswith(CLASS_COUNT) for k in keywords):
        return True
    for argument in node.args:
        named = argument.attr if isinstance(argument, ast.Attribute) else None
        if isinstance(argument, ast.Name):
            named = argument.id
        if named is not None and named.lower().endswith(CLASS_COUNT):
            return True
    return False


def _label(name: str) -> bool:
    """`label`, `labels`, `class_label`, `y`, `target`: a name for the element's label."""
    return "label" in name.lower() or name.lower() in LABEL_NAMES


def _scalar_draw(node: ast.Call, operation: Optional[str]) -> bool:
    """`tf.random.uniform([], maxval=n)`: one random number (a crop's offset)."""
    if operation not in RANDOM_SCALARS:
        return False
    shape = (
        node.args[0]
        if node.args
        else next((k.value for k in node.keywords if k.arg == "shape"), None)
    )
    return isinstance(shape, (ast.List, ast.Tuple)) and not shape.elts
