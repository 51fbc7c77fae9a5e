"""Datasets built over arrays a function was handed: `PredictDataset(X)` in `predict(self, X)`.

A scikit-learn-style estimator (`fit(X_train, y_train)`, `predict(X)`) wraps in-memory
arrays in a Dataset class of its own package, out of sight. The class is then unknown,
but its inputs are not: a parameter the function documents as an array (`X : np.ndarray`,
`X (torch.Tensor): ...`, `X : scipy.sparse.csr_matrix`) or tests as one
(`scipy.sparse.issparse(X)`, `isinstance(X, np.ndarray)`) is data already in memory, so
the loader's batches are slices of it (EC501/EC502 treat it as a TensorDataset). An array
documented (or named) as holding paths or file names is not: its samples are still read
from disk.
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
        if callee.rsplit(".", 1)[-1] in SPARSE_TESTS:
            return f"{name} is tested as a sparse matrix ({callee}({name}))"
        if callee == "isinstance" and len(node.args) == 2:
            kinds = ast.unparse(node.args[1])
            if any(k in kinds for k in ARRAY_CLASSES):
                return f"{name} is tested as an array (isinstance({name}, {kinds}))"
    return None
