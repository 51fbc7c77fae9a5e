"""The object that runs a LightningModule in a file, and the Trainer settings it gets.

A Lightning `Trainer`, `Fabric` or `LightningCLI` (or a class of the file deriving from
one: `class MyLightningCLI(LightningCLI)`) owns the run's precision and cuDNN
autotuning. A `LightningCLI(Model, Data)` runs the subcommand of its command line
(`fit`) wherever it is called, inside a `def cli_main()` as at module level, and hands
its `trainer_defaults` dict to the Trainer it builds; a `Trainer` built in a function
that fits nothing only predicts (precision.py reads these for EC506-EC508).

`validated_once` tells when `trainer.fit` reads the validation loader a single time:
every training Trainer of the file validates only every `check_val_every_n_epoch`
epochs, written as its `max_epochs` (ngp_pl: both `hparams.num_epochs`), or more, and
runs no sanity check (`num_sanity_val_steps` 0 in the default run; its default, 2,
reads the loader once more before training). A `val_check_interval`, a `**kwargs` or a
value the source does not settle leaves it undecided (None).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from envcheck.scripts.device import LIGHTNING_ROOTS
from envcheck.scripts.index import function_owners, keyword_arg, module_nodes, qualified_base
from envcheck.scripts.values import Scope, Value, keyword_values, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

# The objects that run a LightningModule and own its precision.
LIGHTNING_RUNNERS = ("Trainer", "Fabric", "LightningCLI")
MAX_DEPTH = 6  # classes of the file followed up to a Lightning base


def runner_kind(walker: Walker, name: str) -> Optional[str]:
    """'Trainer', 'Fabric' or 'LightningCLI' when `name` (a call's qualified name) is a
    Lightning runner, or a class of the file deriving from one; None otherwise."""
    if name.startswith(LIGHTNING_ROOTS):
        return next((r for r in LIGHTNING_RUNNERS if r in name), None)
    return _derived_runner(walker, name, 0)


def _derived_runner(walker: Walker, name: str, depth: int) -> Optional[str]:
    cls = walker.index().classes.get(name)
    if cls is None or depth > MAX_DEPTH:
        return None
    for base in cls.bases:
        qualified = qualified_base(base, walker.aliases)
        if qualified.startswith(LIGHTNING_ROOTS) and qualified.endswith(LIGHTNING_RUNNERS):
            return qualified.rsplit(".", 1)[-1]
        found = _derived_runner(walker, qualified, depth + 1)
        if found is not None:
            return found
    return None


def trains(node: ast.Call, kind: str, function: Optional[ast.AST]) -> bool:
    """The runner trains: a LightningCLI runs its command line's subcommand unless built
    with `run=False` (then the function that calls `fit` on it does); a Trainer or
    Fabric built in a function that fits nothing (`Trainer(...).predict(self, loader)`)
    runs inference, the training one is elsewhere."""
    run = keyword_arg(node, "run")
    if kind == "LightningCLI" and not (isinstance(run, ast.Constant) and run.value is False):
        return True
    if function is None:
        return True
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "fit"
        for n in ast.walk(function)
    )


def trainer_settings(node: ast.Call, kind: str, scope: Scope) -> tuple[dict[str, Value], list[str]]:
    """The Trainer keywords a runner call sets, `**dict` expanded where the source spells
    it out, and the `**` expressions it does not; for a LightningCLI, those of its
    `trainer_defaults` dict."""
    if kind != "LightningCLI":
        return keyword_values(node, scope)
    defaults = keyword_arg(node, "trainer_defaults")
    if defaults is None:
        return {}, []
    # the dict as the Trainer receives it: Trainer(**trainer_defaults)
    handed = ast.Call(func=node.func, args=[], keywords=[ast.keyword(arg=None, value=defaults)])
    return keyword_values(handed, scope)


def benchmark(node: ast.Call, kind: str, scope: Scope) -> Optional[bool]:
    """`Trainer(benchmark=True)` (or a LightningCLI's `trainer_defaults={"benchmark":
    True}`): Lightning sets torch.backends.cudnn.benchmark to it; None when the call
    leaves it to the session (False unless set) or the source does not show it."""
    if kind == "Fabric":
        return None
    found = trainer_settings(node, kind, scope)[0].get("benchmark")
    if found is None or not found.known or found.value is None:
        return None
    return bool(found.value)


def validated_once(walker: Walker) -> Optional[str]:
    """Why each training Trainer of the file reads its validation loader once (see the
    module docstring), or None."""
    owners = function_owners(walker.module, walker.index().function_nodes)
    found: list[str] = []
    for node in module_nodes(walker.module):
        if not isinstance(node, ast.Call):
            continue
        name = walker.qualname(node.func)
        if name is None or runner_kind(walker, name) != "Trainer":
            continue
        function = owners.get(id(node))
        if not trains(node, "Trainer", function):
            continue
        reason = _validates_once(node, walker.scope_of(function))
        if reason is None:
            return None
        found.append(reason)
    return found[0] if found and len(set(found)) == 1 else None


def _validates_once(node: ast.Call, scope: Scope) -> Optional[str]:
    if any(k.arg is None for k in node.keywords) or keyword_arg(node, "val_check_interval"):
        return None
    every = keyword_arg(node, "check_val_every_n_epoch")
    epochs = keyword_arg(node, "max_epochs")
    if every is None or epochs is None:
        return None
    if ast.dump(every) != ast.dump(epochs):
        n, total = resolve(every, scope), resolve(epochs, scope)
        numbers = all(isinstance(v.value, int) and v.known for v in (n, total))
        if not numbers or n.value < total.value:
            return None
    sanity = keyword_arg(node, "num_sanity_val_steps")
    if sanity is None:
        return None
    steps = resolve(sanity, scope)
    if not steps.known or steps.value != 0:
        return None
    return (
        f"Trainer(check_val_every_n_epoch={ast.unparse(every)}, max_epochs="
        f"{ast.unparse(epochs)}, num_sanity_val_steps={ast.unparse(sanity)}) validates "
        "once per trainer.fit(), at the end"
    )
