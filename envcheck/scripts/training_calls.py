"""Calls that look like training or device placement but are not what they seem.

`preprocessing_fit` tells a data transform's `fit` (an encoder, a scaler) from a model's;
`base_init` spots a class handing its constructor arguments on to its base class. Both read
one call node, never run anything; device.py uses them to decide whether and where a file
trains.
"""

from __future__ import annotations

import ast

# scikit-learn-style data transforms: their fit() learns a mapping, it trains no model;
# and estimators (scikit-learn's, SageMaker's `estimator.fit(inputs=...)`, which starts a
# job elsewhere): no GPU training in this process
PREPROCESSORS = (
    "encoder",
    "scaler",
    "normalizer",
    "normaliser",
    "imputer",
    "vectorizer",
    "estimator",
)


def preprocessing_fit(receiver: ast.expr) -> bool:
    """Whether `receiver.fit(...)` fits a data transform (`encoder`, `scaler`, ...,
    named so, or built from a class named so: `LabelEncoder().fit`) or an estimator
    (`huggingface_estimator.fit(...)`), not a model of this process; an `autoencoder` is
    a model."""
    if isinstance(receiver, ast.Subscript):  # self._scalers[name].fit(column)
        receiver = receiver.value
    if isinstance(receiver, ast.Call):
        receiver = receiver.func
    name = receiver.attr if isinstance(receiver, ast.Attribute) else None
    if isinstance(receiver, ast.Name):
        name = receiver.id
    if name is None:
        return False
    tail = name.lower().rstrip("s_0123456789")
    return tail.endswith(PREPROCESSORS) and not tail.endswith("autoencoder")


def base_init(node: ast.Call) -> bool:
    """`super().__init__(device=device)` or `Base.__init__(self, device=device)`: the class
    hands its device on to the base class that places the model."""
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr == "__init__"
