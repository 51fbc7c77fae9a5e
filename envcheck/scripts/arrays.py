"""Datasets built over arrays a function was handed: `PredictDataset(X)` in `predict(self, X)`.

A scikit-learn-style estimator (`fit(X_train, y_train)`, `predict(X)`) wraps in-memory
arrays in a Dataset class of its own package, out of sight. The class is then unknown,
but its inputs are not: a parameter the function documents as an array (`X : np.ndarray`,
`X (torch.Tensor): ...`, `X : scipy.sparse.csr_matrix`) or tests as one
(`scipy.sparse.issparse(X)`, `isinstance(X, np.ndarray)`) is data already in memory, so
the loader's batches are slices of it (EC501/EC502 treat it as a TensorDataset). An array
documented (or named) as holding paths or file names is not: its samples are still read
from disk. A parameter annotated as arrays (`X: Optional[np.ndarray]`,
`X_test: Dict[str, np.ndarray]`) counts too, handed whole (`Dataset(**X_test)`) or
through a local dict of them (`load = {"X_tab": X_tab}`, `Dataset(**load)`).
"""

from __future__ import annotations

import ast
import re
from typing import Optional, Union

from envcheck.scripts.index import own_nodes

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# words of a documented parameter type that mean "an array in memory"
ARRAY_TYPE = re.compile(
    r"ndarray|np\.array|numpy array|array[-_ ]like|torch\.tensor|\btensor\b|dataframe|"
    r"csr_matrix|sparse matrix|\bmatrix\b",
    re.IGNORECASE,
)
# ... unless the array holds where the data is, not the data
LOCATION_WORDS = re.compile(r"path|file|filename|url|uri|director", re.IGNORECASE)
ARRAY_CLASSES = ("ndarray", "Tensor", "DataFrame", "Series", "spmatrix", "csr_matrix")
SPARSE_TESTS = ("issparse", "isspmatrix", "is_sparse")
# scikit-learn's input checks return NumPy arrays (`X = check_array(X)`)
ARRAY_CHECKS = ("check_array", "check_X_y")
# an estimator's training method (scikit-learn's protocol: `fit(X, y)`)
ESTIMATOR_FITS = ("fit", "partial_fit")
# modules whose functions convert a parameter into an array (`torch.tensor(X)`)
ARRAY_MODULES = {"torch", "np", "numpy"}
# keywords of a Dataset that hold normalisation statistics, not data
STATISTICS = {"mean", "std", "min", "max", "scale", "var"}


def wrapped_arrays(call: ast.Call, function: Optional[ast.AST]) -> Optional[str]:
    """Why the dataset `call` wraps in-memory arrays the function was handed
    ("X is documented as `torch.Tensor or scipy.sparse.csr_matrix`"), or None. Every
    positional argument must be such an array (or a constant)."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not call.args:
        return None
    parameters = {a.arg for a in (*function.args.posonlyargs, *function.args.args)}
    parameters |= {a.arg for a in function.args.kwonlyargs}
    reasons: list[str] = []
    for argument in call.args:
        if isinstance(argument, ast.Constant):
            continue
        if not isinstance(argument, ast.Name) or argument.id not in parameters:
            return None
        why = _documented(function, argument.id) or _tested(function, argument.id)
        if why is None:
            return None
        reasons.append(why)
    return "; ".join(reasons) if reasons else None


def fitted_arrays(call: ast.Call, function: Optional[ast.AST]) -> Optional[str]:
    """Why an in-memory dataset (`TensorDataset(X, y)`) serves the arrays an estimator's
    `fit(self, X, y)` was handed, or None: every positional argument is a parameter of
    `fit`, or a local made from parameters only (`X = torch.tensor(X).float()`): the
    scikit-learn protocol's feature rows (TabSurvey's base estimator)."""
    if not (
        isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        and function.name in ESTIMATOR_FITS
        and call.args
    ):
        return None
    every = (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
    derived = {a.arg for a in every} - {"self", "cls"}
    for node in own_nodes(function):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} - ARRAY_MODULES
        if names and names <= derived:
            derived.add(node.targets[0].id)
        else:
            derived.discard(node.targets[0].id)
    if not all(isinstance(a, ast.Name) and a.id in derived for a in call.args):
        return None
    return f"the arrays {function.name}() was handed ({ast.unparse(call)[:80]})"


def _documented(function: Function, name: str) -> Optional[str]:
    """The parameter's documented type when it is an in-memory array: numpydoc
    (`X : np.ndarray`) or Google style (`X (np.ndarray): ...`)."""
    if LOCATION_WORDS.search(name):
        return None
    lines = (ast.get_docstring(function) or "").splitlines()
    for number, line in enumerate(lines):
        text = line.strip()
        match = re.match(rf"{re.escape(name)}\s*(?::\s*(.+)|\((.+?)\)\s*:)", text)
        if not match:
            continue
        kind = (match.group(1) or match.group(2) or "").strip()
        described = " ".join([text, *lines[number + 1 : number + 3]])
        if ARRAY_TYPE.search(kind) and not LOCATION_WORDS.search(described):
            return f"{name} is documented as an array ({kind[:60]})"
    return None


def _tested(function: Function, name: str) -> Optional[str]:
    """The function tests the parameter as an array: `scipy.sparse.issparse(X)`,
    `isinstance(X, np.ndarray)`."""
    for node in own_nodes(function):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Name) and first.id == name):
            continue
        callee = ast.unparse(node.func)
        if callee.rsplit(".", 1)[-1] in ARRAY_CHECKS:
            return f"{name} is made an array ({callee}({name}))"
        if callee.rsplit(".", 1)[-1] in SPARSE_TESTS:
            return f"{name} is tested as a sparse matrix ({callee}({name}))"
        if callee == "isinstance" and len(node.args) == 2:
            kinds = ast.unparse(node.args[1])
            if any(k in kinds for k in ARRAY_CLASSES):
                return f"{name} is tested as an array (isinstance({name}, {kinds}))"
    return None


# an annotation naming an array type (`Optional[np.ndarray]`, `Dict[str, torch.Tensor]`)
ANNOTATED_ARRAY = re.compile(r"\bndarray\b|\bTensor\b|\bDataFrame\b|\bspmatrix\b|csr_matrix")


def annotated(function: Function, name: str) -> Optional[str]:
    """Why the parameter `name` holds arrays by its annotation (`X: Optional[np.ndarray]`,
    `X: Dict[str, np.ndarray]`), or None; one that may hold text (`str`, `Path`) is not."""
    if LOCATION_WORDS.search(name):
        return None
    arguments = function.args
    for parameter in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if parameter.arg != name or parameter.annotation is None:
            continue
        text = ast.unparse(parameter.annotation)
        values = re.sub(r"\b(Dict|dict|Mapping)\[str,", "[", text)  # str keys are names
        if ANNOTATED_ARRAY.search(text) and not re.search(r"\bstr\b|Path", values):
            return f"{name} is annotated {text}"
    return None


def keyword_arrays(call: ast.Call, function: Optional[ast.AST]) -> Optional[str]:
    """Why the dataset `call`, given only keywords, wraps arrays the function was handed
    (`Dataset(**X_test)` with `X_test: Dict[str, np.ndarray]`, or `Dataset(**load)` where
    `load = {"X_wide": X_wide}` and `load.update({"X_tab": X_tab})` over annotated arrays),
    or None."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or call.args:
        return None
    if not call.keywords:
        return None
    reasons: list[str] = []
    for keyword in call.keywords:
        value = keyword.value
        if isinstance(value, ast.Constant) or _numpy_result(function, value):
            continue  # `y=None`, `mean=self.X_mean` (np.mean of the data)
        if keyword.arg in STATISTICS and isinstance(value, (ast.Name, ast.Attribute)):
            continue  # normalisation constants: `std=self.X_std`
        if not isinstance(value, ast.Name):
            return None
        why = annotated(function, value.id)
        if why is None and keyword.arg is not None:
            why = _documented(function, value.id) or _tested(function, value.id)
        if why is None and keyword.arg is None:
            why = _dict_of_arrays(function, value.id)
        if why is None:
            return None
        reasons.append(why)
    return "; ".join(reasons) or None


def _numpy_result(function: Function, value: ast.expr) -> bool:
    """`self.X_mean` assigned in the function from a NumPy call (`np.mean(X, axis=0)`)."""
    if not isinstance(value, (ast.Name, ast.Attribute)):
        return False
    text = ast.unparse(value)
    return any(
        isinstance(node, ast.Assign)
        and any(ast.unparse(t) == text for t in node.targets)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func).startswith(("np.", "numpy."))
        for node in own_nodes(function)
    )


def _dict_of_arrays(function: Function, name: str) -> Optional[str]:
    """`name` is a local dict whose every value (dict literals assigned to it or merged
    with `name.update({...})`) is a parameter annotated as an array."""
    values: list[ast.expr] = []
    for node in own_nodes(function):
        stored = isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
        if stored and ast.unparse(node.value) == name:  # type: ignore[attr-defined]
            return None  # `load["X"] = ...`: not followed
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                if not isinstance(node.value, ast.Dict):
                    return None
                values.extend(v for v in node.value.values if v is not None)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
        ):
            if node.func.attr != "update" or len(node.args) != 1:
                return None
            given = node.args[0]
            if not isinstance(given, ast.Dict):
                return None
            values.extend(v for v in given.values if v is not None)
    reasons = []
    for value in values:
        why = annotated(function, value.id) if isinstance(value, ast.Name) else None
        if why is None:
            return None
        reasons.append(why)
    return f"{name} holds {'; '.join(reasons)}" if reasons else None
