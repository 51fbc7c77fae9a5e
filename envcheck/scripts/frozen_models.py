"""Models a PyTorch script builds but does not train: frozen feature extractors.

A linear evaluation builds a pretrained encoder, puts it in eval mode, runs it once over
the data to compute features, then trains a linear classifier on those features
(SimCLR's `linear_evaluation.py`: `simclr_model = SimCLR(get_resnet(...), ...)`,
`simclr_model.eval()`, an optimizer over `model.parameters()` only). The convolutions of
the encoder are no part of the training step: the kind of the model trained (what
EC506-EC508 judge) is the classifier's. `frozen_builds` returns the calls that build
such a model, so that precision.py reads the model's kind without them.

A model is frozen only when the source shows all of it: every optimizer of the file is a
`torch.optim` class over `X.parameters()` of a name (the models trained), the model is
put in eval mode (`model.eval()`) and never back in training mode, no optimizer's model is
built from it, and no loop that runs a backward pass uses it (directly, or through the
parameter of the function defining that loop that it is passed as). A teacher run in every
step of a distillation loop is part of the step, and stays. Anything less: nothing is
frozen.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Optional

from envcheck.scripts.index import module_nodes, own_nodes

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

# A torch.optim optimizer class (not a scheduler of torch.optim.lr_scheduler).
OPTIMIZER = re.compile(r"^torch\.optim\.[A-Z]\w*$")
# Methods that move or load a model without running it.
HANDLING = {"to", "cuda", "cpu", "eval", "load_state_dict", "state_dict", "parameters"}


def frozen_builds(walker: Walker) -> set[int]:
    """The ids of the calls that build a model the file keeps frozen (see above)."""
    text = "\n".join(walker.lines)
    if ".eval()" not in text or "backward" not in text:
        return set()  # a look at the text first
    trained = _trained(walker)
    if not trained:
        return set()
    module = walker.module
    builds, aliased = _builds(module)
    barred = trained | aliased | _step_names(module)
    frozen: set[int] = set()
    for name in _evaluated(module) - barred:
        chain: set[str] = set()
        calls = _built_from(name, builds, barred, chain)
        if calls is None:
            continue
        if any(_passed(c, inner) for n in trained for c in builds.get(n, []) for inner in chain):
            continue  # the trained model is built from it (`Classifier(encoder)`)
        frozen |= {id(c) for c in calls}
    return frozen


def _trained(walker: Walker) -> set[str]:
    """The names whose parameters the file's optimizers take, or an empty set when an
    optimizer takes anything else (a parameter list, a project's optimizer)."""
    names: set[str] = set()
    for node in module_nodes(walker.module):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr == "parameters":
            owner = node.func.value
            if isinstance(owner, ast.Name):
                names.add(owner.id)  # parameters taken by anything: trained, to be safe
            continue
        name = walker.qualname(node.func) or ""
        if not OPTIMIZER.match(name):
            continue
        given = node.args[0] if node.args else None
        given = next((k.value for k in node.keywords if k.arg == "params"), given)
        if not (
            isinstance(given, ast.Call)
            and isinstance(given.func, ast.Attribute)
            and given.func.attr == "parameters"
            and isinstance(given.func.value, ast.Name)
        ):
            return set()
    return names if _optimizers(walker) else set()


def _optimizers(walker: Walker) -> bool:
    return any(
        isinstance(n, ast.Call) and OPTIMIZER.match(walker.qualname(n.func) or "")
        for n in module_nodes(walker.module)
    )


def _builds(module: ast.Module) -> tuple[dict[str, list[ast.Call]], set[str]]:
    """name -> the calls assigned to it (`encoder = get_resnet(...)`), not the moves of
    the model itself (`model = model.to(device)`); and the names aliased (`net = model`:
    the model goes by another name too)."""
    found: dict[str, list[ast.Call]] = {}
    aliased: set[str] = set()
    for node in module_nodes(module):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if isinstance(value, ast.Name):
            aliased.add(value.id)
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
            continue
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in HANDLING:
            continue
        found.setdefault(target.id, []).append(value)
    return found, aliased


def _evaluated(module: ast.Module) -> set[str]:
    """Names put in eval mode (`model.eval()`) and never in training mode."""
    modes: dict[str, set[str]] = {}
    for node in module_nodes(module):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("eval", "train", "requires_grad_")
            and isinstance(node.func.value, ast.Name)
        ):
            mode = node.func.attr
            if mode == "requires_grad_":
                first = node.args[0] if node.args else None
                off = isinstance(first, ast.Constant) and first.value is False
                mode = "eval" if off else "train"
            modes.setdefault(node.func.value.id, set()).add(mode)
    return {name for name, seen in modes.items() if seen == {"eval"}}


def _built_from(
    name: str, builds: dict[str, list[ast.Call]], barred: set[str], seen: set[str]
) -> Optional[list[ast.Call]]:
    """The calls that build `name` and the models passed into them by name (`SimCLR(
    encoder, ...)` with `encoder = get_resnet(...)`), or None when one is barred (trained,
    aliased, run in the step)."""
    calls = builds.get(name)
    if not calls or name in seen or name in barred:
        return None
    seen.add(name)
    found: list[ast.Call] = []
    for call in calls:
        found.append(call)
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Name) and arg.id in builds:
                inner = _built_from(arg.id, builds, barred, seen)
                if inner is None:
                    return None
                found.extend(inner)
    return found


def _passed(call: ast.Call, name: str) -> bool:
    return any(
        isinstance(arg, ast.Name) and arg.id == name
        for arg in [*call.args, *(k.value for k in call.keywords)]
    )


def _step_names(module: ast.Module) -> set[str]:
    """The names a loop that runs a backward pass uses, and those of the values passed to
    the function defining it as the parameters that loop uses."""
    functions = {
        n.name: n
        for n in module_nodes(module)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    names: set[str] = set()
    used_parameters: dict[str, set[str]] = {}
    for owner in [module, *functions.values()]:
        for loop in _own_loops(owner):
            if not any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "backward"
                for n in ast.walk(loop)
            ):
                continue
            loaded = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name)}
            names |= loaded
            # helpers of the file the loop calls: the names they use run in the step too
            for called in loaded & set(functions):
                names |= {n.id for n in ast.walk(functions[called]) if isinstance(n, ast.Name)}
            if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                used_parameters.setdefault(owner.name, set()).update(loaded)
    for node in module_nodes(module):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        function = functions.get(node.func.id)
        used = used_parameters.get(node.func.id)
        if function is None or not used:
            continue
        parameters = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        for i, arg in enumerate(node.args):
            if isinstance(arg, ast.Name) and i < len(parameters) and parameters[i] in used:
                names.add(arg.id)
        for keyword in node.keywords:
            if isinstance(keyword.value, ast.Name) and keyword.arg in used:
                names.add(keyword.value.id)
    return names


def _own_loops(owner: ast.AST) -> list[ast.AST]:
    """The loops of a function (or the module), not those of functions defined in it."""
    return [n for n in own_nodes(owner) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]
