"""Calls that look like training or device placement but are not what they seem.

`preprocessing_fit` tells a data transform's `fit` (an encoder, a scaler) from a model's;
`base_init` spots a class handing its constructor arguments on to its base class;
`hidden_backward` spots a backward pass and optimizer step done by a wrapper the loss is
handed to; `outside_step` a training step run by an object of another file; `updates_parameters`
whether a file's backward passes feed an update at all. They read
one call node, never run anything; device.py and torch_loops.py use
them to decide whether and where a file trains.
"""

from __future__ import annotations

import ast

from envcheck.scripts.index import FileIndex, module_nodes
from envcheck.scripts.texts import text

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


def hidden_backward(node: ast.Call) -> bool:
    """`loss_scaler(loss, optimizer, clip_grad=..., parameters=...)` (timm's NativeScaler
    in DeiT, MAE, Swin, ConvNeXt), `amp_backward(loss, self.optimizer)`: the loss and the
    optimizer handed to one callable, which runs the backward pass and the step."""
    if not node.args or not isinstance(node.args[0], (ast.Name, ast.Attribute, ast.Subscript)):
        return False
    if len(node.args) + len(node.keywords) < 2:
        return False
    first = text(node.args[0]).lower()
    loss = "loss" in first.rsplit(".", 1)[-1] and not any(
        word in first for word in ("scaler", "fn", "func", "criterion", "meter")
    )
    if not loss:
        return False
    rest = [text(a).lower() for a in node.args[1:]]
    rest += [f"{k.arg}={text(k.value)}".lower() for k in node.keywords if k.arg]
    func = text(node.func).lower()
    if "optimizer" in func or "log" in func or "print" in func:
        return False  # optimizer.step(closure), logger.log(loss, optimizer=...)
    return any("optimizer" in t for t in rest)


# Methods of a project's trainer or model object that run one training step
STEP_METHODS = ("train_step", "training_step", "train_one_step", "optimize_parameters")


def outside_step(index: FileIndex, node: ast.Call) -> bool:
    """`trainer.train_step(...)`, `model.optimize_parameters()` (CycleGAN): a training
    step of an object whose class is not in this file (`index`)."""
    func = node.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in STEP_METHODS
        and not (isinstance(func.value, ast.Name) and func.value.id in ("self", "super"))
        and func.attr not in index.functions
        and not any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == func.attr
            for cls in index.class_nodes
            for item in cls.body
        )
    )


def updates_parameters(module: ast.Module) -> bool:
    """Whether the file updates parameters anywhere: an optimizer built or stepped
    (`torch.optim.Adam(...)`, `opt.step()`, `scaler.step(opt)`), or a hand-written update
    from the gradients (`p -= lr * p.grad`, `p.data.sub_(lr * p.grad)`). A `backward()`
    in a file that does none of these computes gradients for something else: FGSM's
    gradient with respect to the input, a profiler timing forward and backward."""
    for node in module_nodes(module):
        if isinstance(node, ast.Call):
            func = node.func
            written = text(func).lower()
            if "optim" in written or "optimizer" in written:
                return True
            method = func.attr if isinstance(func, ast.Attribute) else ""
            receiver = text(func.value).lower() if isinstance(func, ast.Attribute) else ""
            if method == "step" and "env" not in receiver:
                return True  # an optimizer's or scaler's step, not an environment's
            if method in ("sub_", "add_", "copy_") and "grad" in text(node).lower():
                return True
        if isinstance(node, ast.AugAssign) and "grad" in text(node.value).lower():
            return True
    return False
